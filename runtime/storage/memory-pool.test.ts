import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import fc from 'fast-check';
import { MAX_BLOCK, MIN_BLOCK, MemoryPool, blockSizeFor } from './memory-pool.ts';
import type { PoolBlock } from './memory-pool.ts';

const MiB = 1 << 20;
const ARENA_BYTES = 64 * MiB;
const GRANULE_WORDS = MIN_BLOCK / 4;

type Step =
  | { readonly kind: 'allocate'; readonly bytes: number }
  | { readonly kind: 'release'; readonly which: number };

/** Mostly small requests, so that blocks split and merge at every order. */
const REQUEST = fc.oneof(
  fc.integer({ min: 1, max: 2 * MIN_BLOCK }),
  fc.integer({ min: 1, max: 64 * 1024 }),
  fc.integer({ min: 1, max: MAX_BLOCK }),
);

const STEP: fc.Arbitrary<Step> = fc.oneof(
  { weight: 3, arbitrary: REQUEST.map((bytes): Step => ({ kind: 'allocate', bytes })) },
  { weight: 2, arbitrary: fc.nat().map((which): Step => ({ kind: 'release', which })) },
);

interface Lent {
  readonly block: PoolBlock;
  readonly stamp: number;
  /** The block's first granule in the whole pool (arenas laid end to end). */
  readonly granule: number;
}

/**
 * The block's granule, from the arena it lies in (arenas numbered in the order they first appear: the same as the
 * pool's for the one-arena pools of the property).
 */
function granuleOf(block: PoolBlock, arenas: ArrayBufferLike[]): number {
  let arena = arenas.indexOf(block.bytes.buffer);
  if (arena < 0) arena = arenas.push(block.bytes.buffer) - 1;
  return (arena * ARENA_BYTES + block.bytes.byteOffset) / MIN_BLOCK;
}

function words(block: PoolBlock): Uint32Array {
  return new Uint32Array(block.bytes.buffer, block.bytes.byteOffset, block.bytes.length / 4);
}

/** Every granule of every lent block still holds its block's stamp: no other block was lent over it. */
function assertStampsIntact(lent: readonly Lent[]): void {
  for (const { block, stamp } of lent) {
    const view = words(block);
    for (let word = 0; word < view.length; word += GRANULE_WORDS) {
      assert.equal(view[word], stamp, 'a lent block was written through another block');
      assert.equal(view[word + GRANULE_WORDS - 1], stamp, 'a lent block was written through another block');
    }
  }
}

/** Whether some run of `granules` free granules starts at a multiple of `granules` (where a buddy block could be). */
function hasAlignedFreeRun(used: Uint8Array, granules: number): boolean {
  for (let start = 0; start < used.length; start += granules) {
    if (used.subarray(start, start + granules).every((flag) => flag === 0)) return true;
  }
  return false;
}

/** Allocates MAX_BLOCK blocks until the pool refuses; returns how many it lent. */
function drainMaxBlocks(pool: MemoryPool): PoolBlock[] {
  const blocks: PoolBlock[] = [];
  for (let block = pool.allocate(MAX_BLOCK); block !== undefined; block = pool.allocate(MAX_BLOCK)) {
    blocks.push(block);
  }
  return blocks;
}

describe('the memory pool', () => {
  it('property: lends disjoint blocks, counts free bytes exactly, refuses only when no aligned run is free, and merges everything back', () => {
    fc.assert(
      fc.property(
        fc.integer({ min: 0, max: 6 * MiB + 5000 }),
        fc.array(STEP, { maxLength: 120 }),
        (capacityBytes, steps) => {
          const pool = new MemoryPool({ capacityBytes, preTouch: false });
          const capacity = Math.floor(capacityBytes / MAX_BLOCK) * MAX_BLOCK;
          assert.equal(pool.capacityBytes, capacity);
          const used = new Uint8Array(capacity / MIN_BLOCK);
          const arenas: ArrayBufferLike[] = [];
          const lent: Lent[] = [];
          let stamps = 0;
          let lentBytes = 0;
          for (const step of steps) {
            if (step.kind === 'allocate') {
              const size = blockSizeFor(step.bytes);
              const granules = size / MIN_BLOCK;
              const block = pool.allocate(step.bytes);
              if (block === undefined) {
                // A free, aligned run of the size exists only if coalescing failed to merge it into one block.
                assert.equal(hasAlignedFreeRun(used, granules), false, `refused ${size} bytes with room`);
              } else {
                assert.equal(block.bytes.length, size);
                assert.ok(
                  size >= step.bytes && size < 2 * step.bytes + MIN_BLOCK,
                  'size >= step.bytes && size < 2 * step.bytes + MIN_BLOCK',
                );
                const granule = granuleOf(block, arenas);
                assert.equal(granule % granules, 0, 'a block lies at a multiple of its size');
                const stamp = (stamps += 1);
                words(block).fill(stamp);
                used.fill(1, granule, granule + granules);
                lent.push({ block, stamp, granule });
                lentBytes += size;
              }
            } else if (lent.length > 0) {
              const [{ block, granule }] = lent.splice(step.which % lent.length, 1) as [Lent];
              pool.release(block);
              used.fill(0, granule, granule + block.bytes.length / MIN_BLOCK);
              lentBytes -= block.bytes.length;
              assert.throws(() => pool.release(block), /not lent/);
            }
            assert.equal(pool.freeBytes, capacity - lentBytes);
            assert.equal(pool.usedBytes, lentBytes);
            assertStampsIntact(lent);
          }
          for (const { block } of lent) pool.release(block);
          assert.equal(pool.freeBytes, capacity);
          assert.equal(drainMaxBlocks(pool).length, capacity / MAX_BLOCK);
          assert.equal(pool.freeBytes, 0);
        },
      ),
      { numRuns: 200 },
    );
  });

  it('refuses to release a block twice, one lent again since, or one of another pool', () => {
    const pool = new MemoryPool({ capacityBytes: 2 * MiB, preTouch: false });
    const other = new MemoryPool({ capacityBytes: 2 * MiB, preTouch: false });
    const block = pool.allocate(100)!;
    pool.release(block);
    assert.throws(() => pool.release(block), /not lent/);
    const again = pool.allocate(100)!;
    assert.equal(again.bytes.byteOffset, block.bytes.byteOffset, 'the same granule is lent again');
    assert.throws(() => pool.release(block), /not lent/);
    const foreign = other.allocate(100)!;
    assert.throws(() => pool.release(foreign), /not lent/);
    pool.release(again);
    other.release(foreign);
    assert.equal(pool.freeBytes, 2 * MiB);
    assert.equal(other.freeBytes, 2 * MiB);
  });

  it('rounds requests up to a power of two from MIN_BLOCK to MAX_BLOCK and refuses any other size', () => {
    const pool = new MemoryPool({ capacityBytes: MiB, preTouch: false });
    assert.equal(pool.allocate(1)!.bytes.length, MIN_BLOCK);
    assert.equal(pool.allocate(MIN_BLOCK + 1)!.bytes.length, 2 * MIN_BLOCK);
    assert.equal(pool.allocate(300 * 1024)!.bytes.length, 512 * 1024);
    for (const bytes of [0, -1, MAX_BLOCK + 1, Number.NaN]) {
      assert.throws(() => pool.allocate(bytes), RangeError, String(bytes));
    }
  });

  it('rounds its capacity down to whole MAX_BLOCKs in arenas of at most 64 MiB; an empty pool lends nothing', () => {
    const empty = new MemoryPool({ capacityBytes: MAX_BLOCK - 1, preTouch: true });
    assert.equal(empty.capacityBytes, 0);
    assert.equal(empty.allocate(1), undefined);
    assert.throws(() => new MemoryPool({ capacityBytes: -1, preTouch: false }), RangeError);

    const pool = new MemoryPool({ capacityBytes: 130 * MiB + 123, preTouch: false });
    assert.equal(pool.capacityBytes, 130 * MiB);
    const blocks = drainMaxBlocks(pool);
    assert.equal(blocks.length, 130);
    const arenaSizes = [...new Set(blocks.map((block) => block.bytes.buffer))].map(
      (arena) => arena.byteLength,
    );
    assert.deepEqual(arenaSizes, [64 * MiB, 64 * MiB, 2 * MiB]);
  });
});
