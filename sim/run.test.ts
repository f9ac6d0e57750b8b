import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import fc from 'fast-check';
import { runSeed } from './run.ts';
import { SCENARIOS } from './scenarios.ts';

const swarm = SCENARIOS.swarm!;

describe('runSeed', () => {
  it('replays a seed to the identical trace in the same process, whatever ran in between', () => {
    // Machines update their state in place (core/machines/machine.ts) and core/release memoises: a state or a
    // cache leaking from one run into the next would show up as a different trace on the second run.
    fc.assert(
      fc.property(fc.nat(10_000), fc.nat(10_000), (seed, other) => {
        const first = runSeed({ seed, scenario: swarm, trace: true });
        runSeed({ seed: other, scenario: swarm });
        const again = runSeed({ seed, scenario: swarm, trace: true });
        assert.ok(first.trace.length > 0, 'first.trace.length > 0');
        assert.equal(again.trace, first.trace);
        assert.equal(again.events, first.events);
        assert.deepEqual(again.violation, first.violation);
      }),
      { numRuns: 8 },
    );
  });
});
