import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import fc from 'fast-check';
import { decodeRecords, encodeRecordBatches, encodeRecords, planBatches } from './records.ts';

const records = fc.array(fc.uint8Array({ maxLength: 40 }), { maxLength: 30 });

describe('records', () => {
  it('encodes several batches into one buffer exactly as one by one', () => {
    fc.assert(
      fc.property(fc.array(records, { maxLength: 8 }), (batches) => {
        const together = encodeRecordBatches(batches);
        assert.equal(together.length, batches.length);
        together.forEach((payload, i) => assert.deepEqual([...payload], [...encodeRecords(batches[i]!)]));
      }),
      { numRuns: 100 },
    );
  });

  it('round-trips any records, empty ones included', () => {
    fc.assert(
      fc.property(records, (rs) => {
        const decoded = decodeRecords(encodeRecords(rs));
        assert.ok(decoded.ok);
        assert.deepEqual(
          decoded.records.map((r) => [...r]),
          rs.map((r) => [...r]),
        );
      }),
      { numRuns: 200 },
    );
  });

  it('reports a payload that is cut short', () => {
    const payload = encodeRecords([new Uint8Array([1, 2, 3])]);
    const cut = decodeRecords(payload.subarray(0, 5));
    assert.ok(!cut.ok);
    assert.match(cut.message, /announces 3 bytes but 1 remain/);
    const short = decodeRecords(payload.subarray(0, 2));
    assert.ok(!short.ok);
  });

  it('batches keep every record in order, respect the size limit, and are never empty', () => {
    fc.assert(
      fc.property(records, fc.integer({ min: 1, max: 100 }), (rs, limit) => {
        const batches = planBatches(rs, limit);
        assert.deepEqual(batches.flat(), rs);
        for (const batch of batches) {
          assert.ok(batch.length > 0);
          const size = encodeRecords(batch).length;
          assert.ok(size <= limit || batch.length === 1, `batch of ${size} bytes over ${limit}`);
        }
      }),
      { numRuns: 200 },
    );
    assert.throws(() => planBatches([], 0), /batch size must be positive/);
  });
});
