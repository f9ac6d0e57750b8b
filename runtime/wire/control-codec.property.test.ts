import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { create, fromBinary, toBinary, type DescEnum } from '@bufbuild/protobuf';
import fc from 'fast-check';
import type { PartitionLocation, PartitionMode } from '../../core/domain/partition.ts';
import { PARTITION_MODE_CODE } from '../../core/domain/partition.ts';
import { STATUS_CODES, type StatusCode } from '../../core/domain/status.ts';
import type { DiskInfo, WorkerId } from '../../core/domain/worker.ts';
import { WORKER_EVENT_TYPES, WORKER_STATES } from '../../core/domain/worker.ts';
import {
  DISK_STATUSES,
  STORAGE_TYPE_CODE,
  type StorageInfo,
  type StorageType,
} from '../../core/domain/storage.ts';
import type { CommittedFile, Message, MessageOf, MessageType } from '../../core/protocol/messages.ts';
import type { Release } from '../../core/release/version.ts';
import {
  decodeEnvelopeControl,
  decodeHelloControl,
  decodeHelloReplyControl,
  encodeEnvelopeControl,
  encodeHelloControl,
  encodeHelloReplyControl,
  AUTH_MAC_BYTES,
  AUTH_NONCE_BYTES,
} from './control-codec.ts';
import { WireError, type WireErrorReason } from './errors.ts';
import { FrameReader, LENGTH_PREFIX_BYTES } from './frame-reader.ts';
import {
  decodeFrame,
  encodeAuthChallenge,
  encodeAuthProof,
  encodeEnvelope,
  encodeHello,
  encodeHelloReply,
} from './frames.ts';
import * as pb from './proto/gen/svc/wire/v1/wire_pb.ts';
import type { Hello, HelloReply, PeerRole, WireEnvelope } from './types.ts';
import { concatBytes } from './testing.ts';

// ------------------------------------------------------------------------------------------------ arbitraries
//
// Numbers are drawn from the ranges of their protobuf types (int32, uint32, 64-bit as safe integers, double): that
// range is the wire's contract, and every value in it must come back unchanged.

type Model<T> = { [K in keyof T]-?: fc.Arbitrary<Exclude<T[K], undefined>> };

/** A plain object (never a null-prototype one) with every key of `model`, those in `optional` sometimes absent. */
function rec<T extends object>(model: Model<T>, optional: readonly (keyof T)[] = []): fc.Arbitrary<T> {
  const untyped = model as Record<string, fc.Arbitrary<unknown>>;
  const requiredKeys = Object.keys(untyped).filter((key) => !optional.includes(key as keyof T));
  return fc.record(untyped, { requiredKeys, noNullPrototype: true }) as unknown as fc.Arbitrary<T>;
}

function msg<T extends MessageType>(
  type: T,
  model: Model<Omit<MessageOf<T>, 'type'>>,
  optional: readonly (keyof MessageOf<T>)[] = [],
): fc.Arbitrary<MessageOf<T>> {
  return rec<MessageOf<T>>({ type: fc.constant(type), ...model } as unknown as Model<MessageOf<T>>, optional);
}

const int32 = fc.integer();
const uint32 = fc.integer({ min: 0, max: 0xffff_ffff });
const int64 = fc.maxSafeInteger();
const uint64 = fc.maxSafeNat();
// proto3 does not send a zero scalar, so -0 arrives as 0: no machine computes a negative zero duration.
const double = fc.double().map((value) => (value === 0 ? 0 : value));
const text = fc.string({ unit: 'binary', maxLength: 12 });
// An optional string field travels as '' when absent, so a present one is never empty.
const nonEmptyText = fc.string({ unit: 'binary', minLength: 1, maxLength: 12 });
const bytes = fc.uint8Array({ maxLength: 48 });
const small = <T>(arb: fc.Arbitrary<T>) => fc.array(arb, { maxLength: 4 });

const status = fc.constantFrom(...(Object.keys(STATUS_CODES) as StatusCode[]));
const partitionMode = fc.constantFrom<PartitionMode>('PRIMARY', 'REPLICA');
const storageType = fc.constantFrom(...(Object.keys(STORAGE_TYPE_CODE) as StorageType[]));

const workerId = rec<WorkerId>({
  host: text,
  rpcPort: uint32,
  pushPort: uint32,
  fetchPort: uint32,
  replicatePort: uint32,
});
const disk = rec<DiskInfo>(
  {
    mountPoint: text,
    type: storageType,
    usableBytes: int64,
    totalBytes: int64,
    status: fc.constantFrom(...DISK_STATUSES),
    avgFlushTimeNs: double,
    avgFetchTimeNs: double,
    activeSlots: int32,
    filesystem: nonEmptyText,
    filesystemUsableBytes: int64,
  },
  ['filesystem', 'filesystemUsableBytes'],
);
const storage = rec<StorageInfo>({ type: storageType, mountPoint: text, availableTypes: uint32 });
const peerLocation = rec<Omit<PartitionLocation, 'peer'>>({
  partitionId: int32,
  epoch: int32,
  worker: workerId,
  mode: partitionMode,
  storage,
});
const location = rec<PartitionLocation>(
  { partitionId: int32, epoch: int32, worker: workerId, mode: partitionMode, storage, peer: peerLocation },
  ['peer'],
);
const committedFile = rec<CommittedFile>({
  uniqueId: text,
  mode: partitionMode,
  storage,
  bytes: int64,
  chunkOffsets: small(int64),
});

/** One arbitrary per message type: a message type added to core fails to compile here until it has one. */
const MESSAGES: { readonly [T in MessageType]: fc.Arbitrary<MessageOf<T>> } = {
  RegisterWorker: msg('RegisterWorker', { worker: workerId, disks: small(disk), networkLocation: text }),
  RegisterWorkerResponse: msg('RegisterWorkerResponse', { success: fc.boolean(), message: text }),
  WorkerHeartbeat: msg(
    'WorkerHeartbeat',
    {
      worker: workerId,
      disks: small(disk),
      activeShuffleKeys: small(text),
      highWorkload: fc.boolean(),
      state: fc.constantFrom(...WORKER_STATES),
      resourceConsumption: fc.array(
        rec({
          appId: text,
          diskBytesWritten: int64,
          diskFileCount: int64,
          hdfsBytesWritten: int64,
          hdfsFileCount: int64,
        }),
        { minLength: 1, maxLength: 3 },
      ),
    },
    ['resourceConsumption'],
  ),
  WorkerHeartbeatResponse: msg('WorkerHeartbeatResponse', {
    registered: fc.boolean(),
    expiredShuffleKeys: small(text),
    workerEvent: fc.constantFrom(...WORKER_EVENT_TYPES),
  }),
  ReportWorkerUnavailable: msg('ReportWorkerUnavailable', { worker: workerId }),
  ReportWorkerDecommission: msg('ReportWorkerDecommission', { worker: workerId }),
  ReportWorkerLost: msg('ReportWorkerLost', { worker: workerId }),
  RegisterApplication: msg(
    'RegisterApplication',
    { appId: text, user: text, secret: nonEmptyText, hostname: nonEmptyText, tenant: nonEmptyText },
    ['secret', 'hostname', 'tenant'],
  ),
  StatusResponse: msg('StatusResponse', { status, message: text }),
  NotLeader: msg('NotLeader', { leader: text, message: text }),
  ApplicationHeartbeat: msg(
    'ApplicationHeartbeat',
    // An empty list travels as absent: a present one is never empty.
    {
      appId: text,
      bytesWritten: int64,
      fileCount: int64,
      shuffleIds: fc.array(int32, { minLength: 1, maxLength: 3 }),
    },
    ['shuffleIds'],
  ),
  ApplicationHeartbeatResponse: msg(
    'ApplicationHeartbeatResponse',
    {
      excludedWorkers: small(workerId),
      unknownWorkers: small(workerId),
      shuttingWorkers: small(workerId),
      availableWorkers: small(rec({ worker: workerId, networkLocation: text })),
      quotaExceeded: nonEmptyText,
    },
    ['quotaExceeded'],
  ),
  RequestSlots: msg('RequestSlots', {
    appId: text,
    shuffleId: int32,
    partitionIds: small(int32),
    replicate: fc.boolean(),
    rackAware: fc.boolean(),
    availableTypes: uint32,
    excludedWorkers: small(text),
    maxWorkers: int32,
  }),
  RequestSlotsResponse: msg('RequestSlotsResponse', {
    status,
    workerResource: small(
      rec({ worker: workerId, networkLocation: text, primaries: small(location), replicas: small(location) }),
    ),
    unplaced: small(rec({ partitionId: int32, reason: text })),
    message: text,
  }),
  UnregisterShuffle: msg('UnregisterShuffle', { appId: text, shuffleId: int32 }),
  UnregisterApplication: msg('UnregisterApplication', { appId: text }),
  GetApplicationSecret: msg('GetApplicationSecret', { appId: text }),
  ApplicationSecretResponse: msg('ApplicationSecretResponse', {
    appId: text,
    found: fc.boolean(),
    secret: text,
  }),
  ReserveSlots: msg(
    'ReserveSlots',
    {
      appId: text,
      shuffleId: int32,
      primaries: small(location),
      replicas: small(location),
      splitThreshold: int64,
      splitMode: fc.constantFrom('SOFT', 'HARD'),
      memoryEnabled: fc.boolean(),
      user: nonEmptyText,
      tenant: nonEmptyText,
    },
    ['user', 'tenant'],
  ),
  CommitFiles: msg('CommitFiles', {
    appId: text,
    shuffleId: int32,
    primaryIds: small(text),
    replicaIds: small(text),
    mapAttempts: small(int32),
  }),
  CommitFilesResponse: msg('CommitFilesResponse', {
    status,
    committedPrimaries: small(committedFile),
    committedReplicas: small(committedFile),
    failedPrimaryIds: small(text),
    failedReplicaIds: small(text),
    message: text,
  }),
  DestroySlots: msg('DestroySlots', {
    appId: text,
    shuffleId: int32,
    primaryIds: small(text),
    replicaIds: small(text),
  }),
  RegisterShuffle: msg('RegisterShuffle', {
    appId: text,
    shuffleId: int32,
    numMappers: int32,
    numPartitions: int32,
  }),
  RegisterShuffleResponse: msg('RegisterShuffleResponse', {
    status,
    locations: small(location),
    message: text,
  }),
  Revive: msg('Revive', {
    appId: text,
    shuffleId: int32,
    mapId: int32,
    attemptId: int32,
    requests: small(
      rec({ partitionId: int32, epoch: int32, oldLocation: location, cause: status }, ['oldLocation']),
    ),
  }),
  ReviveResponse: msg('ReviveResponse', {
    results: small(
      rec({ partitionId: int32, status, newLocation: location, oldAvailable: fc.boolean() }, ['newLocation']),
    ),
    endedMapIds: small(int32),
  }),
  MapperEnd: msg('MapperEnd', {
    appId: text,
    shuffleId: int32,
    mapId: int32,
    attemptId: int32,
    numMappers: int32,
    written: small(rec({ partitionId: int32, batches: int32, bytes: int64 })),
  }),
  GetReducerFileGroup: msg('GetReducerFileGroup', { appId: text, shuffleId: int32 }),
  GetReducerFileGroupResponse: msg('GetReducerFileGroupResponse', {
    status,
    fileGroups: small(
      rec({
        partitionId: int32,
        locations: small(location),
        files: small(committedFile),
        expected: small(rec({ mapId: int32, partitionId: int32, batches: int32, bytes: int64 })),
      }),
    ),
    mapAttempts: small(int32),
    message: text,
  }),
  PushData: msg('PushData', {
    shuffleKey: text,
    mode: partitionMode,
    partitionId: int32,
    epoch: int32,
    mapId: int32,
    attemptId: int32,
    batchId: int32,
    payload: bytes,
  }),
  PushDataResponse: msg('PushDataResponse', { status, message: text }),
  PushMergedData: msg('PushMergedData', {
    shuffleKey: text,
    mode: partitionMode,
    mapId: int32,
    attemptId: int32,
    batches: small(rec({ partitionId: int32, epoch: int32, batchId: int32, payload: bytes })),
  }),
  PushMergedDataResponse: msg('PushMergedDataResponse', { statuses: small(status), message: text }),
  OpenStream: msg(
    'OpenStream',
    { shuffleKey: text, uniqueId: text, mode: partitionMode, readFirstChunk: fc.boolean() },
    ['readFirstChunk'],
  ),
  OpenStreamResponse: msg(
    'OpenStreamResponse',
    { status, streamId: int64, chunkOffsets: small(int64), message: text, firstChunk: bytes },
    ['firstChunk'],
  ),
  FetchChunk: msg('FetchChunk', { streamId: int64, chunkIndex: int32 }),
  ChunkData: msg('ChunkData', { status, streamId: int64, chunkIndex: int32, bytes, message: text }),
  CloseStream: msg('CloseStream', { streamId: int64 }),
};

const MESSAGE_TYPES = Object.keys(MESSAGES) as MessageType[];
const anyMessage: fc.Arbitrary<Message> = fc.oneof(...MESSAGE_TYPES.map((type) => MESSAGES[type]));

function envelopeOf(message: fc.Arbitrary<Message>): fc.Arbitrary<WireEnvelope> {
  return rec<WireEnvelope>({ from: text, to: text, requestId: uint64, inReplyTo: uint64, message }, [
    'requestId',
    'inReplyTo',
  ]);
}

const release = fc
  .tuple(fc.nat({ max: 999 }), fc.nat({ max: 999 }), fc.nat({ max: 999 }))
  .map(([a, b, c]): Release => `${a}.${b}.${c}`);
const hello = rec<Hello>(
  {
    role: fc.constantFrom<PeerRole>('master', 'worker', 'client'),
    release,
    nodeId: text,
    application: nonEmptyText,
    followsLeader: fc.constant(true as const),
  },
  ['application', 'followsLeader'],
);
const nonce = fc.uint8Array({ minLength: AUTH_NONCE_BYTES, maxLength: AUTH_NONCE_BYTES });
const mac = fc.uint8Array({ minLength: AUTH_MAC_BYTES, maxLength: AUTH_MAC_BYTES });
const helloReply = rec<HelloReply>({ accepted: fc.boolean(), status, message: text, release, nodeId: text });

// ------------------------------------------------------------------------------------------------ helpers

/** Control codec only: the envelope's control part and its payloads laid out one after the other. */
function roundTrip(envelope: WireEnvelope): WireEnvelope {
  const { control, payloads } = encodeEnvelopeControl(envelope);
  return decodeEnvelopeControl(control, concatBytes(payloads));
}

/** A stream of bytes cut at the given fractions of its length (cuts may repeat: an empty chunk is fine). */
function cut(stream: Uint8Array, fractions: readonly number[]): Uint8Array[] {
  const points = fractions.map((f) => Math.floor(f * stream.byteLength)).sort((a, b) => a - b);
  const chunks: Uint8Array[] = [];
  let from = 0;
  for (const point of [...points, stream.byteLength]) {
    chunks.push(stream.slice(from, point));
    from = point;
  }
  return chunks;
}

/** Frames through the whole path: pieces → one byte stream → chunks → FrameReader → decodeFrame. */
function throughStream(frames: readonly (readonly Uint8Array[])[], fractions: readonly number[]) {
  const reader = new FrameReader(1 << 24);
  const bodies = cut(concatBytes(frames.flat()), fractions).flatMap((chunk) => reader.push(chunk));
  assert.equal(reader.buffered, 0);
  return bodies.map(decodeFrame);
}

const fractions = fc.array(fc.double({ min: 0, max: 1, noNaN: true }), { maxLength: 8 });

function assertWireError(action: () => unknown, reason: WireErrorReason, pattern?: RegExp): void {
  assert.throws(action, (error: unknown) => {
    assert.ok(error instanceof WireError, `expected a WireError, got ${String(error)}`);
    assert.equal(error.reason, reason, error.message);
    if (pattern) assert.match(error.message, pattern);
    return true;
  });
}

function envelopeBytes(init: Omit<pb.Envelope, '$typeName'>): Uint8Array {
  return toBinary(pb.EnvelopeSchema, create(pb.EnvelopeSchema, init));
}

// ------------------------------------------------------------------------------------------------ properties

describe('control codec: every message type round-trips', () => {
  for (const type of MESSAGE_TYPES) {
    it(type, () => {
      fc.assert(
        fc.property(envelopeOf(MESSAGES[type]), (envelope) => {
          assert.deepStrictEqual(roundTrip(envelope), envelope);
        }),
        { numRuns: 60 },
      );
    });
  }
});

describe('control codec: the full frame path', () => {
  it('envelopes of any type survive encodeEnvelope, a byte stream cut anywhere, FrameReader and decodeFrame', () => {
    fc.assert(
      fc.property(
        fc.array(envelopeOf(anyMessage), { minLength: 1, maxLength: 5 }),
        fractions,
        (envelopes, at) => {
          const decoded = throughStream(envelopes.map(encodeEnvelope), at);
          assert.deepStrictEqual(
            decoded,
            envelopes.map((envelope) => ({ kind: 'envelope', envelope })),
          );
        },
      ),
      { numRuns: 400 },
    );
  });

  it('handshakes survive the same path', () => {
    fc.assert(
      fc.property(hello, helloReply, nonce, mac, fractions, (h, r, n, m, at) => {
        const decoded = throughStream(
          [[encodeHello(h)], [encodeAuthChallenge(n)], [encodeAuthProof(m)], [encodeHelloReply(r)]],
          at,
        );
        assert.deepStrictEqual(decoded, [
          { kind: 'hello', hello: h },
          { kind: 'authChallenge', nonce: n },
          { kind: 'authProof', mac: m },
          { kind: 'helloReply', reply: r },
        ]);
      }),
    );
  });

  it('a challenge or proof of another length than 32 bytes is malformed', () => {
    fc.assert(
      fc.property(
        fc.uint8Array({ maxLength: 80 }).filter((bytes) => bytes.byteLength !== 32),
        (bytes) => {
          const challenge = encodeAuthChallenge(bytes).subarray(LENGTH_PREFIX_BYTES);
          assertWireError(() => decodeFrame(challenge), 'malformed', /nonce has/);
          const proof = encodeAuthProof(bytes).subarray(LENGTH_PREFIX_BYTES);
          assertWireError(() => decodeFrame(proof), 'malformed', /HMAC-SHA256/);
        },
      ),
    );
  });

  it('hello and hello reply round-trip through the control codec', () => {
    fc.assert(
      fc.property(hello, helloReply, (h, r) => {
        assert.deepStrictEqual(decodeHelloControl(encodeHelloControl(h)), h);
        assert.deepStrictEqual(decodeHelloReplyControl(encodeHelloReplyControl(r)), r);
      }),
    );
  });

  it('decoded payloads are views of the frame, not copies', () => {
    const payload = Uint8Array.from([1, 2, 3, 4]);
    const frame = concatBytes(
      encodeEnvelope({
        from: 'map-1',
        to: 'worker',
        message: {
          type: 'PushMergedData',
          shuffleKey: 'a-1',
          mode: 'PRIMARY',
          mapId: 0,
          attemptId: 0,
          batches: [
            { partitionId: 0, epoch: 0, batchId: 0, payload },
            { partitionId: 1, epoch: 0, batchId: 1, payload },
          ],
        },
      }),
    );
    const [body] = new FrameReader(1 << 20).push(frame);
    const decoded = decodeFrame(body!);
    const message = decoded.kind === 'envelope' ? decoded.envelope.message : undefined;
    assert.ok(message?.type === 'PushMergedData', "message?.type === 'PushMergedData'");
    assert.equal(message.batches.length, 2);
    for (const batch of message.batches) {
      assert.equal(batch.payload.buffer, frame.buffer);
      assert.deepStrictEqual(batch.payload, payload);
    }
  });

  it('random bytes never throw anything but a WireError', () => {
    const decoders: ((control: Uint8Array, rest: Uint8Array) => unknown)[] = [
      decodeEnvelopeControl,
      (control) => decodeHelloControl(control),
      (control) => decodeHelloReplyControl(control),
      (control) => decodeFrame(control),
    ];
    fc.assert(
      fc.property(fc.uint8Array({ maxLength: 96 }), fc.uint8Array({ maxLength: 32 }), (control, rest) => {
        for (const decode of decoders) {
          try {
            decode(control, rest);
          } catch (error) {
            assert.ok(error instanceof WireError, `not a WireError: ${String(error)}`);
          }
        }
      }),
      { numRuns: 2000 },
    );
  });

  it('valid envelopes with a flipped byte never throw anything but a WireError', () => {
    fc.assert(
      fc.property(
        envelopeOf(anyMessage),
        fc.nat(),
        fc.integer({ min: 1, max: 255 }),
        (envelope, at, flip) => {
          const { control, payloads } = encodeEnvelopeControl(envelope);
          if (control.byteLength === 0) return;
          const damaged = control.slice();
          damaged[at % damaged.byteLength]! ^= flip;
          try {
            decodeEnvelopeControl(damaged, concatBytes(payloads));
          } catch (error) {
            assert.ok(error instanceof WireError, `not a WireError: ${String(error)}`);
          }
        },
      ),
      { numRuns: 1000 },
    );
  });
});

// ------------------------------------------------------------------------------------------------ faults

describe('control codec: what a peer cannot make it accept', () => {
  const push: WireEnvelope = {
    from: 'map-1',
    to: 'worker',
    requestId: 3,
    message: {
      type: 'PushData',
      shuffleKey: 'app-1',
      mode: 'PRIMARY',
      partitionId: 1,
      epoch: 0,
      mapId: 2,
      attemptId: 0,
      batchId: 5,
      payload: Uint8Array.from([9, 8, 7, 6, 5]),
    },
  };

  it('a payload length that overruns the frame is malformed', () => {
    const { control, payloads } = encodeEnvelopeControl(push);
    assertWireError(
      () => decodeEnvelopeControl(control, payloads[0]!.subarray(0, 4)),
      'malformed',
      /overruns/,
    );
    assertWireError(
      () => decodeEnvelopeControl(control, new Uint8Array(0)),
      'malformed',
      /PushData\.payload/,
    );
  });

  it('bytes left after the payloads are malformed', () => {
    const { control, payloads } = encodeEnvelopeControl(push);
    assertWireError(
      () => decodeEnvelopeControl(control, concatBytes([...payloads, Uint8Array.of(0)])),
      'malformed',
    );
    const noPayload: WireEnvelope = { from: 'a', to: 'b', message: { type: 'CloseStream', streamId: 1 } };
    assertWireError(
      () => decodeEnvelopeControl(encodeEnvelopeControl(noPayload).control, Uint8Array.of(1, 2)),
      'malformed',
      /2 bytes after/,
    );
  });

  it('an envelope without a message (a type this build does not know) is unknown', () => {
    assertWireError(
      () =>
        decodeEnvelopeControl(
          envelopeBytes({ from: 'a', to: 'b', message: { case: undefined } }),
          new Uint8Array(0),
        ),
      'unknown',
    );
    // A oneof case added by a newer schema (field 99, an empty message) looks the same to this build.
    const newer = concatBytes([
      envelopeBytes({ from: 'a', to: 'b', message: { case: undefined } }),
      Uint8Array.of(0x9a, 0x06, 0x00),
    ]);
    assertWireError(() => decodeEnvelopeControl(newer, new Uint8Array(0)), 'unknown');
  });

  it('unknown fields of known messages are ignored', () => {
    const { control, payloads } = encodeEnvelopeControl(push);
    // Field 9 (reserved in Envelope), varint 1: skipped.
    const extended = concatBytes([control, Uint8Array.of(0x48, 0x01)]);
    assert.deepStrictEqual(decodeEnvelopeControl(extended, concatBytes(payloads)), push);
  });

  it('an enum value out of range is malformed', () => {
    const status = envelopeBytes({
      from: 'a',
      to: 'b',
      message: {
        case: 'pushDataResponse',
        value: create(pb.PushDataResponseSchema, { status: 77 as pb.StatusCode, message: '' }),
      },
    });
    assertWireError(
      () => decodeEnvelopeControl(status, new Uint8Array(0)),
      'malformed',
      /PushDataResponse\.status: 77/,
    );
    const mode = envelopeBytes({
      from: 'a',
      to: 'b',
      message: { case: 'pushData', value: create(pb.PushDataSchema, { mode: 2 as pb.PartitionMode }) },
    });
    assertWireError(() => decodeEnvelopeControl(mode, new Uint8Array(0)), 'malformed', /PushData\.mode/);
    const role = toBinary(
      pb.HelloSchema,
      create(pb.HelloSchema, { role: pb.PeerRole.UNSPECIFIED, release: '0.6.0' }),
    );
    assertWireError(() => decodeHelloControl(role), 'malformed', /Hello\.role/);
  });

  it('a required nested message that is missing is malformed', () => {
    const noWorker = envelopeBytes({
      from: 'a',
      to: 'b',
      message: { case: 'registerWorker', value: create(pb.RegisterWorkerSchema, {}) },
    });
    assertWireError(
      () => decodeEnvelopeControl(noWorker, new Uint8Array(0)),
      'malformed',
      /RegisterWorker\.worker is missing/,
    );
    const noStorage = envelopeBytes({
      from: 'a',
      to: 'b',
      message: {
        case: 'registerShuffleResponse',
        value: create(pb.RegisterShuffleResponseSchema, {
          locations: [
            create(pb.PartitionLocationSchema, { worker: create(pb.WorkerIdSchema, { host: 'h' }) }),
          ],
        }),
      },
    });
    assertWireError(
      () => decodeEnvelopeControl(noStorage, new Uint8Array(0)),
      'malformed',
      /PartitionLocation\.storage/,
    );
  });

  it("a peer location's own peer is malformed", () => {
    const leaf = () =>
      create(pb.PartitionLocationSchema, {
        worker: create(pb.WorkerIdSchema, { host: 'h' }),
        storage: create(pb.StorageInfoSchema, {}),
      });
    const location = leaf();
    location.peer = leaf();
    location.peer.peer = leaf();
    const bytes = envelopeBytes({
      from: 'a',
      to: 'b',
      message: {
        case: 'registerShuffleResponse',
        value: create(pb.RegisterShuffleResponseSchema, { locations: [location] }),
      },
    });
    assertWireError(() => decodeEnvelopeControl(bytes, new Uint8Array(0)), 'malformed', /peer itself/);
  });

  it('a handshake with something else than a release is malformed', () => {
    const bytes = toBinary(
      pb.HelloSchema,
      create(pb.HelloSchema, { role: pb.PeerRole.CLIENT, release: 'latest', nodeId: 'x' }),
    );
    assertWireError(() => decodeHelloControl(bytes), 'malformed', /Hello\.release/);
  });

  it('a value outside its field on the sending side is an error naming the message', () => {
    assert.throws(
      () =>
        encodeEnvelopeControl({
          from: 'a',
          to: 'b',
          message: { type: 'FetchChunk', streamId: 1.5, chunkIndex: 0 },
        }),
      (error: unknown) => error instanceof RangeError && /FetchChunk for b/.test(error.message),
    );
    assert.throws(
      () =>
        encodeEnvelopeControl({
          from: 'a',
          to: 'b',
          message: { type: 'CloseStream', streamId: 1 },
          requestId: -1,
        }),
      /CloseStream/,
    );
  });

  it('bytes that are not protobuf are malformed, with what was being read', () => {
    assertWireError(
      () => decodeEnvelopeControl(Uint8Array.of(0x0a, 0x05, 0x61), new Uint8Array(0)),
      'malformed',
      /^envelope: /,
    );
    assertWireError(() => decodeHelloControl(Uint8Array.of(0xff)), 'malformed', /^handshake: /);
  });
});

// ------------------------------------------------------------------------------------------------ the schema's numbers

/** `InDecommissionThenIdle` → `IN_DECOMMISSION_THEN_IDLE`, `HARD` → `HARD`, `master` → `MASTER`. */
function snake(name: string): string {
  return name.replace(/([a-z0-9])([A-Z])/g, '$1_$2').toUpperCase();
}

/** The schema's enum as `NAME → number` (value names without their enum prefix). */
function schemaValues(desc: DescEnum): Map<string, number> {
  return new Map(desc.values.map((value) => [value.localName, value.number]));
}

function decodedControl(envelope: WireEnvelope): pb.Envelope['message'] {
  return fromBinary(pb.EnvelopeSchema, encodeEnvelopeControl(envelope).control).message;
}

describe('control codec: enum numbers are the schema’s', () => {
  function check(
    desc: DescEnum,
    core: readonly (readonly [string, number])[],
    sent: (name: string) => number,
  ) {
    const schema = schemaValues(desc);
    const unspecified = [...schema.keys()].filter((name) => name === 'UNSPECIFIED');
    assert.deepStrictEqual(
      [...schema.entries()].filter(([name]) => name !== 'UNSPECIFIED').sort(),
      core.map(([name, number]) => [snake(name), number] as const).sort(),
      `${desc.name}: the schema and core name different values`,
    );
    assert.ok(unspecified.length <= 1, 'unspecified.length <= 1');
    for (const [name, number] of core) assert.equal(sent(name), number, `${desc.name}.${name} on the wire`);
  }

  const statusOnWire = (name: string): number => {
    const oneof = decodedControl({
      from: 'a',
      to: 'b',
      message: { type: 'StatusResponse', status: name as StatusCode, message: '' },
    });
    return oneof.case === 'statusResponse' ? oneof.value.status : -1;
  };

  it('StatusCode', () => check(pb.StatusCodeSchema, Object.entries(STATUS_CODES), statusOnWire));

  it('PartitionMode, StorageType and DiskStatus', () => {
    const heartbeat = (field: 'type' | 'status', name: string): number => {
      const disk: DiskInfo = {
        mountPoint: '/d',
        type: field === 'type' ? (name as StorageType) : 'HDD',
        usableBytes: 1,
        totalBytes: 1,
        status: field === 'status' ? (name as DiskInfo['status']) : 'HEALTHY',
        avgFlushTimeNs: 0,
        avgFetchTimeNs: 0,
        activeSlots: 0,
      };
      const oneof = decodedControl({
        from: 'a',
        to: 'b',
        message: {
          type: 'RegisterWorker',
          worker: { host: 'h', rpcPort: 1, pushPort: 2, fetchPort: 3, replicatePort: 4 },
          disks: [disk],
          networkLocation: '',
        },
      });
      return oneof.case === 'registerWorker' ? oneof.value.disks[0]![field] : -1;
    };
    check(pb.PartitionModeSchema, Object.entries(PARTITION_MODE_CODE), (name) => {
      const oneof = decodedControl({
        from: 'a',
        to: 'b',
        message: { type: 'OpenStream', shuffleKey: 'k', uniqueId: 'u', mode: name as PartitionMode },
      });
      return oneof.case === 'openStream' ? oneof.value.mode : -1;
    });
    check(pb.StorageTypeSchema, Object.entries(STORAGE_TYPE_CODE), (name) => heartbeat('type', name));
    check(
      pb.DiskStatusSchema,
      DISK_STATUSES.map((name, i) => [name, i] as const),
      (name) => heartbeat('status', name),
    );
  });

  it('WorkerState, WorkerEventType, SplitMode and PeerRole', () => {
    const worker = { host: 'h', rpcPort: 1, pushPort: 2, fetchPort: 3, replicatePort: 4 };
    check(
      pb.WorkerStateSchema,
      WORKER_STATES.map((name, i) => [name, i] as const),
      (name) => {
        const oneof = decodedControl({
          from: 'a',
          to: 'b',
          message: {
            type: 'WorkerHeartbeat',
            worker,
            disks: [],
            activeShuffleKeys: [],
            highWorkload: false,
            state: name as (typeof WORKER_STATES)[number],
          },
        });
        return oneof.case === 'workerHeartbeat' ? oneof.value.state : -1;
      },
    );
    check(
      pb.WorkerEventTypeSchema,
      WORKER_EVENT_TYPES.map((name, i) => [name, i] as const),
      (name) => {
        const oneof = decodedControl({
          from: 'a',
          to: 'b',
          message: {
            type: 'WorkerHeartbeatResponse',
            registered: true,
            expiredShuffleKeys: [],
            workerEvent: name as (typeof WORKER_EVENT_TYPES)[number],
          },
        });
        return oneof.case === 'workerHeartbeatResponse' ? oneof.value.workerEvent : -1;
      },
    );
    check(
      pb.SplitModeSchema,
      [
        ['SOFT', 0],
        ['HARD', 1],
      ],
      (name) => {
        const oneof = decodedControl({
          from: 'a',
          to: 'b',
          message: {
            type: 'ReserveSlots',
            appId: 'a',
            shuffleId: 0,
            primaries: [],
            replicas: [],
            splitThreshold: 1,
            splitMode: name as 'SOFT' | 'HARD',
            memoryEnabled: false,
          },
        });
        return oneof.case === 'reserveSlots' ? oneof.value.splitMode : -1;
      },
    );
    check(
      pb.PeerRoleSchema,
      [
        ['master', 1],
        ['worker', 2],
        ['client', 3],
      ],
      (name) =>
        fromBinary(
          pb.HelloSchema,
          encodeHelloControl({ role: name as PeerRole, release: '0.6.0', nodeId: 'n' }),
        ).role,
    );
  });

  it('every oneof case of Envelope is a message type, under its own name', () => {
    const cases = pb.EnvelopeSchema.oneofs[0]!.fields.map((field) => field.localName).sort();
    assert.deepStrictEqual(
      cases,
      MESSAGE_TYPES.map((type) => type.charAt(0).toLowerCase() + type.slice(1)).sort(),
    );
  });
});
