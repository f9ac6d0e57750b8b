// The worker's open file handles are bounded (svc.worker.storage.maxOpenFiles): past the bound the least recently
// used idle handle is closed and its file opened again when next used, with every byte intact. A process that runs
// out of descriptors (EMFILE: sockets count too) first closes idle handles and tries again, and when nothing is left
// to close reports NO_DESCRIPTORS, which charges no disk (core: noteDiskFailure).
import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import { readdirSync, readlinkSync } from 'node:fs';
import path from 'node:path';
import { afterEach, beforeEach, describe, it } from 'node:test';
import { promisify } from 'node:util';
import { pollUntil } from '../testing/poll.ts';
import { OpenHandles } from './open-handles.ts';
import { TierStorage } from './tier-storage.ts';
import {
  bytesOf,
  diskFile,
  makeDir,
  makeTempRoot,
  outcome,
  removeTempRoot,
  type UnnumberedIo,
} from './testing.ts';

const DISK = '/mnt/disk1';
const CHILD = new URL('./testing/out-of-descriptors.ts', import.meta.url).pathname;

/** Descriptors of this process open on files under `dir` (Linux: /proc/self/fd). */
function descriptorsUnder(dir: string): number {
  let count = 0;
  for (const fd of readdirSync('/proc/self/fd')) {
    try {
      if (readlinkSync(path.join('/proc/self/fd', fd)).startsWith(`${dir}${path.sep}`)) count += 1;
    } catch {
      // Closed between the listing and the read (the listing's own descriptor).
    }
  }
  return count;
}

describe('open file handles of the worker’s storage', () => {
  let root: string | undefined;
  let diskDir: string;
  let storage: TierStorage | undefined;
  let op = 0;
  const run = async (effect: UnnumberedIo): Promise<string> =>
    outcome(await storage!.run({ ...effect, op: ++op }));

  beforeEach(async () => {
    root = await makeTempRoot('handles');
    diskDir = await makeDir(root, 'disk1');
  });

  afterEach(async () => {
    await storage?.close();
    storage = undefined;
    await removeTempRoot(root);
    root = undefined;
  });

  it('keeps at most the bound open, and opens a closed file again with its bytes intact', async () => {
    storage = new TierStorage({ disks: [{ mountPoint: DISK, dir: diskDir }], maxOpenFiles: 2 });
    const ids = [0, 1, 2, 3, 4, 5].map((i) => `app/${i}-0-0`);
    for (const id of ids) {
      assert.equal(await run({ kind: 'createFile', file: diskFile(id, DISK) }), 'ok');
      assert.equal(await run({ kind: 'write', file: diskFile(id, DISK), bytes: bytesOf(`${id}:`) }), 'ok');
      await pollUntil(
        () => descriptorsUnder(diskDir) <= 2,
        () => `${descriptorsUnder(diskDir)} open after ${id}`,
      );
    }
    // Every file is used again, each after its handle was closed: appends go to the end, flushes and reads work.
    for (const id of ids) {
      assert.equal(await run({ kind: 'write', file: diskFile(id, DISK), bytes: bytesOf('more') }), 'ok');
      assert.equal(await run({ kind: 'flush', file: diskFile(id, DISK) }), 'ok');
    }
    const reads = await Promise.all(
      ids.map((id) => run({ kind: 'read', file: diskFile(id, DISK), offset: 0, length: 100 })),
    );
    assert.deepEqual(
      reads,
      ids.map((id) => `ok:${id}:more`),
    );
    // A handle over the bound closes as its operation releases it; the close itself completes in the background.
    await pollUntil(
      () => descriptorsUnder(diskDir) <= 2,
      () => `${descriptorsUnder(diskDir)} open after the reads`,
    );
    await storage.delete(diskFile(ids[0]!, DISK));
    assert.equal(
      await run({ kind: 'read', file: diskFile(ids[0]!, DISK), offset: 0, length: 1 }),
      'NOT_FOUND',
      'a deleted file is not opened again',
    );
  });

  it('never closes a handle an operation holds, and closes the excess once released', async () => {
    const budget = new OpenHandles(1);
    const closed: string[] = [];
    const holder = (name: string, inUse: number) => ({
      handle: undefined,
      inUse,
      close: () => {
        closed.push(name);
        return Promise.resolve();
      },
    });
    const busy = holder('busy', 1);
    const idle = holder('idle', 0);
    budget.used(busy);
    budget.used(idle);
    assert.deepEqual(closed, [], 'over the bound, but the older one is in use and the newer one just opened');
    assert.equal(budget.size, 2);
    busy.inUse = 0;
    budget.released();
    assert.deepEqual(closed, ['busy'], 'the oldest, once idle');
    assert.equal(await budget.shed(), 1, 'out of descriptors: the idle half closes');
    assert.equal(await budget.shed(), 0, 'nothing left to close');
  });

  it('out of descriptors: an open is tried again only once the closed handles gave their descriptors back', async () => {
    const budget = new OpenHandles(4);
    let giveBack: () => void = () => assert.fail('no close began');
    const slowClose = {
      handle: undefined,
      inUse: 0,
      close: () => new Promise<void>((resolve) => (giveBack = resolve)),
    };
    budget.used(slowClose);
    budget.used({ handle: undefined, inUse: 0, close: () => Promise.resolve() });
    const events: string[] = [];
    const shed = budget.shed().then((count) => events.push(`shed ${count}`));
    await Promise.resolve();
    events.push('close completes');
    giveBack();
    await shed;
    assert.deepEqual(events, ['close completes', 'shed 1'], 'shed waits for the close it began');
  });

  it('out of descriptors: closes idle handles and goes on, else fails as NO_DESCRIPTORS, no disk failed', async () => {
    const other = await makeDir(root!, 'disk2');
    // A process limit low enough to reach, high enough for Node.js and tsx to start.
    const { stdout } = await promisify(execFile)(
      'sh',
      ['-c', `ulimit -n 200 && exec "${process.execPath}" --import tsx "${CHILD}" "$0" "$1"`, diskDir, other],
      { cwd: path.resolve(import.meta.dirname, '../..'), timeout: 60_000 },
    );
    assert.deepEqual(JSON.parse(stdout.trim().split('\n').at(-1)!), {
      kept: ['ok', 'ok', 'ok'],
      createdWithRoom: 'ok',
      reopened: 'ok',
      reread: ['ok:kept bytes', 'ok:again'],
      createdWithout: 'NO_DESCRIPTORS',
      afterwards: 'ok',
      failedDisks: [],
    });
  });
});
