import { unzeroedBytes } from '../unzeroed-bytes.ts';
import { WireError } from './errors.ts';
import type { BodySource } from './receive-bodies.ts';

/** Bytes of the length prefix in front of every frame body (unsigned, big-endian). */
export const LENGTH_PREFIX_BYTES = 4;

/**
 * The largest frame a connection accepts before its handshake completed: a hello, a challenge, a proof or a hello
 * reply is a few hundred bytes, and a peer nobody admitted yet must not make this process allocate more.
 */
export const HANDSHAKE_FRAME_BYTES = 4096;

/**
 * A frame's body up to this size is allocated whole once its length is known (every push, chunk and merged push of
 * the default sizes); a larger one grows as its bytes arrive (doubling), so that a length prefix alone, which any
 * peer can send, never makes the process hold more than this.
 */
export const EAGER_BODY_BYTES = 16 * 1024 * 1024;

/** The largest frame a reader accepts, and what sets that limit (for the refusal's message). */
export interface FrameLimit {
  readonly bytes: number;
  /** The key or rule that sets the limit, named in the refusal. */
  readonly source: string;
}

/** The limit once a connection's handshake completed: svc.network.frame.maxSize. */
export function frameLimit(maxFrameBytes: number): FrameLimit {
  return { bytes: maxFrameBytes, source: 'svc.network.frame.maxSize' };
}

/** The limit before a connection's handshake completed. */
export const HANDSHAKE_LIMIT: FrameLimit = {
  bytes: HANDSHAKE_FRAME_BYTES,
  source: `the limit of a frame before the handshake, ${HANDSHAKE_FRAME_BYTES} bytes`,
};

/** Bytes to allocate for a body of `length` of which `filled` arrived and `capacity` is allocated: the next step. */
export function bodyCapacity(length: number, capacity: number): number {
  if (length <= EAGER_BODY_BYTES) return length;
  return Math.min(length, capacity === 0 ? EAGER_BODY_BYTES : capacity * 2);
}

/** A copy of `body`'s first `filled` bytes in a buffer of `capacity` bytes. */
export function grownBody(body: Uint8Array, filled: number, capacity: number): Uint8Array {
  const grown = unzeroedBytes(capacity);
  grown.set(body.subarray(0, filled));
  return grown;
}

/**
 * Cuts a byte stream into frame bodies. A body that lies whole inside one received chunk is handed out as a view
 * of that chunk (no copy); a body split across chunks is gathered into a buffer of exactly its size, allocated once
 * its length is known, so each of its bytes is copied once, the one copy a stream socket forces (copying the rest of
 * the chunk along with it had doubled the worker's copying and pinned whole socket buffers: docs/performance.md). A
 * body above `EAGER_BODY_BYTES` grows as it arrives instead. A length above the limit throws at once, before any of
 * the frame is buffered.
 */
export class FrameReader {
  /** The body being gathered across chunks, once its length is known (allocated up to `capacity`). */
  private body: Uint8Array | undefined;
  private length = 0;
  private filled = 0;
  /** A length prefix split across chunks. */
  private readonly prefix = new Uint8Array(LENGTH_PREFIX_BYTES);
  private prefixFilled = 0;
  /** Where a gathered body comes from: a worker's pool (./receive-bodies.ts), else fresh memory. */
  private bodies: BodySource | undefined;

  private limit: FrameLimit;

  /** `limit`: a frame limit, or svc.network.frame.maxSize's value. */
  constructor(limit: FrameLimit | number) {
    this.limit = typeof limit === 'number' ? frameLimit(limit) : limit;
  }

  /** Changes the largest frame accepted from the next frame on (once a handshake completed). */
  setLimit(limit: FrameLimit): void {
    this.limit = limit;
  }

  /** Gathered bodies are taken from `bodies` from the next frame on. */
  takeBodiesFrom(bodies: BodySource): void {
    this.bodies = bodies;
  }

  /** Bytes of an unfinished frame held back (0 when the stream is at a frame boundary). */
  get buffered(): number {
    return this.body === undefined ? this.prefixFilled : LENGTH_PREFIX_BYTES + this.filled;
  }

  /** Bytes of memory this reader holds for the unfinished frame (what it allocated for it). */
  get held(): number {
    return this.body === undefined ? this.prefixFilled : this.body.byteLength;
  }

  push(chunk: Uint8Array): Uint8Array[] {
    const bodies: Uint8Array[] = [];
    let at = 0;
    while (at < chunk.byteLength) {
      if (this.body !== undefined) {
        if (this.filled === this.body.byteLength) {
          this.body = grownBody(this.body, this.filled, bodyCapacity(this.length, this.body.byteLength));
        }
        const take = Math.min(this.body.byteLength - this.filled, chunk.byteLength - at);
        this.body.set(chunk.subarray(at, at + take), this.filled);
        this.filled += take;
        at += take;
        if (this.filled === this.length) {
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
        this.startBody(checkedFrameLength(readFrameLength(this.prefix, 0), this.limit));
        continue;
      }
      const length = checkedFrameLength(readFrameLength(chunk, at), this.limit);
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
    const capacity = bodyCapacity(length, 0);
    this.body = this.bodies === undefined ? unzeroedBytes(capacity) : this.bodies.take(capacity);
    this.length = length;
    this.filled = 0;
  }
}

/** A frame's body length as the prefix gives it, refused when empty or above the limit. */
export function checkedFrameLength(length: number, limit: FrameLimit): number {
  if (length > limit.bytes) {
    throw new WireError(
      'oversized',
      `a frame of ${length} bytes exceeds the limit of ${limit.bytes} (${limit.source})`,
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
