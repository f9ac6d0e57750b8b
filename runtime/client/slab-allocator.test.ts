import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { slabAllocator } from './slab-allocator.ts';

describe('slabAllocator', () => {
  it('cuts small buffers of exactly their length from shared slabs, never overlapping, and allocates large ones alone', () => {
    const allocate = slabAllocator();
    const cuts = Array.from({ length: 40 }, (_, i) => allocate(4136 + (i % 3)));
    assert.ok(new Set(cuts.map((cut) => cut.buffer)).size < cuts.length / 8, 'chunks share slabs');
    cuts.forEach((cut, i) => cut.fill(i));
    cuts.forEach((cut, i) => {
      assert.equal(cut.length, 4136 + (i % 3));
      assert.ok(
        cut.every((byte) => byte === i),
        `cut ${i} kept its bytes`,
      );
    });
    const large = allocate(64 * 1024);
    assert.equal(large.length, 64 * 1024);
    assert.ok(!cuts.some((cut) => cut.buffer === large.buffer), 'a large buffer has memory of its own');
  });

  it('gives each task its own slabs', () => {
    const [a, b] = [slabAllocator(), slabAllocator()];
    assert.notEqual(a(100).buffer, b(100).buffer);
  });
});
