import { FRAME_HEADER_BYTES } from '../../protocol/batch-frame.ts';
import { getU32, putU32 } from '../../protocol/big-endian.ts';

/**
 * The records inside one batch payload: each record is a 32-bit big-endian length followed by its bytes. The frame
 * around the payload (../../protocol/batch-frame.ts) carries the identity and the checksum; this is only the
 * packing of the engine's records, so that a reader gives back exactly the records a map task wrote.
 */
/** A record's length before its bytes, 32-bit big-endian. */
export const RECORD_LENGTH_BYTES = 4;

/** One batch's payload alone (tests and tools; a map task lays its batches out as frames, encodeRecordFrames). */
export function encodeRecords(records: readonly Uint8Array[]): Uint8Array {
  return encodeRecordFrames([records])[0]!.subarray(FRAME_HEADER_BYTES);
}

/**
 * Lays several batches out as frames, in one buffer from `allocate` (which need not zero it: every byte is written
 * before it is sent): each batch is FRAME_HEADER_BYTES of header space followed by room for exactly what
 * encodeRecords returns for it. Returns a view per batch, header space included, with nothing written yet:
 * `fillRecordFrame` copies a batch's records in, then `sealBatchFrame` (batch-frame.ts) writes the header, so that a
 * record is copied once on its way from the caller to the socket, when its batch is first sent.
 */
export function layoutRecordFrames(
  batches: readonly (readonly Uint8Array[])[],
  allocate: (length: number) => Uint8Array = (length) => new Uint8Array(length),
): Uint8Array[] {
  let total = 0;
  for (const records of batches) total += FRAME_HEADER_BYTES + encodedLength(records);
  const buffer = allocate(total);
  if (buffer.length < total) throw new RangeError(`asked for ${total} bytes, allocated ${buffer.length}`);
  const frames: Uint8Array[] = [];
  let offset = 0;
  for (const records of batches) {
    const length = FRAME_HEADER_BYTES + encodedLength(records);
    frames.push(buffer.subarray(offset, offset + length));
    offset += length;
  }
  return frames;
}

/** Copies a batch's records behind the header space of its frame (laid out for exactly them by layoutRecordFrames). */
export function fillRecordFrame(frame: Uint8Array, records: readonly Uint8Array[]): void {
  let offset = FRAME_HEADER_BYTES;
  for (const record of records) {
    putU32(frame, offset, record.length);
    frame.set(record, offset + RECORD_LENGTH_BYTES);
    offset += RECORD_LENGTH_BYTES + record.length;
  }
  if (offset !== frame.length) {
    throw new RangeError(`a batch of ${offset} bytes does not fit its frame of ${frame.length}`);
  }
}

/**
 * Records written in this order, as a map task's `records` input carries them: consecutive records of one partition
 * encoded together into one run (a batch payload's layout), with the partition of each run.
 */
export function recordRuns(
  partitionIds: readonly number[],
  records: readonly Uint8Array[],
): { partitionIds: number[]; runs: Uint8Array[] } {
  const ids: number[] = [];
  const runs: Uint8Array[] = [];
  let from = 0;
  for (let i = 1; i <= records.length; i += 1) {
    if (i < records.length && partitionIds[i] === partitionIds[from]) continue;
    ids.push(partitionIds[from]!);
    runs.push(encodeRecords(records.slice(from, i)));
    from = i;
  }
  return { partitionIds: ids, runs };
}

/** layoutRecordFrames and fillRecordFrame at once: every frame filled, ready to be sealed. */
export function encodeRecordFrames(
  batches: readonly (readonly Uint8Array[])[],
  allocate?: (length: number) => Uint8Array,
): Uint8Array[] {
  const frames = layoutRecordFrames(batches, allocate);
  for (let i = 0; i < frames.length; i += 1) fillRecordFrame(frames[i]!, batches[i]!);
  return frames;
}

function encodedLength(records: readonly Uint8Array[]): number {
  let length = 0;
  for (const record of records) length += RECORD_LENGTH_BYTES + record.length;
  return length;
}

export type DecodedRecords =
  | { readonly ok: true; readonly records: readonly Uint8Array[] }
  | { readonly ok: false; readonly message: string };

export type CheckedRecords =
  { readonly ok: true; readonly count: number } | { readonly ok: false; readonly message: string };

/**
 * Checks that a payload is a whole number of records and counts them, without making a view of any: a reader
 * checks every batch before it hands out the first record, and hands records out only as they are asked for
 * (`recordsIn`). A record running past the end is an error (the frame's CRC passed, so the writer erred).
 */
export function checkRecords(payload: Uint8Array): CheckedRecords {
  let offset = 0;
  let count = 0;
  while (offset < payload.length) {
    if (payload.length - offset < RECORD_LENGTH_BYTES) {
      return { ok: false, message: `record length at byte ${offset} of a batch is cut short` };
    }
    const length = getU32(payload, offset);
    const start = offset + RECORD_LENGTH_BYTES;
    if (payload.length - start < length) {
      return {
        ok: false,
        message: `record at byte ${offset} of a batch announces ${length} bytes but ${payload.length - start} remain`,
      };
    }
    offset = start + length;
    count += 1;
  }
  return { ok: true, count };
}

/** Unpacks a payload into a view per record; an error where `checkRecords` finds one. */
export function decodeRecords(payload: Uint8Array): DecodedRecords {
  const checked = checkRecords(payload);
  if (!checked.ok) return checked;
  return { ok: true, records: [...recordsIn([payload])] };
}

/**
 * The records of payloads already checked by `checkRecords`, in order, each made as it is asked for: a reader that
 * keeps nothing makes only short-lived views (a million records per GiB kept in one array were most of a fetching
 * client's garbage collection: docs/performance.md).
 */
export function recordsIn(payloads: readonly Uint8Array[]): Iterable<Uint8Array> {
  return { [Symbol.iterator]: () => new RecordCursor(payloads) };
}

class RecordCursor implements Iterator<Uint8Array> {
  private index = -1;
  private payload: Uint8Array | undefined;
  /** The payload's memory and where the payload starts in it, read once per payload rather than once per record. */
  private memory: ArrayBufferLike | undefined;
  private base = 0;
  private offset = 0;
  private end = 0;

  constructor(private readonly payloads: readonly Uint8Array[]) {
    this.advance();
  }

  next(): IteratorResult<Uint8Array> {
    for (;;) {
      const payload = this.payload;
      if (payload === undefined) return { done: true, value: undefined };
      if (this.offset < this.end) {
        const length = getU32(payload, this.offset);
        const start = this.offset + RECORD_LENGTH_BYTES;
        this.offset = start + length;
        // The constructor, not subarray(): about 25 ns less per record, a million records per GiB read; and the
        // payload's buffer and offset kept, not asked of the payload for each record: about a quarter less again.
        return { done: false, value: new Uint8Array(this.memory!, this.base + start, length) };
      }
      this.advance();
    }
  }

  private advance(): void {
    this.index += 1;
    const payload = this.payloads[this.index];
    this.payload = payload;
    this.offset = 0;
    if (payload === undefined) return;
    this.memory = payload.buffer;
    this.base = payload.byteOffset;
    this.end = payload.length;
  }
}

/**
 * Groups one partition's records into batches of at most `maxBatchBytes` encoded bytes, in order; a record larger
 * than the limit travels alone (a batch always holds at least one record).
 */
export function planBatches(records: readonly Uint8Array[], maxBatchBytes: number): Uint8Array[][] {
  if (!(maxBatchBytes > 0)) throw new RangeError(`batch size must be positive, got ${maxBatchBytes}`);
  const batches: Uint8Array[][] = [];
  let current: Uint8Array[] = [];
  let size = 0;
  for (const record of records) {
    const encoded = RECORD_LENGTH_BYTES + record.length;
    if (current.length > 0 && size + encoded > maxBatchBytes) {
      batches.push(current);
      current = [];
      size = 0;
    }
    current.push(record);
    size += encoded;
  }
  if (current.length > 0) batches.push(current);
  return batches;
}
