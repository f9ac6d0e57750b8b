import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { Worker } from 'node:worker_threads';
import type { DurableStore } from './durable-store-interface.ts';

type Operation =
  | { readonly type: 'put'; readonly key: string; readonly value: string }
  | { readonly type: 'del'; readonly key: string };

/** What the store's thread (./rocksdb-thread.ts) is asked, and answers. */
export type ThreadRequest =
  | { readonly kind: 'open' | 'load' | 'close'; readonly id: number }
  | { readonly kind: 'write'; readonly id: number; readonly operations: readonly Operation[] };
export interface ThreadReply {
  readonly id: number;
  readonly error?: string;
  readonly entries?: readonly [string, string][];
}

/** The thread's module beside this one: .ts from source (run through tsx, as this module is), .js once compiled. */
const FROM_SOURCE = path.extname(fileURLToPath(import.meta.url)) === '.ts';
const THREAD_MODULE = new URL(`./rocksdb-thread${FROM_SOURCE ? '.ts' : '.js'}`, import.meta.url);

/**
 * A RocksDB store whose every operation runs on a thread of its own, one at a time in order: the synced batch
 * write, synchronous in @nxtedition/rocksdb, no longer holds the event loop (docs/performance.md, "A busy master").
 * A write still resolves only once its batch is on disk, so what waits for it (runtime/driver: every effect after a
 * `persist`) waits as before. The thread keeps the process alive only while a request is under way.
 */
export async function openThreadedRocksDb(dir: string): Promise<DurableStore> {
  const worker = FROM_SOURCE
    ? // From source the thread registers tsx itself: a thread does not inherit the loader of its process.
      new Worker(
        `import(${JSON.stringify(import.meta.resolve('tsx/esm/api'))})` +
          `.then(({ register }) => { register(); return import(${JSON.stringify(THREAD_MODULE.href)}); })`,
        { eval: true, workerData: { dir } },
      )
    : new Worker(THREAD_MODULE, { workerData: { dir } });
  worker.unref();
  const pending = new Map<
    number,
    { resolve: (reply: ThreadReply) => void; reject: (error: Error) => void }
  >();
  let nextId = 0;
  let failure: Error | undefined;
  const fail = (error: Error): void => {
    failure ??= error;
    for (const { reject } of pending.values()) reject(failure);
    pending.clear();
    worker.unref();
  };
  worker.on('message', (reply: ThreadReply) => {
    const waiting = pending.get(reply.id);
    pending.delete(reply.id);
    if (pending.size === 0) worker.unref();
    if (reply.error === undefined) waiting?.resolve(reply);
    else waiting?.reject(new Error(reply.error));
  });
  worker.on('error', fail);
  worker.on('exit', (code) => fail(new Error(`the RocksDB store's thread exited (code ${code})`)));
  const ask = (request: (id: number) => ThreadRequest): Promise<ThreadReply> => {
    if (failure !== undefined) return Promise.reject(failure);
    const id = nextId++;
    return new Promise((resolve, reject) => {
      pending.set(id, { resolve, reject });
      worker.ref();
      worker.postMessage(request(id));
    });
  };
  try {
    await ask((id) => ({ kind: 'open', id }));
  } catch (error) {
    await worker.terminate();
    throw error;
  }
  return {
    async load() {
      const reply = await ask((id) => ({ kind: 'load', id }));
      return new Map(reply.entries ?? []);
    },
    async write(changes) {
      if (changes.length === 0) return;
      const operations = changes.map(({ key, value }) =>
        value === null ? { type: 'del' as const, key } : { type: 'put' as const, key, value },
      );
      await ask((id) => ({ kind: 'write', id, operations }));
    },
    async close() {
      try {
        await ask((id) => ({ kind: 'close', id }));
      } finally {
        await worker.terminate();
      }
    },
  };
}
