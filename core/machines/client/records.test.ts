import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import fc from 'fast-check';
import { FRAME_HEADER_BYTES } from '../../protocol/batch-frame.ts';
import {
  checkRecords,
  decodeRecords,
  encodeRecordFrames,
  encodeRecords,
  fillRecordFrame,
  layoutRecordFrames,
  planBatches,
  recordsIn,
} from './records.ts';

const records = fc.array(fc.uint8Array({ maxLength: 40 }), { maxLength: 30 });

describe('records', () => {
  it('packs each record as a big-endian 32-bit length and its bytes', () => {
    const payload = encodeRecords([Uint8Array.of(1, 2), new Uint8Array(0), new Uint8Array(300)]);
    assert.deepEqual([...payload.subarray(0, 10)], [0, 0, 0, 2, 1, 2, 0, 0, 0, 0]);
    assert.deepEqual([...payload.subarray(10, 14)], [0, 0, 1, 44]);
    assert.equal(payload.length, 14 + 300);
  });

  it('encodes several batches into one buffer, each view holding exactly its own records', () => {
    fc.assert(
      fc.property(fc.array(records, { maxLength: 8 }), (batches) => {
        const together = encodeRecordFrames(batches).map((frame) => frame.subarray(FRAME_HEADER_BYTES));
        assert.equal(together.length, batches.length);
        together.forEach((payload, i) => {
          const batch = batches[i]!;
          assert.equal(
            payload.length,
            batch.reduce((sum, record) => sum + 4 + record.length, 0),
          );
          const decoded = decodeRecords(payload);
          assert.ok(decoded.ok, 'decoded.ok');
          assert.deepEqual(
            decoded.records.map((r) => [...r]),
            batch.map((r) => [...r]),
          );
        });
      }),
      { numRuns: 100 },
    );
  });

  it('lays batches out as frames to be sealed: header space, then exactly what encodeRecords gives, in any buffer', () => {
    fc.assert(
      fc.property(fc.array(records, { maxLength: 8 }), fc.integer({ min: 0, max: 255 }), (batches, junk) => {
        let allocated = 0;
        const frames = encodeRecordFrames(batches, (length) => {
          allocated += 1;
          return new Uint8Array(length).fill(junk);
        });
        assert.equal(allocated, 1, 'one buffer for all of them');
        assert.equal(frames.length, batches.length);
        frames.forEach((frame, i) => {
          assert.deepEqual([...frame.subarray(FRAME_HEADER_BYTES)], [...encodeRecords(batches[i]!)]);
        });
      }),
      { numRuns: 100 },
    );
  });

  it('fills laid-out frames in any order, each touching only its own bytes, and refuses records that do not fit', () => {
    fc.assert(
      fc.property(fc.array(records, { minLength: 1, maxLength: 8 }), fc.nat(), (batches, seed) => {
        const buffer = new Uint8Array(
          batches.reduce((n, b) => n + FRAME_HEADER_BYTES + b.reduce((m, r) => m + 4 + r.length, 0), 0),
        );
        const frames = layoutRecordFrames(batches, () => buffer.fill(0xee));
        const order = batches.map((_, i) => i).sort((a, b) => ((a * 7 + seed) % 11) - ((b * 7 + seed) % 11));
        const filled = new Set<number>();
        for (const i of order) {
          fillRecordFrame(frames[i]!, batches[i]!);
          filled.add(i);
          frames.forEach((frame, k) => {
            const payload = frame.subarray(FRAME_HEADER_BYTES);
            if (filled.has(k)) assert.deepEqual([...payload], [...encodeRecords(batches[k]!)]);
            else
              assert.ok(
                payload.every((byte) => byte === 0xee),
                `frame ${k} is untouched until filled`,
              );
          });
        }
        const longer = [...batches[0]!, Uint8Array.of(1)];
        assert.throws(() => fillRecordFrame(frames[0]!, longer), RangeError);
      }),
      { numRuns: 100 },
    );
  });

  it('round-trips any records, empty ones included', () => {
    fc.assert(
      fc.property(records, (rs) => {
        const decoded = decodeRecords(encodeRecords(rs));
        assert.ok(decoded.ok, 'decoded.ok');
        assert.deepEqual(
          decoded.records.map((r) => [...r]),
          rs.map((r) => [...r]),
        );
      }),
      { numRuns: 200 },
    );
  });

  it('hands out the records of several payloads in order, as often as asked, and counts them without making any', () => {
    fc.assert(
      fc.property(fc.array(records, { maxLength: 6 }), (batches) => {
        const payloads = batches.map((batch) => encodeRecords(batch));
        const all = batches.flat().map((r) => [...r]);
        for (const payload of payloads) {
          const checked = checkRecords(payload);
          const decoded = decodeRecords(payload);
          assert.ok(checked.ok && decoded.ok, 'checked.ok && decoded.ok');
          assert.equal(checked.count, decoded.records.length);
        }
        const lazily = recordsIn(payloads);
        assert.deepEqual(
          [...lazily].map((r) => [...r]),
          all,
        );
        assert.deepEqual(
          [...lazily].map((r) => [...r]),
          all,
          'a second iteration starts over',
        );
        for (const record of lazily) {
          assert.ok(
            payloads.some((payload) => payload.buffer === record.buffer),
            'a view, not a copy',
          );
        }
      }),
      { numRuns: 200 },
    );
  });

  it('reports a payload that is cut short', () => {
    const payload = encodeRecords([new Uint8Array([1, 2, 3])]);
    const cut = decodeRecords(payload.subarray(0, 5));
    assert.ok(!cut.ok, '!cut.ok');
    assert.match(cut.message, /announces 3 bytes but 1 remain/);
    const short = decodeRecords(payload.subarray(0, 2));
    assert.ok(!short.ok, '!short.ok');
    assert.deepEqual(checkRecords(payload.subarray(0, 5)), cut);
    const shortChecked = checkRecords(payload.subarray(0, 2));
    assert.ok(!shortChecked.ok, '!shortChecked.ok');
    assert.match(shortChecked.message, /cut short/);
  });

  it('batches keep every record in order, respect the size limit, and are never empty', () => {
    fc.assert(
      fc.property(records, fc.integer({ min: 1, max: 100 }), (rs, limit) => {
        const batches = planBatches(rs, limit);
        assert.deepEqual(batches.flat(), rs);
        for (const batch of batches) {
          assert.ok(batch.length > 0, 'batch.length > 0');
          const size = encodeRecords(batch).length;
          assert.ok(size <= limit || batch.length === 1, `batch of ${size} bytes over ${limit}`);
        }
      }),
      { numRuns: 200 },
    );
    assert.throws(() => planBatches([], 0), /batch size must be positive/);
  });
});
