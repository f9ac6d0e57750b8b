// Child process of open-handles.test.ts, started under a low `ulimit -n`: it takes every descriptor the process has
// left (opening /dev/null until EMFILE), then asks a TierStorage for files, and prints one JSON line with what the
// core would have been told. Descriptors are exhausted here, not in the test runner, which needs its own.
import { openSync, closeSync } from 'node:fs';
import { TierStorage } from '../tier-storage.ts';
import { bytesOf, diskFile, outcome, type UnnumberedIo } from '../testing.ts';

const [diskDir, otherDiskDir] = process.argv.slice(2);
const DISK = '/mnt/disk1';
const OTHER = '/mnt/disk2';
const failedDisks: string[] = [];
const onDiskFailed = (mountPoint: string): void => void failedDisks.push(mountPoint);
const storage = new TierStorage({ disks: [{ mountPoint: DISK, dir: diskDir! }], onDiskFailed });
// A storage with no file open: nothing it could close to make room.
const empty = new TierStorage({ disks: [{ mountPoint: OTHER, dir: otherDiskDir! }], onDiskFailed });
let op = 0;
const run = async (on: TierStorage, effect: UnnumberedIo): Promise<string> =>
  outcome(await on.run({ ...effect, op: ++op }));

// Two files that keep their handles: what the storage may close when the process runs out.
const kept = [
  await run(storage, { kind: 'createFile', file: diskFile('app/0-0-0', DISK) }),
  await run(storage, { kind: 'createFile', file: diskFile('app/1-0-0', DISK) }),
  await run(storage, { kind: 'write', file: diskFile('app/0-0-0', DISK), bytes: bytesOf('kept bytes') }),
];

const hogs: number[] = [];
function takeEveryDescriptor(): void {
  for (;;) {
    try {
      hogs.push(openSync('/dev/null', 'r'));
    } catch (error) {
      if ((error as NodeJS.ErrnoException).code !== 'EMFILE') throw error;
      return;
    }
  }
}

takeEveryDescriptor();
// With idle handles to close, a create succeeds all the same (the oldest, 1-0-0's, is closed for it)...
const createdWithRoom = await run(storage, { kind: 'createFile', file: diskFile('app/2-0-0', DISK) });
// ... and that file is opened again when next used (closing 0-0-0's, the oldest now).
const reopened = await run(storage, {
  kind: 'write',
  file: diskFile('app/1-0-0', DISK),
  bytes: bytesOf('again'),
});
const reread = [
  await run(storage, { kind: 'read', file: diskFile('app/0-0-0', DISK), offset: 0, length: 100 }),
  await run(storage, { kind: 'read', file: diskFile('app/1-0-0', DISK), offset: 0, length: 100 }),
];
// The handles closed to make room above close in the background and give their descriptors back: once `storage`
// is closed (every close completed), every descriptor is taken again, so that nothing is left to open with.
await storage.close();
takeEveryDescriptor();
// With nothing to close, a create fails: as NO_DESCRIPTORS, the process's fault, not the disk's.
const createdWithout = await run(empty, { kind: 'createFile', file: diskFile('app/3-0-0', OTHER) });
for (const fd of hogs.splice(0)) closeSync(fd);
const afterwards = await run(empty, { kind: 'createFile', file: diskFile('app/3-0-0', OTHER) });
await empty.close();
process.stdout.write(
  `${JSON.stringify({ kept, createdWithRoom, reopened, reread, createdWithout, afterwards, failedDisks })}\n`,
);
