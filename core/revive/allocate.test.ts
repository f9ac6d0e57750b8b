import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import fc from 'fast-check';
import { KNOWN_RELEASES, type Release } from '../release/version.ts';
import { maskOf, sameWorker, STORAGE_TYPES, workerKey } from '../domain/index.ts';
import { replayRng, type Rng } from '../rng.ts';
import { allocateRevives, type ReviveAllocation, type ReviveAllocationOptions } from './allocate.ts';
import { reviveCandidates, type ReviveCandidate } from './candidates.ts';

const worker = (n: number, rack: string): ReviveCandidate => ({
  id: { host: `h${n}`, rpcPort: 1, pushPort: 2, fetchPort: 3, replicatePort: 4 },
  networkLocation: rack,
});

const workersArb = fc
  .uniqueArray(fc.integer({ min: 0, max: 30 }), { minLength: 0, maxLength: 12 })
  .chain((ns) =>
    fc.tuple(...ns.map((n) => fc.constantFrom('/r1', '/r2', '/r3').map((rack) => worker(n, rack)))),
  );

const drawsArb = fc.array(fc.double({ min: 0, max: 1, maxExcluded: true, noNaN: true }), {
  minLength: 1,
  maxLength: 40,
});

const targetsArb = fc
  .uniqueArray(fc.integer({ min: 0, max: 1000 }), { minLength: 1, maxLength: 20 })
  .chain((ids) =>
    fc.tuple(
      ...ids.map((partitionId) => fc.integer({ min: 1, max: 50 }).map((epoch) => ({ partitionId, epoch }))),
    ),
  );

const options = (overrides: Partial<ReviveAllocationOptions> = {}): ReviveAllocationOptions => ({
  replicate: true,
  clientRelease: '0.6.0',
  availableTypes: ['HDD'],
  ...overrides,
});

const placed = (allocations: readonly ReviveAllocation[]) =>
  allocations.flatMap((allocation) => (allocation.kind === 'placed' ? [allocation] : []));

describe('allocateRevives', () => {
  it('puts the replica on another worker than its primary, on another rack whenever one survives', () => {
    fc.assert(
      fc.property(workersArb, targetsArb, drawsArb, (workers, targets, draws) => {
        const candidates = reviveCandidates(workers, { excluded: new Set(), shuttingDown: new Set() });
        const result = allocateRevives(targets, candidates, options(), replayRng(draws));
        assert.equal(result.length, targets.length);
        if (new Set(workers.map((w) => workerKey(w.id))).size < 2) {
          assert.ok(
            result.every((r) => r.kind === 'failed' && r.status === 'SLOT_NOT_AVAILABLE'),
            "result.every((r) => r.kind === 'failed' && r.status === 'SLOT_NOT_AVAILABLE')",
          );
          return;
        }
        const rackOf = new Map(workers.map((w) => [workerKey(w.id), w.networkLocation]));
        for (const { primary, replica } of placed(result)) {
          assert.ok(replica, 'replication is on');
          assert.ok(!sameWorker(primary.worker, replica.worker), 'replica on its primary worker');
          const primaryRack = rackOf.get(workerKey(primary.worker));
          const otherRackExists = workers.some((w) => w.networkLocation !== primaryRack);
          if (otherRackExists) assert.notEqual(rackOf.get(workerKey(replica.worker)), primaryRack);
          const { peer: _replicaPeer, ...replicaAlone } = replica;
          const { peer: _primaryPeer, ...primaryAlone } = primary;
          assert.deepEqual(primary.peer, replicaAlone, 'the primary carries its replica as peer');
          assert.deepEqual(replica.peer, primaryAlone, 'the replica carries its primary as peer');
          assert.equal(primary.mode, 'PRIMARY');
          assert.equal(replica.mode, 'REPLICA');
        }
      }),
      { numRuns: 300 },
    );
  });

  it('places every target on a surviving candidate, with the epoch it was given', () => {
    fc.assert(
      fc.property(
        workersArb,
        fc.uniqueArray(fc.integer({ min: 0, max: 30 })),
        targetsArb,
        drawsArb,
        fc.boolean(),
        (workers, excludedNs, targets, draws, replicate) => {
          const excluded = new Set(excludedNs.map((n) => workerKey(worker(n, '').id)));
          const candidates = reviveCandidates(workers, { excluded, shuttingDown: new Set() });
          const result = allocateRevives(targets, candidates, options({ replicate }), replayRng(draws));
          const usable = new Set(candidates.usable.map((w) => workerKey(w.id)));
          assert.deepEqual(
            result.map((r) => r.partitionId),
            targets.map((t) => t.partitionId),
          );
          result.forEach((allocation, i) => {
            if (allocation.kind === 'failed') {
              assert.ok(usable.size < (replicate ? 2 : 1), 'failed although enough candidates survive');
              return;
            }
            for (const location of [allocation.primary, allocation.replica ?? allocation.primary]) {
              assert.ok(usable.has(workerKey(location.worker)), 'placed on an excluded worker');
              assert.equal(location.epoch, targets[i]!.epoch);
              assert.equal(location.storage.mountPoint, '');
            }
            assert.equal(allocation.replica === undefined, !replicate);
          });
        },
      ),
      { numRuns: 300 },
    );
  });

  it("gives the revived location the storage of the client's release (rules 3 and 4)", () => {
    const releaseArb = fc.constantFrom(...KNOWN_RELEASES);
    const typesArb = fc.uniqueArray(fc.constantFrom(...STORAGE_TYPES), { minLength: 1 });
    fc.assert(
      fc.property(releaseArb, typesArb, drawsArb, (clientRelease: Release, availableTypes, draws) => {
        const candidates = reviveCandidates([worker(1, '/r1'), worker(2, '/r2')], {
          excluded: new Set(),
          shuttingDown: new Set(),
        });
        const [allocation] = allocateRevives(
          [{ partitionId: 7, epoch: 1 }],
          candidates,
          options({ clientRelease, availableTypes }),
          replayRng(draws),
        );
        assert.equal(allocation?.kind, 'placed');
        const before060 = [
          '0.2.0',
          '0.2.1',
          '0.3.0',
          '0.3.1',
          '0.3.2',
          '0.4.0',
          '0.4.1',
          '0.5.0',
          '0.5.1',
        ].includes(clientRelease);
        const expected = before060
          ? { type: 'MEMORY', mountPoint: '', availableTypes: 0 }
          : { type: availableTypes[0], mountPoint: '', availableTypes: maskOf(availableTypes) };
        if (allocation?.kind !== 'placed') return;
        assert.deepEqual(allocation.primary.storage, expected);
        assert.deepEqual(allocation.replica?.storage, expected);
      }),
      { numRuns: 200 },
    );
  });

  it('is deterministic for a fixed stream of draws', () => {
    fc.assert(
      fc.property(workersArb, targetsArb, drawsArb, (workers, targets, draws) => {
        const candidates = reviveCandidates(workers, { excluded: new Set(), shuttingDown: new Set() });
        assert.deepEqual(
          allocateRevives(targets, candidates, options(), replayRng(draws)),
          allocateRevives(targets, candidates, options(), replayRng(draws)),
        );
      }),
      { numRuns: 100 },
    );
  });

  it('answers SLOT_NOT_AVAILABLE with the workers passed over and why', () => {
    const all = [worker(1, '/r1'), worker(2, '/r1'), worker(3, '/r2')];
    const candidates = reviveCandidates(all, {
      excluded: new Set([workerKey(all[0]!.id)]),
      shuttingDown: new Set([workerKey(all[1]!.id)]),
    });
    const [result] = allocateRevives([{ partitionId: 3, epoch: 2 }], candidates, options(), replayRng([0.5]));
    assert.deepEqual(result, {
      kind: 'failed',
      partitionId: 3,
      status: 'SLOT_NOT_AVAILABLE',
      reason:
        "revive needs two workers (replication is on) but 1 of the known workers (the shuffle's and those the master " +
        'reports available) is usable; passed over: ' +
        'h1:1:2:3:4 (excluded), h2:1:2:3:4 (shutting-down); check why those workers were excluded or are shutting down',
    });
    const single = allocateRevives(
      [{ partitionId: 3, epoch: 2 }],
      candidates,
      options({ replicate: false }),
      replayRng([0.5]),
    );
    assert.equal(single[0]?.kind, 'placed');
  });

  it('falls back to a worker on the same rack when every candidate shares one', () => {
    const candidates = reviveCandidates([worker(1, '/r1'), worker(2, '/r1')], {
      excluded: new Set(),
      shuttingDown: new Set(),
    });
    for (const draw of [0, 0.3, 0.6, 0.99]) {
      const [result] = placed(
        allocateRevives([{ partitionId: 0, epoch: 1 }], candidates, options(), replayRng([draw])),
      );
      assert.ok(
        result?.replica && !sameWorker(result.primary.worker, result.replica.worker),
        'result?.replica && !sameWorker(result.primary.worker, result.replica.worker)',
      );
    }
  });

  it("may put the replica on the primary's worker under the planted bug 'replica-on-primary'", () => {
    const candidates = reviveCandidates([worker(1, '/r1'), worker(2, '/r2')], {
      excluded: new Set(),
      shuttingDown: new Set(),
    });
    const rng: Rng = replayRng([0.1, 0.1]);
    const [result] = placed(
      allocateRevives(
        [{ partitionId: 0, epoch: 1 }],
        candidates,
        options({ plantedBug: 'replica-on-primary' }),
        rng,
      ),
    );
    assert.ok(
      result?.replica && sameWorker(result.primary.worker, result.replica.worker),
      'result?.replica && sameWorker(result.primary.worker, result.replica.worker)',
    );
  });
});
