// A delete that leaves its file behind is reported (the worker logs it and counts DeleteFileFailCount) instead of
// vanishing: on a real disk directory, a "file" that is a non-empty directory cannot be unlinked.
import assert from 'node:assert/strict';
import { existsSync } from 'node:fs';
import { mkdir, writeFile } from 'node:fs/promises';
import path from 'node:path';
import { afterEach, beforeEach, describe, it } from 'node:test';
import { listDiskFiles } from './leftover-files.ts';
import { TierStorage } from './tier-storage.ts';
import { diskFile, makeDir, makeTempRoot, outcome, removeTempRoot } from './testing.ts';

const DISK = '/mnt/disk1';

describe('TierStorage: failed deletes', () => {
  let root: string | undefined;
  let diskDir: string;
  let storage: TierStorage;
  let failures: { file: string; reason: string }[];

  beforeEach(async () => {
    root = await makeTempRoot('delete');
    diskDir = await makeDir(root, 'disk1');
    failures = [];
    storage = new TierStorage({
      disks: [{ mountPoint: DISK, dir: diskDir }],
      onDeleteFailed: (file, reason) => failures.push({ file, reason }),
    });
  });

  afterEach(async () => {
    await storage.close();
    await removeTempRoot(root);
    root = undefined;
  });

  it('reports a file it could not remove, with its id, disk and the system’s reason', async () => {
    // Not removable by unlink, even by root: a directory where the file should be.
    await mkdir(path.join(diskDir, 'app-1', '0-0-0', 'inside'), { recursive: true });
    await storage.delete(diskFile('app-1/0-0-0', DISK));
    assert.equal(failures.length, 1);
    assert.match(failures[0]!.file, /^app-1\/0-0-0 \(HDD \/mnt\/disk1\)$/);
    assert.match(failures[0]!.reason, /EISDIR|EPERM/);
    assert.ok(existsSync(path.join(diskDir, 'app-1', '0-0-0')), 'it is still there');
  });

  it('reports an id that would leave the tier, and not a file that is already gone', async () => {
    await storage.delete(diskFile('../escape', DISK));
    await storage.delete(diskFile('app-1/never-created', DISK));
    assert.deepEqual(
      failures.map((failure) => failure.file),
      ['../escape (HDD /mnt/disk1)'],
    );
  });

  it('removes a file a restarted worker found and did not open, and its emptied shuffle directory', async () => {
    await mkdir(path.join(diskDir, 'app-2'), { recursive: true });
    await writeFile(path.join(diskDir, 'app-2', '3-0-0'), 'left by an earlier run');
    const listed = await listDiskFiles([{ dir: diskDir, mountPoint: DISK, type: 'HDD' }]);
    assert.deepEqual(listed.files, [diskFile('app-2/3-0-0', DISK)]);
    await storage.delete(listed.files[0]!);
    assert.deepEqual(failures, []);
    assert.equal(existsSync(path.join(diskDir, 'app-2')), false);
    // And the storage still works for new files of that shuffle.
    const created = await storage.run({ kind: 'createFile', op: 1, file: diskFile('app-2/3-1-0', DISK) });
    assert.equal(outcome(created), 'ok');
  });
});
