import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import fc from 'fast-check';
import type { PartitionLocation } from '../../domain/index.ts';
import { copiesByPartition } from './stage-end.ts';

const worker = { host: 'w', rpcPort: 1, pushPort: 2, fetchPort: 3, replicatePort: 4 };

const copy = (partitionId: number, epoch: number): PartitionLocation => ({
  partitionId,
  epoch,
  worker,
  mode: epoch % 2 === 0 ? 'PRIMARY' : 'REPLICA',
  storage: { type: 'MEMORY', mountPoint: '', availableTypes: 0 },
});

describe('copiesByPartition', () => {
  it("gives each partition of the shuffle its reserved copies in reserve order, and no other's", () => {
    fc.assert(
      fc.property(
        fc.integer({ min: 0, max: 40 }),
        // Partition ids past the shuffle, negative and fractional ones included: they belong to no group.
        fc.array(fc.tuple(fc.oneof(fc.integer({ min: -2, max: 45 }), fc.constant(1.5)), fc.nat(5)), {
          maxLength: 120,
        }),
        (numPartitions, drawn) => {
          const reserved = drawn.map(([p, e]) => copy(p, e));
          const { ordered, starts } = copiesByPartition(reserved, numPartitions);
          assert.equal(starts.length, numPartitions + 1);
          assert.equal(starts[0], 0);
          assert.equal(starts[numPartitions], ordered.length);
          for (let p = 0; p < numPartitions; p += 1) {
            const expected = reserved.filter((c) => c.partitionId === p);
            // The very objects, in the order they were reserved.
            assert.deepEqual(ordered.slice(starts[p], starts[p + 1]), expected);
            expected.forEach((c, i) => assert.equal(ordered[starts[p]! + i], c));
          }
        },
      ),
    );
  });
});
