// The demo's record generator: deterministic, shaped as its spec says, and its digests (computed without any data
// plane) equal the digests of the generated records regrouped by partition in any order.
import assert from 'node:assert/strict';
import { createHash } from 'node:crypto';
import { describe, it } from 'node:test';
import fc from 'fast-check';
import {
  datasetProblem,
  expectedDigests,
  generateMap,
  groupAndDigest,
  partitionOfKey,
  recordsOfMap,
  totalRecords,
  type DatasetSpec,
} from './records.ts';

const SPEC: fc.Arbitrary<DatasetSpec> = fc
  .record({
    seed: fc.nat(1_000),
    maps: fc.integer({ min: 1, max: 5 }),
    reduces: fc.integer({ min: 1, max: 9 }),
    distinctKeys: fc.integer({ min: 1, max: 300 }),
    extraKeyBytes: fc.nat(6),
    valueBytes: fc.nat(40),
    records: fc.integer({ min: 0, max: 400 }),
  })
  .map(({ extraKeyBytes, records, ...rest }) => {
    const keyBytes = 1 + String(rest.distinctKeys - 1).length + extraKeyBytes;
    const totalBytes = (records + rest.maps) * (keyBytes + rest.valueBytes);
    return { ...rest, keyBytes, totalBytes };
  });

/** Every record of the spec, as copies, with the partition the generator gave it. */
function allRecords(spec: DatasetSpec): { record: Uint8Array; partition: number }[] {
  const out: { record: Uint8Array; partition: number }[] = [];
  for (let mapId = 0; mapId < spec.maps; mapId += 1) {
    generateMap(spec, mapId, (chunk) => {
      for (let i = 0; i < chunk.count; i += 1) {
        const at = i * chunk.recordBytes;
        out.push({
          record: Uint8Array.from(chunk.bytes.subarray(at, at + chunk.recordBytes)),
          partition: chunk.partitions[i]!,
        });
      }
    });
  }
  return out;
}

/** Three maps of 1 MiB of 108-byte records. */
const THREE_MAPS: DatasetSpec = {
  seed: 7,
  totalBytes: 3 << 20,
  maps: 3,
  reduces: 4,
  keyBytes: 8,
  valueBytes: 100,
  distinctKeys: 50,
};

describe('the demo record generator', () => {
  it('generates valid specs only', () => {
    fc.assert(fc.property(SPEC, (spec) => datasetProblem(spec) === undefined));
    const ok: DatasetSpec = {
      seed: 1,
      totalBytes: 1 << 20,
      maps: 2,
      reduces: 3,
      keyBytes: 8,
      valueBytes: 8,
      distinctKeys: 10,
    };
    assert.equal(datasetProblem(ok), undefined);
    assert.match(datasetProblem({ ...ok, keyBytes: 2, distinctKeys: 1000 }) ?? '', /needs at least 4 bytes/);
    assert.match(datasetProblem({ ...ok, totalBytes: 16 }) ?? '', /fewer than one per map/);
    assert.match(datasetProblem({ ...ok, reduces: 0 }) ?? '', /reduces/);
  });

  it('gives each map its share of the records, and each record the partition of its key', () => {
    fc.assert(
      fc.property(SPEC, (spec) => {
        const all = allRecords(spec);
        assert.equal(all.length, totalRecords(spec));
        let sum = 0;
        for (let m = 0; m < spec.maps; m += 1) sum += recordsOfMap(spec, m);
        assert.equal(sum, totalRecords(spec));
        for (const { record, partition } of all) {
          assert.equal(record.byteLength, spec.keyBytes + spec.valueBytes);
          assert.equal(partition, partitionOfKey(record.subarray(0, spec.keyBytes), spec.reduces));
          assert.match(Buffer.from(record.subarray(0, spec.keyBytes)).toString('latin1'), /^k\d+$/);
        }
      }),
      { numRuns: 40 },
    );
  });

  it('generates the same records for the same seed and map, and others for another seed', () => {
    const spec = THREE_MAPS;
    const bytesOf = (s: DatasetSpec, mapId: number) => {
      const chunks: Buffer[] = [];
      generateMap(s, mapId, (chunk) => chunks.push(chunk.bytes));
      return Buffer.concat(chunks);
    };
    assert.ok(bytesOf(spec, 1).equals(bytesOf(spec, 1)), 'bytesOf(spec, 1).equals(bytesOf(spec, 1))');
    assert.ok(!bytesOf(spec, 1).equals(bytesOf(spec, 2)), '!bytesOf(spec, 1).equals(bytesOf(spec, 2))');
    assert.ok(
      !bytesOf(spec, 1).equals(bytesOf({ ...spec, seed: 8 }, 1)),
      '!bytesOf(spec, 1).equals(bytesOf({ ...spec, seed: 8 }, 1))',
    );
  });

  it('generates, for a seed, the bytes it generated when the demo was released (pinned digests)', () => {
    // A seed names one dataset across releases and machines: a faster generator must make the same bytes.
    const digestOfMap = (spec: DatasetSpec, mapId: number) => {
      const hash = createHash('sha256');
      generateMap(spec, mapId, (chunk) => {
        hash.update(chunk.bytes);
        hash.update(
          Buffer.from(chunk.partitions.buffer, chunk.partitions.byteOffset, chunk.partitions.byteLength),
        );
      });
      return hash.digest('hex');
    };
    assert.equal(
      digestOfMap(THREE_MAPS, 1),
      'cd6b5253c5b899101fe6400fe2be936f6ab08418728c7e4a66b2f8c6dceb62b0',
    );
    // Records shorter than their key's four-byte draw take the draws from bytes of their own.
    const tiny = {
      seed: 9,
      totalBytes: 5000,
      maps: 2,
      reduces: 3,
      keyBytes: 2,
      valueBytes: 0,
      distinctKeys: 10,
    };
    assert.equal(digestOfMap(tiny, 1), 'e3c7cd4a858530038cd6aec1939f2930036e6e19fbbd2df4e9e80892dc7f1257');
  });

  it('computes per-partition digests equal to those of the records regrouped by partition in any order', () => {
    fc.assert(
      fc.property(SPEC, fc.nat(), (spec, shuffleSeed) => {
        const byPartition: Uint8Array[][] = Array.from({ length: spec.reduces }, () => []);
        for (const { record, partition } of allRecords(spec)) byPartition[partition]!.push(record);
        const expected = expectedDigests(spec);
        for (let p = 0; p < spec.reduces; p += 1) {
          // Any order: a seeded shuffle of the partition's records (Fisher–Yates with a small LCG).
          const records = [...byPartition[p]!];
          let state = (shuffleSeed + p) >>> 0;
          for (let i = records.length - 1; i > 0; i -= 1) {
            state = (Math.imul(state, 1_664_525) + 1_013_904_223) >>> 0;
            const j = state % (i + 1);
            [records[i], records[j]] = [records[j]!, records[i]!];
          }
          assert.deepEqual(groupAndDigest(records, spec.keyBytes).digest, expected[p]);
        }
      }),
      { numRuns: 40 },
    );
  });

  it('groups records by their key’s bytes, whether the key is one the generator makes or any other', () => {
    const byte = fc.constantFrom(...'k0123456789x/'.split('').map((c) => c.charCodeAt(0)));
    fc.assert(
      fc.property(
        fc.integer({ min: 1, max: 18 }),
        fc.array(fc.array(byte, { maxLength: 20 }), { maxLength: 60 }),
        (keyBytes, raw) => {
          // Most keys look like the generator's: `k`, then digits; the others differ in a byte or their length.
          const records = raw.map((bytes, i) =>
            Uint8Array.from(i % 3 === 0 ? bytes : [0x6b, ...bytes.map((b) => (b === 0x6b ? 0x35 : b))]),
          );
          const byText = new Map<string, number>();
          for (const record of records) {
            const key = Buffer.from(record.subarray(0, keyBytes)).toString('latin1');
            byText.set(key, (byText.get(key) ?? 0) + 1);
          }
          const { digest, largestGroup } = groupAndDigest(records, keyBytes);
          assert.equal(digest.keys, byText.size, 'as many groups as distinct key texts');
          assert.equal(largestGroup, Math.max(0, ...byText.values()));
        },
      ),
      { numRuns: 300 },
    );
    // A byte past '9' is not a digit: `k1x` (1 * 10 + 72 if it were) is not `k82`.
    const text = (t: string) => Uint8Array.from(Buffer.from(t, 'latin1'));
    assert.equal(groupAndDigest([text('k82'), text('k1x'), text('k82')], 3).digest.keys, 2);
  });

  it('tells a missing, duplicated or altered record from the expected digest', () => {
    const spec: DatasetSpec = {
      seed: 3,
      totalBytes: 64 << 10,
      maps: 2,
      reduces: 3,
      keyBytes: 6,
      valueBytes: 58,
      distinctKeys: 500,
    };
    const partition0 = allRecords(spec)
      .filter((r) => r.partition === 0)
      .map((r) => r.record);
    const expected = expectedDigests(spec)[0]!;
    const digest = (records: Uint8Array[]) => groupAndDigest(records, spec.keyBytes).digest;
    assert.deepEqual(digest(partition0), expected);
    assert.notDeepEqual(digest(partition0.slice(1)), expected);
    assert.notDeepEqual(digest([...partition0, partition0[0]!]), expected);
    const altered = partition0.map((r) => Uint8Array.from(r));
    altered[0]![spec.keyBytes] = altered[0]![spec.keyBytes]! ^ 1;
    assert.notDeepEqual(digest(altered), expected);
  });
});
