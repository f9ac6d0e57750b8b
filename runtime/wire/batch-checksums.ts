import { getU32 } from '../../core/protocol/big-endian.ts';
import {
  FRAME_CRC_OFFSET,
  FRAME_HEADER_BYTES,
  FRAME_MAGIC,
  FRAME_VERSION,
} from '../../core/protocol/batch-frame.ts';
import { portableCrc32, type Crc32Implementation } from '../../core/protocol/crc32.ts';
import { FRAME_KIND } from './frames.ts';

/**
 * Checksums of batch payloads computed while their bytes were still in the CPU's cache, right after the socket read
 * them, for the core's check of the same batch to pick up later instead of reading the bytes from memory again.
 * A large frame (a merged push of 2 MiB, an 8 MiB chunk) is checked only once it is whole, by when its first bytes
 * have left the cache: the check then runs at memory speed (about 4 GB/s here) instead of the SIMD CRC's 20
 * (docs/performance.md, "CRC while hot").
 *
 * A remembered value is exactly the CRC-32 of the bytes it is keyed by (their buffer, offset and length) continued
 * from `previous`, computed from those very bytes: a receive buffer is never written again once its bytes arrived
 * (runtime/wire/in-place-reader.ts), so a recalled value is the value a fresh computation would give; a body lent
 * again by the pool (./receive-bodies.ts) has its values forgotten first. Each is recalled at most once; those
 * never asked for go with their buffer (a WeakMap).
 */
interface Remembered {
  readonly length: number;
  readonly previous: number;
  readonly crc: number;
}

const remembered = new WeakMap<ArrayBufferLike, Map<number, Remembered>>();

/** Remembers that the CRC-32 of `bytes`, continued from `previous`, is `crc`. */
function rememberChecksum(bytes: Uint8Array, previous: number, crc: number): void {
  let byOffset = remembered.get(bytes.buffer);
  if (byOffset === undefined) {
    byOffset = new Map();
    remembered.set(bytes.buffer, byOffset);
  }
  byOffset.set(bytes.byteOffset, { length: bytes.byteLength, previous, crc });
}

/** Forgets every value remembered for `buffer`: its bytes are about to be replaced. */
export function forgetChecksums(buffer: ArrayBufferLike): void {
  remembered.delete(buffer);
}

/** The remembered CRC-32 of exactly `bytes` continued from `previous`, forgotten as it is told; else undefined. */
export function recallChecksum(bytes: Uint8Array, previous: number): number | undefined {
  const byOffset = remembered.get(bytes.buffer);
  if (byOffset === undefined) return undefined;
  const entry = byOffset.get(bytes.byteOffset);
  if (entry === undefined || entry.length !== bytes.byteLength || entry.previous !== previous)
    return undefined;
  byOffset.delete(bytes.byteOffset);
  return entry.crc;
}

/** A CRC-32 that answers from what was remembered and computes with `compute` otherwise. */
export function recallingChecksum(compute: Crc32Implementation): Crc32Implementation {
  return (bytes, previous) => recallChecksum(bytes, previous) ?? compute(bytes, previous);
}

const ENVELOPE_HEAD_BYTES = 5; // kind, control length

/**
 * Follows one frame body as the socket fills it and checksums every batch frame among its payloads as the batch's
 * bytes arrive. The payloads of an envelope start after its control part; the batch frames of a push, a forward or
 * a chunk lie there back to back, each announcing its length. The scan stops at the first bytes that are not a
 * batch frame (another message's payloads, or damage: the core's own check then reports it as it would anyway).
 */
export class BatchChecksumScanner {
  /** Where the next batch frame starts; -2 while the envelope's head is incomplete, -1 once the scan stopped. */
  private next = -2;
  /** The payload under way: where it starts and ends, how far it is checksummed, its header's CRC. */
  private payloadStart = 0;
  private payloadEnd = -1;
  private scanned = 0;
  private headerCrc = 0;
  private running = 0;

  constructor(
    private readonly body: Uint8Array,
    private readonly crc: Crc32Implementation,
  ) {}

  /** The body's first `filled` bytes have arrived. */
  advance(filled: number): void {
    if (this.next === -2 && !this.readEnvelopeHead(filled)) return;
    while (this.next >= 0) {
      if (this.payloadEnd < 0 && !this.startBatch(filled)) return;
      const upto = Math.min(filled, this.payloadEnd);
      if (upto > this.scanned) {
        this.running = this.crc(this.body.subarray(this.scanned, upto), this.running);
        this.scanned = upto;
      }
      if (this.scanned < this.payloadEnd) return;
      rememberChecksum(this.body.subarray(this.payloadStart, this.payloadEnd), this.headerCrc, this.running);
      this.next = this.payloadEnd;
      this.payloadEnd = -1;
    }
  }

  private readEnvelopeHead(filled: number): boolean {
    if (filled < ENVELOPE_HEAD_BYTES) return false;
    if (this.body[0] !== FRAME_KIND.envelope) {
      this.next = -1;
      return false;
    }
    this.next = ENVELOPE_HEAD_BYTES + getU32(this.body, 1);
    return true;
  }

  /** Reads the header of the batch at `next` once it has arrived; stops the scan where there is no batch frame. */
  private startBatch(filled: number): boolean {
    const at = this.next;
    const payloadStart = at + FRAME_HEADER_BYTES;
    if (payloadStart > this.body.byteLength) {
      this.next = -1;
      return false;
    }
    if (payloadStart > filled) return false;
    const payloadEnd = payloadStart + getU32(this.body, at + 32);
    if (
      getU32(this.body, at) !== FRAME_MAGIC ||
      this.body[at + 4] !== FRAME_VERSION ||
      payloadEnd > this.body.byteLength
    ) {
      this.next = -1;
      return false;
    }
    // A header is too short for a native call to pay (core/protocol/crc32.ts, NATIVE_MIN_BYTES).
    this.headerCrc = portableCrc32(this.body, 0, at, at + FRAME_CRC_OFFSET);
    this.running = this.headerCrc;
    this.payloadStart = payloadStart;
    this.scanned = payloadStart;
    this.payloadEnd = payloadEnd;
    return true;
  }
}
