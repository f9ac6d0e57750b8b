import { unzeroedBytes } from '../unzeroed-bytes.ts';
import { WireError } from './errors.ts';

/** Bytes of the length prefix in front of every frame body (unsigned, big-endian). */
export const LENGTH_PREFIX_BYTES = 4;

/**
 * Cuts a byte stream into frame bodies. A body that lies whole inside one received chunk is handed out as a view
 * of that chunk (no copy); a body split across chunks is gathered into a buffer of exactly its size, allocated once
 * its length is known, so each of its bytes is copied once, the one copy a stream socket forces (copying the rest of
 * the chunk along with it had doubled the worker's copying and pinned whole socket buffers: docs/performance.md). A
 * length above the limit throws at once, before any of the frame is buffered.
 */
export class FrameReader {
  /** The body being gathered across chunks, once its length is known. */
  private body: Uint8Array | undefined;
  private filled = 0;
  /** A length prefix split across chunks. */
  private readonly prefix = new Uint8Array(LENGTH_PREFIX_BYTES);
  private prefixFilled = 0;

  constructor(private readonly maxFrameBytes: number) {}

  /** Bytes of an unfinished frame held back (0 when the stream is at a frame boundary). */
  get buffered(): number {
    return this.body === undefined ? this.prefixFilled : LENGTH_PREFIX_BYTES + this.filled;
  }

  push(chunk: Uint8Array): Uint8Array[] {
    const bodies: Uint8Array[] = [];
    let at = 0;
    while (at < chunk.byteLength) {
      if (this.body !== undefined) {
        const take = Math.min(this.body.byteLength - this.filled, chunk.byteLength - at);
        this.body.set(chunk.subarray(at, at + take), this.filled);
        this.filled += take;
        at += take;
        if (this.filled === this.body.byteLength) {
          bodies.push(this.body);
          this.body = undefined;
          this.filled = 0;
        }
        continue;
      }
      if (this.prefixFilled > 0 || chunk.byteLength - at < LENGTH_PREFIX_BYTES) {
        while (this.prefixFilled < LENGTH_PREFIX_BYTES && at < chunk.byteLength) {
          this.prefix[this.prefixFilled++] = chunk[at++]!;
        }
        if (this.prefixFilled < LENGTH_PREFIX_BYTES) break;
        this.prefixFilled = 0;
        this.startBody(checkedFrameLength(readFrameLength(this.prefix, 0), this.maxFrameBytes));
        continue;
      }
      const length = checkedFrameLength(readFrameLength(chunk, at), this.maxFrameBytes);
      const start = at + LENGTH_PREFIX_BYTES;
      if (start + length <= chunk.byteLength) {
        bodies.push(chunk.subarray(start, start + length));
        at = start + length;
        continue;
      }
      this.startBody(length);
      at = start;
    }
    return bodies;
  }

  private startBody(length: number): void {
    // Every byte is written before the body is handed out; a plain Uint8Array like the views.
    this.body = unzeroedBytes(length);
    this.filled = 0;
  }
}

/** A frame's body length as the prefix gives it, refused when empty or above the limit. */
export function checkedFrameLength(length: number, maxFrameBytes: number): number {
  if (length > maxFrameBytes) {
    throw new WireError(
      'oversized',
      `a frame of ${length} bytes exceeds the limit of ${maxFrameBytes} (svc.network.frame.maxSize)`,
    );
  }
  if (length === 0) throw new WireError('malformed', 'an empty frame');
  return length;
}

export function readFrameLength(data: Uint8Array, offset: number): number {
  return (
    ((data[offset]! << 24) >>> 0) + (data[offset + 1]! << 16) + (data[offset + 2]! << 8) + data[offset + 3]!
  );
}
