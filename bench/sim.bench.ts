/**
 * Simulator speed on the standard scenario (20 workers, 4 applications of 200 partitions each, replication on,
 * faults on): seeds per minute and simulated time per wall-clock second, on every core of the machine. Goals: at
 * least 1,000 seeds a minute and at least 100x real time.
 *
 * Both goals are measured the way `npm run sim -- --seeds N` runs: its pool of child processes (sim/pool.ts), one per
 * core, each handed the next seed when it is free, over wall time from the first seed handed out to the last result
 * (process start-up and a warm-up seed per child left out, as in a long run). The real-time factor is the machine's:
 * the simulated time of every seed the pool ran over that wall time, which is what the command's summary prints
 * ("all processes together"), over 500 seeds per core. The factor of one seed on one core is printed too, from the
 * first dozen seeds of a fresh process: a single run cannot be spread over cores, and a replay runs in a fresh
 * process, so that is how fast one replay goes.
 *
 * The baseline, measured in the same run, is the simulator's own machinery without svc: the same number of events
 * through the same world (queue, network, observers) driving trivial machines. The gap between the two is the cost
 * of the core state machines and the checkers, which tells where to look when the goals are missed.
 *
 * Exit code (see bench/run.ts): 0 goals met, 2 a goal missed, 1 error.
 */
import { availableParallelism } from 'node:os';
import { Bench } from 'tinybench';
import type { Effect } from '../core/machines/effects.ts';
import type { Machine } from '../core/machines/machine.ts';
import { runPool } from '../sim/pool.ts';
import { runSeed, type RunResult } from '../sim/run.ts';
import { SCENARIOS } from '../sim/scenarios.ts';
import { World } from '../sim/world/world.ts';

const GOAL_SEEDS_PER_MINUTE = 1_000;
const GOAL_REAL_TIME_FACTOR = 100;
const GOAL_MISSED = 2;
const SEEDS = 12;
/**
 * Seeds per core in the pooled run: with two cores, the issue's own example run (`--seeds 1000`). A long run is what
 * the goal is about (a soak runs thousands of seeds), and a short one measures V8 compiling instead: a child's first
 * ≈ 20 seeds cost up to twice as much CPU as its later ones while the optimising compiler settles (measured with
 * --trace-opt, 22 November 2026).
 */
const POOLED_SEEDS_PER_CORE = 500;

const scenario = SCENARIOS.standard!;

// Warm up (JIT, configuration resolution) and learn the event count of a typical seed for the baseline.
const warm = runSeed({ seed: 0, scenario });
if (warm.violation)
  console.log(`note: warm-up seed 0 failed ${warm.violation.invariant}: ${warm.violation.detail}`);

let nextSeed = 1;
const results: RunResult[] = [];

/** A machine that answers every message to its sender; when `serve` is given it opens the rally on start. */
function bounce(serve?: string): Machine<null> {
  return {
    step(state, input) {
      const effects: Effect[] = [];
      if (input.kind === 'start' && serve !== undefined) {
        effects.push({
          kind: 'send',
          to: serve,
          message: { type: 'StatusResponse', status: 'SUCCESS', message: '' },
        });
      } else if (input.kind === 'receive') {
        effects.push({ kind: 'send', to: input.envelope.from, message: input.envelope.message });
      }
      return { state, effects };
    },
  };
}

/** Rallies between as many node pairs as the standard cluster has nodes, until `events` events ran. */
function baseline(events: number): void {
  const world = new World({ seed: 1 });
  for (let i = 0; i < 24; i += 1) {
    world.addNode({ id: `b-${i}`, role: 'b', machine: bounce(), initialState: () => null });
    world.addNode({ id: `a-${i}`, role: 'a', machine: bounce(`b-${i}`), initialState: () => null });
  }
  for (let i = 0; i < 24; i += 1) world.start(`b-${i}`);
  for (let i = 0; i < 24; i += 1) world.start(`a-${i}`);
  world.run({ until: Infinity, maxEvents: events });
}

const bench = new Bench({ iterations: SEEDS, time: 0, warmup: false });
bench
  .add('standard scenario, one seed', () => {
    results.push(runSeed({ seed: nextSeed++, scenario }));
  })
  .add(`baseline: ${warm.events} events of trivial machines`, () => baseline(warm.events));
await bench.run();

function meanMs(index: number): number {
  const task = bench.tasks[index];
  const result = task?.result;
  if (!task || !result || result.state !== 'completed')
    throw new Error(`${task?.name ?? index}: did not complete`);
  return result.latency.mean;
}
const cores = Math.max(1, availableParallelism());
// The same pool `npm run sim -- --seeds N --jobs <cores>` uses; its clock starts once every child is loaded and warm.
const pooled = await runPool({
  scenario: scenario.name,
  first: 1_000,
  count: POOLED_SEEDS_PER_CORE * cores,
  jobs: cores,
  warmUp: true,
});
const parallel = {
  ms: pooled.wallMs,
  seeds: pooled.seeds,
  simulatedMs: pooled.results.reduce((sum, r) => sum + r.simulatedMs, 0),
  failures: pooled.results.filter((r) => r.violation).length,
};

const seedMs = meanMs(0);
const baselineMs = meanMs(1);
const simulatedMs = results.reduce((sum, r) => sum + r.simulatedMs, 0) / Math.max(1, results.length);
const events = results.reduce((sum, r) => sum + r.events, 0) / Math.max(1, results.length);
const failures = results.filter((r) => r.violation);

const seedsPerMinute = (parallel.seeds * 60_000) / parallel.ms;
const realTimeFactor = parallel.simulatedMs / parallel.ms;
const oneCoreFactor = simulatedMs / seedMs;
console.log(`standard scenario: ${results.length} seeds, ${failures.length} failing`);
console.log(
  `  per seed:        ${seedMs.toFixed(1)} ms wall, ${(simulatedMs / 1000).toFixed(1)} s simulated, ${events.toFixed(0)} events`,
);
console.log(
  `  one core:        ${(60_000 / seedMs).toFixed(0)} seeds/minute (a fresh process's first seeds)`,
);
console.log(
  `  seeds/minute:    ${seedsPerMinute.toFixed(0)} on ${cores} processes (${parallel.seeds} seeds in ${(parallel.ms / 1000).toFixed(1)} s, ${parallel.failures} failing) (goal ≥ ${GOAL_SEEDS_PER_MINUTE})`,
);
console.log(
  `  real-time factor: ${realTimeFactor.toFixed(1)}x on ${cores} processes (goal ≥ ${GOAL_REAL_TIME_FACTOR}x); one seed on one core: ${oneCoreFactor.toFixed(1)}x`,
);
console.log(`  events/s:        ${((events * 1000) / seedMs).toFixed(0)}`);
console.log(
  `baseline (the world alone, same event count): ${baselineMs.toFixed(1)} ms, ${((events * 1000) / baselineMs).toFixed(0)} events/s`,
);
console.log(`  svc machines and checkers cost ${(seedMs / baselineMs).toFixed(1)}x the bare simulator`);
for (const failure of failures) console.log(`  seed ${failure.seed} failed: ${failure.violation?.invariant}`);

const missed = [
  ...(seedsPerMinute >= GOAL_SEEDS_PER_MINUTE ? [] : ['seeds/minute']),
  ...(realTimeFactor >= GOAL_REAL_TIME_FACTOR ? [] : ['real-time factor']),
];
const met = missed.length === 0;
console.log(met ? 'goals met' : `GOAL MISSED: ${missed.join(', ')}`);
process.exitCode = met ? 0 : GOAL_MISSED;
