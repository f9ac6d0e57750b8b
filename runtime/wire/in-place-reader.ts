import type { Crc32Implementation } from '../../core/protocol/crc32.ts';
import { unzeroedBytes } from '../unzeroed-bytes.ts';
import { BatchChecksumScanner } from './batch-checksums.ts';
import {
  bodyCapacity,
  checkedFrameLength,
  EAGER_BODY_BYTES,
  frameLimit,
  grownBody,
  LENGTH_PREFIX_BYTES,
  readFrameLength,
  type FrameLimit,
} from './frame-reader.ts';
import type { BodySource } from './receive-bodies.ts';

/** Bytes of a fresh slab: the most one read takes when no large frame is under way. */
export const SLAB_BYTES = 256 * 1024;
/** Below this much room a slab is left behind for a fresh one, so that a read is never tiny. */
const MIN_ROOM_BYTES = 32 * 1024;

/**
 * Cuts a byte stream into frame bodies, telling the socket where to read to (net.Socket's `onread`), so that the
 * kernel copies the bytes straight to where they stay: frames of up to a slab are read into a slab and handed out
 * as views of it; a frame larger than what is left of its slab gets a buffer of its own, the part already read is
 * moved there once and the socket then reads the rest of the frame directly into it. `FrameReader` (node's
 * 64 KiB reads, then one copy of every frame that spans two of them) stays the reader of sockets that cannot be
 * read in place: TLS, and accepted sockets where runtime/transport's accept hook is unavailable
 * (docs/performance.md).
 *
 * A slab is never written again once a view of it has been handed out: the next read always goes after the last
 * byte received. A slab stays alive while any of its frames does. A body above `EAGER_BODY_BYTES` is allocated in
 * steps as its bytes arrive (./frame-reader.ts), so that a length prefix alone never makes the process hold more.
 *
 * Given a CRC-32, the reader checksums the batch frames of a large frame as each read lands, while the bytes are in
 * the cache (./batch-checksums.ts); small frames are checked by their handler right after their read anyway.
 */
export class InPlaceFrameReader {
  private slab: Uint8Array = unzeroedBytes(SLAB_BYTES);
  /** Where the unfinished frame (or its length prefix) starts in the slab. */
  private start = 0;
  /** Where the bytes received so far end in the slab. */
  private end = 0;
  /** The unfinished frame's body length, once its prefix is complete. */
  private length: number | undefined;
  /** A body too large for its slab, read directly into a buffer of its own (allocated up to its capacity). */
  private body: Uint8Array | undefined;
  private filled = 0;
  private scanner: BatchChecksumScanner | undefined;
  /** Where a body of its own comes from: a worker's pool (./receive-bodies.ts), else fresh memory. */
  private bodies: BodySource | undefined;

  private limit: FrameLimit;

  /** `limit`: a frame limit, or svc.network.frame.maxSize's value. */
  constructor(
    limit: FrameLimit | number,
    private readonly checksum?: Crc32Implementation,
  ) {
    this.limit = typeof limit === 'number' ? frameLimit(limit) : limit;
  }

  /** Changes the largest frame accepted from the next frame on (once a handshake completed). */
  setLimit(limit: FrameLimit): void {
    this.limit = limit;
  }

  /** Bodies of their own are taken from `bodies` from the next frame on (before any bytes arrive). */
  takeBodiesFrom(bodies: BodySource): void {
    this.bodies = bodies;
  }

  /** Bytes of an unfinished frame held back (0 when the stream is at a frame boundary). */
  get buffered(): number {
    return this.body === undefined ? this.end - this.start : LENGTH_PREFIX_BYTES + this.filled;
  }

  /**
   * Bytes of memory this reader holds for the unfinished frame: its own buffer, or the part of the slab it takes
   * (the slab itself, 256 KiB, is every connection's and not counted).
   */
  get held(): number {
    return this.body === undefined ? this.end - this.start : this.body.byteLength;
  }

  /** Where the socket's next read goes. */
  region(): Uint8Array {
    if (this.body !== undefined) {
      if (this.filled === this.body.byteLength) {
        this.body = grownBody(this.body, this.filled, bodyCapacity(this.length!, this.body.byteLength));
      }
      return this.body.subarray(this.filled);
    }
    const room = this.slab.byteLength - this.end;
    if (this.length !== undefined) {
      const needed = this.start + LENGTH_PREFIX_BYTES + this.length;
      if (needed <= this.slab.byteLength) return this.slab.subarray(this.end);
      if (LENGTH_PREFIX_BYTES + this.length > SLAB_BYTES / 2) return this.ownBody();
      this.freshSlab();
      return this.slab.subarray(this.end);
    }
    if (room < MIN_ROOM_BYTES) this.freshSlab();
    return this.slab.subarray(this.end);
  }

  /** `count` bytes were read into the last region; returns the bodies they complete, in order. */
  received(count: number): Uint8Array[] {
    if (this.body !== undefined) {
      this.filled += count;
      this.scanner?.advance(this.filled);
      if (this.filled < this.length!) return [];
      const whole = this.body;
      this.body = undefined;
      this.scanner = undefined;
      this.filled = 0;
      this.length = undefined;
      return [whole, ...this.cut()];
    }
    this.end += count;
    return this.cut();
  }

  /** Hands out every complete frame in the slab and reads the length of the next one if it is there. */
  private cut(): Uint8Array[] {
    const bodies: Uint8Array[] = [];
    for (;;) {
      if (this.length === undefined) {
        if (this.end - this.start < LENGTH_PREFIX_BYTES) break;
        this.length = checkedFrameLength(readFrameLength(this.slab, this.start), this.limit);
      }
      const bodyStart = this.start + LENGTH_PREFIX_BYTES;
      if (this.end - bodyStart < this.length) break;
      bodies.push(this.slab.subarray(bodyStart, bodyStart + this.length));
      this.start = bodyStart + this.length;
      this.length = undefined;
    }
    return bodies;
  }

  /**
   * Moves the frame under way out of the slab into a buffer of exactly its size; the slab goes on after the last
   * frame handed out, since nothing refers to the moved bytes.
   */
  private ownBody(): Uint8Array {
    const length = this.length!;
    const bodyStart = this.start + LENGTH_PREFIX_BYTES;
    // Every byte is written before the body is handed out.
    const capacity = bodyCapacity(length, 0);
    this.body = this.bodies === undefined ? unzeroedBytes(capacity) : this.bodies.take(capacity);
    this.body.set(this.slab.subarray(bodyStart, this.end));
    this.filled = this.end - bodyStart;
    this.end = this.start;
    // A body that grows moves as it does: its batches are checked by their handler, once it is whole.
    if (this.checksum !== undefined && length <= EAGER_BODY_BYTES) {
      this.scanner = new BatchChecksumScanner(this.body, this.checksum);
      this.scanner.advance(this.filled);
    }
    return this.body.subarray(this.filled);
  }

  /** Leaves the current slab to the frames handed out of it; the unfinished bytes move to a fresh one. */
  private freshSlab(): void {
    const pending = this.slab.subarray(this.start, this.end);
    const next = unzeroedBytes(Math.max(SLAB_BYTES, LENGTH_PREFIX_BYTES + (this.length ?? 0)));
    next.set(pending);
    this.slab = next;
    this.start = 0;
    this.end = pending.byteLength;
  }
}
