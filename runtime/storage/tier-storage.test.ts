import assert from 'node:assert/strict';
import { existsSync } from 'node:fs';
import { mkdir, readFile, readdir, writeFile } from 'node:fs/promises';
import path from 'node:path';
import { afterEach, beforeEach, describe, it } from 'node:test';
import type { BatchableIo, FileRef } from '../../core/machines/effects.ts';
import { MemoryPool } from './memory-pool.ts';
import { TierStorage } from './tier-storage.ts';
import {
  bytesOf,
  dfsFile,
  diskFile,
  makeDir,
  makeTempRoot,
  memoryFile,
  outcome,
  removeTempRoot,
} from './testing.ts';

const DISK = '/mnt/disk1';

describe('TierStorage', () => {
  let root: string | undefined;
  let diskDir: string;
  let dfsDir: string;
  let storage: TierStorage;

  beforeEach(async () => {
    root = await makeTempRoot('tiers');
    diskDir = await makeDir(root, 'disk1');
    dfsDir = await makeDir(root, 'dfs');
    storage = new TierStorage({ disks: [{ mountPoint: DISK, dir: diskDir }], dfsDir });
  });

  afterEach(async () => {
    await storage.close();
    await removeTempRoot(root);
    root = undefined;
  });

  async function run(op: BatchableIo): Promise<string> {
    return outcome(await storage.run(op));
  }

  async function batch(ops: readonly BatchableIo[]): Promise<string[]> {
    return (await storage.runBatch(ops)).map(outcome);
  }

  /**
   * A storage whose memory tier copies into a pool (memory-pool.ts), in place of the one made before each test;
   * returns the pool and the block sizes of the overflows it reported.
   */
  async function usePooledMemory(): Promise<{ pool: MemoryPool; overflows: number[] }> {
    await storage.close();
    const memoryPool = new MemoryPool({ capacityBytes: 4 << 20, preTouch: false });
    const overflows: number[] = [];
    storage = new TierStorage({
      disks: [{ mountPoint: DISK, dir: diskDir }],
      dfsDir,
      memoryPool,
      onMemoryOverflow: (blockBytes) => overflows.push(blockBytes),
    });
    return { pool: memoryPool, overflows };
  }

  /** Creates `file` holding 'abcd', then changes the buffer it was written from: what does a read give back? */
  async function writeThenChangeTheBuffer(file: FileRef): Promise<string> {
    const bytes = bytesOf('abcd');
    await batch([
      { kind: 'createFile', op: 1, file },
      { kind: 'write', op: 2, file, bytes },
    ]);
    bytes[0] = 'z'.charCodeAt(0);
    return run({ kind: 'read', op: 3, file, offset: 0, length: 4 });
  }

  const tiers: readonly {
    readonly name: string;
    readonly file: (id: string) => FileRef;
    readonly pooled?: boolean;
  }[] = [
    { name: 'memory', file: memoryFile },
    { name: 'memory with a pool', file: memoryFile, pooled: true },
    { name: 'a local disk', file: (id) => diskFile(id, DISK) },
    { name: 'the DFS directory (HDFS)', file: (id) => dfsFile(id, 'HDFS') },
    { name: 'the DFS directory (S3)', file: (id) => dfsFile(id, 'S3') },
  ];

  for (const tier of tiers) {
    describe(`on ${tier.name}`, () => {
      if (tier.pooled === true) beforeEach(usePooledMemory);

      it('creates, appends, flushes and reads back exactly the appended bytes', async () => {
        const file = tier.file('app-1-0/0-0');
        assert.deepEqual(
          await batch([
            { kind: 'createFile', op: 1, file },
            { kind: 'write', op: 2, file, bytes: bytesOf('hello ') },
            { kind: 'write', op: 3, file, bytes: bytesOf('shuffle ') },
            { kind: 'write', op: 4, file, bytes: bytesOf('world') },
            { kind: 'flush', op: 5, file },
            { kind: 'read', op: 6, file, offset: 0, length: 19 },
            { kind: 'read', op: 7, file, offset: 6, length: 7 },
          ]),
          ['ok', 'ok', 'ok', 'ok', 'ok', 'ok:hello shuffle world', 'ok:shuffle'],
        );
      });

      it('answers a read past the end with the bytes that exist', async () => {
        const file = tier.file('app-1-0/0-1');
        await batch([
          { kind: 'createFile', op: 1, file },
          { kind: 'write', op: 2, file, bytes: bytesOf('abc') },
        ]);
        assert.equal(await run({ kind: 'read', op: 3, file, offset: 1, length: 100 }), 'ok:bc');
        assert.equal(await run({ kind: 'read', op: 4, file, offset: 10, length: 5 }), 'ok:');
        assert.equal(await run({ kind: 'read', op: 5, file, offset: 0, length: 0 }), 'ok:');
      });

      it('fails a second create with EXISTS and operations on a missing file with NOT_FOUND', async () => {
        const file = tier.file('app-1-0/1-0');
        const missing = tier.file('app-1-0/none');
        assert.deepEqual(
          await batch([
            { kind: 'createFile', op: 1, file },
            { kind: 'createFile', op: 2, file },
            { kind: 'write', op: 3, file: missing, bytes: bytesOf('x') },
            { kind: 'flush', op: 4, file: missing },
            { kind: 'read', op: 5, file: missing, offset: 0, length: 1 },
            { kind: 'moveFile', op: 6, file: missing, to: tier.file('app-1-0/elsewhere') },
          ]),
          ['ok', 'EXISTS', 'NOT_FOUND', 'NOT_FOUND', 'NOT_FOUND', 'NOT_FOUND'],
        );
      });

      it('deletes a file (a missing one is fine) so that it can be created again, empty', async () => {
        const file = tier.file('app-1-0/2-0');
        await batch([
          { kind: 'createFile', op: 1, file },
          { kind: 'write', op: 2, file, bytes: bytesOf('old') },
        ]);
        await storage.delete(file);
        await storage.delete(file);
        assert.equal(await run({ kind: 'read', op: 3, file, offset: 0, length: 3 }), 'NOT_FOUND');
        assert.deepEqual(
          await batch([
            { kind: 'createFile', op: 4, file },
            { kind: 'write', op: 5, file, bytes: bytesOf('new!') },
            { kind: 'read', op: 6, file, offset: 0, length: 10 },
          ]),
          ['ok', 'ok', 'ok:new!'],
        );
      });

      it('accepts a bare file name (the disk probe)', async () => {
        const file = tier.file('.svc-disk-probe');
        assert.deepEqual(
          await batch([
            { kind: 'createFile', op: -1, file },
            { kind: 'write', op: -2, file, bytes: bytesOf('svc\n') },
            { kind: 'flush', op: -3, file },
          ]),
          ['ok', 'ok', 'ok'],
        );
      });
    });
  }

  it('keeps disk files under the disk directory, in a directory per shuffle, removed once empty', async () => {
    const a = diskFile('app-1-0/0-0', DISK);
    const b = diskFile('app-1-0/1-0', DISK);
    await batch([
      { kind: 'createFile', op: 1, file: a },
      { kind: 'createFile', op: 2, file: b },
      { kind: 'write', op: 3, file: a, bytes: bytesOf('data') },
      { kind: 'flush', op: 4, file: a },
    ]);
    assert.equal(await readFile(path.join(diskDir, 'app-1-0', '0-0'), 'utf8'), 'data');
    await storage.delete(a);
    assert.deepEqual(await readdir(path.join(diskDir, 'app-1-0')), ['1-0']);
    await storage.delete(b);
    assert.equal(existsSync(path.join(diskDir, 'app-1-0')), false);
    assert.equal(existsSync(diskDir), true);
  });

  it('shares one DFS directory among HDFS, OSS and S3 files', async () => {
    await run({ kind: 'createFile', op: 1, file: dfsFile('app-1-0/0-0', 'HDFS') });
    assert.equal(await run({ kind: 'createFile', op: 2, file: dfsFile('app-1-0/0-0', 'OSS') }), 'EXISTS');
    assert.ok(
      existsSync(path.join(dfsDir, 'app-1-0', '0-0')),
      "existsSync(path.join(dfsDir, 'app-1-0', '0-0'))",
    );
  });

  it('runs a delete before a create of the same file issued after it (the disk probe)', async () => {
    const probe = diskFile('.svc-disk-probe', DISK);
    await writeFile(path.join(diskDir, '.svc-disk-probe'), 'left over by an earlier round');
    const deleted = storage.delete(probe);
    const completions = storage.runBatch([
      { kind: 'createFile', op: -1, file: probe },
      { kind: 'write', op: -2, file: probe, bytes: bytesOf('svc\n') },
      { kind: 'flush', op: -3, file: probe },
      { kind: 'read', op: -4, file: probe, offset: 0, length: 100 },
    ]);
    await deleted;
    assert.deepEqual((await completions).map(outcome), ['ok', 'ok', 'ok', 'ok:svc\n']);
  });

  it('orders operations per file across separate calls, and runs different files concurrently', async () => {
    const files = [diskFile('app-2-0/0-0', DISK), memoryFile('app-2-0/1-0'), dfsFile('app-2-0/2-0')];
    const pending: Promise<string>[] = [];
    for (const [index, file] of files.entries()) pending.push(run({ kind: 'createFile', op: index, file }));
    for (let round = 0; round < 50; round += 1) {
      for (const [index, file] of files.entries()) {
        pending.push(run({ kind: 'write', op: 100 + round, file, bytes: bytesOf(`${index}:${round};`) }));
      }
    }
    const reads = files.map((file, index) =>
      run({ kind: 'read', op: 1000 + index, file, offset: 0, length: 1 << 20 }),
    );
    assert.ok(
      (await Promise.all(pending)).every((result) => result === 'ok'),
      "(await Promise.all(pending)).every((result) => result === 'ok')",
    );
    const expected = (index: number) =>
      Array.from({ length: 50 }, (_, round) => `${index}:${round};`).join('');
    assert.deepEqual(
      await Promise.all(reads),
      [0, 1, 2].map((index) => `ok:${expected(index)}`),
    );
  });

  it('appends a large stream of writes intact, in order', async () => {
    const file = diskFile('app-3-0/0-0', DISK);
    await run({ kind: 'createFile', op: 1, file });
    const chunk = 64 * 1024;
    const count = 200;
    const writes = Array.from({ length: count }, (_, index) =>
      storage.run({ kind: 'write', op: 2 + index, file, bytes: new Uint8Array(chunk).fill(index % 251) }),
    );
    assert.ok(
      (await Promise.all(writes)).every((completion) => completion.kind === 'ioDone'),
      "(await Promise.all(writes)).every((completion) => completion.kind === 'ioDone')",
    );
    assert.equal(await run({ kind: 'flush', op: 9999, file }), 'ok');
    const content = await readFile(path.join(diskDir, 'app-3-0', '0-0'));
    assert.equal(content.length, chunk * count);
    for (let index = 0; index < count; index += 1) {
      assert.equal(content[index * chunk], index % 251);
      assert.equal(content[(index + 1) * chunk - 1], index % 251);
    }
  });

  describe('moveFile', () => {
    it('moves a memory file to a disk: the copy is durable there, the memory is released, appends go on', async () => {
      const source = memoryFile('app-4-0/0-0');
      const target = diskFile('app-4-0/0-0', DISK);
      await batch([
        { kind: 'createFile', op: 1, file: source },
        { kind: 'write', op: 2, file: source, bytes: bytesOf('in ') },
        { kind: 'write', op: 3, file: source, bytes: bytesOf('memory') },
      ]);
      assert.equal(storage.memoryBytes(), 9);
      assert.deepEqual(
        await batch([
          { kind: 'moveFile', op: 4, file: source, to: target },
          { kind: 'write', op: 5, file: target, bytes: bytesOf(', then disk') },
          { kind: 'read', op: 6, file: target, offset: 0, length: 100 },
          { kind: 'read', op: 7, file: source, offset: 0, length: 100 },
        ]),
        ['ok', 'ok', 'ok:in memory, then disk', 'NOT_FOUND'],
      );
      assert.equal(storage.memoryBytes(), 0);
      assert.equal(await readFile(path.join(diskDir, 'app-4-0', '0-0'), 'utf8'), 'in memory, then disk');
    });

    it("orders a memory file's operations behind its move, and runs them at once when nothing is queued", async () => {
      const source = memoryFile('app-4-1/0-0');
      const target = diskFile('app-4-1/0-0', DISK);
      const created = storage.run({ kind: 'createFile', op: 1, file: source });
      const written = storage.run({ kind: 'write', op: 2, file: source, bytes: bytesOf('kept') });
      // Nothing was queued on the file: the memory tier did the work when called, before the promises settled.
      assert.equal(storage.memoryBytes(), 4);
      const moved = storage.run({ kind: 'moveFile', op: 3, file: source, to: target });
      // The move holds the file's lane: what is issued after it waits for it, and finds the file gone.
      const lateWrite = run({ kind: 'write', op: 4, file: source, bytes: bytesOf('late') });
      const deleted = storage.delete(source);
      assert.equal(storage.memoryBytes(), 4);
      assert.deepEqual((await Promise.all([created, written, moved])).map(outcome), ['ok', 'ok', 'ok']);
      assert.equal(await lateWrite, 'NOT_FOUND');
      await deleted;
      assert.equal(storage.memoryBytes(), 0);
      assert.equal(await readFile(path.join(diskDir, 'app-4-1', '0-0'), 'utf8'), 'kept');
    });

    it('moves between the disk, the DFS directory and memory', async () => {
      const onDisk = diskFile('app-5-0/0-0', DISK);
      const onDfs = dfsFile('app-5-0/0-0');
      const inMemory = memoryFile('app-5-0/0-0');
      assert.deepEqual(
        await batch([
          { kind: 'createFile', op: 1, file: onDisk },
          { kind: 'write', op: 2, file: onDisk, bytes: bytesOf('travelling bytes') },
          { kind: 'moveFile', op: 3, file: onDisk, to: onDfs },
          { kind: 'moveFile', op: 4, file: onDfs, to: inMemory },
          { kind: 'read', op: 5, file: inMemory, offset: 0, length: 100 },
        ]),
        ['ok', 'ok', 'ok', 'ok', 'ok:travelling bytes'],
      );
      assert.equal(existsSync(path.join(diskDir, 'app-5-0', '0-0')), false);
      assert.equal(existsSync(path.join(dfsDir, 'app-5-0', '0-0')), false);
      assert.equal(storage.memoryBytes(), 16);
    });

    it('fails with EXISTS when the target exists, leaving both files as they were', async () => {
      const source = memoryFile('app-6-0/0-0');
      const target = diskFile('app-6-0/0-0', DISK);
      assert.deepEqual(
        await batch([
          { kind: 'createFile', op: 1, file: source },
          { kind: 'write', op: 2, file: source, bytes: bytesOf('source') },
          { kind: 'createFile', op: 3, file: target },
          { kind: 'write', op: 4, file: target, bytes: bytesOf('target') },
          { kind: 'moveFile', op: 5, file: source, to: target },
          { kind: 'read', op: 6, file: source, offset: 0, length: 100 },
          { kind: 'read', op: 7, file: target, offset: 0, length: 100 },
        ]),
        ['ok', 'ok', 'ok', 'ok', 'EXISTS', 'ok:source', 'ok:target'],
      );
    });

    it('fails with NOT_FOUND when the target tier does not exist here, keeping the source', async () => {
      const source = memoryFile('app-7-0/0-0');
      assert.deepEqual(
        await batch([
          { kind: 'createFile', op: 1, file: source },
          { kind: 'moveFile', op: 2, file: source, to: diskFile('app-7-0/0-0', '/mnt/unknown') },
          { kind: 'read', op: 3, file: source, offset: 0, length: 1 },
        ]),
        ['ok', 'NOT_FOUND', 'ok:'],
      );
    });
  });

  it('reads a file that was on the disk before this process (after a restart), and appends to it', async () => {
    await mkdir(path.join(diskDir, 'app-8-0'));
    await writeFile(path.join(diskDir, 'app-8-0', '0-0'), 'written before');
    const file = diskFile('app-8-0/0-0', DISK);
    assert.deepEqual(
      await batch([
        { kind: 'read', op: 1, file, offset: 0, length: 100 },
        { kind: 'read', op: 2, file, offset: 8, length: 100 },
        { kind: 'write', op: 3, file, bytes: bytesOf(' and after') },
        { kind: 'read', op: 4, file, offset: 0, length: 100 },
      ]),
      ['ok:written before', 'ok:before', 'ok', 'ok:written before and after'],
    );
  });

  it('keeps the buffers handed to a memory file instead of copying them, and counts their bytes', async () => {
    const file = memoryFile('app-9-0/0-0');
    assert.equal(await writeThenChangeTheBuffer(file), 'ok:zbcd');
    assert.equal(storage.memoryBytes(), 4);
    await storage.delete(file);
    assert.equal(storage.memoryBytes(), 0);
  });

  it('with a pool, copies what is written to a memory file, reports the pool, and moves the file out and back', async () => {
    const { pool, overflows } = await usePooledMemory();
    const file = memoryFile('app-9-1/0-0');
    const onDisk = diskFile('app-9-1/0-0', DISK);
    assert.equal(await writeThenChangeTheBuffer(file), 'ok:abcd');
    assert.equal(storage.memoryBytes(), 4);
    assert.deepEqual(
      { capacityBytes: pool.capacityBytes, usedBytes: pool.usedBytes, freeBytes: pool.freeBytes, overflows },
      { capacityBytes: 4 << 20, usedBytes: 4096, freeBytes: (4 << 20) - 4096, overflows: [] },
    );
    assert.deepEqual(
      await batch([
        { kind: 'moveFile', op: 4, file, to: onDisk },
        { kind: 'write', op: 5, file: onDisk, bytes: bytesOf('!') },
        { kind: 'moveFile', op: 6, file: onDisk, to: file },
        { kind: 'read', op: 7, file, offset: 0, length: 10 },
      ]),
      ['ok', 'ok', 'ok', 'ok:abcd!'],
    );
    await storage.delete(file);
    assert.equal(storage.memoryBytes(), 0);
    assert.equal(pool.usedBytes, 0);
  });

  it('rejects ids that would leave their tier directory, or name one file twice, with IO_ERROR', async () => {
    const ids = [
      '../escape',
      'app/../../escape',
      '/etc/passwd',
      'app/\0x',
      '',
      'app//x',
      './x',
      'app/.',
      '..',
    ];
    for (const id of ids) {
      for (const file of [diskFile(id, DISK), dfsFile(id), memoryFile(id)]) {
        assert.equal(
          await run({ kind: 'createFile', op: 1, file }),
          'IO_ERROR',
          `${file.tier} ${JSON.stringify(id)}`,
        );
        await storage.delete(file);
      }
    }
    assert.equal(
      await run({ kind: 'moveFile', op: 2, file: memoryFile('fine'), to: diskFile('../escape', DISK) }),
      'IO_ERROR',
    );
    assert.equal(existsSync(path.join(root!, 'escape')), false);
    assert.deepEqual(await readdir(diskDir), []);
  });

  it('fails with NOT_FOUND on an unknown disk, and on a DFS file when no DFS directory is configured', async () => {
    assert.equal(await run({ kind: 'createFile', op: 1, file: diskFile('a/b', '/mnt/nope') }), 'NOT_FOUND');
    const noDfs = new TierStorage({ disks: [] });
    try {
      assert.equal(
        outcome(await noDfs.run({ kind: 'createFile', op: 1, file: dfsFile('a/b') })),
        'NOT_FOUND',
      );
    } finally {
      await noDfs.close();
    }
  });

  it("completes a batch's memory creates, writes and flushes before it returns, failures included", async () => {
    await storage.close();
    const observed: string[] = [];
    storage = new TierStorage({
      disks: [{ mountPoint: DISK, dir: diskDir }],
      dfsDir,
      onIoDone: (op, completion) => observed.push(`${op.kind}:${outcome(completion)}`),
    });
    const file = memoryFile('app-11-0/0-0');
    const completions = storage.runBatch([
      { kind: 'createFile', op: 1, file },
      { kind: 'write', op: 2, file, bytes: bytesOf('at once') },
      { kind: 'flush', op: 3, file },
      { kind: 'createFile', op: 4, file },
      { kind: 'flush', op: 5, file: memoryFile('app-11-0/9-9') },
    ]);
    // Observed before runBatch returned: no operation of the batch went through a promise (a reserve of 10,000
    // partitions issues 10,000 creates, their commit 10,000 flushes: docs/performance.md).
    const expected = ['createFile:ok', 'write:ok', 'flush:ok', 'createFile:EXISTS', 'flush:NOT_FOUND'];
    assert.deepEqual(observed, expected);
    assert.deepEqual((await completions).map(outcome), ['ok', 'ok', 'ok', 'EXISTS', 'NOT_FOUND']);
    assert.equal(await run({ kind: 'read', op: 6, file, offset: 0, length: 100 }), 'ok:at once');
  });

  it('fails a read of a negative range with IO_ERROR', async () => {
    const file = memoryFile('a/b');
    await run({ kind: 'createFile', op: 1, file });
    assert.equal(await run({ kind: 'read', op: 2, file, offset: -1, length: 1 }), 'IO_ERROR');
    assert.equal(await run({ kind: 'read', op: 3, file, offset: 0, length: -1 }), 'IO_ERROR');
  });

  it('lets issued operations end on close, then fails later ones with IO_ERROR', async () => {
    const file = diskFile('app-10-0/0-0', DISK);
    const issued = storage.runBatch([
      { kind: 'createFile', op: 1, file },
      { kind: 'write', op: 2, file, bytes: bytesOf('last words') },
      { kind: 'flush', op: 3, file },
    ]);
    await storage.close();
    assert.deepEqual((await issued).map(outcome), ['ok', 'ok', 'ok']);
    assert.equal(await run({ kind: 'read', op: 4, file, offset: 0, length: 10 }), 'IO_ERROR');
    assert.equal(await readFile(path.join(diskDir, 'app-10-0', '0-0'), 'utf8'), 'last words');
  });

  it('refuses a disk declared twice', () => {
    assert.throws(
      () =>
        new TierStorage({
          disks: [
            { mountPoint: DISK, dir: diskDir },
            { mountPoint: DISK, dir: dfsDir },
          ],
        }),
      /declared twice/,
    );
  });
});
