import { BinaryReader, WireType } from '@bufbuild/protobuf/wire';
import { PARTITION_MODE_CODE, type PartitionLocation } from '../../core/domain/partition.ts';
import { STATUS_CODES } from '../../core/domain/status.ts';
import { STORAGE_TYPE_CODE, type StorageInfo } from '../../core/domain/storage.ts';
import type { WorkerId } from '../../core/domain/worker.ts';
import type {
  CommitFilesResponse,
  CommittedFile,
  RegisterShuffleResponse,
  ReserveSlots,
} from '../../core/protocol/messages.ts';
import {
  bytesFieldSize,
  elementSize,
  int32FieldSize,
  named,
  NOT_HOT,
  reverse,
  textLength,
  uint32FieldSize,
  uint64FieldSize,
  utf8,
  varintSize,
  wireNumber,
  Output,
  type BodyWriter,
  readTag,
  wireTypeOf,
} from './hand-codec.ts';

/**
 * ReserveSlots, CommitFilesResponse and RegisterShuffleResponse by hand: a shuffle of 10,000 partitions reserves,
 * commits and hands each map task its 10,000 locations in one message each, and the schema codec's reflection over them held the worker's event loop and the lifecycle
 * manager's for about 100 ms each (docs/performance.md). The same rules as ./hot-codec.ts: the bytes are exactly
 * `toBinary`'s, and whatever the reader does not expect is left to the schema's decoder (NOT_HOT).
 */

const MODE_NAMES = reverse(PARTITION_MODE_CODE);
const STATUS_NAMES = reverse(STATUS_CODES);
const STORAGE_NAMES = reverse(STORAGE_TYPE_CODE);
const SPLIT_MODE_CODE = { SOFT: 0, HARD: 1 } as const;
const SPLIT_MODE_NAMES = reverse(SPLIT_MODE_CODE);

// ------------------------------------------------------------------------------------------------ encode

/**
 * Nested sizes in the order the writer meets the messages (a message's size before its fields'), computed once:
 * the writer takes them back in that order.
 */
export class Sizes {
  private readonly values: number[] = [];
  private at = 0;

  reserve(): number {
    this.values.push(0);
    return this.values.length - 1;
  }

  set(index: number, size: number): number {
    this.values[index] = size;
    return size;
  }

  next(): number {
    return this.values[this.at++]!;
  }
}

export function workerSize(worker: WorkerId): number {
  return (
    bytesFieldSize(utf8(worker.host)) +
    uint32FieldSize(worker.rpcPort) +
    uint32FieldSize(worker.pushPort) +
    uint32FieldSize(worker.fetchPort) +
    uint32FieldSize(worker.replicatePort)
  );
}

export function writeWorker(out: Output, worker: WorkerId): void {
  out.bytesField(1, utf8(worker.host));
  out.uint32Field(2, worker.rpcPort);
  out.uint32Field(3, worker.pushPort);
  out.uint32Field(4, worker.fetchPort);
  out.uint32Field(5, worker.replicatePort);
}

function storageSize(storage: StorageInfo): number {
  return (
    int32FieldSize(wireNumber(STORAGE_TYPE_CODE, storage.type)) +
    bytesFieldSize(utf8(storage.mountPoint)) +
    uint32FieldSize(storage.availableTypes)
  );
}

function writeStorage(out: Output, storage: StorageInfo): void {
  out.int32Field(1, STORAGE_TYPE_CODE[storage.type]);
  out.bytesField(2, utf8(storage.mountPoint));
  out.uint32Field(3, storage.availableTypes);
}

/**
 * The encoded fields of the last workers and storages written, with the values they encode: a message of 10,000
 * locations names the same few workers and storages thousands of times (a replicated one alternates two workers).
 */
class LastWritten<T> {
  private readonly values: T[] = [];
  private readonly bytes: Uint8Array[] = [];
  private at = 0;
  /** How many values were encoded afresh. */
  misses = 0;

  constructor(
    private readonly same: (a: T, b: T) => boolean,
    private readonly size: (value: T) => number,
    private readonly write: (out: Output, value: T) => void,
  ) {}

  encoded(value: T): Uint8Array {
    for (let k = 0; k < this.values.length; k += 1) {
      const known = this.values[k]!;
      if (known === value || this.same(known, value)) return this.bytes[k]!;
    }
    this.misses += 1;
    const out = new Output(this.size(value));
    this.write(out, value);
    const bytes = out.bytes.slice();
    this.at = this.values.length < LAST_WRITTEN ? this.values.length : (this.at + 1) % LAST_WRITTEN;
    this.values[this.at] = value;
    this.bytes[this.at] = bytes;
    return bytes;
  }
}

const LAST_WRITTEN = 2;

const workersWritten = new LastWritten<WorkerId>(
  (a, b) =>
    a.host === b.host &&
    a.rpcPort === b.rpcPort &&
    a.pushPort === b.pushPort &&
    a.fetchPort === b.fetchPort &&
    a.replicatePort === b.replicatePort,
  workerSize,
  writeWorker,
);

const storagesWritten = new LastWritten<StorageInfo>(
  (a, b) => a.type === b.type && a.mountPoint === b.mountPoint && a.availableTypes === b.availableTypes,
  storageSize,
  writeStorage,
);

/**
 * Each worker's encoded fields, kept for as long as its id object lives: a replicated RequestSlotsResponse of 1,000
 * partitions names each of its ~1,000 workers four times (as a primary, a replica and each one's peer), too many for
 * the last written, and the ids are the master's registry objects, the same at every offer (core's values are never
 * changed in place). Only the workers the last written missed are kept.
 */
const workerBodies = new WeakMap<WorkerId, Uint8Array>();

export function encodedWorker(worker: WorkerId): Uint8Array {
  const kept = workerBodies.get(worker);
  if (kept !== undefined) return kept;
  const misses = workersWritten.misses;
  const bytes = workersWritten.encoded(worker);
  // A decoded message's locations each bring a new id object, mostly of the last written workers: not kept.
  if (workersWritten.misses !== misses) workerBodies.set(worker, bytes);
  return bytes;
}

function encodedStorage(storage: StorageInfo): Uint8Array {
  return storagesWritten.encoded(storage);
}

/** The location's size (its own, without tag and length); its nested sizes go to `sizes`. */
export function locationSize(location: PartitionLocation, sizes: Sizes): number {
  const index = sizes.reserve();
  let size =
    int32FieldSize(location.partitionId) +
    int32FieldSize(location.epoch) +
    elementSize(encodedWorker(location.worker).length) +
    int32FieldSize(wireNumber(PARTITION_MODE_CODE, location.mode)) +
    elementSize(encodedStorage(location.storage).length);
  if (location.peer !== undefined) size += elementSize(locationSize(location.peer, sizes));
  return sizes.set(index, size);
}

export function writeLocation(out: Output, field: number, location: PartitionLocation, sizes: Sizes): void {
  out.nested(field, sizes.next());
  out.int32Field(1, location.partitionId);
  out.int32Field(2, location.epoch);
  out.element(3, encodedWorker(location.worker));
  out.int32Field(4, PARTITION_MODE_CODE[location.mode]);
  out.element(5, encodedStorage(location.storage));
  if (location.peer !== undefined) writeLocation(out, 6, location.peer, sizes);
}

export function reserveSlotsWriter(message: ReserveSlots): BodyWriter {
  const appId = utf8(message.appId);
  const user = utf8(message.user ?? '');
  const tenant = utf8(message.tenant ?? '');
  const splitMode = wireNumber(SPLIT_MODE_CODE, message.splitMode);
  const sizes = new Sizes();
  let size =
    bytesFieldSize(appId) +
    int32FieldSize(message.shuffleId) +
    uint64FieldSize(message.splitThreshold) +
    int32FieldSize(splitMode) +
    (message.memoryEnabled ? 2 : 0) +
    bytesFieldSize(user) +
    bytesFieldSize(tenant);
  for (const location of message.primaries) size += elementSize(locationSize(location, sizes));
  for (const location of message.replicas) size += elementSize(locationSize(location, sizes));
  if (typeof message.memoryEnabled !== 'boolean') throw NOT_HOT;
  return {
    size,
    write(out) {
      out.bytesField(1, appId);
      out.int32Field(2, message.shuffleId);
      for (const location of message.primaries) writeLocation(out, 3, location, sizes);
      for (const location of message.replicas) writeLocation(out, 4, location, sizes);
      out.uint64Field(5, message.splitThreshold);
      out.int32Field(6, splitMode);
      if (message.memoryEnabled) out.varintField(7, 1);
      out.bytesField(8, user);
      out.bytesField(9, tenant);
    },
  };
}

export function registerShuffleResponseWriter(message: RegisterShuffleResponse): BodyWriter {
  const status = wireNumber(STATUS_CODES, message.status);
  const text = utf8(message.message);
  const sizes = new Sizes();
  let size = int32FieldSize(status) + bytesFieldSize(text);
  for (const location of message.locations) size += elementSize(locationSize(location, sizes));
  return {
    size,
    write(out) {
      out.int32Field(1, status);
      for (const location of message.locations) writeLocation(out, 2, location, sizes);
      out.bytesField(3, text);
    },
  };
}

function committedSize(file: CommittedFile, sizes: Sizes): number {
  const index = sizes.reserve();
  const offsets = sizes.reserve();
  let packed = 0;
  for (const offset of file.chunkOffsets) packed += uint64FieldSize(offset) === 0 ? 1 : varintSize(offset);
  sizes.set(offsets, packed);
  const size =
    bytesFieldSize(utf8(file.uniqueId)) +
    int32FieldSize(wireNumber(PARTITION_MODE_CODE, file.mode)) +
    elementSize(encodedStorage(file.storage).length) +
    uint64FieldSize(file.bytes) +
    (file.chunkOffsets.length === 0 ? 0 : elementSize(packed));
  return sizes.set(index, size);
}

function writeCommitted(out: Output, field: number, file: CommittedFile, sizes: Sizes): void {
  out.nested(field, sizes.next());
  const packed = sizes.next();
  out.bytesField(1, utf8(file.uniqueId));
  out.int32Field(2, PARTITION_MODE_CODE[file.mode]);
  out.element(3, encodedStorage(file.storage));
  out.uint64Field(4, file.bytes);
  if (file.chunkOffsets.length > 0) {
    out.nested(5, packed);
    for (const offset of file.chunkOffsets) out.varint(offset);
  }
}

export function commitFilesResponseWriter(message: CommitFilesResponse): BodyWriter {
  const status = wireNumber(STATUS_CODES, message.status);
  const text = utf8(message.message);
  const failedPrimaries = message.failedPrimaryIds.map(utf8);
  const failedReplicas = message.failedReplicaIds.map(utf8);
  const sizes = new Sizes();
  let size = int32FieldSize(status) + bytesFieldSize(text);
  for (const file of message.committedPrimaries) size += elementSize(committedSize(file, sizes));
  for (const file of message.committedReplicas) size += elementSize(committedSize(file, sizes));
  for (const id of failedPrimaries) size += elementSize(textLength(id));
  for (const id of failedReplicas) size += elementSize(textLength(id));
  return {
    size,
    write(out) {
      out.int32Field(1, status);
      for (const file of message.committedPrimaries) writeCommitted(out, 2, file, sizes);
      for (const file of message.committedReplicas) writeCommitted(out, 3, file, sizes);
      for (const id of failedPrimaries) out.element(4, id);
      for (const id of failedReplicas) out.element(5, id);
      out.bytesField(6, text);
    },
  };
}

// ------------------------------------------------------------------------------------------------ decode

/** A nested message's reader: the bytes up to its end. */
export function nestedEnd(reader: BinaryReader): number {
  const end = reader.uint32() + reader.pos;
  if (end > reader.len) throw NOT_HOT;
  return end;
}

/**
 * The body reader made last and its bytes (BinaryReader keeps its own private), for LastRead's comparison: a body
 * is read in one go, so the reader of the message being read is always the last one made.
 */
let lastReader: BinaryReader | undefined;
let lastBytes: Uint8Array | undefined;

/** A reader over a message's body whose repeated workers and storages decode once (LastRead). */
export function bodyReader(body: Uint8Array): BinaryReader {
  lastReader = new BinaryReader(body);
  lastBytes = body;
  return lastReader;
}

/** Lets go of the last body reader and its bytes once its message is read. */
export function forgetBodyReader(): void {
  lastReader = undefined;
  lastBytes = undefined;
}

/** The bytes the reader reads, when it is the last body reader; undefined for another (its values decode anew). */
function bytesOf(reader: BinaryReader): Uint8Array | undefined {
  return reader === lastReader ? lastBytes : undefined;
}

/**
 * A non-negative int64 field's value of at most 49 bits (7 varint bytes: sizes and offsets), read straight from the
 * bytes; anything longer, or a reader without known bytes, through protobuf's int64 (a bigint, then a number).
 */
export function readSize(reader: BinaryReader): number {
  const buf = bytesOf(reader);
  if (buf !== undefined) {
    let pos = reader.pos;
    let value = 0;
    let scale = 1;
    for (let i = 0; i < 7 && pos < reader.len; i += 1) {
      const byte = buf[pos++]!;
      value += (byte & 0x7f) * scale;
      if (byte < 0x80) {
        reader.pos = pos;
        return value;
      }
      scale *= 0x80;
    }
  }
  return Number(reader.int64());
}

/**
 * The last worker and storage read, with their bytes: a message of 10,000 locations names one worker (and one
 * storage) thousands of times, and decoding each again cost the string decodes, the objects and, downstream, a
 * key per object (core/domain's workerKey is kept per WorkerId object). Equal bytes decode to equal values, and the
 * values are immutable: handing out the same object is the same answer.
 */
class LastRead<T> {
  /** A few (a replicated location names its peer's worker beside its own), the one used last first. */
  private readonly bytes: Uint8Array[] = [];
  private readonly values: T[] = [];

  /** A value read earlier when the next `end - reader.pos` bytes are the ones it was read from; then skips them. */
  recall(reader: BinaryReader, end: number): T | undefined {
    const buf = bytesOf(reader);
    if (buf === undefined) return undefined;
    const start = reader.pos;
    const length = end - start;
    for (let k = 0; k < this.bytes.length; k += 1) {
      const bytes = this.bytes[k]!;
      if (bytes.length !== length) continue;
      let i = 0;
      while (i < length && buf[start + i] === bytes[i]) i += 1;
      if (i < length) continue;
      const value = this.values[k]!;
      if (k > 0) this.moveFirst(k, bytes, value);
      reader.pos = end;
      return value;
    }
    return undefined;
  }

  remember(reader: BinaryReader, start: number, value: T): T {
    const buf = bytesOf(reader);
    if (buf === undefined) return value;
    if (this.bytes.length < LAST_READS) {
      this.bytes.push(this.bytes[0]!);
      this.values.push(this.values[0]!);
    }
    this.moveFirst(this.bytes.length - 1, buf.slice(start, reader.pos), value);
    return value;
  }

  /** Puts the entry at `k` first (the ones before it move down one), with these bytes and value. */
  private moveFirst(k: number, bytes: Uint8Array, value: T): void {
    for (let i = k; i > 0; i -= 1) {
      this.bytes[i] = this.bytes[i - 1]!;
      this.values[i] = this.values[i - 1]!;
    }
    this.bytes[0] = bytes;
    this.values[0] = value;
  }
}

const LAST_READS = 4;
const lastWorker = new LastRead<WorkerId>();
const lastStorage = new LastRead<StorageInfo>();

export function readWorker(reader: BinaryReader, end: number): WorkerId {
  const recalled = lastWorker.recall(reader, end);
  if (recalled !== undefined) return recalled;
  const start = reader.pos;
  return lastWorker.remember(reader, start, readWorkerFields(reader, end));
}

function readWorkerFields(reader: BinaryReader, end: number): WorkerId {
  let host = '';
  const ports = [0, 0, 0, 0, 0, 0];
  while (reader.pos < end) {
    const tag = readTag(reader);
    const number = tag >>> 3;
    const type = wireTypeOf(tag);
    if (number === 1 && type === WireType.LengthDelimited) host = reader.string(true);
    else if (number >= 2 && number <= 5 && type === WireType.Varint) ports[number] = reader.uint32();
    else throw NOT_HOT;
  }
  if (reader.pos !== end) throw NOT_HOT;
  return { host, rpcPort: ports[2]!, pushPort: ports[3]!, fetchPort: ports[4]!, replicatePort: ports[5]! };
}

function readStorage(reader: BinaryReader, end: number): StorageInfo {
  const recalled = lastStorage.recall(reader, end);
  if (recalled !== undefined) return recalled;
  const start = reader.pos;
  return lastStorage.remember(reader, start, readStorageFields(reader, end));
}

function readStorageFields(reader: BinaryReader, end: number): StorageInfo {
  let type = 0;
  let mountPoint = '';
  let availableTypes = 0;
  while (reader.pos < end) {
    const tag = readTag(reader);
    const number = tag >>> 3;
    const wireType = wireTypeOf(tag);
    if (number === 1 && wireType === WireType.Varint) type = reader.int32();
    else if (number === 2 && wireType === WireType.LengthDelimited) mountPoint = reader.string(true);
    else if (number === 3 && wireType === WireType.Varint) availableTypes = reader.uint32();
    else throw NOT_HOT;
  }
  if (reader.pos !== end) throw NOT_HOT;
  return { type: named(STORAGE_NAMES, type), mountPoint, availableTypes };
}

export function readLocation(reader: BinaryReader, end: number, isPeer: boolean): PartitionLocation {
  let partitionId = 0;
  let epoch = 0;
  let worker: WorkerId | undefined;
  let mode = 0;
  let storage: StorageInfo | undefined;
  let peer: PartitionLocation | undefined;
  while (reader.pos < end) {
    const tag = readTag(reader);
    const number = tag >>> 3;
    const type = wireTypeOf(tag);
    if (number === 1 && type === WireType.Varint) partitionId = reader.int32();
    else if (number === 2 && type === WireType.Varint) epoch = reader.int32();
    else if (number === 4 && type === WireType.Varint) mode = reader.int32();
    else if (type !== WireType.LengthDelimited) throw NOT_HOT;
    // A nested message twice is merged by protobuf: left to the schema's decoder, as is a peer's peer.
    else if (number === 3 && worker === undefined) worker = readWorker(reader, nestedEnd(reader));
    else if (number === 5 && storage === undefined) storage = readStorage(reader, nestedEnd(reader));
    else if (number === 6 && peer === undefined && !isPeer)
      peer = readLocation(reader, nestedEnd(reader), true);
    else throw NOT_HOT;
  }
  if (reader.pos !== end || worker === undefined || storage === undefined) throw NOT_HOT;
  const name = named(MODE_NAMES, mode);
  // Literals, not a spread adding the peer: V8 copies a spread object several times slower than it builds one.
  return peer === undefined
    ? { partitionId, epoch, worker, mode: name, storage }
    : { partitionId, epoch, worker, mode: name, storage, peer };
}

export function readReserveSlots(reader: BinaryReader): ReserveSlots {
  let appId = '';
  let shuffleId = 0;
  const primaries: PartitionLocation[] = [];
  const replicas: PartitionLocation[] = [];
  let splitThreshold = 0;
  let splitMode = 0;
  let memoryEnabled = false;
  let user = '';
  let tenant = '';
  while (reader.pos < reader.len) {
    const tag = readTag(reader);
    const number = tag >>> 3;
    const type = wireTypeOf(tag);
    if (type === WireType.LengthDelimited) {
      if (number === 1) appId = reader.string(true);
      else if (number === 3) primaries.push(readLocation(reader, nestedEnd(reader), false));
      else if (number === 4) replicas.push(readLocation(reader, nestedEnd(reader), false));
      else if (number === 8) user = reader.string(true);
      else if (number === 9) tenant = reader.string(true);
      else throw NOT_HOT;
    } else if (type === WireType.Varint) {
      if (number === 2) shuffleId = reader.int32();
      else if (number === 5) splitThreshold = Number(reader.int64());
      else if (number === 6) splitMode = reader.int32();
      else if (number === 7) memoryEnabled = reader.bool();
      else throw NOT_HOT;
    } else throw NOT_HOT;
  }
  return {
    type: 'ReserveSlots',
    appId,
    shuffleId,
    primaries,
    replicas,
    splitThreshold,
    splitMode: named(SPLIT_MODE_NAMES, splitMode),
    memoryEnabled,
    ...(user === '' ? {} : { user }),
    ...(tenant === '' ? {} : { tenant }),
  };
}

export function readRegisterShuffleResponse(reader: BinaryReader): RegisterShuffleResponse {
  let status = 0;
  const locations: PartitionLocation[] = [];
  let message = '';
  while (reader.pos < reader.len) {
    const tag = readTag(reader);
    const number = tag >>> 3;
    const type = wireTypeOf(tag);
    if (number === 1 && type === WireType.Varint) status = reader.int32();
    else if (number === 2 && type === WireType.LengthDelimited)
      locations.push(readLocation(reader, nestedEnd(reader), false));
    else if (number === 3 && type === WireType.LengthDelimited) message = reader.string(true);
    else throw NOT_HOT;
  }
  return { type: 'RegisterShuffleResponse', status: named(STATUS_NAMES, status), locations, message };
}

/**
 * The packed sizes up to `end`, in a list of their count: a committed file has one or two chunk offsets most often,
 * and a list grown from empty by a push has room for seventeen. A commit of 10,000 files made that slack the
 * largest site of the lifecycle manager's commit decode in promoted bytes (its files live in the shuffle's file
 * group until it is unregistered).
 */
function readPackedSizes(reader: BinaryReader, end: number): number[] {
  const buf = bytesOf(reader);
  let count = 0;
  // A varint ends at a byte below 0x80; without the bytes at hand the list grows as it is read.
  if (buf !== undefined) for (let pos = reader.pos; pos < end; pos += 1) if (buf[pos]! < 0x80) count += 1;
  const sizes = new Array<number>(count);
  let read = 0;
  while (reader.pos < end) {
    const size = readSize(reader);
    if (read < count) sizes[read] = size;
    else sizes.push(size);
    read += 1;
  }
  if (read < count) sizes.length = read;
  return sizes;
}

export function readCommitted(reader: BinaryReader, end: number): CommittedFile {
  let uniqueId = '';
  let mode = 0;
  let storage: StorageInfo | undefined;
  let bytes = 0;
  let chunkOffsets: number[] | undefined;
  while (reader.pos < end) {
    const tag = readTag(reader);
    const number = tag >>> 3;
    const type = wireTypeOf(tag);
    if (number === 1 && type === WireType.LengthDelimited) uniqueId = reader.string(true);
    else if (number === 2 && type === WireType.Varint) mode = reader.int32();
    else if (number === 3 && type === WireType.LengthDelimited && storage === undefined)
      storage = readStorage(reader, nestedEnd(reader));
    else if (number === 4 && type === WireType.Varint) bytes = readSize(reader);
    // Offsets in more than one run are merged by protobuf: left to the schema's decoder.
    else if (number === 5 && type === WireType.LengthDelimited && chunkOffsets === undefined) {
      const packedEnd = nestedEnd(reader);
      chunkOffsets = readPackedSizes(reader, packedEnd);
      if (reader.pos !== packedEnd) throw NOT_HOT;
    } else if (number === 5 && type === WireType.Varint) (chunkOffsets ??= []).push(readSize(reader));
    else throw NOT_HOT;
  }
  if (reader.pos !== end || storage === undefined) throw NOT_HOT;
  return { uniqueId, mode: named(MODE_NAMES, mode), storage, bytes, chunkOffsets: chunkOffsets ?? [] };
}

export function readCommitFilesResponse(reader: BinaryReader): CommitFilesResponse {
  let status = 0;
  const committedPrimaries: CommittedFile[] = [];
  const committedReplicas: CommittedFile[] = [];
  const failedPrimaryIds: string[] = [];
  const failedReplicaIds: string[] = [];
  let message = '';
  while (reader.pos < reader.len) {
    const tag = readTag(reader);
    const number = tag >>> 3;
    const type = wireTypeOf(tag);
    if (number === 1 && type === WireType.Varint) status = reader.int32();
    else if (type !== WireType.LengthDelimited) throw NOT_HOT;
    else if (number === 2) committedPrimaries.push(readCommitted(reader, nestedEnd(reader)));
    else if (number === 3) committedReplicas.push(readCommitted(reader, nestedEnd(reader)));
    else if (number === 4) failedPrimaryIds.push(reader.string(true));
    else if (number === 5) failedReplicaIds.push(reader.string(true));
    else if (number === 6) message = reader.string(true);
    else throw NOT_HOT;
  }
  return {
    type: 'CommitFilesResponse',
    status: named(STATUS_NAMES, status),
    committedPrimaries,
    committedReplicas,
    failedPrimaryIds,
    failedReplicaIds,
    message,
  };
}
