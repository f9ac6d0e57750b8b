// Many seeds over several processes: one seed is one deterministic, single-threaded run, so a range of seeds
// spreads over cores as separate processes (docs/simulation.md, "Running many seeds"). Wall-clock time is read
// here, never inside a run.
import { fork, type ChildProcess } from 'node:child_process';
import { availableParallelism } from 'node:os';
import type { PlantedBug } from '../core/planted-bugs.ts';
import type { RunResult } from './run.ts';
import { scenarioNamed } from './scenarios.ts';

/** What a pool is asked to run: `count` seeds from `first` (Infinity: until the deadline), one scenario. */
export interface PoolOptions {
  readonly scenario: string;
  readonly plantedBug?: PlantedBug;
  readonly first: number;
  readonly count: number;
  /** Child processes; each runs one seed at a time. */
  readonly jobs: number;
  /** `performance.now()` after which no new seed is handed out (the seeds under way finish). */
  readonly deadline?: number;
  /** Each child runs one seed before it reports ready, so that measured seeds run on compiled code. */
  readonly warmUp?: boolean;
  /** Called with every result as it arrives (completion order, not seed order); return false to stop early. */
  readonly onResult?: (result: RunResult) => boolean | void;
  /** False for runs too long to hold every result: `results` then stays empty and onResult sees them all. */
  readonly keepResults?: boolean;
}

export interface PoolOutcome {
  /** Seeds that ran: `first .. first + seeds - 1`. */
  readonly seeds: number;
  /** Every result, in seed order (none when `keepResults` is false). */
  readonly results: readonly RunResult[];
  /** From the first seed handed out (every child loaded and warm) to the last result. */
  readonly wallMs: number;
}

/** What the parent tells a child: run this seed, or stop. */
export type ToChild = { readonly kind: 'run'; readonly seed: number } | { readonly kind: 'stop' };

/** What a child tells the parent: it is ready for seeds, a seed's result, or that it cannot go on. */
export type FromChild =
  | { readonly kind: 'ready' }
  | { readonly kind: 'result'; readonly result: RunResult }
  | { readonly kind: 'error'; readonly message: string };

/** The child's settings, passed in its environment (they hold for its whole life). */
export interface ChildSettings {
  readonly scenario: string;
  readonly plantedBug?: PlantedBug;
  readonly warmUp: boolean;
}

export const CHILD_SETTINGS_VARIABLE = 'SVC_SIM_POOL_CHILD';

const CHILD_ENTRY = new URL('./pool-child.ts', import.meta.url);

/**
 * Runs the seeds over `jobs` child processes. Seeds are handed out one at a time, in order, to whichever child is
 * free (seeds differ a lot in cost, so fixed ranges would leave a core idle), so the seeds that ran are always
 * `first .. first + n - 1`. Each result is the same as the seed's run in this process would give: a run depends
 * on its seed alone. A child that exits or fails ends the pool with an error naming its seed.
 */
export async function runPool(options: PoolOptions): Promise<PoolOutcome> {
  if (!Number.isSafeInteger(options.jobs) || options.jobs < 1)
    throw new RangeError(`--jobs must be a whole number of at least 1, got ${options.jobs}`);
  scenarioNamed(options.scenario); // an unknown name fails here, with the list of names, not in every child
  const settings: ChildSettings = {
    scenario: options.scenario,
    ...(options.plantedBug === undefined ? {} : { plantedBug: options.plantedBug }),
    warmUp: options.warmUp ?? false,
  };
  // No more children than seeds (a soak's count is Infinity), but at least one.
  const jobs = Math.max(1, Math.min(options.jobs, options.count));
  // With a child on every core, V8's helper threads (garbage collection, compilation) of one child only take CPU
  // from another: each child then does its own on its main thread (docs/simulation.md, Performance).
  const helperThreads = jobs < availableParallelism();
  const children = [...Array(jobs).keys()].map(() => spawnChild(settings, helperThreads));
  try {
    await Promise.all(children.map((child) => nextMessage(child, 'ready', undefined)));
    return await distribute(children, options);
  } finally {
    for (const child of children) {
      if (child.connected) send(child, { kind: 'stop' });
    }
  }
}

async function distribute(children: readonly ChildProcess[], options: PoolOptions): Promise<PoolOutcome> {
  const results: RunResult[] = [];
  const keep = options.keepResults ?? true;
  let seeds = 0;
  const deadline = options.deadline ?? Infinity;
  let next = options.first;
  let stopped = false;
  const started = performance.now();
  const more = () => !stopped && next - options.first < options.count && performance.now() < deadline;

  const serve = async (child: ChildProcess): Promise<void> => {
    while (more()) {
      const seed = next;
      next += 1;
      const answer = nextMessage(child, 'result', seed);
      send(child, { kind: 'run', seed });
      const result = await answer;
      seeds += 1;
      if (keep) results.push(result);
      if (options.onResult?.(result) === false) stopped = true;
    }
  };
  await Promise.all(children.map(serve));
  results.sort((a, b) => a.seed - b.seed);
  return { seeds, results, wallMs: performance.now() - started };
}

/**
 * V8's young generation for a child, in MiB per semi-space (Node 20's default is 16). A standard seed allocates
 * ≈ 90 MB, most of it dead by the seed's end; with the default, every ≈ 13 MB a scavenge copies the seed's live
 * state (a quarter of what it looks at survives), several times a seed. At 128 MiB a seed meets about one scavenge,
 * and a seed's CPU time fell ≈ 10–15 % with two children running side by side (docs/simulation.md, Performance).
 * The price is memory: up to ≈ 3 × 128 MiB of young generation per child.
 */
const CHILD_SEMI_SPACE_MIB = 128;

function spawnChild(settings: ChildSettings, helperThreads: boolean): ChildProcess {
  // Not this process's execArgv: under the test runner it holds --test. The loader is resolved from here, so the
  // child loads TypeScript whatever its working directory.
  const v8Flags = [
    `--max-semi-space-size=${CHILD_SEMI_SPACE_MIB}`,
    ...(helperThreads ? [] : ['--single-threaded']),
  ];
  return fork(CHILD_ENTRY, [], {
    execArgv: ['--import', import.meta.resolve('tsx'), ...v8Flags],
    env: { ...process.env, [CHILD_SETTINGS_VARIABLE]: JSON.stringify(settings) },
    serialization: 'advanced',
    stdio: ['ignore', 'inherit', 'inherit', 'ipc'],
  });
}

function send(child: ChildProcess, message: ToChild): void {
  child.send(message);
}

/** The child's next message, which must be of `kind`; an exit or an error message before it rejects. */
function nextMessage(child: ChildProcess, kind: 'ready', seed: undefined): Promise<void>;
function nextMessage(child: ChildProcess, kind: 'result', seed: number): Promise<RunResult>;
function nextMessage(
  child: ChildProcess,
  kind: FromChild['kind'],
  seed: number | undefined,
): Promise<unknown> {
  const what = seed === undefined ? 'while starting' : `while running seed ${seed}`;
  return new Promise((resolve, reject) => {
    const onMessage = (message: FromChild) => {
      cleanUp();
      if (message.kind === 'error')
        reject(new Error(`simulator child ${child.pid} failed ${what}: ${message.message}`));
      else if (message.kind !== kind)
        reject(new Error(`simulator child ${child.pid} sent ${message.kind} ${what}`));
      else resolve(message.kind === 'result' ? message.result : undefined);
    };
    const onExit = (code: number | null, signal: NodeJS.Signals | null) => {
      cleanUp();
      reject(new Error(`simulator child ${child.pid} exited (${signal ?? `code ${code}`}) ${what}`));
    };
    const cleanUp = () => {
      child.off('message', onMessage);
      child.off('exit', onExit);
    };
    child.on('message', onMessage);
    child.on('exit', onExit);
  });
}
