import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { BinaryWriter, WireType } from '@bufbuild/protobuf/wire';
import fc from 'fast-check';
import type { PartitionLocation, PartitionMode } from '../../core/domain/partition.ts';
import { STORAGE_TYPE_CODE, type StorageType } from '../../core/domain/storage.ts';
import { STATUS_CODES, type StatusCode } from '../../core/domain/status.ts';
import type { Message } from '../../core/protocol/messages.ts';
import { decodeEnvelopeControl, encodeEnvelopeControl } from './control-codec.ts';
import { decodeHotEnvelope, encodeHotEnvelope } from './hot-codec.ts';
import type { EncodedControl, WireEnvelope } from './types.ts';
import { concatBytes } from './testing.ts';

const int32 = fc.oneof(fc.integer(), fc.constantFrom(0, -1, 2 ** 31 - 1, -(2 ** 31)));
const text = fc.oneof(fc.string({ unit: 'binary', maxLength: 12 }), fc.constant(''));
const bytes = fc.uint8Array({ maxLength: 48 });
const status = fc.constantFrom(...(Object.keys(STATUS_CODES) as StatusCode[]));
const mode = fc.constantFrom<PartitionMode>('PRIMARY', 'REPLICA');
const shuffleKey = text as fc.Arbitrary<never>;

const hotMessage: fc.Arbitrary<Message> = fc.oneof(
  fc.record({
    type: fc.constant('PushData' as const),
    shuffleKey,
    mode,
    partitionId: int32,
    epoch: int32,
    mapId: int32,
    attemptId: int32,
    batchId: int32,
    payload: bytes,
  }),
  fc.record({ type: fc.constant('PushDataResponse' as const), status, message: text }),
  fc.record({
    type: fc.constant('PushMergedData' as const),
    shuffleKey,
    mode,
    mapId: int32,
    attemptId: int32,
    batches: fc.array(fc.record({ partitionId: int32, epoch: int32, batchId: int32, payload: bytes }), {
      maxLength: 5,
    }),
  }),
  fc.record({
    type: fc.constant('PushMergedDataResponse' as const),
    statuses: fc.array(status, { maxLength: 6 }),
    message: text,
  }),
);

const uint32 = fc.oneof(fc.integer({ min: 0, max: 0xffff_ffff }), fc.constant(0));
const nat64 = fc.oneof(fc.maxSafeNat(), fc.constant(0), fc.integer({ min: 0, max: 300 }));
const storage = fc.record({
  type: fc.constantFrom(...(Object.keys(STORAGE_TYPE_CODE) as StorageType[])),
  mountPoint: text,
  availableTypes: uint32,
});
const worker = fc.record({
  host: text,
  rpcPort: uint32,
  pushPort: uint32,
  fetchPort: uint32,
  replicatePort: uint32,
});
const peerLocation = fc.record({ partitionId: int32, epoch: int32, worker, mode, storage });
const location: fc.Arbitrary<PartitionLocation> = fc.record(
  { partitionId: int32, epoch: int32, worker, mode, storage, peer: peerLocation },
  { requiredKeys: ['partitionId', 'epoch', 'worker', 'mode', 'storage'] },
);
const committedFile = fc.record({
  uniqueId: text,
  mode,
  storage,
  bytes: nat64,
  chunkOffsets: fc.array(nat64, { maxLength: 5 }),
});
const few = <T>(arb: fc.Arbitrary<T>) => fc.array(arb, { maxLength: 4 });

/** The large control messages of a shuffle's slots (./slot-codec.ts, ./request-slots-codec.ts). */
const slotMessage: fc.Arbitrary<Message> = fc.oneof(
  fc.record(
    {
      type: fc.constant('ReserveSlots' as const),
      appId: text,
      shuffleId: int32,
      primaries: few(location),
      replicas: few(location),
      splitThreshold: nat64,
      splitMode: fc.constantFrom('SOFT' as const, 'HARD' as const),
      memoryEnabled: fc.boolean(),
      user: fc.string({ unit: 'binary', minLength: 1, maxLength: 12 }),
      tenant: fc.string({ unit: 'binary', minLength: 1, maxLength: 12 }),
    },
    {
      requiredKeys: [
        'type',
        'appId',
        'shuffleId',
        'primaries',
        'replicas',
        'splitThreshold',
        'splitMode',
        'memoryEnabled',
      ],
    },
  ),
  fc.record({
    type: fc.constant('RegisterShuffleResponse' as const),
    status,
    locations: few(location),
    message: text,
  }),
  fc.record({
    type: fc.constant('CommitFilesResponse' as const),
    status,
    committedPrimaries: few(committedFile),
    committedReplicas: few(committedFile),
    failedPrimaryIds: few(text),
    failedReplicaIds: few(text),
    message: text,
  }),
  fc.record({
    type: fc.constant('RequestSlotsResponse' as const),
    status,
    workerResource: few(
      fc.record({ worker, networkLocation: text, primaries: few(location), replicas: few(location) }),
    ),
    unplaced: few(fc.record({ partitionId: int32, reason: text })),
    message: text,
  }),
  fileGroupAnswer(),
  fc.record({
    type: fc.constant('MapperEnd' as const),
    appId: text,
    shuffleId: int32,
    mapId: int32,
    attemptId: int32,
    numMappers: int32,
    written: few(fc.record({ partitionId: int32, batches: int32, bytes: nat64 })),
  }),
  fc.record({
    type: fc.constant('CommitFiles' as const),
    appId: text,
    shuffleId: int32,
    primaryIds: few(text),
    replicaIds: few(text),
    mapAttempts: few(int32),
  }),
);

/** A reducer's file group: encoded once per object however many reducers it is sent to (./shared-answer.ts). */
function fileGroupAnswer(): fc.Arbitrary<Message> {
  const written = fc.record({ mapId: int32, partitionId: int32, batches: int32, bytes: nat64 });
  return fc.record({
    type: fc.constant('GetReducerFileGroupResponse' as const),
    status,
    fileGroups: few(
      fc.record({
        partitionId: int32,
        locations: few(location),
        files: few(committedFile),
        expected: few(written),
      }),
    ),
    mapAttempts: few(int32),
    message: text,
  });
}

const hotEnvelope: fc.Arbitrary<WireEnvelope> = fc.record(
  {
    from: text,
    to: text,
    requestId: fc.oneof(fc.maxSafeNat(), fc.constant(0)),
    inReplyTo: fc.oneof(fc.maxSafeNat(), fc.constant(0)),
    message: fc.oneof(hotMessage, slotMessage),
  },
  { requiredKeys: ['from', 'to', 'message'] },
);

/** The control part as the frame carries it: `control`, then the shared tail if any. */
function wholeControl(encoded: EncodedControl): Uint8Array {
  return encoded.controlTail === undefined
    ? encoded.control
    : concatBytes([encoded.control, encoded.controlTail]);
}

describe('the hot messages codec', () => {
  it('writes exactly the bytes toBinary writes, and reads what the schema decoder reads', () => {
    fc.assert(
      fc.property(hotEnvelope, (envelope) => {
        const hot = encodeHotEnvelope(envelope);
        const schema = encodeEnvelopeControl(envelope);
        assert.ok(hot !== undefined, 'hot !== undefined');
        assert.deepStrictEqual(wholeControl(hot), schema.control);
        assert.deepStrictEqual(hot.payloads, schema.payloads);
        const payloads = concatBytes(schema.payloads);
        assert.deepStrictEqual(
          decodeHotEnvelope(schema.control, payloads),
          decodeEnvelopeControl(schema.control, payloads),
        );
      }),
      { numRuns: 500 },
    );
  });

  it('reads locations naming the same few workers and storages as the schema decoder, one object for each', () => {
    // The decoder recalls the four workers and storages it read last (slot-codec.ts's LastRead), across messages.
    const pool = <T>(arb: fc.Arbitrary<T>) => fc.array(arb, { minLength: 1, maxLength: 4 });
    const locations = fc.tuple(pool(worker), pool(storage)).chain(([workers, storages]) => {
      const fromPools = {
        worker: fc.constantFrom(...workers),
        storage: fc.constantFrom(...storages),
      };
      const peer = fc.record({ partitionId: int32, epoch: int32, mode, ...fromPools });
      return fc.array(
        fc.record(
          { partitionId: int32, epoch: int32, mode, ...fromPools, peer },
          { requiredKeys: ['partitionId', 'epoch', 'worker', 'mode', 'storage'] },
        ),
        { maxLength: 40 },
      );
    });
    fc.assert(
      fc.property(fc.array(locations, { minLength: 1, maxLength: 3 }), (messages) => {
        for (const locations of messages) {
          const envelope: WireEnvelope = {
            from: 'lm',
            to: 'w',
            message: { type: 'RegisterShuffleResponse', status: 'SUCCESS', locations, message: '' },
          };
          const hot = encodeHotEnvelope(envelope);
          assert.ok(hot !== undefined, 'a RegisterShuffleResponse is written by hand');
          const control = wholeControl(hot);
          assert.deepStrictEqual(control, encodeEnvelopeControl(envelope).control);
          const none = new Uint8Array(0);
          const decoded = decodeHotEnvelope(control, none);
          assert.deepStrictEqual(decoded, decodeEnvelopeControl(control, none));
          const read = decoded?.message.type === 'RegisterShuffleResponse' ? decoded.message.locations : [];
          const objects = new Map<string, object>();
          for (const { worker, storage } of read.flatMap((location) => [
            location,
            location.peer ?? location,
          ])) {
            for (const value of [worker, storage]) {
              const key = JSON.stringify(value);
              const seen = objects.get(key) ?? value;
              objects.set(key, seen);
              assert.equal(value, seen, 'equal workers (and storages) decode to one object');
            }
          }
        }
      }),
      { numRuns: 300 },
    );
  });

  it('writes a file group sent to many reducers as the schema codec would for each of them', () => {
    const envelopes = fc.array(
      fc.record({ to: text, requestId: fc.maxSafeNat(), inReplyTo: fc.maxSafeNat() }),
      { minLength: 2, maxLength: 4 },
    );
    fc.assert(
      fc.property(fileGroupAnswer(), envelopes, (message, heads) => {
        for (const head of heads) {
          const envelope: WireEnvelope = { from: 'lm', ...head, message };
          const hot = encodeHotEnvelope(envelope);
          assert.ok(
            hot?.controlTail !== undefined,
            'a file group is written by hand, its encoded value shared',
          );
          const control = wholeControl(hot);
          assert.deepStrictEqual(control, encodeEnvelopeControl(envelope).control);
          const none = new Uint8Array(0);
          assert.deepStrictEqual(decodeHotEnvelope(control, none), decodeEnvelopeControl(control, none));
        }
      }),
      { numRuns: 200 },
    );
  });

  it('leaves other messages, and values toBinary would refuse, to the schema codec', () => {
    const envelope = (message: Message): WireEnvelope => ({ from: 'a', to: 'b', message });
    assert.equal(encodeHotEnvelope(envelope({ type: 'CloseStream', streamId: 3 })), undefined);
    const push: Message = {
      type: 'PushDataResponse',
      status: 'SUCCESS',
      message: '',
    };
    assert.ok(
      encodeHotEnvelope(envelope(push)) !== undefined,
      'encodeHotEnvelope(envelope(push)) !== undefined',
    );
    for (const mapId of [0.5, 2 ** 31, Number.NaN]) {
      const bad = envelope({
        type: 'PushMergedData',
        shuffleKey: 'k',
        mode: 'PRIMARY',
        mapId,
        attemptId: 0,
        batches: [],
      });
      assert.equal(encodeHotEnvelope(bad), undefined, `map id ${mapId}`);
      assert.throws(() => encodeEnvelopeControl(bad), RangeError);
    }
    const negative: Message = {
      type: 'CommitFilesResponse',
      status: 'SUCCESS',
      committedPrimaries: [
        {
          uniqueId: '0-0',
          mode: 'PRIMARY',
          storage: { type: 'MEMORY', mountPoint: '', availableTypes: 0 },
          bytes: -1,
          chunkOffsets: [0],
        },
      ],
      committedReplicas: [],
      failedPrimaryIds: [],
      failedReplicaIds: [],
      message: '',
    };
    assert.equal(encodeHotEnvelope(envelope(negative)), undefined, 'a negative int64 is the schema codec’s');
    const unknownStatus = envelope({
      type: 'PushDataResponse',
      status: 'NOT_A_STATUS' as StatusCode,
      message: '',
    });
    assert.equal(encodeHotEnvelope(unknownStatus), undefined);
  });

  it('reads unpacked statuses and repeated scalars as protobuf does, and leaves unknown fields to the schema', () => {
    const statuses = [STATUS_CODES.SUCCESS, STATUS_CODES.PARTIAL_SUCCESS, STATUS_CODES.REQUEST_FAILED];
    const unpacked = new BinaryWriter().tag(2, WireType.LengthDelimited).string('worker-1');
    unpacked.tag(39, WireType.LengthDelimited).fork();
    for (const number of statuses) unpacked.tag(1, WireType.Varint).int32(number);
    unpacked.tag(2, WireType.LengthDelimited).string('first').tag(2, WireType.LengthDelimited).string('last');
    unpacked.join();
    const control = unpacked.finish();
    const empty = new Uint8Array(0);
    const expected = decodeEnvelopeControl(control, empty);
    assert.deepStrictEqual(decodeHotEnvelope(control, empty), expected);
    assert.deepStrictEqual(expected.message, {
      type: 'PushMergedDataResponse',
      statuses: ['SUCCESS', 'PARTIAL_SUCCESS', 'REQUEST_FAILED'],
      message: 'last',
    });

    const unknown = new BinaryWriter().tag(2, WireType.LengthDelimited).string('worker-1');
    unknown.tag(37, WireType.LengthDelimited).fork().tag(9, WireType.Varint).int32(5).join();
    const withUnknown = unknown.finish();
    assert.equal(decodeHotEnvelope(withUnknown, empty), undefined);
    assert.deepStrictEqual(decodeEnvelopeControl(withUnknown, empty).message, {
      type: 'PushDataResponse',
      status: 'SUCCESS',
      message: '',
    });
  });

  it('never throws: bytes it does not read as the schema decoder would are left to it', () => {
    fc.assert(
      fc.property(hotEnvelope, fc.nat(), fc.integer({ min: 0, max: 255 }), (envelope, at, value) => {
        const { control, payloads } = encodeEnvelopeControl(envelope);
        const damaged = control.slice();
        if (damaged.byteLength > 0) damaged[at % damaged.byteLength] = value;
        const rest = concatBytes(payloads);
        const hot = decodeHotEnvelope(damaged, rest);
        if (hot === undefined) return;
        assert.deepStrictEqual(hot, decodeEnvelopeControl(damaged, rest));
      }),
      { numRuns: 1000 },
    );
  });
});
