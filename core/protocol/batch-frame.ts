import { getU32, putU32 } from './big-endian.ts';
import { crc32 } from './crc32.ts';

/**
 * The framed batch: the unit a map task pushes, a worker appends unchanged, and a reader decodes (architecture rules 4
 * and 5). Each frame names the batch it carries, so that a reader can de-duplicate by (map, attempt, batch), drop
 * losing attempts and count what each map wrote, and a checksum, so that a damaged byte is an error instead of data.
 *
 * Layout, all integers unsigned 32-bit big-endian (docs/core/machines-client.md):
 *
 *   0  magic 'SVCB'        4  version (1 byte) + 3 reserved zero bytes
 *   8  shuffleId          12  mapId          16  attemptId      20  batchId
 *  24  partitionId        28  epoch          32  payload length
 *  36  CRC-32 of bytes 0..35 followed by the payload
 *  40  payload
 *
 * The checksum covers the header as well as the payload (more than a payload-only CRC): a flipped bit in the batch id
 * or the map id would otherwise make a reader count or drop the wrong batch without noticing.
 */
export const FRAME_MAGIC = 0x53564342; // 'SVCB'
export const FRAME_VERSION = 1;
export const FRAME_HEADER_BYTES = 40;
/** Where a frame's CRC-32 sits; the checksum covers the bytes before it and the payload after the header. */
export const FRAME_CRC_OFFSET = 36;
const MAX_U32 = 0xffffffff;

/** Who a batch belongs to. Every field is an unsigned 32-bit integer. */
export interface BatchHeader {
  readonly shuffleId: number;
  readonly mapId: number;
  readonly attemptId: number;
  readonly batchId: number;
  readonly partitionId: number;
  readonly epoch: number;
}

export interface BatchFrame extends BatchHeader {
  /** A view into the decoded bytes (not a copy). */
  readonly payload: Uint8Array;
  /**
   * The CRC-32 stored in the frame's header (header and payload), as checked when it was decoded; absent on frames
   * built in memory. A reader compares two copies of one batch of the same epoch by it without keeping either.
   */
  readonly crc?: number;
}

export type FrameProblem =
  'TORN' | 'BAD_MAGIC' | 'UNSUPPORTED_VERSION' | 'BAD_RESERVED' | 'CRC_MISMATCH' | 'TRAILING_BYTES';

export interface FrameError {
  readonly problem: FrameProblem;
  /** Byte offset of the offending frame within the decoded bytes. */
  readonly offset: number;
  readonly message: string;
}

export type FrameResult<T> =
  { readonly ok: true; readonly value: T } | { readonly ok: false; readonly error: FrameError };

const HEADER_FIELDS = ['shuffleId', 'mapId', 'attemptId', 'batchId', 'partitionId', 'epoch'] as const;

/** Encodes one batch. Throws a RangeError when a header field is not an unsigned 32-bit integer (a caller's bug). */
export function encodeBatchFrame(header: BatchHeader, payload: Uint8Array): Uint8Array {
  checkFrameInput(header, payload.length);
  const frame = new Uint8Array(FRAME_HEADER_BYTES + payload.length);
  writeFrame(frame, 0, header, payload);
  return frame;
}

/**
 * Encodes several batches into one buffer and returns a view of it per frame (in the order given), each exactly what
 * encodeBatchFrame would return. One buffer instead of one per frame: V8 allocates a typed array of more than 64
 * bytes outside its heap at ≈ 1 µs each, and a map task frames its batches for many partitions in one step.
 */
export function encodeBatchFrames(
  batches: readonly { readonly header: BatchHeader; readonly payload: Uint8Array }[],
): Uint8Array[] {
  let total = 0;
  for (const { header, payload } of batches) {
    checkFrameInput(header, payload.length);
    total += FRAME_HEADER_BYTES + payload.length;
  }
  const buffer = new Uint8Array(total);
  const frames: Uint8Array[] = [];
  let at = 0;
  for (const { header, payload } of batches) {
    const end = at + FRAME_HEADER_BYTES + payload.length;
    writeFrame(buffer, at, header, payload);
    frames.push(buffer.subarray(at, end));
    at = end;
  }
  return frames;
}

/**
 * Seals a frame whose payload is already in place: `frame` is FRAME_HEADER_BYTES of header space followed by the
 * payload (records.ts `encodeRecordFrames` lays batches out so). Writes the header and its CRC over the header space,
 * every byte of it (the space may hold anything before), and returns `frame`, now exactly what encodeBatchFrame would
 * return for its payload. This is how a map task frames its batches without copying a payload again.
 */
export function sealBatchFrame(frame: Uint8Array, header: BatchHeader): Uint8Array {
  if (frame.length < FRAME_HEADER_BYTES)
    throw new RangeError(
      `a frame needs ${FRAME_HEADER_BYTES} header bytes, got ${frame.length} bytes in all`,
    );
  checkFrameInput(header, frame.length - FRAME_HEADER_BYTES);
  writeHeader(frame, 0, header, frame.length - FRAME_HEADER_BYTES);
  putU32(frame, FRAME_CRC_OFFSET, frameChecksum(frame, 0, frame.length));
  return frame;
}

function checkFrameInput(header: BatchHeader, payloadLength: number): void {
  for (const field of HEADER_FIELDS) {
    const value = header[field];
    if (!Number.isInteger(value) || value < 0 || value > MAX_U32) {
      throw new RangeError(`batch frame ${field} must be an integer in [0, ${MAX_U32}], got ${value}`);
    }
  }
  if (payloadLength > MAX_U32) {
    throw new RangeError(`batch payload of ${payloadLength} bytes exceeds the frame limit of ${MAX_U32}`);
  }
}

/**
 * Writes the frame at `at` (the target has room for it). Byte by byte rather than through a DataView: every batch is
 * framed once and checked three times, and a DataView and the subarrays a checksum over two ranges would need are
 * objects of their own.
 */
function writeFrame(target: Uint8Array, at: number, header: BatchHeader, payload: Uint8Array): void {
  writeHeader(target, at, header, payload.length);
  target.set(payload, at + FRAME_HEADER_BYTES);
  putU32(target, at + FRAME_CRC_OFFSET, frameChecksum(target, at, at + FRAME_HEADER_BYTES + payload.length));
}

/** The header's bytes up to the CRC field, the reserved ones included (the target need not be zeroed). */
function writeHeader(target: Uint8Array, at: number, header: BatchHeader, payloadLength: number): void {
  putU32(target, at, FRAME_MAGIC);
  target[at + 4] = FRAME_VERSION;
  target[at + 5] = 0;
  target[at + 6] = 0;
  target[at + 7] = 0;
  putU32(target, at + 8, header.shuffleId);
  putU32(target, at + 12, header.mapId);
  putU32(target, at + 16, header.attemptId);
  putU32(target, at + 20, header.batchId);
  putU32(target, at + 24, header.partitionId);
  putU32(target, at + 28, header.epoch);
  putU32(target, at + 32, payloadLength);
}

/** Decodes exactly one frame: `bytes` must hold one whole frame and nothing else (a PushData payload). */
export function decodeBatchFrame(bytes: Uint8Array): FrameResult<BatchFrame> {
  const result = decodeAt(bytes, 0);
  if (!result.ok) return result;
  const end = FRAME_HEADER_BYTES + result.value.payload.length;
  if (end !== bytes.length) {
    return failure(
      'TRAILING_BYTES',
      0,
      `${bytes.length - end} bytes follow the batch frame; a push carries exactly one frame (the sender framed it wrongly)`,
    );
  }
  return result;
}

/**
 * Whether `bytes` is one whole, undamaged frame naming this batch: exactly when decodeBatchFrame accepts it with
 * these header fields, without building the decoded frame, its payload view or its result (a worker checks every
 * pushed batch, a hundred per merged push of 4 KiB batches; the rare refusal decodes again to say why).
 */
export function isFrameOfBatch(
  bytes: Uint8Array,
  partitionId: number,
  mapId: number,
  attemptId: number,
  batchId: number,
): boolean {
  if (bytes.length < FRAME_HEADER_BYTES) return false;
  if (getU32(bytes, 0) !== FRAME_MAGIC || bytes[4] !== FRAME_VERSION) return false;
  if (bytes[5] !== 0 || bytes[6] !== 0 || bytes[7] !== 0) return false;
  if (FRAME_HEADER_BYTES + getU32(bytes, 32) !== bytes.length) return false;
  if (
    getU32(bytes, 24) !== partitionId ||
    getU32(bytes, 12) !== mapId ||
    getU32(bytes, 16) !== attemptId ||
    getU32(bytes, 20) !== batchId
  )
    return false;
  return frameChecksum(bytes, 0, bytes.length) === getU32(bytes, FRAME_CRC_OFFSET);
}

/**
 * Decodes a run of whole frames (a fetched chunk, or a whole partition file). Any damage anywhere fails the whole
 * run: a reader must not keep part of a chunk and silently lose the rest.
 */
export function decodeBatchFrames(bytes: Uint8Array): FrameResult<BatchFrame[]> {
  const frames: BatchFrame[] = [];
  let offset = 0;
  while (offset < bytes.length) {
    const result = decodeAt(bytes, offset);
    if (!result.ok) return result;
    frames.push(result.value);
    offset += FRAME_HEADER_BYTES + result.value.payload.length;
  }
  return { ok: true, value: frames };
}

function decodeAt(bytes: Uint8Array, offset: number): FrameResult<BatchFrame> {
  const remaining = bytes.length - offset;
  if (remaining < FRAME_HEADER_BYTES) {
    return failure(
      'TORN',
      offset,
      `batch frame at byte ${offset} is torn: ${remaining} bytes remain but a header needs ${FRAME_HEADER_BYTES}; the data was cut short (read it again or from the other copy)`,
    );
  }
  const magic = getU32(bytes, offset);
  if (magic !== FRAME_MAGIC) {
    return failure(
      'BAD_MAGIC',
      offset,
      `no batch frame at byte ${offset}: magic is 0x${magic.toString(16).padStart(8, '0')}, expected 0x${FRAME_MAGIC.toString(16)} ('SVCB'); the data is damaged or not a shuffle file`,
    );
  }
  const version = bytes[offset + 4]!;
  if (version !== FRAME_VERSION) {
    return failure(
      'UNSUPPORTED_VERSION',
      offset,
      `batch frame at byte ${offset} has format version ${version}; this release reads version ${FRAME_VERSION} (upgrade the reader)`,
    );
  }
  if (bytes[offset + 5] !== 0 || bytes[offset + 6] !== 0 || bytes[offset + 7] !== 0) {
    return failure(
      'BAD_RESERVED',
      offset,
      `batch frame at byte ${offset} has non-zero reserved bytes; the data is damaged`,
    );
  }
  const length = getU32(bytes, offset + 32);
  const start = offset + FRAME_HEADER_BYTES;
  if (bytes.length - start < length) {
    return failure(
      'TORN',
      offset,
      `batch frame at byte ${offset} is torn: its header announces ${length} payload bytes but only ${bytes.length - start} remain; the data was cut short (read it again or from the other copy)`,
    );
  }
  const expected = getU32(bytes, offset + FRAME_CRC_OFFSET);
  const actual = frameChecksum(bytes, offset, start + length);
  if (actual !== expected) {
    return failure(
      'CRC_MISMATCH',
      offset,
      `batch frame at byte ${offset} fails its CRC-32 check (stored 0x${hex(expected)}, computed 0x${hex(actual)}); the bytes were damaged in transit or on disk (read it from the other copy)`,
    );
  }
  return {
    ok: true,
    value: {
      shuffleId: getU32(bytes, offset + 8),
      mapId: getU32(bytes, offset + 12),
      attemptId: getU32(bytes, offset + 16),
      batchId: getU32(bytes, offset + 20),
      partitionId: getU32(bytes, offset + 24),
      epoch: getU32(bytes, offset + 28),
      payload: bytes.subarray(start, start + length),
      crc: expected,
    },
  };
}

/** The CRC of the frame at `offset..end`: its header up to the CRC field, then its payload. */
function frameChecksum(bytes: Uint8Array, offset: number, end: number): number {
  const header = crc32(bytes, 0, offset, offset + FRAME_CRC_OFFSET);
  return crc32(bytes, header, offset + FRAME_HEADER_BYTES, end);
}

function failure(problem: FrameProblem, offset: number, message: string): { ok: false; error: FrameError } {
  return { ok: false, error: { problem, offset, message } };
}

function hex(value: number): string {
  return value.toString(16).padStart(8, '0');
}
