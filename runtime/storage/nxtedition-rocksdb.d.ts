// The package ships no type declarations. This declares only what durable-store.ts uses: the abstract-level
// database interface (open, batch with sync, iterate, close) with utf8 keys and values.
declare module '@nxtedition/rocksdb' {
  export class RocksLevel {
    constructor(
      location: string,
      options?: { readonly keyEncoding?: 'utf8'; readonly valueEncoding?: 'utf8' },
    );
    open(): Promise<void>;
    batch(
      operations: readonly (
        | { readonly type: 'put'; readonly key: string; readonly value: string }
        | { readonly type: 'del'; readonly key: string }
      )[],
      options: { readonly sync: boolean },
    ): Promise<void>;
    iterator(): AsyncIterable<[string, string]>;
    close(): Promise<void>;
  }
}
