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
 *
 * The values remembered for one buffer, four numbers each (offset, length, previous, crc), in the order the buffer's
 * bytes arrived, so by rising offset; a recalled entry's length becomes -1. Flat numbers rather than an object and a
 * map entry per batch: a worker taking 4 KiB batches remembers some 250,000 values a GiB.
 */
class RememberedRanges {
  readonly entries: number[] = [];
  /** Where the next recall looks first: batches are checked in the order they arrived. */
  cursor = 0;
}

const OFFSET = 0;
const LENGTH = 1;
const PREVIOUS = 2;
const CRC = 3;
const STRIDE = 4;

const remembered = new WeakMap<ArrayBufferLike, RememberedRanges>();

/** Remembers that the CRC-32 of `length` bytes of `buffer` at `offset`, continued from `previous`, is `crc`. */
function rememberChecksum(
  buffer: ArrayBufferLike,
  offset: number,
  length: number,
  previous: number,
  crc: number,
): void {
  let ranges = remembered.get(buffer);
  if (ranges === undefined) {
    ranges = new RememberedRanges();
    remembered.set(buffer, ranges);
  }
  const { entries } = ranges;
  // Bytes arrive at rising offsets of a buffer until it is forgotten; anything else starts its values afresh, so
  // that a recall can search them by offset.
  if (entries.length > 0 && entries[entries.length - STRIDE + OFFSET]! >= offset) {
    entries.length = 0;
    ranges.cursor = 0;
  }
  entries.push(offset, length, previous, crc);
}

/** Forgets every value remembered for `buffer`: its bytes are about to be replaced. */
export function forgetChecksums(buffer: ArrayBufferLike): void {
  remembered.delete(buffer);
}

/** The remembered CRC-32 of exactly `bytes` continued from `previous`, forgotten as it is told; else undefined. */
export function recallChecksum(bytes: Uint8Array, previous: number): number | undefined {
  const ranges = remembered.get(bytes.buffer);
  if (ranges === undefined) return undefined;
  const { entries } = ranges;
  const offset = bytes.byteOffset;
  let at = ranges.cursor;
  if (at >= entries.length || entries[at + OFFSET] !== offset) at = entryAt(entries, offset);
  if (at < 0 || entries[at + LENGTH] !== bytes.byteLength || entries[at + PREVIOUS] !== previous)
    return undefined;
  entries[at + LENGTH] = -1;
  ranges.cursor = at + STRIDE;
  return entries[at + CRC];
}

/** Where the entry for `offset` starts (entries by rising offset), or -1. */
function entryAt(entries: readonly number[], offset: number): number {
  let low = 0;
  let high = entries.length / STRIDE - 1;
  while (low <= high) {
    const middle = (low + high) >>> 1;
    const found = entries[middle * STRIDE + OFFSET]!;
    if (found === offset) return middle * STRIDE;
    if (found < offset) low = middle + 1;
    else high = middle - 1;
  }
  return -1;
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
      rememberChecksum(
        this.body.buffer,
        this.body.byteOffset + this.payloadStart,
        this.payloadEnd - this.payloadStart,
        this.headerCrc,
        this.running,
      );
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
