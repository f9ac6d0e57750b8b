/**
 * A plain Uint8Array of `length` bytes whose memory is not zero-filled first. Only for buffers every byte of which is
 * written before anyone reads it (a chunk read from a file, a copy out of memory, a frame gathered from several socket reads): zeroing 8 MiB chunks only to
 * overwrite them was most of a fetching worker's time, in garbage collection of the fresh buffers and in memset
 * (docs/performance.md).
 */
export function unzeroedBytes(length: number): Uint8Array {
  const memory = Buffer.allocUnsafe(length);
  return new Uint8Array(memory.buffer, memory.byteOffset, length);
}
