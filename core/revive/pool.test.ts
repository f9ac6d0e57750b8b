import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import fc from 'fast-check';
import { workerKey } from '../domain/index.ts';
import { replayRng } from '../rng.ts';
import { allocateRevives } from './allocate.ts';
import { candidatePool, reviveCandidates, type ReviveCandidate } from './candidates.ts';

/**
 * Revive candidates beyond the shuffle's own workers (issue 23): a three-worker cluster with replication on that
 * loses one worker must still place every revived pair, on any healthy worker the master reports.
 */
const worker = (n: number, rack = `/r${n % 3}`): ReviveCandidate => ({
  id: { host: `h${n}`, rpcPort: 1, pushPort: 2, fetchPort: 3, replicatePort: 4 },
  networkLocation: rack,
});

const ids = (max: number) => fc.uniqueArray(fc.integer({ min: 0, max }), { maxLength: 10 });
const draws = fc.array(fc.double({ min: 0, max: 1, maxExcluded: true, noNaN: true }), {
  minLength: 1,
  maxLength: 40,
});

const scenario = fc.record({
  shuffle: ids(12),
  cluster: ids(12),
  excluded: ids(12),
  shuttingDown: ids(12),
  replicate: fc.boolean(),
  targets: fc.uniqueArray(fc.integer({ min: 0, max: 200 }), { minLength: 1, maxLength: 12 }),
  draws,
});

describe('candidatePool', () => {
  it('keeps the shuffle workers first and in order, then adds every other worker the master reports', () => {
    fc.assert(
      fc.property(ids(12), ids(12), (shuffle, cluster) => {
        const pool = candidatePool(
          shuffle.map((n) => worker(n)),
          cluster.map((n) => worker(n)),
        );
        const keys = pool.map((candidate) => workerKey(candidate.id));
        assert.deepEqual(
          keys.slice(0, shuffle.length),
          shuffle.map((n) => workerKey(worker(n).id)),
        );
        const expected = new Set([...shuffle, ...cluster].map((n) => workerKey(worker(n).id)));
        assert.deepEqual(new Set(keys), expected);
      }),
    );
  });

  it('places every revive, on healthy workers only, whenever two healthy workers are known (one with replication off)', () => {
    fc.assert(
      fc.property(scenario, (s) => {
        const excluded = new Set(s.excluded.map((n) => workerKey(worker(n).id)));
        const shuttingDown = new Set(s.shuttingDown.map((n) => workerKey(worker(n).id)));
        const pool = candidatePool(
          s.shuffle.map((n) => worker(n)),
          s.cluster.map((n) => worker(n)),
        );
        const healthy = new Set(
          pool.map((c) => workerKey(c.id)).filter((key) => !excluded.has(key) && !shuttingDown.has(key)),
        );
        const candidates = reviveCandidates(pool, { excluded, shuttingDown });
        const result = allocateRevives(
          s.targets.map((partitionId) => ({ partitionId, epoch: 1 })),
          candidates,
          { replicate: s.replicate, clientRelease: '0.6.0', availableTypes: ['HDD'] },
          replayRng(s.draws),
        );
        const needed = s.replicate ? 2 : 1;
        for (const allocation of result) {
          if (healthy.size < needed) {
            assert.equal(allocation.kind, 'failed');
            continue;
          }
          assert.equal(allocation.kind, 'placed', 'enough healthy workers are known');
          if (allocation.kind !== 'placed') continue;
          assert.ok(healthy.has(workerKey(allocation.primary.worker)), 'primary on a healthy worker');
          if (s.replicate) {
            assert.ok(allocation.replica, 'replication is on');
            assert.ok(healthy.has(workerKey(allocation.replica.worker)), 'replica on a healthy worker');
            assert.notEqual(workerKey(allocation.replica.worker), workerKey(allocation.primary.worker));
          }
        }
      }),
    );
  });

  it('survives the loss of one of three workers although the shuffle knew only the lost one and one other', () => {
    const [w0, w1, w2] = [worker(0, '/r0'), worker(1, '/r1'), worker(2, '/r0')];
    const pool = candidatePool([w0, w1], [w0, w1, w2]);
    const candidates = reviveCandidates(pool, {
      excluded: new Set([workerKey(w1.id)]),
      shuttingDown: new Set(),
    });
    const [allocation] = allocateRevives(
      [{ partitionId: 3, epoch: 1 }],
      candidates,
      { replicate: true, clientRelease: '0.6.0', availableTypes: ['HDD'] },
      replayRng([0.5, 0.5]),
    );
    assert.equal(allocation?.kind, 'placed');
    const workers =
      allocation?.kind === 'placed' ? [allocation.primary.worker, allocation.replica!.worker] : [];
    assert.deepEqual(new Set(workers.map(workerKey)), new Set([workerKey(w0.id), workerKey(w2.id)]));
  });
});
