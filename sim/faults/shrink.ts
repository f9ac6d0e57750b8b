import fc from 'fast-check';
import type { Fault, Knobs, Schedule } from './plan.ts';

export interface ShrinkOutcome {
  /** The smallest schedule found that still fails the same way. */
  readonly schedule: Schedule;
  /** Runs spent (each candidate costs one simulated run). */
  readonly runs: number;
  /** Successful shrink steps. */
  readonly steps: number;
}

const PROBABILISTIC: readonly (keyof Knobs)[] = [
  'drop',
  'duplicate',
  'reorder',
  'ioError',
  'noSpace',
  'jitterMs',
];

/**
 * Shrinks a failing schedule with fast-check: the schedule is the value of a one-off arbitrary whose shrink
 * stream proposes smaller schedules (fewer faults, calmer knobs, shorter faults), and fast-check's shrinking loop
 * keeps the first proposal that still fails, then shrinks that one, until nothing smaller fails. `stillFails` must
 * answer whether a candidate reproduces the same failure (same violated invariant), so that shrinking never wanders
 * off to a different bug.
 */
export function shrinkSchedule(
  failing: Schedule,
  stillFails: (candidate: Schedule) => boolean,
  options: { readonly maxRuns?: number } = {},
): ShrinkOutcome {
  const maxRuns = options.maxRuns ?? 400;
  let runs = 0;
  const result = fc.check(
    fc.property(new ScheduleArbitrary(failing), (candidate) => {
      if (runs >= maxRuns) return true;
      runs += 1;
      return !stillFails(candidate);
    }),
    { numRuns: 1, seed: 0 },
  );
  const schedule = result.failed && result.counterexample ? result.counterexample[0] : failing;
  return { schedule, runs, steps: result.numShrinks };
}

/** An arbitrary that "generates" one given schedule and shrinks it; it exists only to drive fc's shrinker. */
class ScheduleArbitrary extends fc.Arbitrary<Schedule> {
  constructor(private readonly start: Schedule) {
    super();
  }

  generate(): fc.Value<Schedule> {
    return new fc.Value(this.start, undefined);
  }

  /** Only schedules this arbitrary produced are shrunk (fast-check always passes the context back). */
  canShrinkWithoutContext(_value: unknown): _value is Schedule {
    return false;
  }

  shrink(value: Schedule): fc.Stream<fc.Value<Schedule>> {
    return new fc.Stream(smallerSchedules(value)).map((schedule) => new fc.Value(schedule, undefined));
  }
}

/** Smaller schedules, most aggressive first: the order fast-check tries them in. */
export function* smallerSchedules(schedule: Schedule): Generator<Schedule> {
  const { faults, knobs } = schedule;
  // Drop runs of faults: halves first, then quarters, ..., then single faults.
  for (let size = Math.ceil(faults.length / 2); size >= 1; size = size === 1 ? 0 : Math.ceil(size / 2)) {
    for (let start = 0; start + size <= faults.length; start += size) {
      yield { knobs, faults: [...faults.slice(0, start), ...faults.slice(start + size)] };
    }
  }
  // Calm one probabilistic fault at a time.
  for (const key of PROBABILISTIC) {
    if (knobs[key] > 0) yield { knobs: { ...knobs, [key]: 0 }, faults };
  }
  if (knobs.stormMs > 1) yield { knobs: { ...knobs, stormMs: Math.floor(knobs.stormMs / 2) }, faults };
  // Make one fault smaller: shorter, or with fewer partitioned groups.
  for (let i = 0; i < faults.length; i += 1) {
    for (const smaller of smallerFault(faults[i]!)) {
      yield { knobs, faults: faults.map((fault, j) => (j === i ? smaller : fault)) };
    }
  }
}

function* smallerFault(fault: Fault): Generator<Fault> {
  switch (fault.kind) {
    case 'crash':
    case 'graceful':
      if (fault.downFor > 1) yield { ...fault, downFor: Math.floor(fault.downFor / 2) };
      break;
    case 'partition': {
      if (fault.targets.length > 1) {
        for (let i = 0; i < fault.targets.length; i += 1) {
          yield { ...fault, targets: fault.targets.filter((_, j) => j !== i) };
        }
      }
      // Fewer groups on the other side cut fewer links; dropping the side altogether would cut more (the rest).
      const otherSide = fault.otherSide ?? [];
      if (otherSide.length > 1) {
        for (let i = 0; i < otherSide.length; i += 1) {
          yield { ...fault, otherSide: otherSide.filter((_, j) => j !== i) };
        }
      }
      if (fault.duration > 1) yield { ...fault, duration: Math.floor(fault.duration / 2) };
      break;
    }
    case 'oneway':
      // Fewer groups on a side cut fewer links, but a side never empties: that would cut every other group.
      for (const side of ['from', 'to'] as const) {
        const groups = fault[side];
        if (groups.length < 2) continue;
        for (let i = 0; i < groups.length; i += 1) {
          yield { ...fault, [side]: groups.filter((_, j) => j !== i) };
        }
      }
      if (fault.duration > 1) yield { ...fault, duration: Math.floor(fault.duration / 2) };
      break;
    case 'disk':
    case 'dfs':
    case 'exclude':
    case 'event':
    case 'descriptors':
      if (fault.duration > 1) yield { ...fault, duration: Math.floor(fault.duration / 2) };
      break;
    case 'kill':
      // Nothing smaller than one task's executor: a kill is kept or dropped whole.
      break;
  }
}
