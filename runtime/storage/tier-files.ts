/**
 * The files of one tier, as TierStorage drives them: memory (memory-files.ts) or a directory (directory-files.ts).
 * `segments` is the file id split at '/', already checked (file-id.ts). Methods reject with IoFailure or a Node.js
 * system error; the caller orders operations per file (file-lanes.ts) and maps failures to the core's IoError.
 */
export interface TierFiles {
  /** Creates an empty file; an existing one fails with EXISTS. */
  create(id: string, segments: readonly string[]): Promise<void>;
  /** Appends the chunks in order. */
  append(id: string, chunks: readonly Uint8Array[]): Promise<void>;
  /** Makes everything appended so far durable. */
  flush(id: string): Promise<void>;
  /**
   * [offset, offset + length), short at the end of the file. `lend`: the bytes serve a chunk to a reader, and may
   * be read into a buffer lent by the tier's ReadBuffers (read-buffers.ts), which the transport gives back.
   */
  read(id: string, offset: number, length: number, lend?: boolean): Promise<Uint8Array>;
  /**
   * The whole file, for moving it to another tier. May be views of the tier's own memory (a pooled memory tier),
   * valid until the file is removed: a move awaits the target's `adopt` before removing the source.
   */
  contents(id: string): Promise<readonly Uint8Array[]>;
  /** Creates a file holding `chunks` durably (a move's target); a failure leaves no partial file behind. */
  adopt(id: string, segments: readonly string[], chunks: readonly Uint8Array[]): Promise<void>;
  /** Removes the file; a missing one is fine, and it never rejects. */
  remove(id: string, segments: readonly string[]): Promise<void>;
}
