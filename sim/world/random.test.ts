import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import fc from 'fast-check';
import { LazyStream, streamRng } from './random.ts';

describe('random streams', () => {
  it('draw the same numbers whether seeded at once or at the first draw', () => {
    fc.assert(
      fc.property(fc.nat(), fc.string(), fc.nat(20), (seed, purpose, draws) => {
        const eager = streamRng(seed, purpose);
        const lazy = new LazyStream(seed, purpose);
        for (let i = 0; i < draws; i += 1) assert.equal(lazy.next(), eager.next());
      }),
    );
  });

  it('differ by purpose and by seed', () => {
    assert.notEqual(streamRng(1, 'network').next(), streamRng(1, 'faults').next());
    assert.notEqual(streamRng(1, 'network').next(), streamRng(2, 'network').next());
  });
});
