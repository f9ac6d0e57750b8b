import { BinaryReader, WireType } from '@bufbuild/protobuf/wire';
import { PARTITION_MODE_CODE } from '../../core/domain/partition.ts';
import { STATUS_CODES, type StatusCode } from '../../core/domain/status.ts';
import type {
  CommitFilesResponse,
  MessageOf,
  MergedBatch,
  PushData,
  PushDataResponse,
  PushMergedData,
  PushMergedDataResponse,
  RegisterShuffleResponse,
  RequestSlotsResponse,
  ReserveSlots,
} from '../../core/protocol/messages.ts';
import { PayloadRegion } from './control-codec.ts';
import {
  bytesFieldSize,
  checkUint64,
  int32FieldSize,
  int32Size,
  named,
  NOT_HOT,
  Output,
  reverse,
  uint32FieldSize,
  utf8,
  varintSize,
  wireNumber,
  type BodyWriter,
  readTag,
  wireTypeOf,
} from './hand-codec.ts';
import {
  bodyReader,
  forgetBodyReader,
  commitFilesResponseWriter,
  readCommitFilesResponse,
  readRegisterShuffleResponse,
  readReserveSlots,
  registerShuffleResponseWriter,
  reserveSlotsWriter,
} from './slot-codec.ts';
import { readRequestSlotsResponse, requestSlotsResponseWriter } from './request-slots-codec.ts';
import { fileGroupAnswerWriter, readFileGroupAnswer } from './file-group-codec.ts';
import { commitFilesWriter, mapperEndWriter, readCommitFiles, readMapperEnd } from './end-codec.ts';
import type { EncodedControl, WireEnvelope } from './types.ts';

/**
 * The control part of the data plane's four hot messages (PushData, PushMergedData and their answers), and of the
 * largest control messages (ReserveSlots, CommitFilesResponse and RegisterShuffleResponse, ./slot-codec.ts;
 * RequestSlotsResponse, ./request-slots-codec.ts; a reducer's file group, ./file-group-codec.ts; MapperEnd and
 * CommitFiles, ./end-codec.ts), written by
 * hand and read with @bufbuild/protobuf's binary reader instead of through the schema's reflection: a map task sends
 * about one such message per batch and the worker answers each, so their envelopes were a visible share of both
 * sides' time (docs/performance.md). The bytes are exactly those `toBinary` writes for the same envelope (a
 * property test compares them), so any protobuf decoder reads them, and whatever this reader meets that it does not
 * expect (another message, an unknown or repeated field, a wire type or value it would refuse) it leaves to the
 * schema's decoder, which then decodes or refuses it as it always did: the fast path never changes an answer.
 */

/** Envelope and message field numbers (runtime/wire/proto/svc/wire/v1/wire.proto). */
const ENVELOPE_FROM = 1;
const ENVELOPE_TO = 2;
const ENVELOPE_REQUEST_ID = 3;
const ENVELOPE_IN_REPLY_TO = 4;
const REQUEST_SLOTS_RESPONSE = 22;
const RESERVE_SLOTS = 25;
const COMMIT_FILES = 26;
const COMMIT_FILES_RESPONSE = 27;
const REGISTER_SHUFFLE_RESPONSE = 30;
const MAPPER_END = 33;
const GET_REDUCER_FILE_GROUP_RESPONSE = 35;
const PUSH_DATA = 36;
const PUSH_DATA_RESPONSE = 37;
const PUSH_MERGED_DATA = 38;
const PUSH_MERGED_DATA_RESPONSE = 39;

const MODE_NAMES = reverse(PARTITION_MODE_CODE);
const STATUS_NAMES = reverse(STATUS_CODES);

type HotMessage =
  | PushData
  | PushDataResponse
  | PushMergedData
  | PushMergedDataResponse
  | ReserveSlots
  | CommitFilesResponse
  | RegisterShuffleResponse
  | RequestSlotsResponse
  | MessageOf<'GetReducerFileGroupResponse'>
  | MessageOf<'MapperEnd'>
  | MessageOf<'CommitFiles'>;

const FIELD_OF: Readonly<Record<HotMessage['type'], number>> = {
  PushData: PUSH_DATA,
  PushDataResponse: PUSH_DATA_RESPONSE,
  PushMergedData: PUSH_MERGED_DATA,
  PushMergedDataResponse: PUSH_MERGED_DATA_RESPONSE,
  ReserveSlots: RESERVE_SLOTS,
  CommitFilesResponse: COMMIT_FILES_RESPONSE,
  RegisterShuffleResponse: REGISTER_SHUFFLE_RESPONSE,
  RequestSlotsResponse: REQUEST_SLOTS_RESPONSE,
  GetReducerFileGroupResponse: GET_REDUCER_FILE_GROUP_RESPONSE,
  MapperEnd: MAPPER_END,
  CommitFiles: COMMIT_FILES,
};

function isHot(message: WireEnvelope['message']): message is HotMessage {
  return Object.hasOwn(FIELD_OF, message.type);
}

// ------------------------------------------------------------------------------------------------ encode

/** The control part and payloads of a hot message's envelope, or undefined for any other message. */
export function encodeHotEnvelope(envelope: WireEnvelope): EncodedControl | undefined {
  const message = envelope.message;
  if (!isHot(message)) return undefined;
  try {
    return encodeEnvelope(envelope, message);
  } catch (error) {
    // A value `toBinary` would refuse: the schema's codec encodes it or says why not.
    if (error === NOT_HOT) return undefined;
    throw error;
  }
}

/**
 * Written by hand into one buffer of the exact size: sizes first (a nested message's length comes before it), then
 * the bytes. Field order and implicit presence are `toBinary`'s: a field at its proto3 default is not written.
 */
function encodeEnvelope(envelope: WireEnvelope, message: HotMessage): EncodedControl {
  const from = utf8(envelope.from);
  const to = utf8(envelope.to);
  const { requestId, inReplyTo } = envelope;
  if (requestId !== undefined) checkUint64(requestId);
  if (inReplyTo !== undefined) checkUint64(inReplyTo);
  const body = messageWriter(message);
  const field = FIELD_OF[message.type];
  const size =
    bytesFieldSize(from) +
    bytesFieldSize(to) +
    (requestId === undefined ? 0 : 1 + varintSize(requestId)) +
    (inReplyTo === undefined ? 0 : 1 + varintSize(inReplyTo)) +
    2 + // the message's tag: fields 16-39 take two bytes
    varintSize(body.size) +
    body.size;
  const tail = body.tail;
  const out = new Output(size - (tail?.byteLength ?? 0));
  out.bytesField(ENVELOPE_FROM, from);
  out.bytesField(ENVELOPE_TO, to);
  if (requestId !== undefined) out.varintField(ENVELOPE_REQUEST_ID, requestId);
  if (inReplyTo !== undefined) out.varintField(ENVELOPE_IN_REPLY_TO, inReplyTo);
  out.tag(field, WireType.LengthDelimited);
  out.varint(body.size);
  body.write(out);
  if (out.pos + (tail?.byteLength ?? 0) !== size) {
    throw new Error(`hot codec: wrote ${out.pos} of ${size} bytes`); // a bug here, not input
  }
  const payloads: Uint8Array[] = [];
  if (message.type === 'PushData') payloads.push(message.payload);
  else if (message.type === 'PushMergedData')
    for (const batch of message.batches) payloads.push(batch.payload);
  return tail === undefined
    ? { control: out.bytes, payloads }
    : { control: out.bytes, controlTail: tail, payloads };
}

function messageWriter(message: HotMessage): BodyWriter {
  switch (message.type) {
    case 'ReserveSlots':
      return reserveSlotsWriter(message);
    case 'CommitFilesResponse':
      return commitFilesResponseWriter(message);
    case 'RegisterShuffleResponse':
      return registerShuffleResponseWriter(message);
    case 'RequestSlotsResponse':
      return requestSlotsResponseWriter(message);
    case 'GetReducerFileGroupResponse':
      return fileGroupAnswerWriter(message);
    case 'MapperEnd':
      return mapperEndWriter(message);
    case 'CommitFiles':
      return commitFilesWriter(message);
    case 'PushData': {
      const shuffleKey = utf8(message.shuffleKey);
      const mode = wireNumber(PARTITION_MODE_CODE, message.mode);
      const ints = [
        mode,
        message.partitionId,
        message.epoch,
        message.mapId,
        message.attemptId,
        message.batchId,
      ];
      const length = message.payload.byteLength;
      let size = bytesFieldSize(shuffleKey) + uint32FieldSize(length);
      for (const value of ints) size += int32FieldSize(value);
      return {
        size,
        write(out) {
          out.bytesField(1, shuffleKey);
          for (let i = 0; i < ints.length; i += 1) out.int32Field(2 + i, ints[i]!);
          out.uint32Field(8, length);
        },
      };
    }
    case 'PushDataResponse': {
      const status = wireNumber(STATUS_CODES, message.status);
      const text = utf8(message.message);
      return {
        size: int32FieldSize(status) + bytesFieldSize(text),
        write(out) {
          out.int32Field(1, status);
          out.bytesField(2, text);
        },
      };
    }
    case 'PushMergedData': {
      const shuffleKey = utf8(message.shuffleKey);
      const mode = wireNumber(PARTITION_MODE_CODE, message.mode);
      const { mapId, attemptId, batches } = message;
      const batchSizes = new Array<number>(batches.length);
      let size =
        bytesFieldSize(shuffleKey) + int32FieldSize(mode) + int32FieldSize(mapId) + int32FieldSize(attemptId);
      for (let i = 0; i < batches.length; i += 1) {
        const batch = batches[i]!;
        const batchSize =
          int32FieldSize(batch.partitionId) +
          int32FieldSize(batch.epoch) +
          int32FieldSize(batch.batchId) +
          uint32FieldSize(batch.payload.byteLength);
        batchSizes[i] = batchSize;
        size += 1 + varintSize(batchSize) + batchSize;
      }
      return {
        size,
        write(out) {
          out.bytesField(1, shuffleKey);
          out.int32Field(2, mode);
          out.int32Field(3, mapId);
          out.int32Field(4, attemptId);
          for (let i = 0; i < batches.length; i += 1) {
            const batch = batches[i]!;
            out.tag(5, WireType.LengthDelimited);
            out.varint(batchSizes[i]!);
            out.int32Field(1, batch.partitionId);
            out.int32Field(2, batch.epoch);
            out.int32Field(3, batch.batchId);
            out.uint32Field(4, batch.payload.byteLength);
          }
        },
      };
    }
    case 'PushMergedDataResponse': {
      const numbers = message.statuses.map((status) => wireNumber(STATUS_CODES, status));
      const text = utf8(message.message);
      let packed = 0;
      for (const number of numbers) packed += int32Size(number);
      return {
        size: (numbers.length === 0 ? 0 : 1 + varintSize(packed) + packed) + bytesFieldSize(text),
        write(out) {
          if (numbers.length > 0) {
            out.tag(1, WireType.LengthDelimited);
            out.varint(packed);
            for (const number of numbers) out.int32(number);
          }
          out.bytesField(2, text);
        },
      };
    }
  }
}

// ------------------------------------------------------------------------------------------------ decode

/** A hot message's envelope, or undefined for anything the schema's decoder is to read (or refuse). */
export function decodeHotEnvelope(control: Uint8Array, payloadBytes: Uint8Array): WireEnvelope | undefined {
  try {
    return decodeEnvelope(control, payloadBytes);
  } catch {
    return undefined;
  }
}

function decodeEnvelope(control: Uint8Array, payloadBytes: Uint8Array): WireEnvelope {
  const reader = new BinaryReader(control);
  let from = '';
  let to = '';
  let requestId: number | undefined;
  let inReplyTo: number | undefined;
  let field = 0;
  let body: Uint8Array | undefined;
  while (reader.pos < reader.len) {
    const tag = readTag(reader);
    const number = tag >>> 3;
    const type = wireTypeOf(tag);
    if (type === WireType.LengthDelimited && number === ENVELOPE_FROM) from = reader.string(true);
    else if (type === WireType.LengthDelimited && number === ENVELOPE_TO) to = reader.string(true);
    else if (type === WireType.Varint && number === ENVELOPE_REQUEST_ID) requestId = Number(reader.uint64());
    else if (type === WireType.Varint && number === ENVELOPE_IN_REPLY_TO) inReplyTo = Number(reader.uint64());
    else if (
      type === WireType.LengthDelimited &&
      ((number >= PUSH_DATA && number <= PUSH_MERGED_DATA_RESPONSE) ||
        number === RESERVE_SLOTS ||
        number === COMMIT_FILES ||
        number === MAPPER_END ||
        number === COMMIT_FILES_RESPONSE ||
        number === REGISTER_SHUFFLE_RESPONSE ||
        number === REQUEST_SLOTS_RESPONSE ||
        number === GET_REDUCER_FILE_GROUP_RESPONSE)
    ) {
      if (body !== undefined) throw NOT_HOT; // a message field twice: protobuf merges them; the schema's decoder does
      field = number;
      body = reader.bytes();
    } else throw NOT_HOT;
  }
  if (body === undefined) throw NOT_HOT;
  const payloads = new PayloadRegion(payloadBytes);
  const message = decodeMessage(field, body, payloads);
  payloads.finish();
  if (requestId === undefined) {
    return inReplyTo === undefined ? { from, to, message } : { from, to, inReplyTo, message };
  }
  return inReplyTo === undefined
    ? { from, to, requestId, message }
    : { from, to, requestId, inReplyTo, message };
}

function decodeMessage(field: number, body: Uint8Array, payloads: PayloadRegion): HotMessage {
  try {
    return readMessage(field, bodyReader(body), body, payloads);
  } finally {
    forgetBodyReader(); // a body may be megabytes (a file group), or a pooled buffer lent again
  }
}

function readMessage(
  field: number,
  reader: BinaryReader,
  body: Uint8Array,
  payloads: PayloadRegion,
): HotMessage {
  switch (field) {
    case RESERVE_SLOTS:
      return readReserveSlots(reader);
    case COMMIT_FILES_RESPONSE:
      return readCommitFilesResponse(reader);
    case REGISTER_SHUFFLE_RESPONSE:
      return readRegisterShuffleResponse(reader);
    case REQUEST_SLOTS_RESPONSE:
      return readRequestSlotsResponse(reader);
    case GET_REDUCER_FILE_GROUP_RESPONSE:
      return readFileGroupAnswer(reader, body);
    case MAPPER_END:
      return readMapperEnd(reader);
    case COMMIT_FILES:
      return readCommitFiles(reader);
    case PUSH_DATA:
      return readPushData(reader, payloads);
    case PUSH_DATA_RESPONSE: {
      let status = 0;
      let message = '';
      while (reader.pos < reader.len) {
        const tag = readTag(reader);
        const number = tag >>> 3;
        const type = wireTypeOf(tag);
        if (number === 1 && type === WireType.Varint) status = reader.int32();
        else if (number === 2 && type === WireType.LengthDelimited) message = reader.string(true);
        else throw NOT_HOT;
      }
      return { type: 'PushDataResponse', status: named(STATUS_NAMES, status), message };
    }
    case PUSH_MERGED_DATA:
      return readPushMergedData(reader, payloads);
    default: {
      const statuses: StatusCode[] = [];
      let message = '';
      while (reader.pos < reader.len) {
        const tag = readTag(reader);
        const number = tag >>> 3;
        const type = wireTypeOf(tag);
        if (number === 1 && type === WireType.LengthDelimited) {
          const end = reader.uint32() + reader.pos;
          while (reader.pos < end) statuses.push(named(STATUS_NAMES, reader.int32()));
          if (reader.pos !== end) throw NOT_HOT;
        } else if (number === 1 && type === WireType.Varint)
          statuses.push(named(STATUS_NAMES, reader.int32()));
        else if (number === 2 && type === WireType.LengthDelimited) message = reader.string(true);
        else throw NOT_HOT;
      }
      return { type: 'PushMergedDataResponse', statuses, message };
    }
  }
}

function readPushData(reader: BinaryReader, payloads: PayloadRegion): PushData {
  let shuffleKey = '';
  const ints = [0, 0, 0, 0, 0, 0, 0, 0, 0]; // by field number: mode 2, partition 3 … batch 7, payload length 8
  while (reader.pos < reader.len) {
    const tag = readTag(reader);
    const number = tag >>> 3;
    const type = wireTypeOf(tag);
    if (number === 1 && type === WireType.LengthDelimited) shuffleKey = reader.string(true);
    else if (number >= 2 && number <= 7 && type === WireType.Varint) ints[number] = reader.int32();
    else if (number === 8 && type === WireType.Varint) ints[8] = reader.uint32();
    else throw NOT_HOT;
  }
  return {
    type: 'PushData',
    shuffleKey,
    mode: named(MODE_NAMES, ints[2]!),
    partitionId: ints[3]!,
    epoch: ints[4]!,
    mapId: ints[5]!,
    attemptId: ints[6]!,
    batchId: ints[7]!,
    payload: payloads.take(ints[8]!, 'PushData.payload'),
  };
}

function readPushMergedData(reader: BinaryReader, payloads: PayloadRegion): PushMergedData {
  let shuffleKey = '';
  let mode = 0;
  let mapId = 0;
  let attemptId = 0;
  // Each batch's partition, epoch, batch id and payload length, four numbers a batch: one object per batch (the
  // MergedBatch below) instead of two, in a message of up to a hundred 4 KiB batches.
  const fields: number[] = [];
  while (reader.pos < reader.len) {
    const tag = readTag(reader);
    const number = tag >>> 3;
    const type = wireTypeOf(tag);
    if (number === 1 && type === WireType.LengthDelimited) shuffleKey = reader.string(true);
    else if (number === 2 && type === WireType.Varint) mode = reader.int32();
    else if (number === 3 && type === WireType.Varint) mapId = reader.int32();
    else if (number === 4 && type === WireType.Varint) attemptId = reader.int32();
    else if (number === 5 && type === WireType.LengthDelimited) {
      const end = reader.uint32() + reader.pos;
      let partitionId = 0;
      let epoch = 0;
      let batchId = 0;
      let length = 0;
      while (reader.pos < end) {
        const innerTag = readTag(reader);
        const inner = innerTag >>> 3;
        const innerType = wireTypeOf(innerTag);
        if (innerType !== WireType.Varint || inner < 1 || inner > 4) throw NOT_HOT;
        if (inner === 1) partitionId = reader.int32();
        else if (inner === 2) epoch = reader.int32();
        else if (inner === 3) batchId = reader.int32();
        else length = reader.uint32();
      }
      if (reader.pos !== end) throw NOT_HOT;
      fields.push(partitionId, epoch, batchId, length);
    } else throw NOT_HOT;
  }
  // Payloads are taken in list order after the whole control part was read, as the schema's decoder does.
  const merged: MergedBatch[] = new Array<MergedBatch>(fields.length / 4);
  for (let i = 0; i < merged.length; i += 1) {
    merged[i] = {
      partitionId: fields[4 * i]!,
      epoch: fields[4 * i + 1]!,
      batchId: fields[4 * i + 2]!,
      payload: payloads.take(fields[4 * i + 3]!, 'MergedBatch.payload'),
    };
  }
  return {
    type: 'PushMergedData',
    shuffleKey,
    mode: named(MODE_NAMES, mode),
    mapId,
    attemptId,
    batches: merged,
  };
}
