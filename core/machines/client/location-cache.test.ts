import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import fc from 'fast-check';
import type { PartitionLocation } from '../../domain/index.ts';
import { LocationCache } from './location-cache.ts';

const at = (partitionId: number, epoch: number): PartitionLocation => ({
  partitionId,
  epoch,
  worker: { host: `w${epoch}`, rpcPort: 1, pushPort: 2, fetchPort: 3, replicatePort: 4 },
  mode: 'PRIMARY',
  storage: { type: 'HDD', mountPoint: '', availableTypes: 2 },
});

describe('the locations an executor holds', () => {
  it('property: per partition the newest epoch remembered, in any order; none until every partition is known', () => {
    const partitions = 4;
    const location = fc
      .record({ partitionId: fc.nat({ max: partitions - 1 }), epoch: fc.nat({ max: 5 }) })
      .map(({ partitionId, epoch }) => at(partitionId, epoch));
    fc.assert(
      fc.property(fc.array(fc.array(location, { maxLength: 6 }), { maxLength: 5 }), (batches) => {
        const cache = new LocationCache();
        for (const batch of batches) cache.remember('app', 3, batch);
        const all = batches.flat();
        const newest = new Map<number, number>();
        for (const { partitionId, epoch } of all) {
          newest.set(partitionId, Math.max(epoch, newest.get(partitionId) ?? -1));
        }
        const found = cache.lookup('app', 3, partitions);
        if (newest.size < partitions) {
          assert.equal(found, undefined, 'a partition is missing');
          return;
        }
        assert.deepEqual(
          found?.map((l) => [l.partitionId, l.epoch]),
          [...Array(partitions).keys()].map((p) => [p, newest.get(p)]),
        );
      }),
    );
  });

  it('keeps shuffles and applications apart, and forgets an unregistered shuffle', () => {
    const cache = new LocationCache();
    cache.remember('app', 1, [at(0, 0)]);
    cache.remember('other', 1, [at(0, 2)]);
    assert.equal(cache.lookup('app', 2, 1), undefined);
    assert.equal(cache.lookup('app', 1, 1)?.[0]?.epoch, 0);
    assert.equal(cache.lookup('other', 1, 1)?.[0]?.epoch, 2);
    cache.forget('app', 1);
    assert.equal(cache.lookup('app', 1, 1), undefined);
    assert.equal(cache.size, 1);
  });
});
