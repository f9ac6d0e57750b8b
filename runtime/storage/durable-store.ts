import { mkdir } from 'node:fs/promises';
import { ClassicLevel } from 'classic-level';
import { openThreadedRocksDb } from './rocksdb-threaded.ts';

export type { DbBackend, DurableStore } from './durable-store-interface.ts';
import type { DbBackend, DurableStore } from './durable-store-interface.ts';

/** What both backends offer (abstract-level), with utf8 keys and values. */
interface Level {
  open(): Promise<void>;
  batch(
    operations: (
      | { readonly type: 'put'; readonly key: string; readonly value: string }
      | { readonly type: 'del'; readonly key: string }
    )[],
    options: { readonly sync: boolean },
  ): Promise<void>;
  iterator(): AsyncIterable<[string, string]>;
  close(): Promise<void>;
}

/**
 * Opens (creating if needed) the store in `dir`; fails naming the directory and backend, e.g. when it is locked.
 * RocksDB runs on a thread of its own (./rocksdb-threaded.ts: its binding writes a batch synchronously); LevelDB's
 * binding already writes on libuv's pool.
 */
export async function openDurableStore(backend: DbBackend, dir: string): Promise<DurableStore> {
  if (backend === 'ROCKSDB') {
    try {
      // Owner only: a master's state holds the applications' secrets (svc.auth.enabled).
      await mkdir(dir, { recursive: true, mode: 0o700 });
      return await openThreadedRocksDb(dir);
    } catch (error) {
      throw new Error(`cannot open the ${backend} store in ${dir}: ${describe(error)}`, { cause: error });
    }
  }
  const db = await openLevel(dir);
  return {
    async load() {
      const entries = new Map<string, string>();
      for await (const [key, value] of db.iterator()) entries.set(key, value);
      return entries;
    },
    async write(changes) {
      if (changes.length === 0) return;
      const operations = changes.map(({ key, value }) =>
        value === null ? { type: 'del' as const, key } : { type: 'put' as const, key, value },
      );
      // sync: the batch is on disk (fsync of the write-ahead log) before `persist` counts as done.
      await db.batch(operations, { sync: true });
    },
    close: () => db.close(),
  };
}

/**
 * A store that keeps what is written in this process only: a worker's recovery store when graceful shutdown is off
 * (svc.worker.graceful.shutdown.enabled false). Nothing is opened on disk, so nothing can be locked by another
 * worker; a restart recovers nothing, as in the reference, and the files left behind are removed once their
 * applications are gone (core/machines/worker/leftovers.ts).
 */
export function volatileDurableStore(): DurableStore {
  const entries = new Map<string, string>();
  return {
    load: () => Promise.resolve(new Map(entries)),
    write(changes) {
      for (const { key, value } of changes) {
        if (value === null) entries.delete(key);
        else entries.set(key, value);
      }
      return Promise.resolve();
    },
    close: () => Promise.resolve(),
  };
}

async function openLevel(dir: string): Promise<Level> {
  const options = { keyEncoding: 'utf8', valueEncoding: 'utf8' } as const;
  let db: Level | undefined;
  try {
    // Owner only: a master's state holds the applications' secrets (svc.auth.enabled); a directory that exists
    // keeps the mode the operator gave it.
    await mkdir(dir, { recursive: true, mode: 0o700 });
    db = new ClassicLevel<string, string>(dir, options);
    await db.open();
    return db;
  } catch (error) {
    // Releases what the failed open may hold (the native handle); the open's error is the one worth reporting.
    await db?.close().catch(() => undefined);
    throw new Error(`cannot open the LEVELDB store in ${dir}: ${describe(error)}`, { cause: error });
  }
}

/** The error's message and its cause's: abstract-level reports "Database failed to open" and puts why in `cause`. */
function describe(error: unknown): string {
  if (!(error instanceof Error)) return String(error);
  const cause = error.cause instanceof Error ? error.cause.message : undefined;
  return cause === undefined || cause === error.message ? error.message : `${error.message}: ${cause}`;
}

/**
 * Test only (ServerTestHooks.durableWriteDelayMs): a store whose every write starts `delayMs` late, a disk slow
 * enough that a process killed right after an acknowledgement dies before a write nobody waited for.
 */
export function slowedForTests(store: DurableStore, delayMs: number | undefined): DurableStore {
  if (delayMs === undefined || delayMs <= 0) return store;
  return {
    load: () => store.load(),
    write: (changes) =>
      new Promise((resolve) => setTimeout(resolve, delayMs)).then(() => store.write(changes)),
    close: () => store.close(),
  };
}
