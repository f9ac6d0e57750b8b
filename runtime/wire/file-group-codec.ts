import { type BinaryReader, WireType } from '@bufbuild/protobuf/wire';
import type { PartitionLocation } from '../../core/domain/partition.ts';
import { STATUS_CODES } from '../../core/domain/status.ts';
import type { CommittedFile, MessageOf, ReducerFileGroup } from '../../core/protocol/messages.ts';
import { encodeFileGroupAnswer } from './control-codec.ts';
import { named, NOT_HOT, reverse, type BodyWriter, readTag, wireTypeOf } from './hand-codec.ts';
import { nestedEnd, readCommitted, readLocation } from './slot-codec.ts';

type FileGroupAnswer = MessageOf<'GetReducerFileGroupResponse'>;
type Written = ReducerFileGroup['expected'][number];

const STATUS_NAMES = reverse(STATUS_CODES);

/**
 * A committed shuffle's GetReducerFileGroupResponse is one object that the lifecycle manager keeps and gives every
 * reducer that asks (core/machines/lifecycle-manager/stage-end.ts), and it is large: each partition's locations,
 * files and what every map wrote to it, about 9 MB at 2,000 partitions and 500 maps. Encoded again for each of
 * thousands of reducers it was most of a lifecycle manager's CPU, and read through the schema's reflection it took
 * an executor seconds per answer (docs/performance.md, "Many maps"). So its bytes are kept beside the object for as
 * long as the object lives (messages are values: nothing changes one once it has been sent), and it is read by
 * hand like the hot messages (./hot-codec.ts).
 */
const encoded = new WeakMap<FileGroupAnswer, Uint8Array>();

/**
 * The answer's field value, encoded at its first send and then sent as it is (the frame's piece of its own, never
 * copied); a value the schema codec refuses is left to it.
 */
export function fileGroupAnswerWriter(message: FileGroupAnswer): BodyWriter {
  let bytes = encoded.get(message);
  if (bytes === undefined) {
    try {
      bytes = encodeFileGroupAnswer(message);
    } catch {
      throw NOT_HOT; // the schema's codec says which value it refuses
    }
    encoded.set(message, bytes);
  }
  return { size: bytes.byteLength, write() {}, tail: bytes };
}

/** Reads the answer from `reader`, a reader of `bytes` (its entries are read from the bytes directly). */
export function readFileGroupAnswer(reader: BinaryReader, bytes: Uint8Array): FileGroupAnswer {
  let status = 0;
  const fileGroups: ReducerFileGroup[] = [];
  const mapAttempts: number[] = [];
  let message = '';
  while (reader.pos < reader.len) {
    const tag = readTag(reader);
    const number = tag >>> 3;
    const type = wireTypeOf(tag);
    if (number === 1 && type === WireType.Varint) status = reader.int32();
    else if (number === 2 && type === WireType.LengthDelimited)
      fileGroups.push(readGroup(reader, bytes, nestedEnd(reader)));
    else if (number === 3 && type === WireType.LengthDelimited) {
      const end = nestedEnd(reader);
      while (reader.pos < end) mapAttempts.push(reader.sint32());
      if (reader.pos !== end) throw NOT_HOT;
    } else if (number === 3 && type === WireType.Varint) mapAttempts.push(reader.sint32());
    else if (number === 4 && type === WireType.LengthDelimited) message = reader.string(true);
    else throw NOT_HOT;
  }
  return {
    type: 'GetReducerFileGroupResponse',
    status: named(STATUS_NAMES, status),
    fileGroups,
    mapAttempts,
    message,
  };
}

function readGroup(reader: BinaryReader, bytes: Uint8Array, end: number): ReducerFileGroup {
  let partitionId = 0;
  const locations: PartitionLocation[] = [];
  const files: CommittedFile[] = [];
  const expected: Written[] = [];
  while (reader.pos < end) {
    const tag = readTag(reader);
    const number = tag >>> 3;
    const type = wireTypeOf(tag);
    if (number === 1 && type === WireType.Varint) partitionId = reader.int32();
    else if (type !== WireType.LengthDelimited) throw NOT_HOT;
    else if (number === 2) locations.push(readLocation(reader, nestedEnd(reader), false));
    else if (number === 3) files.push(readCommitted(reader, nestedEnd(reader)));
    else if (number === 4) {
      const entryEnd = nestedEnd(reader);
      expected.push(readWritten(bytes, reader.pos, entryEnd));
      reader.pos = entryEnd;
    } else throw NOT_HOT;
  }
  if (reader.pos !== end) throw NOT_HOT;
  return { partitionId, locations, files, expected };
}

/**
 * One map's entry, read from the bytes without the reader: an answer holds one per map and partition (a million at
 * 2,000 partitions and 500 maps), and the reader's tag arrays and 64-bit values cost more than the rest together.
 * Protobuf's own rules: an int32 is the low 32 bits of its varint (a negative one takes ten bytes); a size past
 * 2^53, or any tag but the four single-byte ones svc writes, is left to the schema's decoder.
 */
function readWritten(bytes: Uint8Array, start: number, end: number): Written {
  let mapId = 0;
  let partitionId = 0;
  let batches = 0;
  let size = 0;
  let at = start;
  while (at < end) {
    const tag = bytes[at++]!;
    let low = 0;
    let value = 0;
    let scale = 1;
    let shift = 0;
    let byte: number;
    do {
      if (at >= end || shift >= 70) throw NOT_HOT;
      byte = bytes[at++]!;
      if (shift < 32) low |= (byte & 0x7f) << shift;
      value += (byte & 0x7f) * scale;
      scale *= 128;
      shift += 7;
    } while (byte >= 0x80);
    if (tag === 0x08) mapId = low;
    else if (tag === 0x10) partitionId = low;
    else if (tag === 0x18) batches = low;
    else if (tag === 0x20 && shift <= 56 && value <= Number.MAX_SAFE_INTEGER) size = value;
    else throw NOT_HOT;
  }
  return { mapId, partitionId, batches, bytes: size };
}
