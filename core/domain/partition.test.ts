import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import fc from 'fast-check';
import { parseUniqueId, partitionEpochNumber, uniqueId } from './partition.ts';

// Strings drawn from the characters the parse turns on, so that near misses are common rather than rare.
const tricky = fc
  .array(fc.constantFrom('0', '1', '9', '-', '+', ' ', '.', 'e', 'x'), { maxLength: 10 })
  .map((chars) => chars.join(''));

describe('parseUniqueId', () => {
  it('reads back every id uniqueId makes of whole numbers up to 15 digits', () => {
    fc.assert(
      fc.property(
        fc.integer({ min: 0, max: 2 ** 31 - 1 }),
        fc.nat(999_999_999_999_999),
        (partitionId, epoch) => {
          assert.deepEqual(parseUniqueId(uniqueId({ partitionId, epoch })), { partitionId, epoch });
        },
      ),
    );
  });

  it('parses a string only when uniqueId would make exactly that string of what it parsed', () => {
    fc.assert(
      fc.property(fc.oneof(tricky, fc.string()), (text) => {
        const ids = parseUniqueId(text);
        if (ids !== undefined) assert.equal(uniqueId(ids), text);
      }),
      { numRuns: 5_000 },
    );
    for (const text of ['', '-', '1-', '-1', '01-0', '1-00', '+1-0', '1-0-0', '1.5-0', '1e3-0', ' 1-0'])
      assert.equal(parseUniqueId(text), undefined, JSON.stringify(text));
  });
});

describe('partitionEpochNumber', () => {
  it('gives distinct pairs in range distinct exact numbers, and none to a pair out of range', () => {
    const id = fc.integer({ min: 0, max: 2 ** 31 - 1 });
    const epoch = fc.integer({ min: 0, max: 2 ** 21 - 1 });
    fc.assert(
      fc.property(id, epoch, id, epoch, (p1, e1, p2, e2) => {
        const a = partitionEpochNumber(p1, e1)!;
        assert.ok(Number.isSafeInteger(a), `${p1}-${e1} is an exact number`);
        assert.equal(a === partitionEpochNumber(p2, e2), p1 === p2 && e1 === e2);
      }),
    );
    for (const [p, e] of [
      [-1, 0],
      [2 ** 31, 0],
      [0, 2 ** 21],
      [1.5, 0],
      [0, -1],
      [Number.NaN, 0],
    ] as const)
      assert.equal(partitionEpochNumber(p, e), undefined, `${p}-${e}`);
  });
});
