import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { BinaryWriter, WireType } from '@bufbuild/protobuf/wire';
import fc from 'fast-check';
import type { PartitionMode } from '../../core/domain/partition.ts';
import { STATUS_CODES, type StatusCode } from '../../core/domain/status.ts';
import type { Message } from '../../core/protocol/messages.ts';
import { decodeEnvelopeControl, encodeEnvelopeControl } from './control-codec.ts';
import { decodeHotEnvelope, encodeHotEnvelope } from './hot-codec.ts';
import type { WireEnvelope } from './types.ts';
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

const hotEnvelope: fc.Arbitrary<WireEnvelope> = fc.record(
  {
    from: text,
    to: text,
    requestId: fc.oneof(fc.maxSafeNat(), fc.constant(0)),
    inReplyTo: fc.oneof(fc.maxSafeNat(), fc.constant(0)),
    message: hotMessage,
  },
  { requiredKeys: ['from', 'to', 'message'] },
);

describe('the hot messages codec', () => {
  it('writes exactly the bytes toBinary writes, and reads what the schema decoder reads', () => {
    fc.assert(
      fc.property(hotEnvelope, (envelope) => {
        const hot = encodeHotEnvelope(envelope);
        const schema = encodeEnvelopeControl(envelope);
        assert.ok(hot !== undefined, 'hot !== undefined');
        assert.deepStrictEqual(hot.control, schema.control);
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
