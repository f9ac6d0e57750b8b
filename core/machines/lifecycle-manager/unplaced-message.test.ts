import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import fc from 'fast-check';
import { describeUnplaced } from './unplaced-message.ts';

describe('describeUnplaced', () => {
  it('gives each reason once, with its partitions, in the order the reasons first occurred', () => {
    const failed = new Map([
      [0, { reason: 'no two workers' }],
      [3, { reason: 'reserve failed on w1' }],
      [6, { reason: 'no two workers' }],
    ]);
    assert.equal(
      describeUnplaced(failed, 21),
      '3 of 21 partitions could not be placed: partitions 0, 6: no two workers; partition 3: reserve failed on w1',
    );
  });

  it('lists at most maxIds partitions of a reason and counts the rest', () => {
    const failed = new Map([...Array(10_000).keys()].map((id) => [id, { reason: 'disk full' }]));
    const text = describeUnplaced(failed, 10_000, 3);
    assert.equal(
      text,
      '10000 of 10000 partitions could not be placed: partitions 0, 1, 2 and 9997 more: disk full',
    );
  });

  it('names every reason and accounts for every partition (property)', () => {
    fc.assert(
      fc.property(
        fc.uniqueArray(fc.nat(500), { minLength: 1, maxLength: 60 }),
        fc.array(fc.constantFrom('a', 'b', 'c'), { minLength: 60, maxLength: 60 }),
        fc.integer({ min: 1, max: 10 }),
        (ids, reasons, maxIds) => {
          const failed = new Map(ids.map((id, i) => [id, { reason: `reason-${reasons[i]!}` }]));
          const text = describeUnplaced(failed, 501, maxIds);
          const distinct = new Set([...failed.values()].map((f) => f.reason));
          assert.equal(text.split('; ').length, distinct.size);
          let counted = 0;
          for (const line of text.replace(/^[^:]*: /, '').split('; ')) {
            const match = /^partitions? ([\d, ]+?)(?: and (\d+) more)?: (reason-\w)$/.exec(line);
            assert.ok(match, line);
            const shown = match[1]!.split(', ').map(Number);
            assert.ok(shown.length <= maxIds, 'shown.length <= maxIds');
            for (const id of shown) assert.equal(failed.get(id)?.reason, match[3]);
            counted += shown.length + Number(match[2] ?? 0);
          }
          assert.equal(counted, failed.size);
        },
      ),
      { numRuns: 200 },
    );
  });
});
