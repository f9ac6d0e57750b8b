import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import fc from 'fast-check';
import { decodeBatchFrame, encodeBatchFrame, type BatchFrame } from '../../protocol/batch-frame.ts';
import { admitFrames, checkWinnerCounts, newLedger } from './reader.ts';
import type { PartitionWritten } from '../../protocol/messages.ts';
import { encodeRecords, recordsIn } from './records.ts';

/** A map attempt's batches for partition 7: batch b holds the records `m<map>a<attempt>b<b>r<i>`. */
function batches(mapId: number, attemptId: number, count: number, recordsPer: number): BatchFrame[] {
  return Array.from({ length: count }, (_, batchId) => ({
    shuffleId: 1,
    mapId,
    attemptId,
    batchId,
    partitionId: 7,
    epoch: 0,
    payload: encodeRecords(
      Array.from({ length: recordsPer }, (_, i) =>
        new TextEncoder().encode(`m${mapId}a${attemptId}b${batchId}r${i}`),
      ),
    ),
  }));
}

const text = (records: readonly Uint8Array[]) => records.map((r) => new TextDecoder().decode(r));

const scenario = fc
  .array(
    fc.record({
      attempts: fc.integer({ min: 1, max: 3 }),
      winner: fc.nat(2),
      batches: fc.array(fc.integer({ min: 0, max: 3 }), { minLength: 3, maxLength: 3 }),
    }),
    { minLength: 1, maxLength: 4 },
  )
  .map((maps) =>
    maps.map((m) => ({ ...m, winner: m.winner % m.attempts, batches: m.batches.slice(0, m.attempts) })),
  );

interface PartitionReadInput {
  readonly shuffleId: number;
  readonly partitionId: number;
  readonly frames: readonly BatchFrame[];
  readonly mapAttempts: readonly number[];
  readonly expected: readonly (PartitionWritten & { readonly mapId: number })[];
  readonly integrity: boolean;
}

/** Admits the frames chunk by chunk (`perChunk` frames each), then runs the count check. */
function assemblePartition(input: PartitionReadInput, perChunk = 3) {
  const ledger = newLedger();
  const batches: Uint8Array[] = [];
  for (let i = 0; i < input.frames.length; i += perChunk) {
    const admitted = admitFrames(ledger, input, input.frames.slice(i, i + perChunk));
    if (!admitted.ok) return admitted;
    batches.push(...admitted.batches);
  }
  const mismatch = checkWinnerCounts(ledger, input, input.expected);
  if (mismatch !== undefined) return { ok: false as const, message: mismatch };
  return { ok: true as const, batches, records: ledger.records };
}

function inputOf(
  maps: readonly { attempts: number; winner: number; batches: readonly number[] }[],
  frames: readonly BatchFrame[],
): PartitionReadInput {
  return {
    shuffleId: 1,
    partitionId: 7,
    frames,
    mapAttempts: maps.map((m) => m.winner),
    expected: maps.map((m, mapId) => {
      const winning = batches(mapId, m.winner, m.batches[m.winner]!, 2);
      return {
        mapId,
        partitionId: 7,
        batches: winning.length,
        bytes: winning.reduce((n, f) => n + f.payload.length, 0),
      };
    }),
    integrity: true,
  };
}

describe('reader integrity layer', () => {
  it('gives exactly the winning attempts’ records, once, whatever the duplicates, losers, order and chunking', () => {
    fc.assert(
      fc.property(
        scenario,
        fc.array(fc.nat(), { maxLength: 20 }),
        fc.nat(),
        fc.integer({ min: 1, max: 5 }),
        (maps, duplicates, seed, perChunk) => {
          const all = maps.flatMap((m, mapId) =>
            m.batches.flatMap((count, attemptId) => batches(mapId, attemptId, count, 2)),
          );
          const frames = [
            ...all,
            ...duplicates.filter(() => all.length > 0).map((d) => ({ ...all[d % all.length]!, epoch: 1 })),
          ];
          // A deterministic shuffle of the read order.
          const order = frames
            .map((f, i) => ({ f, k: (i * 7919 + seed) % 104729 }))
            .sort((a, b) => a.k - b.k);
          const result = assemblePartition(
            inputOf(
              maps,
              order.map((o) => o.f),
            ),
            perChunk,
          );
          assert.ok(result.ok, result.ok ? '' : result.message);
          const expected = maps.flatMap((m, mapId) =>
            Array.from({ length: m.batches[m.winner]! }, (_, b) => [
              `m${mapId}a${m.winner}b${b}r0`,
              `m${mapId}a${m.winner}b${b}r1`,
            ]).flat(),
          );
          // Records come out in read order: compare as sorted lists (order across maps is no guarantee).
          assert.deepEqual(text([...recordsIn(result.batches)]).sort(), [...expected].sort());
          assert.equal(result.records, expected.length);
        },
      ),
      { numRuns: 200 },
    );
  });

  it('fails, naming the map, when a winning batch is missing or extra', () => {
    const maps = [{ attempts: 1, winner: 0, batches: [2] }];
    const frames = batches(0, 0, 2, 2);
    const missing = assemblePartition(inputOf(maps, frames.slice(1)));
    assert.ok(!missing.ok, '!missing.ok');
    assert.match(
      missing.message,
      /map 0 reported 2 batches \(\d+ bytes\) at MapperEnd but the committed files hold 1 batches/,
    );
    const extra = assemblePartition({ ...inputOf(maps, frames), expected: [] });
    assert.ok(!extra.ok, '!extra.ok');
    assert.match(extra.message, /map 0 reported 0 batches/);
  });

  it('fails on a batch read twice with different contents, and on a frame of another partition', () => {
    const maps = [{ attempts: 1, winner: 0, batches: [1] }];
    const [frame] = batches(0, 0, 1, 2);
    const forged = { ...frame!, payload: encodeRecords([new Uint8Array([9])]) };
    const twice = assemblePartition(inputOf(maps, [frame!, forged]));
    assert.ok(!twice.ok, '!twice.ok');
    assert.match(twice.message, /read twice with different contents/);
    const stranger = assemblePartition(inputOf(maps, [{ ...frame!, partitionId: 8 }]));
    assert.ok(!stranger.ok, '!stranger.ok');
    assert.match(stranger.message, /partition 8 .* was found in a file of shuffle 1 partition 7/);
  });

  it('tells two decoded copies of a batch apart by their stored CRC when they are of the same epoch', () => {
    const header = { shuffleId: 1, mapId: 0, attemptId: 0, batchId: 0, partitionId: 7 };
    const decode = (epoch: number, record: string) => {
      const decoded = decodeBatchFrame(
        encodeBatchFrame({ ...header, epoch }, encodeRecords([new TextEncoder().encode(record)])),
      );
      assert.ok(decoded.ok, 'decoded.ok');
      return decoded.value;
    };
    const maps = [{ attempts: 1, winner: 0, batches: [1] }];
    const sameEpoch = assemblePartition(inputOf(maps, [decode(0, 'aaaa'), decode(0, 'aaab')]), 1);
    assert.ok(!sameEpoch.ok, '!sameEpoch.ok');
    assert.match(sameEpoch.message, /read twice with different contents/);
    // The same batch resent under a new epoch: its header (and so its CRC) differs, its contents do not.
    const identity = { shuffleId: 1, partitionId: 7, mapAttempts: [0], integrity: true };
    const ledger = newLedger();
    assert.ok(
      admitFrames(ledger, identity, [decode(0, 'aaaa')]).ok,
      "admitFrames(ledger, identity, [decode(0, 'aaaa')]).ok",
    );
    const again = admitFrames(ledger, identity, [decode(1, 'aaaa'), decode(0, 'aaaa')]);
    assert.ok(again.ok, 'again.ok');
    assert.equal(again.batches.length, 0);
    assert.equal(ledger.duplicatesDropped, 2);
  });

  it('without the integrity layer (planted bug), hands out duplicates and losers as they come', () => {
    const maps = [{ attempts: 2, winner: 1, batches: [1, 1] }];
    const frames = [...batches(0, 0, 1, 1), ...batches(0, 1, 1, 1), ...batches(0, 1, 1, 1)];
    const result = assemblePartition({ ...inputOf(maps, frames), integrity: false });
    assert.ok(result.ok, 'result.ok');
    assert.deepEqual(text([...recordsIn(result.batches)]), ['m0a0b0r0', 'm0a1b0r0', 'm0a1b0r0']);
  });
});
