// The control part of handshake and envelope frames, as Protocol Buffers (schema: ./proto/svc/wire/v1/wire.proto;
// generated code: ./proto/gen, regenerated as runtime/wire/README.md says). Byte payloads never enter the protobuf:
// the control message carries their lengths, and the payloads travel raw after it (./frames.ts).
//
// The machines' types (core/protocol/messages.ts) are plain readonly objects; the generated types are protobuf-es
// messages. Each message type has one hand-written pair of converters below, checked by the compiler against both
// sides: a new message type in core fails to compile here until it has a oneof case in the schema and converters.
// Decoding validates what the machines rely on (enum values they know, nested messages they dereference), so that
// no peer can crash a machine with a well-formed but meaningless message.
import { fromBinary, toBinary } from '@bufbuild/protobuf';
import type { StatusCode } from '../../core/domain/status.ts';
import { STATUS_CODES } from '../../core/domain/status.ts';
import type { PartitionLocation, PartitionMode } from '../../core/domain/partition.ts';
import { PARTITION_MODE_CODE } from '../../core/domain/partition.ts';
import type { DiskStatus, StorageInfo, StorageType } from '../../core/domain/storage.ts';
import { DISK_STATUSES, STORAGE_TYPE_CODE } from '../../core/domain/storage.ts';
import type { DiskInfo, WorkerEventType, WorkerId, WorkerState } from '../../core/domain/worker.ts';
import { WORKER_EVENT_TYPES, WORKER_STATES } from '../../core/domain/worker.ts';
import type {
  CommittedFile,
  Message,
  MessageOf,
  MessageType,
  ReducerFileGroup,
  ReserveSlots,
  ReviveRequest,
  ReviveResult,
} from '../../core/protocol/messages.ts';
import type { Release } from '../../core/release/version.ts';
import { WireError } from './errors.ts';
import * as pb from './proto/gen/svc/wire/v1/wire_pb.ts';
import type { EncodedControl, Hello, HelloReply, PeerRole, WireEnvelope } from './types.ts';

// ------------------------------------------------------------------------------------------------ handshakes

export function encodeHelloControl(hello: Hello): Uint8Array {
  return toBinary(pb.HelloSchema, {
    $typeName: 'svc.wire.v1.Hello',
    role: PEER_ROLE.encode(hello.role),
    release: hello.release,
    nodeId: hello.nodeId,
    application: hello.application ?? '',
    followsLeader: hello.followsLeader === true,
  });
}

export function decodeHelloControl(bytes: Uint8Array): Hello {
  try {
    const hello = fromBinary(pb.HelloSchema, bytes, READ_OPTIONS);
    return {
      role: PEER_ROLE.decode(hello.role, 'Hello.role'),
      release: release(hello.release, 'Hello.release'),
      nodeId: hello.nodeId,
      ...(hello.application === '' ? {} : { application: hello.application }),
      ...(hello.followsLeader ? { followsLeader: true } : {}),
    };
  } catch (error) {
    throw wireError(error, 'handshake');
  }
}

export function encodeHelloReplyControl(reply: HelloReply): Uint8Array {
  return toBinary(pb.HelloReplySchema, {
    $typeName: 'svc.wire.v1.HelloReply',
    accepted: reply.accepted,
    status: STATUS.encode(reply.status),
    message: reply.message,
    release: reply.release,
    nodeId: reply.nodeId,
  });
}

export function decodeHelloReplyControl(bytes: Uint8Array): HelloReply {
  try {
    const reply = fromBinary(pb.HelloReplySchema, bytes, READ_OPTIONS);
    return {
      accepted: reply.accepted,
      status: STATUS.decode(reply.status, 'HelloReply.status'),
      message: reply.message,
      release: release(reply.release, 'HelloReply.release'),
      nodeId: reply.nodeId,
    };
  } catch (error) {
    throw wireError(error, 'handshake reply');
  }
}

/** The length of an AuthChallenge's nonce and of an AuthProof's HMAC-SHA256, in bytes. */
export const AUTH_NONCE_BYTES = 32;
export const AUTH_MAC_BYTES = 32;

export function encodeAuthChallengeControl(nonce: Uint8Array): Uint8Array {
  return toBinary(pb.AuthChallengeSchema, { $typeName: 'svc.wire.v1.AuthChallenge', nonce });
}

export function decodeAuthChallengeControl(bytes: Uint8Array): Uint8Array {
  let nonce: Uint8Array;
  try {
    nonce = fromBinary(pb.AuthChallengeSchema, bytes, READ_OPTIONS).nonce;
  } catch (error) {
    throw wireError(error, 'authentication challenge');
  }
  if (nonce.byteLength !== AUTH_NONCE_BYTES) {
    throw new WireError(
      'malformed',
      `an authentication challenge's nonce has ${nonce.byteLength} bytes, not ${AUTH_NONCE_BYTES}`,
    );
  }
  return nonce.slice();
}

export function encodeAuthProofControl(mac: Uint8Array): Uint8Array {
  return toBinary(pb.AuthProofSchema, { $typeName: 'svc.wire.v1.AuthProof', mac });
}

export function decodeAuthProofControl(bytes: Uint8Array): Uint8Array {
  let mac: Uint8Array;
  try {
    mac = fromBinary(pb.AuthProofSchema, bytes, READ_OPTIONS).mac;
  } catch (error) {
    throw wireError(error, 'authentication proof');
  }
  if (mac.byteLength !== AUTH_MAC_BYTES) {
    throw new WireError(
      'malformed',
      `an authentication proof has ${mac.byteLength} bytes, not the ${AUTH_MAC_BYTES} of an HMAC-SHA256`,
    );
  }
  return mac.slice();
}

// ------------------------------------------------------------------------------------------------ envelopes

/**
 * The envelope's control message, and its byte payloads in the order the control message lists their lengths
 * (given as they are, never copied).
 */
export function encodeEnvelopeControl(envelope: WireEnvelope): EncodedControl {
  const payloads: Uint8Array[] = [];
  const message = envelope.message;
  try {
    const value = (CODECS[message.type] as AnyCodec).encode(message, payloads);
    const control = toBinary(pb.EnvelopeSchema, {
      $typeName: 'svc.wire.v1.Envelope',
      from: envelope.from,
      to: envelope.to,
      requestId: envelope.requestId === undefined ? undefined : big(envelope.requestId),
      inReplyTo: envelope.inReplyTo === undefined ? undefined : big(envelope.inReplyTo),
      message: { case: CASE_OF[message.type], value } as PbOneof,
    });
    return { control, payloads };
  } catch (error) {
    // A value outside its field's range (a fraction in an integer, -1 in an unsigned field): the sender's bug.
    const cause = error instanceof Error ? error.message : String(error);
    throw new RangeError(`cannot encode a ${message.type} for ${envelope.to}: ${cause}`, { cause: error });
  }
}

/**
 * The bytes `toBinary` writes for a GetReducerFileGroupResponse alone: the value of its envelope's field (used by
 * ./shared-answer.ts, which writes the envelope around them). Throws as `toBinary` does on a value out of range.
 */
export function encodeFileGroupAnswer(message: MessageOf<'GetReducerFileGroupResponse'>): Uint8Array {
  return toBinary(
    pb.GetReducerFileGroupResponseSchema,
    CODECS.GetReducerFileGroupResponse.encode(message, []),
  );
}

/**
 * Decodes an envelope's control message; its payloads are views of `payloads` (the rest of the frame), which they
 * must fill exactly.
 */
export function decodeEnvelopeControl(control: Uint8Array, payloads: Uint8Array): WireEnvelope {
  try {
    return decodeEnvelope(control, payloads);
  } catch (error) {
    throw wireError(error, 'envelope');
  }
}

function decodeEnvelope(control: Uint8Array, payloads: Uint8Array): WireEnvelope {
  const envelope = fromBinary(pb.EnvelopeSchema, control, READ_OPTIONS);
  const oneof = envelope.message;
  if (oneof.case === undefined) {
    throw new WireError(
      'unknown',
      'an envelope without a message this build knows (a newer peer sent a message type added after it)',
    );
  }
  const region = new PayloadRegion(payloads);
  const message = (CODECS[TYPE_OF[oneof.case]] as AnyCodec).decode(oneof.value, region);
  region.finish();
  const from = envelope.from;
  const to = envelope.to;
  const requestId = envelope.requestId;
  const inReplyTo = envelope.inReplyTo;
  // Only the keys that were sent: a decoded envelope deep-equals the one encoded.
  if (requestId === undefined) {
    return inReplyTo === undefined
      ? { from, to, message }
      : { from, to, inReplyTo: Number(inReplyTo), message };
  }
  return inReplyTo === undefined
    ? { from, to, requestId: Number(requestId), message }
    : { from, to, requestId: Number(requestId), inReplyTo: Number(inReplyTo), message };
}

// ------------------------------------------------------------------------------------------------ machinery

/** Unknown fields (from a newer peer) are skipped, not kept: nothing here re-encodes a received message. */
const READ_OPTIONS = { readUnknownFields: false } as const;

/** Whatever a hostile or broken peer's bytes provoke while decoding `what`, as a WireError. */
function wireError(error: unknown, what: string): WireError {
  if (error instanceof WireError) return error;
  const cause = error instanceof Error ? error.message : String(error);
  return new WireError('malformed', `${what}: not a valid svc.wire.v1 message (${cause})`);
}

function malformed(message: string): WireError {
  return new WireError('malformed', message);
}

/** The raw bytes after an envelope's control part, handed out in order as views (no copy). */
export class PayloadRegion {
  private at = 0;

  constructor(private readonly bytes: Uint8Array) {}

  take(length: number, what: string): Uint8Array {
    const end = this.at + length;
    if (end > this.bytes.byteLength) {
      throw malformed(
        `${what} of ${length} bytes overruns its frame (${this.bytes.byteLength - this.at} payload bytes left)`,
      );
    }
    const view = this.bytes.subarray(this.at, end);
    this.at = end;
    return view;
  }

  finish(): void {
    if (this.at !== this.bytes.byteLength) {
      throw malformed(
        `${this.bytes.byteLength - this.at} bytes after the envelope's payloads (the control part lists ` +
          `${this.at} of ${this.bytes.byteLength})`,
      );
    }
  }
}

const RELEASE = /^\d{1,9}\.\d{1,9}\.\d{1,9}$/;

function release(text: string, field: string): Release {
  if (!RELEASE.test(text))
    throw malformed(`${field} '${text.slice(0, 40)}' is not a release (major.minor.patch)`);
  return text as Release;
}

function required<T>(value: T | undefined, field: string): T {
  if (value === undefined) throw malformed(`${field} is missing`);
  return value;
}

/**
 * A closed set of names as a protobuf enum: the numbers come from core's own tables (the reference's wire values),
 * and control-codec.property.test.ts checks that the schema's enum says the same. A number outside the set is
 * malformed: the machines switch exhaustively on these names.
 */
class EnumCodec<T extends string, E extends number> {
  private readonly toWire: Readonly<Record<T, E>>;
  private readonly fromWire: readonly (T | undefined)[];

  constructor(
    private readonly name: string,
    entries: readonly (readonly [T, number])[],
  ) {
    const toWire = {} as Record<T, E>;
    const fromWire: (T | undefined)[] = [];
    for (const [value, number] of entries) {
      toWire[value] = number as E;
      fromWire[number] = value;
    }
    this.toWire = toWire;
    this.fromWire = fromWire;
  }

  encode(value: T): E {
    return this.toWire[value];
  }

  decode(number: number, field: string): T {
    const value = this.fromWire[number];
    if (value === undefined) throw malformed(`${field}: ${number} is not a ${this.name} this build knows`);
    return value;
  }
}

function ordinals<T extends string>(names: readonly T[]): [T, number][] {
  return names.map((name, index) => [name, index]);
}

const STATUS = new EnumCodec<StatusCode, pb.StatusCode>(
  'StatusCode',
  Object.entries(STATUS_CODES) as [StatusCode, number][],
);
const PARTITION_MODE = new EnumCodec<PartitionMode, pb.PartitionMode>(
  'PartitionMode',
  Object.entries(PARTITION_MODE_CODE) as [PartitionMode, number][],
);
const STORAGE_TYPE = new EnumCodec<StorageType, pb.StorageType>(
  'StorageType',
  Object.entries(STORAGE_TYPE_CODE) as [StorageType, number][],
);
const DISK_STATUS = new EnumCodec<DiskStatus, pb.DiskStatus>('DiskStatus', ordinals(DISK_STATUSES));
const WORKER_STATE = new EnumCodec<WorkerState, pb.WorkerState>('WorkerState', ordinals(WORKER_STATES));
const WORKER_EVENT = new EnumCodec<WorkerEventType, pb.WorkerEventType>(
  'WorkerEventType',
  ordinals(WORKER_EVENT_TYPES),
);
const SPLIT_MODE = new EnumCodec<ReserveSlots['splitMode'], pb.SplitMode>('SplitMode', [
  ['SOFT', 0],
  ['HARD', 1],
]);
const PEER_ROLE = new EnumCodec<PeerRole, pb.PeerRole>('PeerRole', [
  ['master', 1],
  ['worker', 2],
  ['client', 3],
]);

// 64-bit fields are bigint in protobuf-es; the machines count in numbers (never above 2^53 - 1).
const big = BigInt;
const num = Number;

function bigList(values: readonly number[]): bigint[] {
  return values.map(big);
}

function numList(values: readonly bigint[]): number[] {
  return values.map(num);
}

/** A readonly list handed to the encoder as it is (it only reads it). */
function list<T>(values: readonly T[]): T[] {
  return values as T[];
}

// ------------------------------------------------------------------------------------------------ domain types

function workerToPb(worker: WorkerId): pb.WorkerId {
  return {
    $typeName: 'svc.wire.v1.WorkerId',
    host: worker.host,
    rpcPort: worker.rpcPort,
    pushPort: worker.pushPort,
    fetchPort: worker.fetchPort,
    replicatePort: worker.replicatePort,
  };
}

function workerFromPb(worker: pb.WorkerId | undefined, field: string): WorkerId {
  const w = required(worker, field);
  return {
    host: w.host,
    rpcPort: w.rpcPort,
    pushPort: w.pushPort,
    fetchPort: w.fetchPort,
    replicatePort: w.replicatePort,
  };
}

function workersToPb(workers: readonly WorkerId[]): pb.WorkerId[] {
  return workers.map(workerToPb);
}

function workersFromPb(workers: readonly pb.WorkerId[], field: string): WorkerId[] {
  return workers.map((worker) => workerFromPb(worker, field));
}

function diskToPb(disk: DiskInfo): pb.DiskInfo {
  return {
    $typeName: 'svc.wire.v1.DiskInfo',
    mountPoint: disk.mountPoint,
    type: STORAGE_TYPE.encode(disk.type),
    usableBytes: big(disk.usableBytes),
    totalBytes: big(disk.totalBytes),
    status: DISK_STATUS.encode(disk.status),
    avgFlushTimeNs: disk.avgFlushTimeNs,
    avgFetchTimeNs: disk.avgFetchTimeNs,
    activeSlots: disk.activeSlots,
    filesystem: disk.filesystem ?? '',
    ...(disk.filesystemUsableBytes === undefined
      ? {}
      : { filesystemUsableBytes: big(disk.filesystemUsableBytes) }),
  };
}

function diskFromPb(disk: pb.DiskInfo): DiskInfo {
  return {
    mountPoint: disk.mountPoint,
    type: STORAGE_TYPE.decode(disk.type, 'DiskInfo.type'),
    usableBytes: num(disk.usableBytes),
    totalBytes: num(disk.totalBytes),
    status: DISK_STATUS.decode(disk.status, 'DiskInfo.status'),
    avgFlushTimeNs: disk.avgFlushTimeNs,
    avgFetchTimeNs: disk.avgFetchTimeNs,
    activeSlots: disk.activeSlots,
    ...(disk.filesystem === '' ? {} : { filesystem: disk.filesystem }),
    ...(disk.filesystemUsableBytes === undefined
      ? {}
      : { filesystemUsableBytes: num(disk.filesystemUsableBytes) }),
  };
}

function storageToPb(storage: StorageInfo): pb.StorageInfo {
  return {
    $typeName: 'svc.wire.v1.StorageInfo',
    type: STORAGE_TYPE.encode(storage.type),
    mountPoint: storage.mountPoint,
    availableTypes: storage.availableTypes,
  };
}

function storageFromPb(storage: pb.StorageInfo | undefined, field: string): StorageInfo {
  const s = required(storage, field);
  return {
    type: STORAGE_TYPE.decode(s.type, 'StorageInfo.type'),
    mountPoint: s.mountPoint,
    availableTypes: s.availableTypes,
  };
}

/** A location, or a location's peer (which has no peer itself). */
function locationToPb(location: PartitionLocation): pb.PartitionLocation {
  const peer = location.peer;
  return {
    $typeName: 'svc.wire.v1.PartitionLocation',
    partitionId: location.partitionId,
    epoch: location.epoch,
    worker: workerToPb(location.worker),
    mode: PARTITION_MODE.encode(location.mode),
    storage: storageToPb(location.storage),
    peer: peer === undefined ? undefined : locationToPb(peer),
  };
}

function locationFromPb(location: pb.PartitionLocation): PartitionLocation {
  const partitionId = location.partitionId;
  const epoch = location.epoch;
  const worker = workerFromPb(location.worker, 'PartitionLocation.worker');
  const mode = PARTITION_MODE.decode(location.mode, 'PartitionLocation.mode');
  const storage = storageFromPb(location.storage, 'PartitionLocation.storage');
  const peer = location.peer;
  if (peer === undefined) return { partitionId, epoch, worker, mode, storage };
  if (peer.peer !== undefined) throw malformed('PartitionLocation.peer has a peer itself');
  return { partitionId, epoch, worker, mode, storage, peer: locationFromPb(peer) };
}

function locationsToPb(locations: readonly PartitionLocation[]): pb.PartitionLocation[] {
  return locations.map(locationToPb);
}

function locationsFromPb(locations: readonly pb.PartitionLocation[]): PartitionLocation[] {
  return locations.map(locationFromPb);
}

function committedToPb(file: CommittedFile): pb.CommittedFile {
  return {
    $typeName: 'svc.wire.v1.CommittedFile',
    uniqueId: file.uniqueId,
    mode: PARTITION_MODE.encode(file.mode),
    storage: storageToPb(file.storage),
    bytes: big(file.bytes),
    chunkOffsets: bigList(file.chunkOffsets),
  };
}

function committedFromPb(file: pb.CommittedFile): CommittedFile {
  return {
    uniqueId: file.uniqueId,
    mode: PARTITION_MODE.decode(file.mode, 'CommittedFile.mode'),
    storage: storageFromPb(file.storage, 'CommittedFile.storage'),
    bytes: num(file.bytes),
    chunkOffsets: numList(file.chunkOffsets),
  };
}

function statuses(values: readonly StatusCode[]): pb.StatusCode[] {
  return values.map((status) => STATUS.encode(status));
}

// ------------------------------------------------------------------------------------------------ messages

type PbOneof = pb.Envelope['message'];
type Case = NonNullable<PbOneof['case']>;
/** The generated message of a oneof case (never when the schema has no such case: the codec below fails to compile). */
type PbOf<C> = Extract<PbOneof, { case: C }>['value'];

interface Codec<T extends MessageType> {
  /** The message's protobuf form; its payloads are appended to `payloads` in the order the form lists them. */
  encode(message: MessageOf<T>, payloads: Uint8Array[]): PbOf<Uncapitalize<T>>;
  decode(value: PbOf<Uncapitalize<T>>, payloads: PayloadRegion): MessageOf<T>;
}

interface AnyCodec {
  encode(message: Message, payloads: Uint8Array[]): PbOf<Case>;
  decode(value: PbOf<Case>, payloads: PayloadRegion): Message;
}

// Every oneof case of the schema is a message type of core (the converse is the CODECS table's type).
const _everyCaseIsAType: [Exclude<Case, Uncapitalize<MessageType>>] extends [never] ? true : false = true;

const CODECS: { readonly [T in MessageType]: Codec<T> } = {
  // ---------------------------------------------------------------- worker ⇄ master
  RegisterWorker: {
    encode: (m) => ({
      $typeName: 'svc.wire.v1.RegisterWorker',
      worker: workerToPb(m.worker),
      disks: m.disks.map(diskToPb),
      networkLocation: m.networkLocation,
    }),
    decode: (p) => ({
      type: 'RegisterWorker',
      worker: workerFromPb(p.worker, 'RegisterWorker.worker'),
      disks: p.disks.map(diskFromPb),
      networkLocation: p.networkLocation,
    }),
  },
  RegisterWorkerResponse: {
    encode: (m) => ({
      $typeName: 'svc.wire.v1.RegisterWorkerResponse',
      success: m.success,
      message: m.message,
    }),
    decode: (p) => ({ type: 'RegisterWorkerResponse', success: p.success, message: p.message }),
  },
  WorkerHeartbeat: {
    encode: (m) => ({
      $typeName: 'svc.wire.v1.WorkerHeartbeat',
      worker: workerToPb(m.worker),
      disks: m.disks.map(diskToPb),
      activeShuffleKeys: list(m.activeShuffleKeys),
      highWorkload: m.highWorkload,
      state: WORKER_STATE.encode(m.state),
      resourceConsumption: (m.resourceConsumption ?? []).map((c) => ({
        $typeName: 'svc.wire.v1.AppResourceConsumption',
        appId: c.appId,
        diskBytesWritten: big(c.diskBytesWritten),
        diskFileCount: big(c.diskFileCount),
        hdfsBytesWritten: big(c.hdfsBytesWritten),
        hdfsFileCount: big(c.hdfsFileCount),
      })),
    }),
    decode: (p) => ({
      type: 'WorkerHeartbeat',
      worker: workerFromPb(p.worker, 'WorkerHeartbeat.worker'),
      disks: p.disks.map(diskFromPb),
      activeShuffleKeys: p.activeShuffleKeys,
      highWorkload: p.highWorkload,
      state: WORKER_STATE.decode(p.state, 'WorkerHeartbeat.state'),
      ...(p.resourceConsumption.length === 0
        ? {}
        : {
            resourceConsumption: p.resourceConsumption.map((c) => ({
              appId: c.appId,
              diskBytesWritten: num(c.diskBytesWritten),
              diskFileCount: num(c.diskFileCount),
              hdfsBytesWritten: num(c.hdfsBytesWritten),
              hdfsFileCount: num(c.hdfsFileCount),
            })),
          }),
    }),
  },
  WorkerHeartbeatResponse: {
    encode: (m) => ({
      $typeName: 'svc.wire.v1.WorkerHeartbeatResponse',
      registered: m.registered,
      expiredShuffleKeys: list(m.expiredShuffleKeys),
      workerEvent: WORKER_EVENT.encode(m.workerEvent),
    }),
    decode: (p) => ({
      type: 'WorkerHeartbeatResponse',
      registered: p.registered,
      expiredShuffleKeys: p.expiredShuffleKeys,
      workerEvent: WORKER_EVENT.decode(p.workerEvent, 'WorkerHeartbeatResponse.workerEvent'),
    }),
  },
  ReportWorkerUnavailable: {
    encode: (m) => ({ $typeName: 'svc.wire.v1.ReportWorkerUnavailable', worker: workerToPb(m.worker) }),
    decode: (p) => ({
      type: 'ReportWorkerUnavailable',
      worker: workerFromPb(p.worker, 'ReportWorkerUnavailable.worker'),
    }),
  },
  ReportWorkerDecommission: {
    encode: (m) => ({ $typeName: 'svc.wire.v1.ReportWorkerDecommission', worker: workerToPb(m.worker) }),
    decode: (p) => ({
      type: 'ReportWorkerDecommission',
      worker: workerFromPb(p.worker, 'ReportWorkerDecommission.worker'),
    }),
  },
  ReportWorkerLost: {
    encode: (m) => ({ $typeName: 'svc.wire.v1.ReportWorkerLost', worker: workerToPb(m.worker) }),
    decode: (p) => ({ type: 'ReportWorkerLost', worker: workerFromPb(p.worker, 'ReportWorkerLost.worker') }),
  },

  // ---------------------------------------------------------------- lifecycle manager ⇄ master
  RegisterApplication: {
    encode: (m) => ({
      $typeName: 'svc.wire.v1.RegisterApplication',
      appId: m.appId,
      user: m.user,
      secret: m.secret ?? '',
      hostname: m.hostname ?? '',
      tenant: m.tenant ?? '',
    }),
    decode: (p) => ({
      type: 'RegisterApplication',
      appId: p.appId,
      user: p.user,
      ...(p.secret === '' ? {} : { secret: p.secret }),
      ...(p.hostname === '' ? {} : { hostname: p.hostname }),
      ...(p.tenant === '' ? {} : { tenant: p.tenant }),
    }),
  },
  NotLeader: {
    encode: (m) => ({ $typeName: 'svc.wire.v1.NotLeader', leader: m.leader, message: m.message }),
    decode: (p) => ({ type: 'NotLeader', leader: p.leader, message: p.message }),
  },
  StatusResponse: {
    encode: (m) => ({
      $typeName: 'svc.wire.v1.StatusResponse',
      status: STATUS.encode(m.status),
      message: m.message,
    }),
    decode: (p) => ({
      type: 'StatusResponse',
      status: STATUS.decode(p.status, 'StatusResponse.status'),
      message: p.message,
    }),
  },
  ApplicationHeartbeat: {
    encode: (m) => ({
      $typeName: 'svc.wire.v1.ApplicationHeartbeat',
      appId: m.appId,
      bytesWritten: big(m.bytesWritten),
      fileCount: big(m.fileCount),
      shuffleIds: [...(m.shuffleIds ?? [])],
    }),
    decode: (p) => ({
      type: 'ApplicationHeartbeat',
      appId: p.appId,
      bytesWritten: num(p.bytesWritten),
      fileCount: num(p.fileCount),
      ...(p.shuffleIds.length === 0 ? {} : { shuffleIds: p.shuffleIds }),
    }),
  },
  ApplicationHeartbeatResponse: {
    encode: (m) => ({
      $typeName: 'svc.wire.v1.ApplicationHeartbeatResponse',
      excludedWorkers: workersToPb(m.excludedWorkers),
      unknownWorkers: workersToPb(m.unknownWorkers),
      shuttingWorkers: workersToPb(m.shuttingWorkers),
      availableWorkers: (m.availableWorkers ?? []).map((available) => ({
        $typeName: 'svc.wire.v1.WorkerResource',
        worker: workerToPb(available.worker),
        networkLocation: available.networkLocation,
        primaries: [],
        replicas: [],
      })),
      quotaExceeded: m.quotaExceeded ?? '',
    }),
    decode: (p) => ({
      type: 'ApplicationHeartbeatResponse',
      excludedWorkers: workersFromPb(p.excludedWorkers, 'ApplicationHeartbeatResponse.excludedWorkers'),
      unknownWorkers: workersFromPb(p.unknownWorkers, 'ApplicationHeartbeatResponse.unknownWorkers'),
      shuttingWorkers: workersFromPb(p.shuttingWorkers, 'ApplicationHeartbeatResponse.shuttingWorkers'),
      availableWorkers: p.availableWorkers.map((available) => ({
        worker: workerFromPb(available.worker, 'ApplicationHeartbeatResponse.availableWorkers'),
        networkLocation: available.networkLocation,
      })),
      ...(p.quotaExceeded === '' ? {} : { quotaExceeded: p.quotaExceeded }),
    }),
  },
  RequestSlots: {
    encode: (m) => ({
      $typeName: 'svc.wire.v1.RequestSlots',
      appId: m.appId,
      shuffleId: m.shuffleId,
      partitionIds: list(m.partitionIds),
      replicate: m.replicate,
      rackAware: m.rackAware,
      availableTypes: m.availableTypes,
      excludedWorkers: list(m.excludedWorkers),
      maxWorkers: m.maxWorkers,
    }),
    decode: (p) => ({
      type: 'RequestSlots',
      appId: p.appId,
      shuffleId: p.shuffleId,
      partitionIds: p.partitionIds,
      replicate: p.replicate,
      rackAware: p.rackAware,
      availableTypes: p.availableTypes,
      excludedWorkers: p.excludedWorkers,
      maxWorkers: p.maxWorkers,
    }),
  },
  RequestSlotsResponse: {
    encode: (m) => ({
      $typeName: 'svc.wire.v1.RequestSlotsResponse',
      status: STATUS.encode(m.status),
      workerResource: m.workerResource.map((resource) => ({
        $typeName: 'svc.wire.v1.WorkerResource',
        worker: workerToPb(resource.worker),
        networkLocation: resource.networkLocation,
        primaries: locationsToPb(resource.primaries),
        replicas: locationsToPb(resource.replicas),
      })),
      unplaced: m.unplaced.map((entry) => ({
        $typeName: 'svc.wire.v1.UnplacedPartition',
        partitionId: entry.partitionId,
        reason: entry.reason,
      })),
      message: m.message,
    }),
    decode: (p) => ({
      type: 'RequestSlotsResponse',
      status: STATUS.decode(p.status, 'RequestSlotsResponse.status'),
      workerResource: p.workerResource.map((resource) => ({
        worker: workerFromPb(resource.worker, 'WorkerResource.worker'),
        networkLocation: resource.networkLocation,
        primaries: locationsFromPb(resource.primaries),
        replicas: locationsFromPb(resource.replicas),
      })),
      unplaced: p.unplaced.map((entry) => ({ partitionId: entry.partitionId, reason: entry.reason })),
      message: p.message,
    }),
  },
  UnregisterShuffle: {
    encode: (m) => ({ $typeName: 'svc.wire.v1.UnregisterShuffle', appId: m.appId, shuffleId: m.shuffleId }),
    decode: (p) => ({ type: 'UnregisterShuffle', appId: p.appId, shuffleId: p.shuffleId }),
  },
  UnregisterApplication: {
    encode: (m) => ({ $typeName: 'svc.wire.v1.UnregisterApplication', appId: m.appId }),
    decode: (p) => ({ type: 'UnregisterApplication', appId: p.appId }),
  },
  GetApplicationSecret: {
    encode: (m) => ({ $typeName: 'svc.wire.v1.GetApplicationSecret', appId: m.appId }),
    decode: (p) => ({ type: 'GetApplicationSecret', appId: p.appId }),
  },
  ApplicationSecretResponse: {
    encode: (m) => ({
      $typeName: 'svc.wire.v1.ApplicationSecretResponse',
      appId: m.appId,
      found: m.found,
      secret: m.secret,
    }),
    decode: (p) => ({ type: 'ApplicationSecretResponse', appId: p.appId, found: p.found, secret: p.secret }),
  },

  // ---------------------------------------------------------------- lifecycle manager ⇄ worker
  ReserveSlots: {
    encode: (m) => ({
      $typeName: 'svc.wire.v1.ReserveSlots',
      appId: m.appId,
      shuffleId: m.shuffleId,
      primaries: locationsToPb(m.primaries),
      replicas: locationsToPb(m.replicas),
      splitThreshold: big(m.splitThreshold),
      splitMode: SPLIT_MODE.encode(m.splitMode),
      memoryEnabled: m.memoryEnabled,
      user: m.user ?? '',
      tenant: m.tenant ?? '',
    }),
    decode: (p) => ({
      type: 'ReserveSlots',
      appId: p.appId,
      shuffleId: p.shuffleId,
      primaries: locationsFromPb(p.primaries),
      replicas: locationsFromPb(p.replicas),
      splitThreshold: num(p.splitThreshold),
      splitMode: SPLIT_MODE.decode(p.splitMode, 'ReserveSlots.splitMode'),
      memoryEnabled: p.memoryEnabled,
      ...(p.user === '' ? {} : { user: p.user }),
      ...(p.tenant === '' ? {} : { tenant: p.tenant }),
    }),
  },
  CommitFiles: {
    encode: (m) => ({
      $typeName: 'svc.wire.v1.CommitFiles',
      appId: m.appId,
      shuffleId: m.shuffleId,
      primaryIds: list(m.primaryIds),
      replicaIds: list(m.replicaIds),
      mapAttempts: list(m.mapAttempts),
    }),
    decode: (p) => ({
      type: 'CommitFiles',
      appId: p.appId,
      shuffleId: p.shuffleId,
      primaryIds: p.primaryIds,
      replicaIds: p.replicaIds,
      mapAttempts: p.mapAttempts,
    }),
  },
  CommitFilesResponse: {
    encode: (m) => ({
      $typeName: 'svc.wire.v1.CommitFilesResponse',
      status: STATUS.encode(m.status),
      committedPrimaries: m.committedPrimaries.map(committedToPb),
      committedReplicas: m.committedReplicas.map(committedToPb),
      failedPrimaryIds: list(m.failedPrimaryIds),
      failedReplicaIds: list(m.failedReplicaIds),
      message: m.message,
    }),
    decode: (p) => ({
      type: 'CommitFilesResponse',
      status: STATUS.decode(p.status, 'CommitFilesResponse.status'),
      committedPrimaries: p.committedPrimaries.map(committedFromPb),
      committedReplicas: p.committedReplicas.map(committedFromPb),
      failedPrimaryIds: p.failedPrimaryIds,
      failedReplicaIds: p.failedReplicaIds,
      message: p.message,
    }),
  },
  DestroySlots: {
    encode: (m) => ({
      $typeName: 'svc.wire.v1.DestroySlots',
      appId: m.appId,
      shuffleId: m.shuffleId,
      primaryIds: list(m.primaryIds),
      replicaIds: list(m.replicaIds),
    }),
    decode: (p) => ({
      type: 'DestroySlots',
      appId: p.appId,
      shuffleId: p.shuffleId,
      primaryIds: p.primaryIds,
      replicaIds: p.replicaIds,
    }),
  },

  // ---------------------------------------------------------------- tasks ⇄ lifecycle manager
  RegisterShuffle: {
    encode: (m) => ({
      $typeName: 'svc.wire.v1.RegisterShuffle',
      appId: m.appId,
      shuffleId: m.shuffleId,
      numMappers: m.numMappers,
      numPartitions: m.numPartitions,
    }),
    decode: (p) => ({
      type: 'RegisterShuffle',
      appId: p.appId,
      shuffleId: p.shuffleId,
      numMappers: p.numMappers,
      numPartitions: p.numPartitions,
    }),
  },
  RegisterShuffleResponse: {
    encode: (m) => ({
      $typeName: 'svc.wire.v1.RegisterShuffleResponse',
      status: STATUS.encode(m.status),
      locations: locationsToPb(m.locations),
      message: m.message,
    }),
    decode: (p) => ({
      type: 'RegisterShuffleResponse',
      status: STATUS.decode(p.status, 'RegisterShuffleResponse.status'),
      locations: locationsFromPb(p.locations),
      message: p.message,
    }),
  },
  Revive: {
    encode: (m) => ({
      $typeName: 'svc.wire.v1.Revive',
      appId: m.appId,
      shuffleId: m.shuffleId,
      mapId: m.mapId,
      attemptId: m.attemptId,
      requests: m.requests.map((request) => ({
        $typeName: 'svc.wire.v1.ReviveRequest',
        partitionId: request.partitionId,
        epoch: request.epoch,
        oldLocation: request.oldLocation === undefined ? undefined : locationToPb(request.oldLocation),
        cause: STATUS.encode(request.cause),
      })),
    }),
    decode: (p) => ({
      type: 'Revive',
      appId: p.appId,
      shuffleId: p.shuffleId,
      mapId: p.mapId,
      attemptId: p.attemptId,
      requests: p.requests.map((request): ReviveRequest => {
        const partitionId = request.partitionId;
        const epoch = request.epoch;
        const cause = STATUS.decode(request.cause, 'ReviveRequest.cause');
        return request.oldLocation === undefined
          ? { partitionId, epoch, cause }
          : { partitionId, epoch, oldLocation: locationFromPb(request.oldLocation), cause };
      }),
    }),
  },
  ReviveResponse: {
    encode: (m) => ({
      $typeName: 'svc.wire.v1.ReviveResponse',
      results: m.results.map((result) => ({
        $typeName: 'svc.wire.v1.ReviveResult',
        partitionId: result.partitionId,
        status: STATUS.encode(result.status),
        newLocation: result.newLocation === undefined ? undefined : locationToPb(result.newLocation),
        oldAvailable: result.oldAvailable,
      })),
      endedMapIds: list(m.endedMapIds),
    }),
    decode: (p) => ({
      type: 'ReviveResponse',
      results: p.results.map((result): ReviveResult => {
        const partitionId = result.partitionId;
        const status = STATUS.decode(result.status, 'ReviveResult.status');
        const oldAvailable = result.oldAvailable;
        return result.newLocation === undefined
          ? { partitionId, status, oldAvailable }
          : { partitionId, status, newLocation: locationFromPb(result.newLocation), oldAvailable };
      }),
      endedMapIds: p.endedMapIds,
    }),
  },
  MapperEnd: {
    encode: (m) => ({
      $typeName: 'svc.wire.v1.MapperEnd',
      appId: m.appId,
      shuffleId: m.shuffleId,
      mapId: m.mapId,
      attemptId: m.attemptId,
      numMappers: m.numMappers,
      written: m.written.map((w) => ({
        $typeName: 'svc.wire.v1.PartitionWritten',
        partitionId: w.partitionId,
        batches: w.batches,
        bytes: big(w.bytes),
      })),
    }),
    decode: (p) => ({
      type: 'MapperEnd',
      appId: p.appId,
      shuffleId: p.shuffleId,
      mapId: p.mapId,
      attemptId: p.attemptId,
      numMappers: p.numMappers,
      written: p.written.map((w) => ({
        partitionId: w.partitionId,
        batches: w.batches,
        bytes: num(w.bytes),
      })),
    }),
  },
  GetReducerFileGroup: {
    encode: (m) => ({ $typeName: 'svc.wire.v1.GetReducerFileGroup', appId: m.appId, shuffleId: m.shuffleId }),
    decode: (p) => ({ type: 'GetReducerFileGroup', appId: p.appId, shuffleId: p.shuffleId }),
  },
  GetReducerFileGroupResponse: {
    encode: (m) => ({
      $typeName: 'svc.wire.v1.GetReducerFileGroupResponse',
      status: STATUS.encode(m.status),
      fileGroups: m.fileGroups.map((group) => ({
        $typeName: 'svc.wire.v1.ReducerFileGroup',
        partitionId: group.partitionId,
        locations: locationsToPb(group.locations),
        files: group.files.map(committedToPb),
        expected: group.expected.map((e) => ({
          $typeName: 'svc.wire.v1.MapPartitionWritten',
          mapId: e.mapId,
          partitionId: e.partitionId,
          batches: e.batches,
          bytes: big(e.bytes),
        })),
      })),
      mapAttempts: list(m.mapAttempts),
      message: m.message,
    }),
    decode: (p) => ({
      type: 'GetReducerFileGroupResponse',
      status: STATUS.decode(p.status, 'GetReducerFileGroupResponse.status'),
      fileGroups: p.fileGroups.map((group): ReducerFileGroup => ({
        partitionId: group.partitionId,
        locations: locationsFromPb(group.locations),
        files: group.files.map(committedFromPb),
        expected: group.expected.map((e) => ({
          mapId: e.mapId,
          partitionId: e.partitionId,
          batches: e.batches,
          bytes: num(e.bytes),
        })),
      })),
      mapAttempts: p.mapAttempts,
      message: p.message,
    }),
  },

  // ---------------------------------------------------------------- tasks ⇄ worker (data plane)
  PushData: {
    encode: (m, payloads) => {
      payloads.push(m.payload);
      return {
        $typeName: 'svc.wire.v1.PushData',
        shuffleKey: m.shuffleKey,
        mode: PARTITION_MODE.encode(m.mode),
        partitionId: m.partitionId,
        epoch: m.epoch,
        mapId: m.mapId,
        attemptId: m.attemptId,
        batchId: m.batchId,
        payloadLength: m.payload.byteLength,
      };
    },
    decode: (p, payloads) => ({
      type: 'PushData',
      shuffleKey: p.shuffleKey,
      mode: PARTITION_MODE.decode(p.mode, 'PushData.mode'),
      partitionId: p.partitionId,
      epoch: p.epoch,
      mapId: p.mapId,
      attemptId: p.attemptId,
      batchId: p.batchId,
      payload: payloads.take(p.payloadLength, 'PushData.payload'),
    }),
  },
  PushDataResponse: {
    encode: (m) => ({
      $typeName: 'svc.wire.v1.PushDataResponse',
      status: STATUS.encode(m.status),
      message: m.message,
    }),
    decode: (p) => ({
      type: 'PushDataResponse',
      status: STATUS.decode(p.status, 'PushDataResponse.status'),
      message: p.message,
    }),
  },
  PushMergedData: {
    encode: (m, payloads) => {
      const batches = new Array<pb.MergedBatch>(m.batches.length);
      for (let i = 0; i < batches.length; i += 1) {
        const batch = m.batches[i]!;
        payloads.push(batch.payload);
        batches[i] = {
          $typeName: 'svc.wire.v1.MergedBatch',
          partitionId: batch.partitionId,
          epoch: batch.epoch,
          batchId: batch.batchId,
          payloadLength: batch.payload.byteLength,
        };
      }
      return {
        $typeName: 'svc.wire.v1.PushMergedData',
        shuffleKey: m.shuffleKey,
        mode: PARTITION_MODE.encode(m.mode),
        mapId: m.mapId,
        attemptId: m.attemptId,
        batches,
      };
    },
    decode: (p, payloads) => ({
      type: 'PushMergedData',
      shuffleKey: p.shuffleKey,
      mode: PARTITION_MODE.decode(p.mode, 'PushMergedData.mode'),
      mapId: p.mapId,
      attemptId: p.attemptId,
      batches: p.batches.map((batch) => ({
        partitionId: batch.partitionId,
        epoch: batch.epoch,
        batchId: batch.batchId,
        payload: payloads.take(batch.payloadLength, 'MergedBatch.payload'),
      })),
    }),
  },
  PushMergedDataResponse: {
    encode: (m) => ({
      $typeName: 'svc.wire.v1.PushMergedDataResponse',
      statuses: statuses(m.statuses),
      message: m.message,
    }),
    decode: (p) => ({
      type: 'PushMergedDataResponse',
      statuses: p.statuses.map((status) => STATUS.decode(status, 'PushMergedDataResponse.statuses')),
      message: p.message,
    }),
  },
  OpenStream: {
    encode: (m) => ({
      $typeName: 'svc.wire.v1.OpenStream',
      shuffleKey: m.shuffleKey,
      uniqueId: m.uniqueId,
      mode: PARTITION_MODE.encode(m.mode),
      readFirstChunk: m.readFirstChunk,
    }),
    decode: (p) => {
      const shuffleKey = p.shuffleKey;
      const uniqueId = p.uniqueId;
      const mode = PARTITION_MODE.decode(p.mode, 'OpenStream.mode');
      return p.readFirstChunk === undefined
        ? { type: 'OpenStream', shuffleKey, uniqueId, mode }
        : { type: 'OpenStream', shuffleKey, uniqueId, mode, readFirstChunk: p.readFirstChunk };
    },
  },
  OpenStreamResponse: {
    encode: (m, payloads) => {
      if (m.firstChunk !== undefined) payloads.push(m.firstChunk);
      return {
        $typeName: 'svc.wire.v1.OpenStreamResponse',
        status: STATUS.encode(m.status),
        streamId: big(m.streamId),
        chunkOffsets: bigList(m.chunkOffsets),
        message: m.message,
        firstChunkLength: m.firstChunk?.byteLength,
      };
    },
    decode: (p, payloads) => {
      const status = STATUS.decode(p.status, 'OpenStreamResponse.status');
      const streamId = num(p.streamId);
      const chunkOffsets = numList(p.chunkOffsets);
      const message = p.message;
      return p.firstChunkLength === undefined
        ? { type: 'OpenStreamResponse', status, streamId, chunkOffsets, message }
        : {
            type: 'OpenStreamResponse',
            status,
            streamId,
            chunkOffsets,
            message,
            firstChunk: payloads.take(p.firstChunkLength, 'OpenStreamResponse.firstChunk'),
          };
    },
  },
  FetchChunk: {
    encode: (m) => ({
      $typeName: 'svc.wire.v1.FetchChunk',
      streamId: big(m.streamId),
      chunkIndex: m.chunkIndex,
    }),
    decode: (p) => ({ type: 'FetchChunk', streamId: num(p.streamId), chunkIndex: p.chunkIndex }),
  },
  ChunkData: {
    encode: (m, payloads) => {
      payloads.push(m.bytes);
      return {
        $typeName: 'svc.wire.v1.ChunkData',
        status: STATUS.encode(m.status),
        streamId: big(m.streamId),
        chunkIndex: m.chunkIndex,
        bytesLength: m.bytes.byteLength,
        message: m.message,
      };
    },
    decode: (p, payloads) => ({
      type: 'ChunkData',
      status: STATUS.decode(p.status, 'ChunkData.status'),
      streamId: num(p.streamId),
      chunkIndex: p.chunkIndex,
      bytes: payloads.take(p.bytesLength, 'ChunkData.bytes'),
      message: p.message,
    }),
  },
  CloseStream: {
    encode: (m) => ({ $typeName: 'svc.wire.v1.CloseStream', streamId: big(m.streamId) }),
    decode: (p) => ({ type: 'CloseStream', streamId: num(p.streamId) }),
  },
};

/** A message type's oneof case (`PushData` → `pushData`), and back; computed once. */
const CASE_OF = {} as Record<MessageType, Case>;
const TYPE_OF = {} as Record<Case, MessageType>;
for (const type of Object.keys(CODECS) as MessageType[]) {
  const oneofCase = (type.charAt(0).toLowerCase() + type.slice(1)) as Case;
  CASE_OF[type] = oneofCase;
  TYPE_OF[oneofCase] = type;
}
