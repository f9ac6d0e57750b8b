import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import fc from 'fast-check';
import { isLive, liveRing, nextLive, removeLive } from './live-ring.ts';

/** The obvious model: walk the ring one position at a time. */
function modelNext(live: readonly boolean[], from: number): number {
  const start = from >= live.length ? 0 : from;
  for (let k = 0; k < live.length; k += 1) {
    const position = (start + k) % live.length;
    if (live[position]) return position;
  }
  return -1;
}

describe('live ring', () => {
  it('finds the same next live position as a plain walk, through any removals and lookups', () => {
    fc.assert(
      fc.property(
        fc.array(fc.boolean(), { minLength: 1, maxLength: 40 }),
        fc.array(fc.tuple(fc.boolean(), fc.nat()), { maxLength: 80 }),
        (initial, operations) => {
          const model = [...initial];
          const ring = liveRing(model.length);
          model.forEach((live, i) => {
            if (!live) removeLive(ring, i);
          });
          for (const [isRemoval, raw] of operations) {
            const position = raw % (model.length + 1);
            if (isRemoval && position < model.length) {
              removeLive(ring, position);
              model[position] = false;
            } else {
              assert.equal(nextLive(ring, position), modelNext(model, position));
              assert.equal(isLive(ring, position), model[position] === true);
            }
            assert.equal(ring.live, model.filter(Boolean).length);
          }
        },
      ),
      { numRuns: 300 },
    );
  });

  it('reports -1 on an empty ring and ignores removing a position twice', () => {
    const ring = liveRing(3);
    removeLive(ring, 1);
    removeLive(ring, 1);
    assert.equal(ring.live, 2);
    assert.equal(nextLive(ring, 1), 2);
    removeLive(ring, 0);
    removeLive(ring, 2);
    assert.equal(nextLive(ring, 0), -1);
    assert.equal(nextLive(liveRing(0), 0), -1);
  });
});
