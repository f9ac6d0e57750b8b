import type { PlantedBug } from '../core/planted-bugs.ts';
import { injectSchedule } from './faults/inject.ts';
import {
  calmFrom,
  checkScheduleTargets,
  drawSchedule,
  formatFaults,
  formatKnobs,
  type Schedule,
} from './faults/plan.ts';
import { shrinkSchedule, type ShrinkOutcome } from './faults/shrink.ts';
import { streamRng } from './world/random.ts';
import { World, type Violation } from './world/world.ts';

import type { Scenario, ScenarioReport } from './cluster/contract.ts';

export type { Scenario, ScenarioReport, ScenarioRun } from './cluster/contract.ts';

export interface RunOptions {
  readonly seed: number;
  readonly scenario: Scenario;
  readonly trace?: boolean;
  /** Replays this schedule instead of the one the seed draws (shrinking, replay commands). */
  readonly schedule?: Schedule;
  readonly plantedBug?: PlantedBug;
  /** Safety net against a livelocked run. */
  readonly maxEvents?: number;
}

export interface RunResult {
  readonly seed: number;
  readonly scenario: string;
  readonly plantedBug?: PlantedBug;
  readonly schedule: Schedule;
  readonly violation?: Violation;
  readonly simulatedMs: number;
  readonly events: number;
  readonly trace: string;
  readonly report: ScenarioReport;
}

const DEFAULT_MAX_EVENTS = 5_000_000;

/**
 * Runs one seed: build the scenario, draw (or take) the fault schedule, inject it, run until every job finished,
 * then check what can only be checked at the end. Safety violations stop the run where they happen; a run that does
 * not finish within the liveness bound after the last fault is a liveness violation.
 */
export function runSeed(options: RunOptions): RunResult {
  const { seed, scenario } = options;
  const world = new World({
    seed,
    trace: options.trace ?? false,
    ...(options.plantedBug === undefined ? {} : { plantedBug: options.plantedBug }),
  });
  const run = scenario.build(world, {
    seed,
    ...(options.plantedBug === undefined ? {} : { plantedBug: options.plantedBug }),
  });
  if (options.schedule !== undefined) checkScheduleTargets(options.schedule.faults, run.targets);
  const schedule = options.schedule ?? drawSchedule(streamRng(seed, 'faults'), run.targets);
  run.useSchedule(schedule);
  world.observe(injectSchedule(world, schedule, run.topology));
  for (const observer of run.observers) world.observe(observer);
  world.observe({
    onStep(_node, _effects, w) {
      if (run.finished()) w.stop();
    },
  });
  if (run.finished()) world.stop();

  const calm = calmFrom(schedule);
  const outcome = world.run({
    until: calm + run.livenessBoundMs,
    maxEvents: options.maxEvents ?? DEFAULT_MAX_EVENTS,
  });
  // Judged after the run, through world.fail like any violation, so that the trace ends with it too.
  if (outcome === 'time-limit' || outcome === 'idle') {
    world.fail({
      invariant: 'liveness',
      detail:
        `jobs did not finish within ${run.livenessBoundMs} ms after the last fault ended at ${calm} ms` +
        (outcome === 'idle' ? ' (nothing left to happen: the cluster is stuck)' : '') +
        `; ${run.report().notes.join('; ')}`,
    });
  } else if (outcome === 'event-limit') {
    world.fail({
      invariant: 'liveness',
      detail: `the run used up its budget of ${world.eventsProcessed} events without finishing (livelock?)`,
    });
  } else if (outcome === 'stopped') {
    const final = run.finalCheck(world);
    if (final) world.fail(final);
  }
  const violation = world.violation;
  return {
    seed,
    scenario: scenario.name,
    ...(options.plantedBug === undefined ? {} : { plantedBug: options.plantedBug }),
    schedule,
    ...(violation === undefined ? {} : { violation }),
    simulatedMs: world.now,
    events: world.eventsProcessed,
    trace: world.trace.text(),
    report: run.report(),
  };
}

/**
 * Shrinks the schedule of a failed run to a minimal one that still violates the same invariant (see
 * faults/shrink.ts). Each candidate is one more run of the same seed.
 */
export function shrinkFailure(
  failed: RunResult,
  scenario: Scenario,
  options: { readonly maxRuns?: number } = {},
): ShrinkOutcome & { readonly result: RunResult } {
  const invariant = failed.violation?.invariant;
  if (invariant === undefined)
    throw new Error(`seed ${failed.seed} did not fail; there is nothing to shrink`);
  const replay = (schedule: Schedule) =>
    runSeed({
      seed: failed.seed,
      scenario,
      schedule,
      ...(failed.plantedBug === undefined ? {} : { plantedBug: failed.plantedBug }),
    });
  const outcome = shrinkSchedule(
    failed.schedule,
    (candidate) => {
      const result = replay(candidate);
      return result.violation?.invariant === invariant;
    },
    options,
  );
  return { ...outcome, result: replay(outcome.schedule) };
}

/** The schedule a seed draws for a scenario (to complete a half-given replay schedule). */
export function drawnSchedule(scenario: Scenario, seed: number): Schedule {
  const run = scenario.build(new World({ seed }), { seed });
  return drawSchedule(streamRng(seed, 'faults'), run.targets);
}

/** The command that replays a run with an explicit schedule and prints its trace. */
export function replayCommand(result: RunResult, schedule: Schedule): string {
  return [
    'npm run sim --',
    `--scenario ${result.scenario}`,
    `--seed ${result.seed}`,
    `--faults '${formatFaults(schedule.faults)}'`,
    `--knobs '${formatKnobs(schedule.knobs)}'`,
    ...(result.plantedBug ? [`--bug ${result.plantedBug}`] : []),
    '--trace',
  ].join(' ');
}
