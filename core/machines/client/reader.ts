import type { BatchFrame } from '../../protocol/batch-frame.ts';
import type { PartitionWritten } from '../../protocol/messages.ts';
import { checkRecords } from './records.ts';

/**
 * The reader's integrity layer (architecture rule 5), pure and incremental, so that a reduce task can hand records
 * out chunk by chunk while it reads: each chunk's frames are admitted as they arrive (`admitFrames`): each
 * (map, attempt, batch) is kept once across the whole partition (every epoch and copy), only the winning attempt of
 * each map is kept, and every kept batch is checked to hold whole records before any of its records goes out. Once
 * every chunk was admitted, `checkWinnerCounts` compares, map by map, the batch and byte counts handed out with what
 * the winners reported at MapperEnd. A mismatch is an error naming the map and both counts, never silently short or
 * duplicated data (the reader's consumer has seen records by then: the read fails, and the engine retries the task).
 *
 * The ledger remembers one small entry per batch seen (its key, length, epoch and CRC), never a payload: memory is
 * bounded by the partition's batch count, not its bytes.
 */
export interface PartitionIdentity {
  readonly shuffleId: number;
  readonly partitionId: number;
  /** The winning attempt of each map (index = mapId; -1: no winner). */
  readonly mapAttempts: readonly number[];
  /**
   * false only under the planted bug 'dedupe-disabled': the whole layer (de-duplication, attempt filter, count check)
   * is one defence, and the bug removes it so that the simulator's exactly-once invariant has to catch the result.
   */
  readonly integrity: boolean;
}

interface SeenBatch {
  readonly epoch: number;
  readonly length: number;
  readonly crc: number | undefined;
}

/** What a reduce task has admitted so far; owned by the task's state and updated in place (machine.ts). */
export interface IntegrityLedger {
  /** `map/attempt/batch` → the first copy admitted. */
  readonly seen: Map<string, SeenBatch>;
  /** Winning batches and payload bytes handed out, by mapId. */
  readonly handedOut: Map<number, { batches: number; bytes: number }>;
  duplicatesDropped: number;
  losingBatchesDropped: number;
  records: number;
}

export function newLedger(): IntegrityLedger {
  return { seen: new Map(), handedOut: new Map(), duplicatesDropped: 0, losingBatchesDropped: 0, records: 0 };
}

export type AdmittedFrames =
  | {
      readonly ok: true;
      /** The winning batches among the frames, new to the partition, in the frames' order; each whole records. */
      readonly batches: readonly Uint8Array[];
      readonly records: number;
    }
  | { readonly ok: false; readonly message: string };

/** Admits one chunk's frames (already CRC-checked by decodeBatchFrames): what of them may go out, or why none may. */
export function admitFrames(
  ledger: IntegrityLedger,
  identity: PartitionIdentity,
  frames: readonly BatchFrame[],
): AdmittedFrames {
  const batches: Uint8Array[] = [];
  let records = 0;
  for (const frame of frames) {
    if (frame.shuffleId !== identity.shuffleId || frame.partitionId !== identity.partitionId) {
      return {
        ok: false,
        message:
          `a batch of shuffle ${frame.shuffleId} partition ${frame.partitionId} (map ${frame.mapId} attempt ` +
          `${frame.attemptId} batch ${frame.batchId}) was found in a file of shuffle ${identity.shuffleId} partition ` +
          `${identity.partitionId}; the file is not what its location claims`,
      };
    }
    if (identity.integrity) {
      const key = `${frame.mapId}/${frame.attemptId}/${frame.batchId}`;
      const seen = ledger.seen.get(key);
      if (seen !== undefined) {
        if (!sameBatch(seen, frame)) {
          return {
            ok: false,
            message: `map ${frame.mapId} attempt ${frame.attemptId} batch ${frame.batchId} was read twice with different contents; one copy is corrupt`,
          };
        }
        ledger.duplicatesDropped += 1;
        continue;
      }
      ledger.seen.set(key, { epoch: frame.epoch, length: frame.payload.length, crc: frame.crc });
      if (identity.mapAttempts[frame.mapId] !== frame.attemptId) {
        ledger.losingBatchesDropped += 1;
        continue;
      }
    }
    const checked = checkRecords(frame.payload);
    if (!checked.ok) {
      return {
        ok: false,
        message: `map ${frame.mapId} attempt ${frame.attemptId} batch ${frame.batchId}: ${checked.message}`,
      };
    }
    const entry = ledger.handedOut.get(frame.mapId);
    if (entry === undefined) ledger.handedOut.set(frame.mapId, { batches: 1, bytes: frame.payload.length });
    else {
      entry.batches += 1;
      entry.bytes += frame.payload.length;
    }
    batches.push(frame.payload);
    records += checked.count;
  }
  ledger.records += records;
  return { ok: true, batches, records };
}

/**
 * Two copies of one batch: the same length, and, when both were decoded from the same epoch (identical headers), the
 * same stored CRC. Copies of different epochs (a batch resent after a revive) differ in their headers, so their CRCs
 * cannot be compared; each was checked against its own CRC when decoded.
 */
function sameBatch(seen: SeenBatch, frame: BatchFrame): boolean {
  if (seen.length !== frame.payload.length) return false;
  if (seen.epoch !== frame.epoch || seen.crc === undefined || frame.crc === undefined) return true;
  return seen.crc === frame.crc;
}

/**
 * The count check once every chunk was admitted: undefined when each winning map's batches and bytes handed out are
 * what it reported at MapperEnd, else why not. Skipped (undefined) without the integrity layer.
 */
export function checkWinnerCounts(
  ledger: IntegrityLedger,
  identity: PartitionIdentity,
  expected: readonly (PartitionWritten & { readonly mapId: number })[],
): string | undefined {
  if (!identity.integrity) return undefined;
  const wanted = new Map<number, { batches: number; bytes: number }>();
  for (const entry of expected) {
    if (entry.batches > 0 || entry.bytes > 0) wanted.set(entry.mapId, entry);
  }
  const mapIds = [...new Set([...wanted.keys(), ...ledger.handedOut.keys()])].sort((a, b) => a - b);
  for (const mapId of mapIds) {
    const want = wanted.get(mapId) ?? { batches: 0, bytes: 0 };
    const got = ledger.handedOut.get(mapId) ?? { batches: 0, bytes: 0 };
    if (want.batches !== got.batches || want.bytes !== got.bytes) {
      return (
        `partition ${identity.partitionId} of shuffle ${identity.shuffleId}: map ${mapId} reported ` +
        `${want.batches} batches (${want.bytes} bytes) at MapperEnd but the committed files hold ${got.batches} ` +
        `batches (${got.bytes} bytes) of its winning attempt; data was lost or corrupted between acknowledgement ` +
        'and commit'
      );
    }
  }
  return undefined;
}
