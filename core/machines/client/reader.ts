import type { BatchFrame } from '../../protocol/batch-frame.ts';
import type { PartitionWritten } from '../../protocol/messages.ts';
import { checkRecords } from './records.ts';

/**
 * The reader's integrity layer (architecture rule 5), pure: from every frame read for one partition (all epochs,
 * in read order), keep each (map, attempt, batch) once, keep only the winning attempt of each map, check that what
 * is left matches, map by map, the batch and byte counts the winners reported at MapperEnd, and give back the winning
 * batches, each checked to hold whole records (`recordsIn`, ./records.ts, hands the records out as they are asked for).
 * A mismatch is an error naming the map and both counts, never silently short or duplicated data.
 */
export interface PartitionReadInput {
  readonly shuffleId: number;
  readonly partitionId: number;
  readonly frames: readonly BatchFrame[];
  /** The winning attempt of each map (index = mapId; -1: no winner). */
  readonly mapAttempts: readonly number[];
  /** What each winning map attempt wrote to this partition. */
  readonly expected: readonly (PartitionWritten & { readonly mapId: number })[];
  /**
   * false only under the planted bug 'dedupe-disabled': the whole layer (de-duplication, attempt filter, count check)
   * is one defence, and the bug removes it so that the simulator's exactly-once invariant has to catch the result.
   */
  readonly integrity: boolean;
}

export type PartitionReadResult =
  | {
      readonly ok: true;
      /**
       * The winning batches' payloads in (mapId, batchId) order, records in batch order: independent of epochs and
       * copies. Each is a whole number of records.
       */
      readonly batches: readonly Uint8Array[];
      /** How many records they hold. */
      readonly records: number;
      readonly duplicatesDropped: number;
      readonly losingBatchesDropped: number;
    }
  | { readonly ok: false; readonly message: string };

export function assemblePartition(input: PartitionReadInput): PartitionReadResult {
  for (const frame of input.frames) {
    if (frame.shuffleId !== input.shuffleId || frame.partitionId !== input.partitionId) {
      return {
        ok: false,
        message:
          `a batch of shuffle ${frame.shuffleId} partition ${frame.partitionId} (map ${frame.mapId} attempt ` +
          `${frame.attemptId} batch ${frame.batchId}) was found in a file of shuffle ${input.shuffleId} partition ` +
          `${input.partitionId}; the file is not what its location claims`,
      };
    }
  }
  if (!input.integrity) return batchesOf(input.frames, 0, 0);

  const unique = new Map<string, BatchFrame>();
  let duplicates = 0;
  for (const frame of input.frames) {
    const key = `${frame.mapId}/${frame.attemptId}/${frame.batchId}`;
    const seen = unique.get(key);
    if (seen === undefined) {
      unique.set(key, frame);
      continue;
    }
    if (!sameBytes(seen.payload, frame.payload)) {
      return {
        ok: false,
        message: `map ${frame.mapId} attempt ${frame.attemptId} batch ${frame.batchId} was read twice with different contents; one copy is corrupt`,
      };
    }
    duplicates += 1;
  }

  const winners: BatchFrame[] = [];
  let losers = 0;
  for (const frame of unique.values()) {
    if (input.mapAttempts[frame.mapId] === frame.attemptId) winners.push(frame);
    else losers += 1;
  }

  const mismatch = checkCounts(winners, input.expected);
  if (mismatch !== undefined) {
    return {
      ok: false,
      message: `partition ${input.partitionId} of shuffle ${input.shuffleId}: ${mismatch}`,
    };
  }
  winners.sort((a, b) => a.mapId - b.mapId || a.batchId - b.batchId);
  return batchesOf(winners, duplicates, losers);
}

function checkCounts(
  winners: readonly BatchFrame[],
  expected: readonly (PartitionWritten & { readonly mapId: number })[],
): string | undefined {
  const found = new Map<number, { batches: number; bytes: number }>();
  for (const frame of winners) {
    const entry = found.get(frame.mapId) ?? { batches: 0, bytes: 0 };
    found.set(frame.mapId, { batches: entry.batches + 1, bytes: entry.bytes + frame.payload.length });
  }
  const wanted = new Map<number, { batches: number; bytes: number }>();
  for (const entry of expected) {
    if (entry.batches > 0 || entry.bytes > 0) wanted.set(entry.mapId, entry);
  }
  const mapIds = [...new Set([...wanted.keys(), ...found.keys()])].sort((a, b) => a - b);
  for (const mapId of mapIds) {
    const want = wanted.get(mapId) ?? { batches: 0, bytes: 0 };
    const got = found.get(mapId) ?? { batches: 0, bytes: 0 };
    if (want.batches !== got.batches || want.bytes !== got.bytes) {
      return (
        `map ${mapId} reported ${want.batches} batches (${want.bytes} bytes) at MapperEnd but the committed files ` +
        `hold ${got.batches} batches (${got.bytes} bytes) of its winning attempt; data was lost or corrupted ` +
        'between acknowledgement and commit'
      );
    }
  }
  return undefined;
}

function batchesOf(frames: readonly BatchFrame[], duplicates: number, losers: number): PartitionReadResult {
  const batches: Uint8Array[] = [];
  let records = 0;
  for (const frame of frames) {
    const checked = checkRecords(frame.payload);
    if (!checked.ok) {
      return {
        ok: false,
        message: `map ${frame.mapId} attempt ${frame.attemptId} batch ${frame.batchId}: ${checked.message}`,
      };
    }
    batches.push(frame.payload);
    records += checked.count;
  }
  return { ok: true, batches, records, duplicatesDropped: duplicates, losingBatchesDropped: losers };
}

function sameBytes(a: Uint8Array, b: Uint8Array): boolean {
  if (a.length !== b.length) return false;
  for (let i = 0; i < a.length; i += 1) if (a[i] !== b[i]) return false;
  return true;
}
