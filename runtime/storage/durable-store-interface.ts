// What a durable store is, apart from the two database backends that implement it (durable-store.ts), so that code
// holding a store (the node driver, and through it the client) does not import the native databases.
export type DbBackend = 'ROCKSDB' | 'LEVELDB';

/**
 * A node's store that survives a crash: a worker's recovery store, the masters' coordination store. The core sees it
 * twice: everything persisted comes back in `start`, and `persist` effects write to it before any effect after them
 * runs (runtime/driver/node-driver.ts).
 */
export interface DurableStore {
  /** Everything, as persisted. */
  load(): Promise<Map<string, string>>;
  /** One atomic batch, synced to disk before it resolves; a null value deletes the key. */
  write(changes: readonly { readonly key: string; readonly value: string | null }[]): Promise<void>;
  close(): Promise<void>;
}
