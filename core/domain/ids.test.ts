import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import fc from 'fast-check';
import { idList } from './ids.ts';

describe('idList', () => {
  it('names at most maxIds ids, in order, and counts the rest', () => {
    fc.assert(
      fc.property(
        fc.array(fc.nat(10_000), { minLength: 1, maxLength: 40 }),
        fc.integer({ min: 1, max: 10 }),
        (ids, maxIds) => {
          const text = idList(ids, maxIds);
          const [shown, more] = text.split(' and ');
          assert.deepEqual(shown!.split(', ').map(Number), ids.slice(0, maxIds));
          assert.equal(more, ids.length > maxIds ? `${ids.length - maxIds} more` : undefined);
        },
      ),
    );
    assert.equal(idList([3]), '3');
  });
});
