import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { crc32 as zlibCrc32 } from 'node:zlib';
import fc from 'fast-check';
import { crc32 } from './crc32.ts';
import { getU32 } from './big-endian.ts';
import {
  FRAME_CRC_OFFSET,
  FRAME_HEADER_BYTES,
  decodeBatchFrame,
  decodeBatchFrames,
  encodeBatchFrame,
  encodeBatchFrames,
  isFrameOfBatch,
  sealBatchFrame,
  type BatchHeader,
} from './batch-frame.ts';

const u32 = fc.integer({ min: 0, max: 0xffffffff });
const header: fc.Arbitrary<BatchHeader> = fc.record({
  shuffleId: u32,
  mapId: u32,
  attemptId: u32,
  batchId: u32,
  partitionId: u32,
  epoch: u32,
});
const payload = fc.uint8Array({ maxLength: 300 });
const zeroHeader: BatchHeader = {
  shuffleId: 0,
  mapId: 0,
  attemptId: 0,
  batchId: 0,
  partitionId: 0,
  epoch: 0,
};

describe('crc32', () => {
  it('gives the standard check value for "123456789"', () => {
    assert.equal(crc32(new TextEncoder().encode('123456789')), 0xcbf43926);
    assert.equal(crc32(new Uint8Array(0)), 0);
  });

  it('agrees with zlib on any bytes, continues across a split, and checks any range of a buffer in place', () => {
    fc.assert(
      fc.property(fc.uint8Array({ maxLength: 500 }), fc.nat(), fc.nat(), (bytes, cut, cut2) => {
        const at = bytes.length === 0 ? 0 : cut % (bytes.length + 1);
        assert.equal(crc32(bytes), zlibCrc32(bytes));
        assert.equal(crc32(bytes.subarray(at), crc32(bytes.subarray(0, at))), zlibCrc32(bytes));
        const end = at + (cut2 % (bytes.length - at + 1));
        assert.equal(crc32(bytes, 0, at, end), zlibCrc32(bytes.subarray(at, end)));
        assert.equal(crc32(bytes, crc32(bytes, 0, 0, at), at, bytes.length), zlibCrc32(bytes));
      }),
      { numRuns: 200 },
    );
  });
});

describe('batch frame', () => {
  it('encodes several frames into one buffer exactly as one by one', () => {
    fc.assert(
      fc.property(fc.array(fc.record({ header, payload }), { maxLength: 6 }), (batches) => {
        const together = encodeBatchFrames(batches);
        assert.equal(together.length, batches.length);
        together.forEach((frame, i) => {
          assert.deepEqual([...frame], [...encodeBatchFrame(batches[i]!.header, batches[i]!.payload)]);
          const decoded = decodeBatchFrame(frame);
          assert.ok(decoded.ok, 'decoded.ok');
          assert.deepEqual([...decoded.value.payload], [...batches[i]!.payload]);
        });
      }),
      { numRuns: 100 },
    );
  });

  it('seals a payload laid out behind header space of any content exactly as encodeBatchFrame frames it', () => {
    fc.assert(
      fc.property(header, payload, fc.uint8Array({ minLength: 40, maxLength: 40 }), (h, p, junk) => {
        const frame = new Uint8Array(FRAME_HEADER_BYTES + p.length);
        frame.set(junk);
        frame.set(p, FRAME_HEADER_BYTES);
        assert.equal(sealBatchFrame(frame, h), frame, 'sealed in place');
        assert.deepEqual([...frame], [...encodeBatchFrame(h, p)]);
      }),
      { numRuns: 200 },
    );
    assert.throws(
      () => sealBatchFrame(new Uint8Array(FRAME_HEADER_BYTES - 1), { ...zeroHeader }),
      RangeError,
    );
    assert.throws(
      () => sealBatchFrame(new Uint8Array(FRAME_HEADER_BYTES), { ...zeroHeader, epoch: -1 }),
      RangeError,
    );
  });

  it('round-trips every header and payload', () => {
    fc.assert(
      fc.property(header, payload, (h, p) => {
        const bytes = encodeBatchFrame(h, p);
        assert.equal(bytes.length, FRAME_HEADER_BYTES + p.length);
        const decoded = decodeBatchFrame(bytes);
        assert.ok(decoded.ok, 'decoded.ok');
        const { crc, ...fields } = decoded.value;
        assert.deepEqual({ ...fields, payload: [...fields.payload] }, { ...h, payload: [...p] });
        assert.equal(crc, getU32(bytes, FRAME_CRC_OFFSET), 'the stored CRC comes back with the frame');
      }),
      { numRuns: 200 },
    );
  });

  it('has the documented layout', () => {
    const bytes = encodeBatchFrame(
      { shuffleId: 1, mapId: 2, attemptId: 3, batchId: 4, partitionId: 5, epoch: 6 },
      new Uint8Array([0xaa, 0xbb]),
    );
    assert.deepEqual(
      [...bytes.subarray(0, 36)],
      [
        0x53, 0x56, 0x43, 0x42, 1, 0, 0, 0, 0, 0, 0, 1, 0, 0, 0, 2, 0, 0, 0, 3, 0, 0, 0, 4, 0, 0, 0, 5, 0, 0,
        0, 6, 0, 0, 0, 2,
      ],
    );
    const stored = new DataView(bytes.buffer).getUint32(36);
    assert.equal(stored, zlibCrc32(bytes.subarray(40), zlibCrc32(bytes.subarray(0, 36))));
    assert.deepEqual([...bytes.subarray(40)], [0xaa, 0xbb]);
  });

  it('decodes a concatenation of frames in order', () => {
    fc.assert(
      fc.property(fc.array(fc.tuple(header, payload), { maxLength: 8 }), (batches) => {
        const frames = batches.map(([h, p]) => encodeBatchFrame(h, p));
        const chunk = new Uint8Array(frames.reduce((n, f) => n + f.length, 0));
        let at = 0;
        for (const f of frames) {
          chunk.set(f, at);
          at += f.length;
        }
        const decoded = decodeBatchFrames(chunk);
        assert.ok(decoded.ok, 'decoded.ok');
        assert.deepEqual(
          decoded.value.map((f) => [f.mapId, f.batchId, [...f.payload]]),
          batches.map(([h, p]) => [h.mapId, h.batchId, [...p]]),
        );
      }),
      { numRuns: 100 },
    );
  });

  it('reports any single flipped bit, never returning data', () => {
    fc.assert(
      fc.property(header, payload, fc.nat(), fc.integer({ min: 0, max: 7 }), (h, p, where, bit) => {
        const bytes = encodeBatchFrame(h, p);
        const index = where % bytes.length;
        bytes[index]! ^= 1 << bit;
        const decoded = decodeBatchFrames(bytes);
        assert.equal(decoded.ok, false);
      }),
      { numRuns: 300 },
    );
  });

  it('accepts a frame as the batch named exactly when decoding it succeeds with those fields', () => {
    const damage = fc.oneof(
      fc.constant({ kind: 'none' as const }),
      fc.record({ kind: fc.constant('flip' as const), where: fc.nat(), bit: fc.integer({ min: 0, max: 7 }) }),
      fc.record({ kind: fc.constant('cut' as const), at: fc.nat() }),
      fc.record({
        kind: fc.constant('append' as const),
        extra: fc.uint8Array({ minLength: 1, maxLength: 50 }),
      }),
    );
    const named = fc.option(fc.record({ partitionId: u32, mapId: u32, attemptId: u32, batchId: u32 }), {
      nil: undefined,
    });
    fc.assert(
      fc.property(header, payload, damage, named, (h, p, change, other) => {
        let bytes = encodeBatchFrame(h, p);
        if (change.kind === 'flip') bytes[change.where % bytes.length]! ^= 1 << change.bit;
        else if (change.kind === 'cut') bytes = bytes.subarray(0, change.at % bytes.length);
        else if (change.kind === 'append') bytes = Uint8Array.from([...bytes, ...change.extra]);
        const asked = other ?? h;
        const decoded = decodeBatchFrame(bytes);
        const expected =
          decoded.ok &&
          decoded.value.partitionId === asked.partitionId &&
          decoded.value.mapId === asked.mapId &&
          decoded.value.attemptId === asked.attemptId &&
          decoded.value.batchId === asked.batchId;
        const answer = isFrameOfBatch(bytes, asked.partitionId, asked.mapId, asked.attemptId, asked.batchId);
        assert.equal(
          answer,
          expected,
          `${change.kind}, ${other === undefined ? 'its own fields' : 'other fields'}`,
        );
      }),
      { numRuns: 500 },
    );
  });

  it('reports a torn frame, whatever the cut', () => {
    fc.assert(
      fc.property(header, fc.uint8Array({ minLength: 1, maxLength: 100 }), fc.nat(), (h, p, cut) => {
        const bytes = encodeBatchFrame(h, p);
        const torn = bytes.subarray(0, cut % bytes.length);
        if (torn.length === 0) return; // an empty run is zero frames, not a torn one
        const decoded = decodeBatchFrames(torn);
        assert.ok(!decoded.ok, '!decoded.ok');
        assert.equal(decoded.error.problem, 'TORN');
        assert.match(decoded.error.message, /torn/);
      }),
      { numRuns: 200 },
    );
  });

  it('names each problem clearly', () => {
    const good = encodeBatchFrame(
      { shuffleId: 0, mapId: 0, attemptId: 0, batchId: 0, partitionId: 0, epoch: 0 },
      new Uint8Array([1, 2, 3]),
    );
    const withTrailing = new Uint8Array([...good, 9]);
    const single = decodeBatchFrame(withTrailing);
    assert.ok(!single.ok, '!single.ok');
    assert.equal(single.error.problem, 'TRAILING_BYTES');

    const badMagic = good.slice();
    badMagic[0] = 0;
    const magic = decodeBatchFrame(badMagic);
    assert.ok(!magic.ok, '!magic.ok');
    assert.equal(magic.error.problem, 'BAD_MAGIC');

    const badVersion = good.slice();
    badVersion[4] = 2;
    const version = decodeBatchFrame(badVersion);
    assert.ok(!version.ok, '!version.ok');
    assert.equal(version.error.problem, 'UNSUPPORTED_VERSION');
    assert.match(version.error.message, /version 2/);

    const badPayload = good.slice();
    badPayload[41]! ^= 0xff;
    const crc = decodeBatchFrame(badPayload);
    assert.ok(!crc.ok, '!crc.ok');
    assert.equal(crc.error.problem, 'CRC_MISMATCH');
    assert.match(crc.error.message, /CRC-32/);

    const second = decodeBatchFrames(new Uint8Array([...good, ...badPayload]));
    assert.ok(!second.ok, '!second.ok');
    assert.equal(second.error.offset, good.length);
  });

  it('refuses header fields that do not fit 32 bits', () => {
    const ok = { shuffleId: 0, mapId: 0, attemptId: 0, batchId: 0, partitionId: 0, epoch: 0 };
    assert.throws(() => encodeBatchFrame({ ...ok, batchId: -1 }, new Uint8Array()), /batchId/);
    assert.throws(() => encodeBatchFrame({ ...ok, epoch: 2 ** 32 }, new Uint8Array()), /epoch/);
    assert.throws(() => encodeBatchFrame({ ...ok, mapId: 1.5 }, new Uint8Array()), /mapId/);
  });
});
