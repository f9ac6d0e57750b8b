import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { once } from 'node:events';
import { stat } from 'node:fs/promises';
import path from 'node:path';
import { createInterface } from 'node:readline';
import { afterEach, beforeEach, describe, it } from 'node:test';
import { openDurableStore, type DbBackend, type DurableStore } from './durable-store.ts';
import { makeTempRoot, removeTempRoot } from './testing.ts';
import { STARTUP_WAIT_MS } from '../cluster/server-process.ts';
import { within } from '../testing/deadline.ts';

const REPO = path.resolve(import.meta.dirname, '../..');
const WRITER = path.join(import.meta.dirname, 'testing', 'write-then-wait.ts');

for (const backend of ['ROCKSDB', 'LEVELDB'] as const satisfies readonly DbBackend[]) {
  describe(`the durable store on ${backend}`, () => {
    let root: string | undefined;
    let dir: string;
    const open: DurableStore[] = [];

    async function openStore(): Promise<DurableStore> {
      const store = await openDurableStore(backend, dir);
      open.push(store);
      return store;
    }

    async function closeStore(store: DurableStore): Promise<void> {
      open.splice(open.indexOf(store), 1);
      await store.close();
    }

    beforeEach(async () => {
      root = await makeTempRoot(backend.toLowerCase());
      dir = path.join(root, 'nested', 'state');
    });

    afterEach(async () => {
      for (const store of open.splice(0)) await store.close();
      await removeTempRoot(root);
      root = undefined;
    });

    it('creates its directory, and loads what was written after a close and reopen', async () => {
      const store = await openStore();
      assert.deepEqual(await store.load(), new Map());
      await store.write([
        { key: 'worker/shuffle/app-1-0', value: '{"files":2}' },
        { key: 'worker/shuffle/app-2-0', value: 'ünïcødé ✓' },
      ]);
      await store.write([{ key: 'master/term', value: '7' }]);
      await store.write([]);
      await closeStore(store);
      const reopened = await openStore();
      assert.deepEqual(
        await reopened.load(),
        new Map([
          ['master/term', '7'],
          ['worker/shuffle/app-1-0', '{"files":2}'],
          ['worker/shuffle/app-2-0', 'ünïcødé ✓'],
        ]),
      );
    });

    it('creates its directory for its owner only (a master keeps secrets there)', async () => {
      await openStore();
      assert.equal((await stat(dir)).mode & 0o777, 0o700);
    });

    it('deletes keys written as null, in the same batch as puts', async () => {
      const store = await openStore();
      await store.write([
        { key: 'a', value: '1' },
        { key: 'b', value: '2' },
      ]);
      await store.write([
        { key: 'a', value: null },
        { key: 'c', value: '3' },
        { key: 'never-there', value: null },
      ]);
      assert.deepEqual(
        await store.load(),
        new Map([
          ['b', '2'],
          ['c', '3'],
        ]),
      );
      await closeStore(store);
      assert.deepEqual(
        await (await openStore()).load(),
        new Map([
          ['b', '2'],
          ['c', '3'],
        ]),
      );
    });

    it('refuses a second open of a locked store with an error naming the backend and directory', async () => {
      await openStore();
      await assert.rejects(openDurableStore(backend, dir), (error: Error) => {
        assert.ok(error.message.includes(backend), error.message);
        assert.ok(error.message.includes(dir), error.message);
        assert.match(error.message, /lock/i);
        return true;
      });
    });

    it(
      'keeps a write whose process was killed with SIGKILL right after write() resolved',
      { timeout: 60_000 },
      async () => {
        const child = spawn(
          process.execPath,
          ['--import', 'tsx', WRITER, backend, dir, 'survivor', 'synced'],
          {
            cwd: REPO,
            stdio: ['ignore', 'pipe', 'inherit'],
          },
        );
        const exited = once(child, 'exit');
        try {
          const lines = createInterface({ input: child.stdout });
          const written = async () => {
            for await (const line of lines) if (line === 'written') return;
            throw new Error(`the writer exited without writing (${String(child.exitCode)})`);
          };
          await within(written(), "the writer's 'written' line", STARTUP_WAIT_MS);
        } finally {
          child.kill('SIGKILL');
          await within(exited, 'the killed writer to exit');
        }
        assert.equal(child.signalCode, 'SIGKILL');
        const store = await openStore();
        assert.deepEqual(await store.load(), new Map([['survivor', 'synced']]));
      },
    );
  });
}
