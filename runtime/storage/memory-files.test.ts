import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import fc from 'fast-check';
import { ioErrorOf } from './io-error.ts';
import { MemoryFiles } from './memory-files.ts';
import { MAX_BLOCK, MIN_BLOCK, MemoryPool } from './memory-pool.ts';

const KiB = 1024;
const MiB = 1 << 20;
const IDS = ['s-1/a', 's-1/b', 's-1/c', 's-2/a'] as const;

type Op =
  | { readonly kind: 'create'; readonly id: string }
  /** `calls` appends of chunks of `sizes` (each with bytes of its own): a push, filling the pool quickly. */
  | {
      readonly kind: 'append';
      readonly id: string;
      readonly sizes: readonly number[];
      readonly calls: number;
    }
  | { readonly kind: 'read'; readonly id: string; readonly offset: number; readonly length: number }
  | { readonly kind: 'flush'; readonly id: string }
  | { readonly kind: 'remove'; readonly id: string }
  | { readonly kind: 'contents'; readonly id: string }
  | { readonly kind: 'checkAll' };

const ID = fc.constantFrom(...IDS);
/** Empty, tiny, page-sized and large chunks: they fill a block's room, cross block ends and need new blocks. */
const CHUNK_SIZE = fc.oneof(fc.integer({ min: 0, max: 64 }), fc.integer({ min: 0, max: 3 * MIN_BLOCK }), {
  weight: 3,
  arbitrary: fc.integer({ min: 0, max: 300 * KiB }),
});
/** Offsets and lengths around the sizes files reach, so that reads start anywhere and end short too. */
const POSITION = fc.oneof(fc.nat(5000), fc.nat(2 * MiB));

const OP: fc.Arbitrary<Op> = fc.oneof(
  { weight: 2, arbitrary: ID.map((id): Op => ({ kind: 'create', id })) },
  {
    weight: 6,
    arbitrary: fc
      .tuple(ID, fc.array(CHUNK_SIZE, { maxLength: 4, size: 'max' }), fc.integer({ min: 1, max: 8 }))
      .map(([id, sizes, calls]): Op => ({ kind: 'append', id, sizes, calls })),
  },
  {
    weight: 3,
    arbitrary: fc
      .tuple(ID, POSITION, POSITION)
      .map(([id, offset, length]): Op => ({ kind: 'read', id, offset, length })),
  },
  { weight: 1, arbitrary: ID.map((id): Op => ({ kind: 'flush', id })) },
  { weight: 1, arbitrary: ID.map((id): Op => ({ kind: 'remove', id })) },
  { weight: 1, arbitrary: ID.map((id): Op => ({ kind: 'contents', id })) },
  { weight: 1, arbitrary: fc.constant<Op>({ kind: 'checkAll' }) },
);

/** Pseudo-random bytes (xorshift) that chunks are cut from. */
const PATTERN = (() => {
  const words = new Uint32Array(MiB); // 4 MiB
  let state = 2463534242;
  for (let index = 0; index < words.length; index += 1) {
    state ^= state << 13;
    state ^= state >>> 17;
    state ^= state << 5;
    words[index] = state;
  }
  return new Uint8Array(words.buffer);
})();

/**
 * A chunk of its own (a copy) whose bytes differ from position to position and from chunk to chunk (a window of
 * PATTERN chosen by `seed`), so that a read from the wrong offset, the wrong block or another file's block shows.
 */
function chunkOf(size: number, seed: number): Uint8Array {
  const start = (seed * 104729) % (PATTERN.length - size + 1);
  return PATTERN.slice(start, start + size);
}

/** The model: each file as one plain concatenation of what was appended to it (grown by doubling). */
class Model {
  private readonly stored = new Map<string, { buffer: Buffer; length: number }>();

  has(id: string): boolean {
    return this.stored.has(id);
  }

  ids(): string[] {
    return [...this.stored.keys()];
  }

  create(id: string): void {
    this.stored.set(id, { buffer: Buffer.alloc(0), length: 0 });
  }

  remove(id: string): void {
    this.stored.delete(id);
  }

  append(id: string, chunks: readonly Uint8Array[]): void {
    const file = this.stored.get(id)!;
    for (const chunk of chunks) {
      if (file.length + chunk.length > file.buffer.length) {
        const grown = Buffer.allocUnsafe(Math.max(2 * file.buffer.length, file.length + chunk.length));
        file.buffer.copy(grown, 0, 0, file.length);
        file.buffer = grown;
      }
      file.buffer.set(chunk, file.length);
      file.length += chunk.length;
    }
  }

  /** The file's bytes (a view: valid until the next append). */
  bytesOf(id: string): Buffer {
    const file = this.stored.get(id)!;
    return file.buffer.subarray(0, file.length);
  }

  get bytes(): number {
    let total = 0;
    for (const file of this.stored.values()) total += file.length;
    return total;
  }
}

async function failureOf(work: Promise<unknown>): Promise<string> {
  try {
    await work;
    return 'ok';
  } catch (error) {
    return ioErrorOf(error);
  }
}

async function assertSameFile(files: MemoryFiles, model: Model, id: string): Promise<void> {
  const expected = model.bytesOf(id);
  const read = await files.read(id, 0, expected.length + 1);
  assert.ok(Buffer.from(read).equals(expected), `file ${id} differs from what was appended to it`);
}

async function apply(files: MemoryFiles, model: Model, op: Op, seed: number): Promise<void> {
  if (op.kind === 'checkAll') {
    for (const id of model.ids()) await assertSameFile(files, model, id);
    return;
  }
  const missing = !model.has(op.id);
  switch (op.kind) {
    case 'create':
      assert.equal(await failureOf(files.create(op.id)), missing ? 'ok' : 'EXISTS');
      if (missing) model.create(op.id);
      return;
    case 'append': {
      for (let call = 0; call < op.calls; call += 1) {
        const chunks: Uint8Array[] = op.sizes.map((size, index) =>
          chunkOf(size, (seed * 8 + call) * 4 + index),
        );
        assert.equal(await failureOf(files.append(op.id, chunks)), missing ? 'NOT_FOUND' : 'ok');
        if (!missing) model.append(op.id, chunks);
      }
      return;
    }
    case 'read': {
      if (missing) return assert.equal(await failureOf(files.read(op.id, op.offset, op.length)), 'NOT_FOUND');
      const read = await files.read(op.id, op.offset, op.length);
      const expected = model.bytesOf(op.id);
      const want = expected.subarray(Math.min(op.offset, expected.length), op.offset + op.length);
      assert.ok(Buffer.from(read).equals(want), `read ${op.length} at ${op.offset} of ${op.id}`);
      return;
    }
    case 'flush':
      assert.equal(await failureOf(files.flush(op.id)), missing ? 'NOT_FOUND' : 'ok');
      if (!missing) await assertSameFile(files, model, op.id);
      return;
    case 'remove':
      await files.remove(op.id);
      model.remove(op.id);
      return;
    case 'contents': {
      if (missing) return assert.equal(await failureOf(files.contents(op.id)), 'NOT_FOUND');
      const views = await files.contents(op.id);
      assert.ok(
        views.every((view) => view.length > 0),
        'views.every((view) => view.length > 0)',
      );
      assert.ok(Buffer.concat(views).equals(model.bytesOf(op.id)), `contents of ${op.id}`);
      return;
    }
  }
}

/** Every MAX_BLOCK of the pool can be lent at once: all blocks came back and merged. Gives them back after. */
function assertWhollyFree(pool: MemoryPool): void {
  assert.equal(pool.freeBytes, pool.capacityBytes);
  const blocks = [];
  for (let block = pool.allocate(MAX_BLOCK); block !== undefined; block = pool.allocate(MAX_BLOCK)) {
    blocks.push(block);
  }
  assert.equal(blocks.length, pool.capacityBytes / MAX_BLOCK);
  for (const block of blocks) pool.release(block);
}

describe('memory files', () => {
  it('property: with a small pool, reads, contents and flushes match a model, also past the pool into overflow', async () => {
    let overflowed = 0;
    await fc.assert(
      fc.asyncProperty(
        fc.integer({ min: 4, max: 8 }),
        fc.array(OP, { maxLength: 60, size: 'max' }),
        async (poolMiB, ops) => {
          const pool = new MemoryPool({ capacityBytes: poolMiB * MiB, preTouch: false });
          const files = new MemoryFiles(pool);
          const model = new Model();
          // Files exist from the start, so that a run's appends fill the pool (and go past it) often.
          for (const id of IDS) await apply(files, model, { kind: 'create', id }, 0);
          for (const [index, op] of ops.entries()) {
            await apply(files, model, op, index + 1);
            assert.equal(files.bytes, model.bytes);
            assert.equal(pool.usedBytes + pool.freeBytes, pool.capacityBytes);
          }
          for (const id of model.ids()) await assertSameFile(files, model, id);
          if (files.overflowBlocks > 0) overflowed += 1;
          for (const id of IDS) await files.remove(id);
          assert.equal(files.bytes, 0);
          assert.equal(files.overflowBytes, 0);
          assertWhollyFree(pool);
        },
      ),
      { numRuns: 60 },
    );
    assert.ok(overflowed > 0, 'some runs went past the pool');
  });

  it('property: without a pool, matches the same model', async () => {
    await fc.assert(
      fc.asyncProperty(fc.array(OP, { maxLength: 30 }), async (ops) => {
        const files = new MemoryFiles();
        const model = new Model();
        for (const [index, op] of ops.entries()) await apply(files, model, op, index + 1);
        for (const id of model.ids()) await assertSameFile(files, model, id);
        assert.equal(files.bytes, model.bytes);
        assert.equal(files.overflowBlocks, 0, 'without a pool nothing overflows');
      }),
      { numRuns: 30 },
    );
  });

  it('property: a committed file wastes less than half of its last block, and none of the others', async () => {
    await fc.assert(
      fc.asyncProperty(
        fc.array(fc.array(CHUNK_SIZE, { maxLength: 3 }), { maxLength: 12 }),
        async (appends) => {
          const pool = new MemoryPool({ capacityBytes: 16 * MiB, preTouch: false });
          const files = new MemoryFiles(pool);
          await files.create('f');
          for (const [index, sizes] of appends.entries()) {
            await files.append(
              'f',
              sizes.map((size) => chunkOf(size, index)),
            );
          }
          await files.flush('f');
          assert.equal(files.overflowBlocks, 0);
          const views = await files.contents('f');
          if (views.length === 0) return assert.equal(pool.usedBytes, 0);
          // Every block but the last is full, so the pool's used bytes beyond the file are the last block's free room.
          const lastUsed = views.at(-1)!.length;
          const waste = pool.usedBytes - files.bytes;
          const lastBlock = lastUsed + waste;
          assert.equal(lastBlock & (lastBlock - 1), 0, 'the last block is a power of two');
          assert.ok(
            lastBlock === MIN_BLOCK || waste < lastBlock / 2,
            `${waste} free in a block of ${lastBlock}`,
          );
        },
      ),
      { numRuns: 100 },
    );
  });

  it('copies what is appended: changing the written buffer later changes nothing', async () => {
    const files = new MemoryFiles(new MemoryPool({ capacityBytes: MiB, preTouch: false }));
    const written = new TextEncoder().encode('abcd');
    await files.create('f');
    await files.append('f', [written]);
    written[0] = 'z'.charCodeAt(0);
    assert.equal(new TextDecoder().decode(await files.read('f', 0, 4)), 'abcd');
  });

  it('gives a small file a small block, and grows a large one in blocks of up to MAX_BLOCK', async () => {
    const pool = new MemoryPool({ capacityBytes: 16 * MiB, preTouch: false });
    const files = new MemoryFiles(pool);
    for (let index = 0; index < 1000; index += 1) {
      await files.create(`tiny-${index}`);
      await files.append(`tiny-${index}`, [chunkOf(100, index)]);
    }
    assert.equal(pool.usedBytes, 1000 * MIN_BLOCK);
    for (let index = 0; index < 1000; index += 1) await files.remove(`tiny-${index}`);

    await files.create('large');
    for (let index = 0; index < 40; index += 1) await files.append('large', [chunkOf(64 * KiB, index)]);
    // Each new block at least as large as the file: 64 KiB, 64 KiB, 128 KiB, 256 KiB, 512 KiB, then 1 MiB blocks.
    assert.equal(pool.usedBytes, 3 * MiB);
    await files.flush('large');
    assert.equal(pool.usedBytes, 2 * MiB + 512 * KiB);
  });

  it('moves a committed tail of 10 KiB out of a 1 MiB block into a 16 KiB one', async () => {
    const pool = new MemoryPool({ capacityBytes: 4 * MiB, preTouch: false });
    const files = new MemoryFiles(pool);
    const data = chunkOf(MAX_BLOCK + 10 * KiB, 7);
    await files.create('f');
    await files.append('f', [data]);
    assert.equal(pool.usedBytes, 2 * MAX_BLOCK);
    await files.flush('f');
    assert.equal(pool.usedBytes, MAX_BLOCK + 16 * KiB);
    assert.ok(
      Buffer.from(await files.read('f', 0, data.length)).equals(data),
      "Buffer.from(await files.read('f', 0, data.length)).equals(data)",
    );
  });

  it('keeps a committed tail in its pool block rather than move it into an overflow block', async () => {
    const pool = new MemoryPool({ capacityBytes: 2 * MiB, preTouch: false });
    const files = new MemoryFiles(pool);
    await files.create('f');
    await files.append('f', [chunkOf(MAX_BLOCK + 10 * KiB, 5)]);
    assert.equal(pool.freeBytes, 0);
    await files.flush('f');
    assert.equal(files.overflowBlocks, 0);
    assert.equal(pool.usedBytes, 2 * MAX_BLOCK);
  });

  it('counts overflow blocks when the pool is exhausted and drops them on remove', async () => {
    const pool = new MemoryPool({ capacityBytes: MiB, preTouch: false });
    const files = new MemoryFiles(pool);
    const data = chunkOf(3 * MiB, 3);
    await files.create('f');
    await files.append('f', [data]);
    assert.equal(files.overflowBytes, 2 * MiB);
    assert.equal(files.overflowBlocks, 2);
    assert.equal(pool.usedBytes, MiB);
    assert.ok(
      Buffer.from(await files.read('f', 0, data.length)).equals(data),
      "Buffer.from(await files.read('f', 0, data.length)).equals(data)",
    );
    await files.remove('f');
    assert.equal(files.overflowBytes, 0);
    assert.equal(files.overflowBlocks, 2, 'the count of overflow blocks ever made stays');
    assert.equal(pool.freeBytes, MiB);
  });
});
