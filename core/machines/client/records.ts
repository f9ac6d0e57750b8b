import { FRAME_HEADER_BYTES } from '../../protocol/batch-frame.ts';
import { getU32, putU32 } from '../../protocol/big-endian.ts';

/**
 * The records inside one batch payload: each record is a 32-bit big-endian length followed by its bytes. The frame
 * around the payload (../../protocol/batch-frame.ts) carries the identity and the checksum; this is only the
 * packing of the engine's records, so that a reader gives back exactly the records a map task wrote.
 */
const LENGTH_BYTES = 4;

/** One batch's payload alone (tests and tools; a map task lays its batches out as frames, encodeRecordFrames). */
export function encodeRecords(records: readonly Uint8Array[]): Uint8Array {
  return encodeRecordFrames([records])[0]!.subarray(FRAME_HEADER_BYTES);
}

/**
 * Lays several batches out as frames to be sealed, in one buffer from `allocate` (which need not zero it: every byte
 * is written, here or when the frame is sealed): each batch is FRAME_HEADER_BYTES of header space followed by exactly
 * what encodeRecords would return for it. Returns a view per batch, header space included; `sealBatchFrame`
 * (batch-frame.ts) fills in the header, so that a record is copied once on its way from the caller to the socket.
 */
export function encodeRecordFrames(
  batches: readonly (readonly Uint8Array[])[],
  allocate: (length: number) => Uint8Array = (length) => new Uint8Array(length),
): Uint8Array[] {
  let total = 0;
  for (const records of batches) {
    total += FRAME_HEADER_BYTES;
    for (const record of records) total += LENGTH_BYTES + record.length;
  }
  const buffer = allocate(total);
  if (buffer.length < total) throw new RangeError(`asked for ${total} bytes, allocated ${buffer.length}`);
  const frames: Uint8Array[] = [];
  let offset = 0;
  for (const records of batches) {
    const start = offset;
    offset += FRAME_HEADER_BYTES;
    for (const record of records) {
      putU32(buffer, offset, record.length);
      buffer.set(record, offset + LENGTH_BYTES);
      offset += LENGTH_BYTES + record.length;
    }
    frames.push(buffer.subarray(start, offset));
  }
  return frames;
}

export type DecodedRecords =
  | { readonly ok: true; readonly records: readonly Uint8Array[] }
  | { readonly ok: false; readonly message: string };

/** Unpacks a payload; a record running past the end is an error (the frame's CRC passed, so the writer erred). */
export function decodeRecords(payload: Uint8Array): DecodedRecords {
  const records: Uint8Array[] = [];
  let offset = 0;
  while (offset < payload.length) {
    if (payload.length - offset < LENGTH_BYTES) {
      return { ok: false, message: `record length at byte ${offset} of a batch is cut short` };
    }
    const length = getU32(payload, offset);
    const start = offset + LENGTH_BYTES;
    if (payload.length - start < length) {
      return {
        ok: false,
        message: `record at byte ${offset} of a batch announces ${length} bytes but ${payload.length - start} remain`,
      };
    }
    records.push(payload.subarray(start, start + length));
    offset = start + length;
  }
  return { ok: true, records };
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
    const encoded = LENGTH_BYTES + record.length;
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
