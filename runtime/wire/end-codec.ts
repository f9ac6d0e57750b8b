import { type BinaryReader, WireType } from '@bufbuild/protobuf/wire';
import type { CommitFiles, MapperEnd, PartitionWritten } from '../../core/protocol/messages.ts';
import {
  bytesFieldSize,
  checkInt32,
  elementSize,
  int32FieldSize,
  NOT_HOT,
  textLength,
  uint64FieldSize,
  utf8,
  varintSize,
  type BodyWriter,
  readTag,
  wireTypeOf,
} from './hand-codec.ts';
import { nestedEnd, readSize } from './slot-codec.ts';

/**
 * MapperEnd and CommitFiles by hand, under ./hot-codec.ts's rules: at the end of a stage of 10,000 partitions, each
 * map task reports what it wrote to every partition (MapperEnd) and the lifecycle manager lists every file to the
 * worker that holds it (CommitFiles), one message each, which the schema codec's reflection built and read entry by
 * entry as objects of its own (docs/performance.md).
 */

// ------------------------------------------------------------------------------------------------ encode

export function mapperEndWriter(message: MapperEnd): BodyWriter {
  const appId = utf8(message.appId);
  const { shuffleId, mapId, attemptId, numMappers, written } = message;
  const sizes = new Array<number>(written.length);
  let size =
    bytesFieldSize(appId) +
    int32FieldSize(shuffleId) +
    int32FieldSize(mapId) +
    int32FieldSize(attemptId) +
    int32FieldSize(numMappers);
  for (let i = 0; i < written.length; i += 1) {
    const entry = written[i]!;
    sizes[i] =
      int32FieldSize(entry.partitionId) + int32FieldSize(entry.batches) + uint64FieldSize(entry.bytes);
    size += elementSize(sizes[i]!);
  }
  return {
    size,
    write(out) {
      out.bytesField(1, appId);
      out.int32Field(2, shuffleId);
      out.int32Field(3, mapId);
      out.int32Field(4, attemptId);
      out.int32Field(5, numMappers);
      for (let i = 0; i < written.length; i += 1) {
        const entry = written[i]!;
        out.nested(6, sizes[i]!);
        out.int32Field(1, entry.partitionId);
        out.int32Field(2, entry.batches);
        out.uint64Field(3, entry.bytes);
      }
    },
  };
}

/** A sint32's zigzag form: small magnitudes, either sign, in few bytes. */
function zigzag(value: number): number {
  checkInt32(value);
  return ((value << 1) ^ (value >> 31)) >>> 0;
}

export function commitFilesWriter(message: CommitFiles): BodyWriter {
  const appId = utf8(message.appId);
  const primaries = message.primaryIds.map(utf8);
  const replicas = message.replicaIds.map(utf8);
  const attempts = message.mapAttempts.map(zigzag);
  let packed = 0;
  for (const attempt of attempts) packed += varintSize(attempt);
  let size = bytesFieldSize(appId) + int32FieldSize(message.shuffleId);
  for (const id of primaries) size += elementSize(textLength(id));
  for (const id of replicas) size += elementSize(textLength(id));
  if (attempts.length > 0) size += elementSize(packed);
  return {
    size,
    write(out) {
      out.bytesField(1, appId);
      out.int32Field(2, message.shuffleId);
      for (const id of primaries) out.element(3, id);
      for (const id of replicas) out.element(4, id);
      if (attempts.length > 0) {
        out.nested(5, packed);
        for (const attempt of attempts) out.varint(attempt);
      }
    },
  };
}

// ------------------------------------------------------------------------------------------------ decode

function readWritten(reader: BinaryReader, end: number): PartitionWritten {
  let partitionId = 0;
  let batches = 0;
  let bytes = 0;
  while (reader.pos < end) {
    const tag = readTag(reader);
    const number = tag >>> 3;
    const type = wireTypeOf(tag);
    if (type !== WireType.Varint) throw NOT_HOT;
    if (number === 1) partitionId = reader.int32();
    else if (number === 2) batches = reader.int32();
    else if (number === 3) bytes = readSize(reader);
    else throw NOT_HOT;
  }
  if (reader.pos !== end) throw NOT_HOT;
  return { partitionId, batches, bytes };
}

export function readMapperEnd(reader: BinaryReader): MapperEnd {
  let appId = '';
  const ints = [0, 0, 0, 0, 0, 0];
  const written: PartitionWritten[] = [];
  while (reader.pos < reader.len) {
    const tag = readTag(reader);
    const number = tag >>> 3;
    const type = wireTypeOf(tag);
    if (number === 1 && type === WireType.LengthDelimited) appId = reader.string(true);
    else if (number >= 2 && number <= 5 && type === WireType.Varint) ints[number] = reader.int32();
    else if (number === 6 && type === WireType.LengthDelimited)
      written.push(readWritten(reader, nestedEnd(reader)));
    else throw NOT_HOT;
  }
  return {
    type: 'MapperEnd',
    appId,
    shuffleId: ints[2]!,
    mapId: ints[3]!,
    attemptId: ints[4]!,
    numMappers: ints[5]!,
    written,
  };
}

export function readCommitFiles(reader: BinaryReader): CommitFiles {
  let appId = '';
  let shuffleId = 0;
  const primaryIds: string[] = [];
  const replicaIds: string[] = [];
  const mapAttempts: number[] = [];
  while (reader.pos < reader.len) {
    const tag = readTag(reader);
    const number = tag >>> 3;
    const type = wireTypeOf(tag);
    if (number === 2 && type === WireType.Varint) shuffleId = reader.int32();
    else if (number === 5 && type === WireType.Varint) mapAttempts.push(reader.sint32());
    else if (type !== WireType.LengthDelimited) throw NOT_HOT;
    else if (number === 1) appId = reader.string(true);
    else if (number === 3) primaryIds.push(reader.string(true));
    else if (number === 4) replicaIds.push(reader.string(true));
    else if (number === 5) {
      const end = nestedEnd(reader);
      while (reader.pos < end) mapAttempts.push(reader.sint32());
      if (reader.pos !== end) throw NOT_HOT;
    } else throw NOT_HOT;
  }
  return { type: 'CommitFiles', appId, shuffleId, primaryIds, replicaIds, mapAttempts };
}
