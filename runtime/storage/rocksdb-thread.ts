// The RocksDB store's own thread (./rocksdb-threaded.ts): @nxtedition/rocksdb writes a batch synchronously, so a
// synced batch (an fsync of the write-ahead log) held the event loop of the process that wrote it. Here it holds
// only this thread; the node's event loop goes on stepping its machine and gathers the next group of writes.
import { parentPort, workerData } from 'node:worker_threads';
import { RocksLevel } from '@nxtedition/rocksdb';
import type { ThreadReply, ThreadRequest } from './rocksdb-threaded.ts';

const port = parentPort;
if (port === null) throw new Error('rocksdb-thread.ts runs as a worker thread only');
const { dir } = workerData as { readonly dir: string };
const db = new RocksLevel(dir, { keyEncoding: 'utf8', valueEncoding: 'utf8' });

/** Requests are served one at a time, in order: a write is never overtaken by a later one. */
let queue: Promise<void> = Promise.resolve();

port.on('message', (request: ThreadRequest) => {
  queue = queue.then(() => serve(request));
});

async function serve(request: ThreadRequest): Promise<void> {
  let reply: ThreadReply;
  try {
    switch (request.kind) {
      case 'open':
        await db.open();
        reply = { id: request.id };
        break;
      case 'load': {
        const entries: [string, string][] = [];
        for await (const entry of db.iterator()) entries.push(entry);
        reply = { id: request.id, entries };
        break;
      }
      case 'write':
        // sync: the batch is on disk (fsync of the write-ahead log) before the write is confirmed.
        await db.batch(request.operations, { sync: true });
        reply = { id: request.id };
        break;
      case 'close':
        await db.close();
        reply = { id: request.id };
        break;
    }
  } catch (error) {
    reply = { id: request.id, error: describe(error) };
  }
  port!.postMessage(reply);
}

/** The error's message and its cause's: abstract-level reports "Database failed to open" and puts why in `cause`. */
function describe(error: unknown): string {
  if (!(error instanceof Error)) return String(error);
  const cause = error.cause instanceof Error ? error.cause.message : undefined;
  return cause === undefined || cause === error.message ? error.message : `${error.message}: ${cause}`;
}
