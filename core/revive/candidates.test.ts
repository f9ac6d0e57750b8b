import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import fc from 'fast-check';
import { workerKey } from '../domain/index.ts';
import { reviveCandidates, type ReviveCandidate } from './candidates.ts';

const worker = (n: number, rack = '/r1'): ReviveCandidate => ({
  id: { host: `h${n}`, rpcPort: 1, pushPort: 2, fetchPort: 3, replicatePort: 4 },
  networkLocation: rack,
});

const scenario = fc.record({
  workers: fc.array(fc.integer({ min: 0, max: 15 }), { maxLength: 25 }).map((ns) => ns.map((n) => worker(n))),
  excluded: fc
    .uniqueArray(fc.integer({ min: 0, max: 15 }))
    .map((ns) => new Set(ns.map((n) => workerKey(worker(n).id)))),
  shuttingDown: fc
    .uniqueArray(fc.integer({ min: 0, max: 15 }))
    .map((ns) => new Set(ns.map((n) => workerKey(worker(n).id)))),
});

describe('reviveCandidates', () => {
  it('never keeps an excluded or shutting-down worker, and accounts for every worker once', () => {
    fc.assert(
      fc.property(scenario, ({ workers, excluded, shuttingDown }) => {
        const { usable, dropped } = reviveCandidates(workers, { excluded, shuttingDown });
        for (const candidate of usable) {
          const key = workerKey(candidate.id);
          assert.ok(!excluded.has(key) && !shuttingDown.has(key), `${key} survived`);
        }
        for (const { worker: w, reason } of dropped) {
          const key = workerKey(w.id);
          assert.ok(
            reason === 'excluded' ? excluded.has(key) : shuttingDown.has(key) && !excluded.has(key),
            "reason === 'excluded' ? excluded.has(key) : shuttingDown.has(key) && !excluded.has(key)",
          );
        }
        const distinct = [...new Set(workers.map((w) => workerKey(w.id)))];
        const seen = [...usable, ...dropped.map((d) => d.worker)].map((w) => workerKey(w.id));
        assert.deepEqual([...seen].sort(), [...distinct].sort());
        assert.deepEqual(
          usable.map((w) => workerKey(w.id)),
          distinct.filter((key) => !excluded.has(key) && !shuttingDown.has(key)),
          'usable keeps the order the shuffle first used the workers in',
        );
      }),
      { numRuns: 200 },
    );
  });

  it("keeps everyone under the planted bug 'revive-ignores-excluded'", () => {
    const all = [worker(1), worker(2), worker(3)];
    const excluded = new Set([workerKey(worker(1).id)]);
    const shuttingDown = new Set([workerKey(worker(2).id)]);
    assert.equal(reviveCandidates(all, { excluded, shuttingDown }).usable.length, 1);
    const buggy = reviveCandidates(all, { excluded, shuttingDown, plantedBug: 'revive-ignores-excluded' });
    assert.equal(buggy.usable.length, 3);
  });
});
