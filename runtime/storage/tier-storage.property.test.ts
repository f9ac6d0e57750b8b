import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import fc from 'fast-check';
import type { BatchableIo, FileRef, IoCompletion, IoError } from '../../core/machines/effects.ts';
import { MemoryPool } from './memory-pool.ts';
import { TierStorage } from './tier-storage.ts';
import { dfsFile, diskFile, makeDir, makeTempRoot, memoryFile, removeTempRoot } from './testing.ts';

/**
 * Random sequences of file operations, issued the way the driver issues them (batches, single operations and
 * deletes, often without waiting for the earlier ones), must complete exactly as a plain in-memory model applying
 * them one at a time says: that is "each as if issued alone, in order", on every tier.
 */
const DISK = '/mnt/d1';
const IDS = ['s-1/a', 's-1/b', 'probe'] as const;
const PLACES = ['memory', 'disk', 'dfs'] as const;
type PlaceName = (typeof PLACES)[number];

function refOf(place: PlaceName, id: string): FileRef {
  if (place === 'memory') return memoryFile(id);
  return place === 'disk' ? diskFile(id, DISK) : dfsFile(id);
}

const REF = fc
  .tuple(fc.constantFrom(...PLACES), fc.constantFrom(...IDS))
  .map(([place, id]) => refOf(place, id));

type Op =
  | { readonly kind: 'createFile'; readonly file: FileRef }
  | {
      readonly kind: 'write';
      readonly file: FileRef;
      readonly bytes: Uint8Array;
      readonly more?: readonly Uint8Array[];
    }
  | { readonly kind: 'flush'; readonly file: FileRef }
  | { readonly kind: 'read'; readonly file: FileRef; readonly offset: number; readonly length: number }
  | { readonly kind: 'moveFile'; readonly file: FileRef; readonly to: FileRef };

const OP: fc.Arbitrary<Op> = fc.oneof(
  { weight: 3, arbitrary: REF.map((file): Op => ({ kind: 'createFile', file })) },
  {
    weight: 4,
    arbitrary: fc
      .tuple(
        REF,
        fc.uint8Array({ minLength: 0, maxLength: 12 }),
        // Now and then a write of several batches in one operation, as the worker issues them for a disk file.
        fc.option(fc.array(fc.uint8Array({ minLength: 0, maxLength: 8 }), { minLength: 1, maxLength: 3 }), {
          nil: undefined,
        }),
      )
      .map(([file, bytes, more]): Op => ({
        kind: 'write',
        file,
        bytes,
        ...(more === undefined ? {} : { more }),
      })),
  },
  { weight: 1, arbitrary: REF.map((file): Op => ({ kind: 'flush', file })) },
  {
    weight: 3,
    arbitrary: fc
      .tuple(REF, fc.nat(40), fc.nat(40))
      .map(([file, offset, length]): Op => ({ kind: 'read', file, offset, length })),
  },
  { weight: 2, arbitrary: fc.tuple(REF, REF).map(([file, to]): Op => ({ kind: 'moveFile', file, to })) },
);

type Step =
  | { readonly kind: 'batch'; readonly ops: readonly Op[]; readonly wait: boolean }
  | { readonly kind: 'single'; readonly op: Op; readonly wait: boolean }
  | { readonly kind: 'delete'; readonly file: FileRef; readonly wait: boolean };

const STEP: fc.Arbitrary<Step> = fc.oneof(
  fc
    .tuple(fc.array(OP, { minLength: 1, maxLength: 6 }), fc.boolean())
    .map(([ops, wait]): Step => ({ kind: 'batch', ops, wait })),
  fc.tuple(OP, fc.boolean()).map(([op, wait]): Step => ({ kind: 'single', op, wait })),
  fc.tuple(REF, fc.boolean()).map(([file, wait]): Step => ({ kind: 'delete', file, wait })),
);

/** The model: every file's bytes, keyed by tier and id. */
class Model {
  private readonly files = new Map<string, number[]>();

  apply(op: Op): string {
    const key = keyOf(op.file);
    const bytes = this.files.get(key);
    switch (op.kind) {
      case 'createFile':
        if (bytes !== undefined) return fail('EXISTS');
        this.files.set(key, []);
        return 'ok';
      case 'write':
        if (bytes === undefined) return fail('NOT_FOUND');
        bytes.push(...op.bytes);
        for (const chunk of op.more ?? []) bytes.push(...chunk);
        return 'ok';
      case 'flush':
        return bytes === undefined ? fail('NOT_FOUND') : 'ok';
      case 'read':
        return bytes === undefined ? fail('NOT_FOUND') : read(bytes.slice(op.offset, op.offset + op.length));
      case 'moveFile': {
        if (bytes === undefined) return fail('NOT_FOUND');
        const target = keyOf(op.to);
        if (this.files.has(target)) return fail('EXISTS');
        this.files.set(target, [...bytes]);
        this.files.delete(key);
        return 'ok';
      }
    }
  }

  delete(file: FileRef): void {
    this.files.delete(keyOf(file));
  }

  contents(file: FileRef): string {
    const bytes = this.files.get(keyOf(file));
    return bytes === undefined ? fail('NOT_FOUND') : read(bytes);
  }

  memoryBytes(): number {
    let total = 0;
    for (const [key, bytes] of this.files) if (key.startsWith('MEMORY')) total += bytes.length;
    return total;
  }
}

function keyOf(file: FileRef): string {
  return `${file.tier}:${file.mountPoint}:${file.id}`;
}

function fail(error: IoError): string {
  return error;
}

function read(bytes: ArrayLike<number>): string {
  return `ok:${Buffer.from(Array.from(bytes)).toString('hex')}`;
}

function describeCompletion(completion: IoCompletion): string {
  if (completion.kind === 'ioFailed') return completion.error;
  return completion.bytes === undefined ? 'ok' : read(completion.bytes);
}

/** The memory tier without a pool, with one, and with an empty one (every block an overflow block). */
const POOL_CAPACITY = fc.constantFrom(undefined, 1 << 20, 0);

describe('TierStorage against a model', () => {
  it('completes random operation sequences exactly as the model applying them one at a time', async () => {
    await fc.assert(
      fc.asyncProperty(fc.array(STEP, { maxLength: 25 }), POOL_CAPACITY, async (steps, poolCapacity) => {
        const root = await makeTempRoot('model');
        const storage = new TierStorage({
          disks: [{ mountPoint: DISK, dir: await makeDir(root, 'disk') }],
          dfsDir: await makeDir(root, 'dfs'),
          memoryPool:
            poolCapacity === undefined
              ? undefined
              : new MemoryPool({ capacityBytes: poolCapacity, preTouch: false }),
        });
        try {
          const model = new Model();
          const expected: string[] = [];
          const actual: Promise<string[]>[] = [];
          let opNumber = 0;
          const effect = (op: Op): BatchableIo => ({ ...op, op: (opNumber += 1) });
          for (const step of steps) {
            let issued: Promise<unknown>;
            if (step.kind === 'delete') {
              model.delete(step.file);
              issued = storage.delete(step.file);
            } else {
              const ops = step.kind === 'batch' ? step.ops : [step.op];
              expected.push(...ops.map((op) => model.apply(op)));
              const completions =
                step.kind === 'batch'
                  ? storage.runBatch(ops.map(effect))
                  : storage.run(effect(step.op)).then((completion) => [completion]);
              const described = completions.then((list) => list.map(describeCompletion));
              actual.push(described);
              issued = described;
            }
            if (step.wait) await issued;
          }
          assert.deepEqual((await Promise.all(actual)).flat(), expected);
          for (const place of PLACES) {
            for (const id of IDS) {
              const file = refOf(place, id);
              const whole = await storage.run({ kind: 'read', op: 0, file, offset: 0, length: 1 << 20 });
              assert.equal(describeCompletion(whole), model.contents(file), `${place} ${id}`);
            }
          }
          assert.equal(storage.memoryBytes(), model.memoryBytes());
        } finally {
          await storage.close();
          await removeTempRoot(root);
        }
      }),
      { numRuns: 150 },
    );
  });
});
