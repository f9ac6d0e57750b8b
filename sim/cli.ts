// The simulator's command line: many seeds with a summary, one seed with its trace, a soak for nightly runs.
// `npm run sim -- --help` lists the options. Wall-clock time is read here, never inside a run.
import { availableParallelism } from 'node:os';
import { Command, InvalidArgumentError, Option } from 'commander';
import { PLANTED_BUGS, type PlantedBug } from '../core/planted-bugs.ts';
import { parseFaults, parseKnobs, type Schedule } from './faults/plan.ts';
import { INVARIANTS } from './world/invariant-catalogue.ts';
import {
  drawnSchedule,
  replayCommand,
  runSeed,
  shrinkFailure,
  type RunResult,
  type Scenario,
} from './run.ts';
import { runPool } from './pool.ts';
import { seedProgress } from './progress.ts';
import {
  describeMemoryFindings,
  keepLowestSeeds,
  MEMORY_SEEDS_LISTED,
  type SeedFindings,
} from './summary.ts';
import { SCENARIOS, scenarioNamed } from './scenarios.ts';
import { runHaSeed } from './ha/group-run.ts';

interface Options {
  readonly seed?: number;
  readonly seeds?: number;
  /** Undefined: seed 0, or for a soak tonight's range. */
  readonly from?: number;
  readonly scenario: string;
  readonly trace: boolean;
  readonly faults?: string;
  readonly knobs?: string;
  readonly bug?: PlantedBug;
  readonly shrink: boolean;
  readonly shrinkRuns: number;
  readonly soak: boolean;
  readonly minutes: number;
  readonly maxFailures: number;
  readonly jobs: number;
  readonly ha: boolean;
}

const integer = (name: string) => (text: string) => {
  const value = Number(text);
  if (!Number.isSafeInteger(value) || value < 0) {
    throw new InvalidArgumentError(`${name} must be a non-negative whole number, got '${text}'`);
  }
  return value;
};

// `npm run sim -- --seed 7 --trace | head` closes the pipe early: that is the reader's choice, not an error.
process.stdout.on('error', (error: NodeJS.ErrnoException) => {
  if (error.code === 'EPIPE') process.exit(0);
  throw error;
});

const program = new Command()
  .name('npm run sim --')
  .description('svc deterministic simulator: runs the core state machines under faults, from seeds')
  .option('--seed <n>', 'run one seed (with --trace: print its trace)', integer('--seed'))
  .option('--seeds <n>', 'run this many seeds and print a summary', integer('--seeds'))
  .option(
    '--from <n>',
    "first seed of --seeds (default 0) or --soak (default: tonight's range, a new one each day)",
    integer('--from'),
  )
  .addOption(
    new Option('--scenario <name>', 'what to simulate').choices(Object.keys(SCENARIOS)).default('swarm'),
  )
  .option('--trace', 'print the readable trace of the run (with --seed)', false)
  .option('--faults <schedule>', "replay this fault schedule instead of the seed's (see docs/simulation.md)")
  .option('--knobs <knobs>', "replay with these fault rates instead of the seed's")
  .addOption(
    new Option('--bug <name>', 'switch on a planted bug (proof that the simulator bites)').choices(
      PLANTED_BUGS,
    ),
  )
  .option(
    '--ha',
    'run the group of masters on the coordination store model instead (docs/high-availability.md; --seed, --seeds, --from, --bug, --trace)',
    false,
  )
  .option('--no-shrink', 'do not shrink failing seeds')
  .option('--shrink-runs <n>', 'runs a shrink may spend per failing seed', integer('--shrink-runs'), 300)
  .option('--soak', 'run seeds until --minutes have passed (nightly)', false)
  .option('--minutes <m>', 'length of a soak', integer('--minutes'), 30)
  .option(
    '--max-failures <n>',
    'failing seeds to shrink and print before stopping',
    integer('--max-failures'),
    5,
  )
  .option(
    '--jobs <n>',
    'processes running seeds at once for --seeds and --soak (1: in this process)',
    integer('--jobs'),
    availableParallelism(),
  )
  .action(async (options: Options) => {
    try {
      process.exitCode = await main(options);
    } catch (error) {
      // Bad input (a malformed schedule, an unknown knob) is the user's to fix: say what, without a stack.
      if (error instanceof RangeError || error instanceof InvalidArgumentError)
        program.error(`error: ${error.message}`);
      throw error;
    }
  });

await program.parseAsync(process.argv);

async function main(options: Options): Promise<number> {
  if (options.ha) return ha(options);
  const scenario = scenarioNamed(options.scenario);
  if (options.seed !== undefined) return single(options, scenario, options.seed);
  if (options.faults !== undefined || options.knobs !== undefined) {
    throw new InvalidArgumentError('--faults and --knobs replay one seed: give --seed too');
  }
  const first = options.from ?? (options.soak ? nightlySeed() : 0);
  const deadline = options.soak ? performance.now() + options.minutes * 60_000 : Infinity;
  const count = options.soak ? Infinity : (options.seeds ?? 100);
  return many(options, scenario, first, count, deadline);
}

/** Seeds of the high-availability group's simulation (sim/ha/): one with its trace, or many with a count. */
function ha(options: Options): number {
  const bug = options.bug === undefined ? {} : { plantedBug: options.bug };
  if (options.seed !== undefined) {
    const result = runHaSeed({ seed: options.seed, trace: options.trace, ...bug });
    if (options.trace) console.log(result.trace);
    console.log(`faults: ${result.faults.join(' ')}`);
    console.log(`terms served ${result.terms}, client operations acknowledged ${result.acknowledged}`);
    console.log(
      result.violation === undefined
        ? `seed ${options.seed}: ok`
        : `seed ${options.seed}: ${result.violation.invariant} at ${result.violation.time.toFixed(1)} ms: ${result.violation.detail}`,
    );
    return result.violation === undefined ? 0 : 1;
  }
  const first = options.from ?? 0;
  const count = options.seeds ?? 100;
  const failed: string[] = [];
  let terms = 0;
  for (let seed = first; seed < first + count; seed += 1) {
    const result = runHaSeed({ seed, ...bug });
    terms += result.terms;
    if (result.violation !== undefined)
      failed.push(
        `seed ${seed}: ${result.violation.invariant}: ${result.violation.detail} (replay: npm run sim -- --ha --seed ${seed}${options.bug === undefined ? '' : ` --bug ${options.bug}`} --trace)`,
      );
  }
  console.log(`ha: ${count} seeds from ${first}, ${terms} terms served, ${failed.length} failed`);
  for (const line of failed.slice(0, options.maxFailures)) console.log(`  ${line}`);
  return failed.length === 0 ? 0 : 1;
}

function single(options: Options, scenario: Scenario, seed: number): number {
  const schedule = replaySchedule(options, scenario, seed);
  const started = performance.now();
  const result = runSeed({
    seed,
    scenario,
    trace: options.trace,
    ...(schedule === undefined ? {} : { schedule }),
    ...(options.bug === undefined ? {} : { plantedBug: options.bug }),
  });
  const wallMs = performance.now() - started;
  if (options.trace) process.stdout.write(result.trace);
  console.log(describeResult(result));
  // Wall time goes to stderr so that stdout (trace and verdict) is byte-identical across replays.
  console.error(
    `simulated ${(result.simulatedMs / 1000).toFixed(3)} s in ${(wallMs / 1000).toFixed(3)} s wall, ${result.events} events`,
  );
  for (const note of result.report.notes) console.log(`  note: ${note}`);
  console.log(`outcomes: ${formatCounts(result.report.counts)}`);
  if (result.violation && options.shrink && schedule === undefined)
    report(shrinkAndDescribe(result, scenario, options));
  return result.violation ? 1 : 0;
}

/** The schedule given on the command line, completed from the seed's own where only half is given. */
function replaySchedule(options: Options, scenario: Scenario, seed: number): Schedule | undefined {
  if (options.faults === undefined && options.knobs === undefined) return undefined;
  const drawn = drawnSchedule(scenario, seed);
  return {
    knobs: options.knobs === undefined ? drawn.knobs : parseKnobs(options.knobs, drawn.knobs),
    faults: options.faults === undefined ? drawn.faults : parseFaults(options.faults),
  };
}

async function many(
  options: Options,
  scenario: Scenario,
  first: number,
  count: number,
  deadline: number,
): Promise<number> {
  const started = performance.now();
  const failures: RunResult[] = [];
  let seeds = 0;
  let simulatedMs = 0;
  let events = 0;
  const notes = new Map<string, number>();
  const memoryFindings: SeedFindings[] = [];
  let memoryFindingCount = 0;
  const progress = seedProgress(Number.isFinite(count) ? { seeds: count } : { minutes: options.minutes });
  // Results are summed as they come (a soak is too long to keep them); failures are printed at once, and the run
  // stops handing out seeds after --max-failures of them.
  const onResult = (result: RunResult): boolean => {
    seeds += 1;
    simulatedMs += result.simulatedMs;
    events += result.events;
    for (const [name, value] of Object.entries(result.report.counts)) {
      if (
        name.startsWith('apps.') ||
        name.startsWith('faults') ||
        name.startsWith('backPressure.') ||
        name.startsWith('partialFrames.') ||
        name.startsWith('handshake.') ||
        name.startsWith('transport.silentPeer') ||
        name.startsWith('congestion.') ||
        name.startsWith('ha.') ||
        name.startsWith('maps.') ||
        name.startsWith('reduces.') ||
        name === 'memoryWithoutEnabling'
      )
        notes.set(name, (notes.get(name) ?? 0) + value);
    }
    const memory = result.report.memoryWithoutEnabling ?? [];
    if (memory.length > 0) {
      memoryFindingCount += memory.length;
      keepLowestSeeds(memoryFindings, { seed: result.seed, lines: memory }, MEMORY_SEEDS_LISTED);
    }
    progress.seedDone(result.violation !== undefined);
    if (!result.violation) return true;
    failures.push(result);
    progress.print(describeResult(result));
    if (failures.length < options.maxFailures) return true;
    progress.print(`stopping after ${failures.length} failing seeds (--max-failures)`);
    return false;
  };
  const bug = options.bug === undefined ? {} : { plantedBug: options.bug };
  if (options.jobs === 1) {
    for (let seed = first; seeds < count && performance.now() < deadline; seed += 1) {
      if (!onResult(runSeed({ seed, scenario, ...bug }))) break;
    }
  } else {
    await runPool({
      scenario: scenario.name,
      ...bug,
      first,
      count,
      jobs: options.jobs,
      deadline,
      onResult,
      keepResults: false,
    });
  }
  progress.stop();
  failures.sort((a, b) => a.seed - b.seed);
  const wallMs = performance.now() - started;
  const last = first + seeds - 1;
  console.log('');
  const range = seeds > 0 ? `: seeds ${first}..${last}` : ': no seed ran';
  console.log(`scenario ${scenario.name}${options.bug ? ` with planted bug ${options.bug}` : ''}${range}`);
  console.log(`seeds:          ${seeds}`);
  console.log(
    `failures:       ${failures.length}${failures.length ? ` (${failures.map((f) => f.seed).join(', ')})` : ''}`,
  );
  console.log(
    `simulated time: ${(simulatedMs / 1000).toFixed(1)} s (${(simulatedMs / Math.max(wallMs, 1)).toFixed(0)}x real time${options.jobs === 1 ? '' : ', all processes together'})`,
  );
  console.log(
    `wall time:      ${(wallMs / 1000).toFixed(1)} s (${((seeds * 60_000) / Math.max(wallMs, 1)).toFixed(0)} seeds/minute, ${options.jobs === 1 ? 'in this process' : `${options.jobs} processes`})`,
  );
  console.log(`events:         ${events} (${((events * 1000) / Math.max(wallMs, 1)).toFixed(0)} events/s)`);
  // By name: results arrive in a different order from a pool each time, the summary should not.
  const outcomes = [...notes].sort(([a], [b]) => (a < b ? -1 : 1));
  console.log(`outcomes:       ${outcomes.map(([name, value]) => `${name}=${value}`).join(' ') || '-'}`);
  report(describeMemoryFindings(memoryFindings, memoryFindingCount));
  if (options.shrink) for (const failure of failures) report(shrinkAndDescribe(failure, scenario, options));
  return failures.length > 0 ? 1 : 0;
}

function shrinkAndDescribe(failure: RunResult, scenario: Scenario, options: Options): string[] {
  const shrunk = shrinkFailure(failure, scenario, { maxRuns: options.shrinkRuns });
  const schedule = shrunk.schedule;
  const replay = replayCommand(failure, schedule);
  return [
    '',
    `seed ${failure.seed}: ${failure.violation?.invariant} — shrunk from ${failure.schedule.faults.length} to ${schedule.faults.length} fault(s) in ${shrunk.runs} runs`,
    `  ${shrunk.result.violation ? describeViolation(shrunk.result) : 'the shrunk schedule no longer fails (flaky?)'}`,
    `  replay: ${replay}`,
  ];
}

function formatCounts(counts: Readonly<Record<string, number>>): string {
  return (
    Object.entries(counts)
      .map(([name, value]) => `${name}=${value}`)
      .join(' ') || '-'
  );
}

function describeResult(result: RunResult): string {
  return result.violation
    ? `FAIL seed ${result.seed}: ${describeViolation(result)}`
    : `ok   seed ${result.seed}`;
}

function describeViolation(result: RunResult): string {
  const v = result.violation!;
  const meaning = (INVARIANTS as Readonly<Record<string, string>>)[v.invariant];
  return (
    `${v.invariant}${meaning ? ` (${meaning})` : ''} at ${(v.time / 1000).toFixed(3)} s` +
    `${v.node ? ` on ${v.node}` : ''}: ${v.detail}`
  );
}

function report(lines: readonly string[]): void {
  for (const line of lines) console.log(line);
}

/** A different range each night, printed in the summary so that any failure replays by its seed. */
function nightlySeed(): number {
  return Math.floor(Date.now() / 86_400_000) * 100_000;
}
