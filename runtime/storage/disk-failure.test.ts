import assert from 'node:assert/strict';
import { existsSync } from 'node:fs';
import { mkdir, rm } from 'node:fs/promises';
import path from 'node:path';
import { afterEach, beforeEach, describe, it } from 'node:test';
import { TierStorage } from './tier-storage.ts';
import { bytesOf, diskFile, makeDir, makeTempRoot, outcome, removeTempRoot } from './testing.ts';
import { within } from '../testing/deadline.ts';

/**
 * A disk whose directory is removed must fail every later operation, writes included: on Linux a write through a
 * descriptor of a removed directory's file still succeeds, and its bytes are silently lost. The tests wait on the
 * failure callback (the watcher's event), never on time.
 */
const TIMEOUT = { timeout: 20_000 };

interface Failure {
  readonly mountPoint: string;
  readonly reason: string;
}

describe('TierStorage on a disk whose directory disappears', () => {
  let root: string | undefined;
  let storage: TierStorage | undefined;
  const failures: Failure[] = [];
  let waiting: (() => void)[] = [];

  /** Resolves once `count` failures were reported in all. */
  function failuresReach(count: number): Promise<void> {
    const reached = new Promise<void>((resolve) => {
      const check = () => {
        if (failures.length >= count) resolve();
        else waiting.push(check);
      };
      check();
    });
    return within(reached, `${count} disk failures reported`);
  }

  function open(disks: readonly { mountPoint: string; dir: string }[]): TierStorage {
    storage = new TierStorage({
      disks,
      onDiskFailed: (mountPoint, reason) => {
        failures.push({ mountPoint, reason });
        const pending = waiting;
        waiting = [];
        for (const check of pending) check();
      },
    });
    return storage;
  }

  beforeEach(async () => {
    root = await makeTempRoot('failure');
    failures.length = 0;
    waiting = [];
  });

  afterEach(async () => {
    await storage?.close();
    storage = undefined;
    await removeTempRoot(root);
    root = undefined;
  });

  it(
    'fails writes, flushes, reads and creates with IO_ERROR once the directory is removed, and says so once',
    TIMEOUT,
    async () => {
      const dir = await makeDir(root!, 'disk-1');
      const other = await makeDir(root!, 'disk-2');
      const s = open([
        { mountPoint: '/d1', dir },
        { mountPoint: '/d2', dir: other },
      ]);
      const a = diskFile('app-1-0/0-0', '/d1');
      const b = diskFile('app-1-0/1-0', '/d1');
      const elsewhere = diskFile('app-1-0/0-0', '/d2');
      const before = await s.runBatch([
        { kind: 'createFile', op: 1, file: a },
        { kind: 'createFile', op: 2, file: b },
        { kind: 'createFile', op: 3, file: elsewhere },
        { kind: 'write', op: 4, file: a, bytes: bytesOf('before') },
      ]);
      assert.deepEqual(before.map(outcome), ['ok', 'ok', 'ok', 'ok']);

      await rm(dir, { recursive: true, force: true });
      await failuresReach(1);
      assert.equal(failures[0]!.mountPoint, '/d1');
      assert.match(failures[0]!.reason, /disk-1/);

      const after = await s.runBatch([
        { kind: 'write', op: 5, file: a, bytes: bytesOf('after') },
        { kind: 'flush', op: 6, file: b },
        { kind: 'read', op: 7, file: a, offset: 0, length: 6 },
        { kind: 'createFile', op: 8, file: diskFile('app-1-0/2-0', '/d1') },
        { kind: 'createFile', op: 9, file: diskFile('.svc-disk-probe', '/d1') },
        { kind: 'moveFile', op: 10, file: elsewhere, to: diskFile('app-1-0/3-0', '/d1') },
        { kind: 'write', op: 11, file: elsewhere, bytes: bytesOf('other disk') },
        { kind: 'read', op: 12, file: elsewhere, offset: 0, length: 100 },
      ]);
      assert.deepEqual(after.map(outcome), [
        'IO_ERROR',
        'IO_ERROR',
        'IO_ERROR',
        'IO_ERROR',
        'IO_ERROR',
        'IO_ERROR',
        'ok',
        'ok:other disk',
      ]);
      await s.delete(a);
      assert.equal(failures.length, 1);
    },
  );

  it('notices a removal at the next create even before any event arrived', TIMEOUT, async () => {
    const dir = await makeDir(root!, 'disk-1');
    const s = open([{ mountPoint: '/d1', dir }]);
    await rm(dir, { recursive: true, force: true });
    // Issued right after the removal: the create checks the directory itself.
    assert.equal(
      outcome(await s.run({ kind: 'createFile', op: 1, file: diskFile('app-1-0/0-0', '/d1') })),
      'IO_ERROR',
    );
    await failuresReach(1);
    assert.equal(failures.length, 1);
  });

  it(
    'treats a directory replaced by a new one as failed, and comes back when the disk probe succeeds',
    TIMEOUT,
    async () => {
      const dir = await makeDir(root!, 'disk-1');
      const s = open([{ mountPoint: '/d1', dir }]);
      const file = diskFile('app-1-0/0-0', '/d1');
      await s.runBatch([
        { kind: 'createFile', op: 1, file },
        { kind: 'write', op: 2, file, bytes: bytesOf('lost') },
      ]);
      await rm(dir, { recursive: true, force: true });
      await mkdir(dir);
      await failuresReach(1);
      assert.equal(outcome(await s.run({ kind: 'write', op: 3, file, bytes: bytesOf('x') })), 'IO_ERROR');

      // The core's disk probe: delete, then create, write and flush the probe file.
      const probe = diskFile('.svc-disk-probe', '/d1');
      const deleted = s.delete(probe);
      const probed = await s.runBatch([
        { kind: 'createFile', op: -1, file: probe },
        { kind: 'write', op: -2, file: probe, bytes: bytesOf('svc\n') },
        { kind: 'flush', op: -3, file: probe },
      ]);
      await deleted;
      assert.deepEqual(probed.map(outcome), ['ok', 'ok', 'ok']);
      await s.delete(probe);

      // Healthy again: new files work; the file of the old directory stays failed until deleted.
      const fresh = diskFile('app-1-0/1-0', '/d1');
      assert.deepEqual(
        (
          await s.runBatch([
            { kind: 'createFile', op: 4, file: fresh },
            { kind: 'write', op: 5, file: fresh, bytes: bytesOf('kept') },
            { kind: 'read', op: 6, file: fresh, offset: 0, length: 4 },
            { kind: 'read', op: 7, file, offset: 0, length: 4 },
          ])
        ).map(outcome),
        ['ok', 'ok', 'ok:kept', 'IO_ERROR'],
      );
      await s.delete(file);
      assert.equal(outcome(await s.run({ kind: 'createFile', op: 8, file })), 'ok');
      assert.equal(failures.length, 1);

      // A second removal is a second failure.
      await rm(dir, { recursive: true, force: true });
      await failuresReach(2);
      assert.equal(outcome(await s.run({ kind: 'flush', op: 9, file: fresh })), 'IO_ERROR');
    },
  );

  it(
    'notices the removal of a directory above the disk directory (a working directory inside the disk)',
    TIMEOUT,
    async () => {
      const disk = await makeDir(root!, 'disk-1');
      const dir = await makeDir(disk, 'svc-work');
      const s = open([{ mountPoint: disk, dir }]);
      const file = diskFile('app-1-0/0-0', disk);
      await s.run({ kind: 'createFile', op: 1, file });
      await rm(disk, { recursive: true, force: true });
      await failuresReach(1);
      assert.match(failures[0]!.reason, /disk-1/);
      assert.equal(outcome(await s.run({ kind: 'write', op: 2, file, bytes: bytesOf('x') })), 'IO_ERROR');
    },
  );

  it(
    'makes the working directory again on a disk that came back empty, once the probe runs',
    TIMEOUT,
    async () => {
      const disk = await makeDir(root!, 'disk-1');
      const dir = await makeDir(disk, 'svc-work');
      const s = open([{ mountPoint: disk, dir }]);
      const file = diskFile('app-1-0/0-0', disk);
      await s.run({ kind: 'createFile', op: 1, file });
      // A replaced disk, mounted again: its directory is back, empty, without svc's working directory.
      await rm(disk, { recursive: true, force: true });
      await failuresReach(1);
      await mkdir(disk);
      assert.equal(existsSync(dir), false);

      const probe = diskFile('.svc-disk-probe', disk);
      const deleted = s.delete(probe);
      const probed = await s.runBatch([
        { kind: 'createFile', op: -1, file: probe },
        { kind: 'write', op: -2, file: probe, bytes: bytesOf('svc\n') },
        { kind: 'flush', op: -3, file: probe },
      ]);
      await deleted;
      assert.deepEqual(probed.map(outcome), ['ok', 'ok', 'ok']);
      assert.equal(existsSync(dir), true, 'the working directory was made again');
      const fresh = diskFile('app-1-0/1-0', disk);
      assert.equal(outcome(await s.run({ kind: 'createFile', op: 2, file: fresh })), 'ok');
    },
  );

  it(
    'makes nothing while the disk itself is missing: the probe fails and the disk stays failed',
    TIMEOUT,
    async () => {
      const disk = await makeDir(root!, 'disk-1');
      const dir = await makeDir(disk, 'svc-work');
      const s = open([{ mountPoint: disk, dir }]);
      await rm(disk, { recursive: true, force: true });
      await failuresReach(1);
      const probe = diskFile('.svc-disk-probe', disk);
      assert.notEqual(outcome(await s.run({ kind: 'createFile', op: -1, file: probe })), 'ok');
      assert.equal(existsSync(disk), false, 'an absent disk is never created');
    },
  );

  it(
    'reports a disk whose directory is missing at start, and never creates the directory itself',
    TIMEOUT,
    async () => {
      const dir = path.join(root!, 'not-there');
      const s = open([{ mountPoint: '/d1', dir }]);
      await failuresReach(1);
      assert.equal(
        outcome(await s.run({ kind: 'createFile', op: 1, file: diskFile('app-1-0/0-0', '/d1') })),
        'IO_ERROR',
      );
      assert.equal(existsSync(dir), false);
      await mkdir(dir);
      assert.equal(
        outcome(await s.run({ kind: 'createFile', op: 2, file: diskFile('app-1-0/0-0', '/d1') })),
        'ok',
      );
      assert.equal(failures.length, 1);
    },
  );
});
