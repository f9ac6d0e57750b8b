import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import fc from 'fast-check';
import type { FileRef, Input } from '../../core/machines/effects.ts';
import { replayRng } from '../../core/rng.ts';
import { NodeStorage, SharedDfs } from './storage.ts';

const CAPACITY = 300;
const files = ['a', 'b', 'c'].map((id): FileRef => ({ id: `app-0/${id}`, tier: 'SSD', mountPoint: '/ssd' }));

type Op =
  | { kind: 'create' | 'flush'; file: number }
  | { kind: 'write'; file: number; length: number }
  | { kind: 'read'; file: number; offset: number; length: number }
  | { kind: 'crash' };

const opArb: fc.Arbitrary<Op> = fc.oneof(
  fc.record({ kind: fc.constantFrom('create' as const, 'flush' as const), file: fc.nat(2) }),
  fc.record({
    kind: fc.constant('write' as const),
    file: fc.nat(2),
    length: fc.integer({ min: 1, max: 80 }),
  }),
  fc.record({
    kind: fc.constant('read' as const),
    file: fc.nat(2),
    offset: fc.nat(100),
    length: fc.nat(100),
  }),
  fc.record({ kind: fc.constant('crash' as const) }),
);

function storage(ioError = 0) {
  return new NodeStorage(
    'w1',
    [{ mountPoint: '/ssd', type: 'SSD', capacityBytes: CAPACITY }],
    new SharedDfs(),
    replayRng([0.5]),
    { ioError, noSpace: 0 },
  );
}

describe('NodeStorage', () => {
  it('behaves like a plain model of files with a synced prefix and a capacity', () => {
    fc.assert(
      fc.property(fc.array(opArb, { maxLength: 60 }), (ops) => {
        const disk = storage();
        const model = new Map<number, { bytes: number[]; synced: number }>();
        let used = 0;
        let op = 0;
        let stamp = 0;
        let lastAt = 0;
        for (const step of ops) {
          op += 1;
          const file = files[step.kind === 'crash' ? 0 : step.file]!;
          let completion;
          switch (step.kind) {
            case 'create':
              completion = disk.execute({ kind: 'createFile', op, file }, 0);
              assert.equal(done(completion?.input), !model.has(step.file));
              if (!model.has(step.file)) model.set(step.file, { bytes: [], synced: 0 });
              break;
            case 'write': {
              const bytes = new Uint8Array(step.length).map(() => (stamp += 1) % 251);
              completion = disk.execute({ kind: 'write', op, file, bytes }, 0);
              const entry = model.get(step.file);
              const fits = used + step.length <= CAPACITY;
              assert.equal(done(completion?.input), entry !== undefined && fits);
              if (entry && fits) {
                entry.bytes.push(...bytes);
                used += step.length;
              }
              if (entry && !fits)
                assert.deepEqual(completion?.input, { kind: 'ioFailed', op, error: 'NO_SPACE' });
              break;
            }
            case 'flush': {
              completion = disk.execute({ kind: 'flush', op, file }, 0);
              const entry = model.get(step.file);
              assert.equal(done(completion?.input), entry !== undefined);
              if (entry) entry.synced = entry.bytes.length;
              break;
            }
            case 'read': {
              completion = disk.execute(
                { kind: 'read', op, file, offset: step.offset, length: step.length },
                0,
              );
              const entry = model.get(step.file);
              if (!entry) assert.deepEqual(completion?.input, { kind: 'ioFailed', op, error: 'NOT_FOUND' });
              else {
                const input = completion?.input;
                assert.ok(input?.kind === 'ioDone', "input?.kind === 'ioDone'");
                assert.deepEqual(
                  [...(input.bytes ?? [])],
                  entry.bytes.slice(step.offset, step.offset + step.length),
                );
              }
              break;
            }
            case 'crash':
              disk.crash();
              lastAt = 0;
              for (const entry of model.values()) {
                used -= entry.bytes.length - entry.synced;
                entry.bytes.length = entry.synced;
              }
              break;
          }
          if (completion) {
            assert.ok(completion.at >= lastAt, 'a device completes operations in the order it accepted them');
            lastAt = completion.at;
          }
          assert.equal(disk.usedBytes('/ssd'), used);
          assert.ok(disk.usedBytes('/ssd') <= CAPACITY, "disk.usedBytes('/ssd') <= CAPACITY");
          for (const [index, entry] of model)
            assert.equal(disk.fileLength(files[index]!), entry.bytes.length);
        }
      }),
      { numRuns: 200 },
    );
  });

  it('fails operations on a faulty disk without changing it, and slows a slow disk down', () => {
    const disk = storage();
    const file = files[0]!;
    assert.equal(disk.execute({ kind: 'createFile', op: 1, file }, 0)?.input.kind, 'ioDone');
    const faults = disk.faultsOf('/ssd')!;
    faults.failWrites = true;
    assert.deepEqual(disk.execute({ kind: 'write', op: 2, file, bytes: new Uint8Array(5) }, 0)?.input, {
      kind: 'ioFailed',
      op: 2,
      error: 'IO_ERROR',
    });
    assert.equal(disk.fileLength(file), 0);
    faults.failWrites = false;
    faults.full = true;
    assert.deepEqual(disk.execute({ kind: 'write', op: 3, file, bytes: new Uint8Array(5) }, 0)?.input, {
      kind: 'ioFailed',
      op: 3,
      error: 'NO_SPACE',
    });
    faults.full = false;
    faults.failSyncs = true;
    assert.equal(disk.execute({ kind: 'flush', op: 4, file }, 0)?.input.kind, 'ioFailed');
    faults.failSyncs = false;
    faults.failReads = true;
    assert.equal(
      disk.execute({ kind: 'read', op: 5, file, offset: 0, length: 1 }, 0)?.input.kind,
      'ioFailed',
    );
    faults.failReads = false;

    const fast = storage().execute({ kind: 'createFile', op: 1, file }, 100)!.at - 100;
    const slowDisk = storage();
    slowDisk.faultsOf('/ssd')!.slowFactor = 50;
    const slow = slowDisk.execute({ kind: 'createFile', op: 1, file }, 100)!.at - 100;
    assert.ok(Math.abs(slow - 50 * fast) < 1e-9, 'Math.abs(slow - 50 * fast) < 1e-9');
  });

  it('garbles one byte of each read from a disk with corrupt reads, and leaves the file intact', () => {
    const disk = storage();
    const file = files[0]!;
    const written = Uint8Array.from({ length: 64 }, (_, i) => i);
    disk.execute({ kind: 'createFile', op: 1, file }, 0);
    disk.execute({ kind: 'write', op: 2, file, bytes: written }, 0);
    const read = () => {
      const input = disk.execute({ kind: 'read', op: 3, file, offset: 0, length: 64 }, 0)?.input;
      assert.ok(
        input?.kind === 'ioDone' && input.bytes !== undefined,
        "input?.kind === 'ioDone' && input.bytes !== undefined",
      );
      return input.bytes;
    };
    disk.faultsOf('/ssd')!.corruptReads = true;
    for (let attempt = 0; attempt < 20; attempt += 1) {
      const garbled = read();
      const differing = [...garbled.keys()].filter((i) => garbled[i] !== written[i]);
      assert.equal(differing.length, 1, 'exactly one byte differs');
      assert.equal(garbled[differing[0]!], written[differing[0]!]! ^ 0xff);
    }
    assert.deepEqual(disk.peek(file), written, 'the stored bytes are intact');
    disk.faultsOf('/ssd')!.corruptReads = false;
    assert.deepEqual(read(), written);
  });

  it('injects background I/O errors at the given rate', () => {
    const disk = storage(0.6);
    const file = files[0]!;
    assert.deepEqual(disk.execute({ kind: 'createFile', op: 1, file }, 0)?.input, {
      kind: 'ioFailed',
      op: 1,
      error: 'IO_ERROR',
    });
  });

  it('moves a memory file to a disk durably, and keeps the source when the target is full', () => {
    const disk = storage();
    const memory: FileRef = { id: 'app-0/m', tier: 'MEMORY', mountPoint: '' };
    const target: FileRef = { id: 'app-0/m', tier: 'SSD', mountPoint: '/ssd' };
    disk.execute({ kind: 'createFile', op: 1, file: memory }, 0);
    disk.execute({ kind: 'write', op: 2, file: memory, bytes: new Uint8Array(50).fill(3) }, 0);
    disk.faultsOf('/ssd')!.full = true;
    assert.equal(
      disk.execute({ kind: 'moveFile', op: 3, file: memory, to: target }, 0)?.input.kind,
      'ioFailed',
    );
    assert.equal(disk.fileLength(memory), 50);
    assert.equal(disk.fileLength(target), undefined);
    disk.faultsOf('/ssd')!.full = false;
    assert.equal(
      disk.execute({ kind: 'moveFile', op: 4, file: memory, to: target }, 0)?.input.kind,
      'ioDone',
    );
    assert.equal(disk.fileLength(memory), undefined);
    disk.crash();
    assert.deepEqual([...(disk.peek(target) ?? [])], new Array(50).fill(3));
  });

  it('keeps each node’s DFS files apart and keeps the synced part of them when that node crashes', () => {
    const dfs = new SharedDfs();
    const make = (node: string) =>
      new NodeStorage(node, [], dfs, replayRng([0.5]), { ioError: 0, noSpace: 0 });
    const [one, two] = [make('w1'), make('w2')];
    const file: FileRef = { id: 'app-0/0-0-0', tier: 'HDFS', mountPoint: '' };
    for (const node of [one, two]) {
      node.execute({ kind: 'createFile', op: 1, file }, 0);
      node.execute({ kind: 'write', op: 2, file, bytes: new Uint8Array(10) }, 0);
    }
    one.execute({ kind: 'flush', op: 3, file }, 0);
    one.execute({ kind: 'write', op: 4, file, bytes: new Uint8Array(10) }, 0);
    one.crash();
    assert.equal(one.fileLength(file), 10);
    assert.equal(two.fileLength(file), 10, 'the other node’s unsynced bytes are not its crash to lose');
  });

  it('fails the DFS for every node at once while its faults are on, and leaves the memory tier alone', () => {
    const dfs = new SharedDfs();
    const make = (node: string) =>
      new NodeStorage(node, [], dfs, replayRng([0.5]), { ioError: 0, noSpace: 0 });
    const nodes = [make('w1'), make('w2')];
    const file: FileRef = { id: 'app-0/0-0-0', tier: 'HDFS', mountPoint: '' };
    const memoryFile: FileRef = { id: 'app-0/0-0-1', tier: 'MEMORY', mountPoint: '' };
    const write = (node: NodeStorage, target: FileRef, op: number) =>
      node.execute({ kind: 'write', op, file: target, bytes: new Uint8Array(4) }, 0)?.input;
    for (const node of nodes) {
      node.execute({ kind: 'createFile', op: 1, file }, 0);
      node.execute({ kind: 'createFile', op: 2, file: memoryFile }, 0);
    }
    dfs.faults.full = true;
    for (const node of nodes) {
      assert.deepEqual(write(node, file, 3), { kind: 'ioFailed', op: 3, error: 'NO_SPACE' });
      assert.equal(write(node, memoryFile, 4)?.kind, 'ioDone');
      assert.equal(node.fileLength(file), 0);
    }
    dfs.faults.full = false;
    for (const node of nodes) assert.equal(write(node, file, 5)?.kind, 'ioDone');
  });

  it('fails disk and DFS operations with NO_DESCRIPTORS while the process is out of descriptors, not memory ones', () => {
    const dfs = new SharedDfs();
    const node = new NodeStorage(
      'w1',
      [{ mountPoint: '/ssd', type: 'SSD', capacityBytes: CAPACITY }],
      dfs,
      replayRng([0.5]),
      { ioError: 0, noSpace: 0 },
    );
    const disk = files[0]!;
    const onDfs: FileRef = { id: 'app-0/0-0-0', tier: 'HDFS', mountPoint: '' };
    const memory: FileRef = { id: 'app-0/0-0-1', tier: 'MEMORY', mountPoint: '' };
    const target: FileRef = { id: 'app-0/0-0-1', tier: 'SSD', mountPoint: '/ssd' };
    for (const [op, file] of [disk, onDfs, memory].entries())
      node.execute({ kind: 'createFile', op, file }, 0);
    node.execute({ kind: 'write', op: 3, file: memory, bytes: new Uint8Array(8) }, 0);
    node.execute({ kind: 'write', op: 4, file: disk, bytes: new Uint8Array(8) }, 0);

    node.outOfDescriptors = true;
    const failed = (op: number) => ({ kind: 'ioFailed', op, error: 'NO_DESCRIPTORS' });
    for (const file of [disk, onDfs]) {
      assert.deepEqual(
        node.execute({ kind: 'createFile', op: 10, file: { ...file, id: 'x' } }, 0)?.input,
        failed(10),
      );
      assert.deepEqual(
        node.execute({ kind: 'write', op: 11, file, bytes: new Uint8Array(2) }, 0)?.input,
        failed(11),
      );
      assert.deepEqual(node.execute({ kind: 'flush', op: 12, file }, 0)?.input, failed(12));
      assert.deepEqual(
        node.execute({ kind: 'read', op: 13, file, offset: 0, length: 1 }, 0)?.input,
        failed(13),
      );
    }
    assert.deepEqual(
      node.execute({ kind: 'moveFile', op: 14, file: memory, to: target }, 0)?.input,
      failed(14),
    );
    assert.equal(node.fileLength(memory), 8, 'a failed move keeps its source');
    assert.equal(node.fileLength(target), undefined);
    assert.equal(node.fileLength(disk), 8, 'nothing reached the disk');
    assert.equal(node.fileLength(onDfs), 0);
    assert.ok(
      done(node.execute({ kind: 'write', op: 15, file: memory, bytes: new Uint8Array(2) }, 0)?.input),
      "done(node.execute({ kind: 'write', op: 15, file: memory, bytes: new Uint8Array(2) }, 0)?.input)",
    );
    node.execute({ kind: 'deleteFile', file: disk }, 0);
    assert.equal(node.fileLength(disk), undefined, 'an unlink needs no descriptor');

    node.outOfDescriptors = false;
    assert.ok(
      done(node.execute({ kind: 'write', op: 16, file: onDfs, bytes: new Uint8Array(2) }, 0)?.input),
      "done(node.execute({ kind: 'write', op: 16, file: onDfs, bytes: new Uint8Array(2) }, 0)?.input)",
    );
    assert.ok(
      done(node.execute({ kind: 'moveFile', op: 17, file: memory, to: target }, 0)?.input),
      "done(node.execute({ kind: 'moveFile', op: 17, file: memory, to: target }, 0)?.input)",
    );
  });
});

function done(input: Input | undefined): boolean {
  return input?.kind === 'ioDone';
}
