import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { runPool } from './pool.ts';
import { runSeed, type RunResult } from './run.ts';
import { SCENARIOS } from './scenarios.ts';

/** What must not depend on where a seed ran. */
function essence(result: RunResult) {
  return {
    seed: result.seed,
    violation: result.violation,
    simulatedMs: result.simulatedMs,
    events: result.events,
    schedule: result.schedule,
    report: result.report,
  };
}

describe('seed pool (child processes)', () => {
  it('gives every seed of the range, in seed order, exactly the result of running it in this process', async () => {
    const outcome = await runPool({ scenario: 'swarm', first: 40, count: 6, jobs: 2 });
    assert.deepEqual(
      outcome.results.map((r) => r.seed),
      [40, 41, 42, 43, 44, 45],
    );
    for (const pooled of outcome.results) {
      const here = runSeed({ seed: pooled.seed, scenario: SCENARIOS.swarm! });
      assert.deepEqual(essence(pooled), essence(here), `seed ${pooled.seed}`);
    }
  });

  it('stops handing out seeds when told to, and reports a planted bug the children ran with', async () => {
    const seen: RunResult[] = [];
    const outcome = await runPool({
      scenario: 'swarm',
      plantedBug: 'replica-on-primary',
      first: 0,
      count: 400,
      jobs: 2,
      onResult: (result) => {
        seen.push(result);
        return result.violation === undefined;
      },
    });
    const failing = outcome.results.filter((r) => r.violation);
    assert.ok(failing.length >= 1, 'the planted bug was found');
    assert.equal(failing[0]!.plantedBug, 'replica-on-primary');
    assert.equal(failing[0]!.violation?.invariant, 'replica-placement');
    // The first failure reported stopped the hand-out: beyond it, only the other child's seed was under way.
    const trigger = seen.find((r) => r.violation)!;
    assert.ok(
      outcome.results.length <= trigger.seed + 2,
      `${outcome.results.length} seeds after ${trigger.seed}`,
    );
    assert.deepEqual(
      outcome.results.map((r) => r.seed),
      [...Array(outcome.results.length).keys()],
    );
    assert.equal(seen.length, outcome.results.length);
    assert.equal(outcome.seeds, outcome.results.length);
  });

  it('keeps no results when told not to, and still counts and reports every seed', async () => {
    const seen: number[] = [];
    const outcome = await runPool({
      scenario: 'swarm',
      first: 7,
      count: 4,
      jobs: 2,
      keepResults: false,
      onResult: (result) => {
        seen.push(result.seed);
      },
    });
    assert.equal(outcome.seeds, 4);
    assert.deepEqual(outcome.results, []);
    assert.deepEqual(
      seen.sort((a, b) => a - b),
      [7, 8, 9, 10],
    );
  });

  it('refuses a pool without processes, or of an unknown scenario, before starting any', async () => {
    await assert.rejects(runPool({ scenario: 'swarm', first: 0, count: 1, jobs: 0 }), /--jobs must be/);
    await assert.rejects(
      runPool({ scenario: 'calm-sea', first: 0, count: 1, jobs: 2 }),
      /'calm-sea' is not a scenario; expected one of .*swarm/,
    );
  });
});
