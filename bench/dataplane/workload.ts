/**
 * What a push moves, and the bare baselines' byte stream built from it with svc's own encoders, so that a bare sink
 * receives the same frames a worker does: each batch laid out behind header space in an unzeroed buffer of its own
 * (core/machines/client/records.ts `layoutRecordFrames`), filled with its records (`fillRecordFrame`) and sealed
 * in place with its header and CRC-32 when sent (core/protocol/batch-frame.ts `sealBatchFrame`), as the map task
 * does, and frames carried in PushData or PushMergedData envelopes (runtime/wire encodeEnvelope: length prefix,
 * kind, control part, raw payloads), merged the way the map task merges them (one message per worker holds frames of
 * at most the merge size in all; a larger frame travels alone).
 */
import { randomBytes, randomFillSync } from 'node:crypto';
import { shuffleKey } from '../../core/domain/ids.ts';
import { fillRecordFrame, layoutRecordFrames, planBatches } from '../../core/machines/client/records.ts';
import { sealBatchFrame } from '../../core/protocol/batch-frame.ts';
import type { Message } from '../../core/protocol/messages.ts';
import { mapTaskNodeId } from '../../core/protocol/node-ids.ts';
import { unzeroedBytes } from '../../runtime/unzeroed-bytes.ts';
import { encodeEnvelope } from '../../runtime/wire/index.ts';

export interface Workload {
  readonly maps: number;
  readonly partitions: number;
  /** Bytes of each record. */
  readonly recordBytes: number;
  /** Records each map writes to each partition. */
  readonly recordsPerPartition: number;
  /** `svc.client.push.buffer.max.size`: the largest batch payload. */
  readonly batchBytes: number;
  /** `svc.client.push.merge.maxSize`: the most frame bytes of one merged push. */
  readonly mergeBytes: number;
  /** Fill each map's records afresh with random bytes (as a job generates them) instead of reusing one pool. */
  readonly generate?: boolean;
  /** The maps this process runs (default: all of them). */
  readonly mapIds?: readonly number[];
  /**
   * svc's maps write record i to partition i mod partitions (a map hashing its records) instead of partition after
   * partition (a sorting writer). The bare stream is the same full batches either way.
   */
  readonly spread?: boolean;
}

/** A workload of about `totalBytes` of records in maps of about `mapBytes` each. */
export function workloadOf(options: {
  totalBytes: number;
  mapBytes: number;
  partitions: number;
  recordBytes: number;
  batchBytes: number;
  mergeBytes: number;
  spread?: boolean;
}): Workload {
  const maps = Math.max(1, Math.round(options.totalBytes / options.mapBytes));
  const recordsPerPartition = Math.max(
    1,
    Math.floor(options.totalBytes / maps / options.partitions / options.recordBytes),
  );
  return {
    maps,
    partitions: options.partitions,
    recordBytes: options.recordBytes,
    recordsPerPartition,
    batchBytes: options.batchBytes,
    mergeBytes: options.mergeBytes,
    ...(options.spread === true ? { spread: true } : {}),
  };
}

export function mapIdsOf(workload: Workload): readonly number[] {
  return workload.mapIds ?? Array.from({ length: workload.maps }, (_, m) => m);
}

/** Record bytes the workload's maps (this process's, when `mapIds` is set) write. */
export function recordBytesOf(workload: Workload): number {
  return (
    mapIdsOf(workload).length * workload.partitions * workload.recordsPerPartition * workload.recordBytes
  );
}

export function describeWorkload(workload: Workload): string {
  const mib = (recordBytesOf({ ...workload, mapIds: undefined }) / 2 ** 20).toFixed(0);
  return (
    `${mib} MiB: ${workload.maps} maps x ${workload.partitions} partitions x ${workload.recordsPerPartition} ` +
    `records of ${workload.recordBytes} B, batches of at most ${workload.batchBytes} B` +
    (workload.spread === true ? ', svc maps spreading their records over the partitions' : '')
  );
}

const POOL_RECORDS = 4096;

/**
 * The records of one map: each a view made when it is asked for (`record`), as an application hands a writer a
 * record it has just serialised, so that a record is young garbage once written. Views of a whole map made up front
 * (131,072 per 128 MiB map, about 14 MB of objects) outlived two scavenges each and were promoted, a cost of the
 * benchmark's and not of either side's: it took the replicated push's svc client 0.4 s of collection per GiB
 * (docs/performance.md, "Today's figures").
 */
export class MapRecords {
  constructor(
    private readonly bytes: Uint8Array,
    private readonly firstRecord: number,
    private readonly workload: Workload,
  ) {}

  /** Record `i` of partition `p`. */
  record(p: number, i: number): Uint8Array {
    const { recordsPerPartition, recordBytes } = this.workload;
    const index = (this.firstRecord + p * recordsPerPartition + i) % (this.bytes.length / recordBytes);
    return this.bytes.subarray(index * recordBytes, (index + 1) * recordBytes);
  }
}

/** Where the records of a map come from: one random pool, or a freshly filled buffer per map. */
export class RecordSource {
  private readonly pool: Uint8Array;

  constructor(private readonly workload: Workload) {
    this.pool =
      workload.generate === true ? new Uint8Array(0) : randomBytes(POOL_RECORDS * workload.recordBytes);
  }

  recordsOf(mapId: number): MapRecords {
    const { partitions, recordsPerPartition, recordBytes } = this.workload;
    if (this.workload.generate === true) {
      const bytes = new Uint8Array(partitions * recordsPerPartition * recordBytes);
      randomFillSync(bytes);
      return new MapRecords(bytes, 0, this.workload);
    }
    return new MapRecords(
      this.pool,
      (mapId * partitions * recordsPerPartition) % POOL_RECORDS,
      this.workload,
    );
  }
}

/** Names on the bare stream, shaped like svc's (the control part's size depends on them). */
export interface StreamNames {
  readonly appId: string;
  readonly shuffleId: number;
  /** The node id each sink stands for (a worker's is host:rpc:push:fetch:replicate). */
  readonly sinkNodeIds: readonly string[];
}

export interface StreamMessage {
  readonly sink: number;
  /** One frame as pieces (head, then the raw payloads), as runtime/transport writes it. */
  readonly pieces: Uint8Array[];
  readonly bytes: number;
  readonly batches: number;
}

/**
 * The push messages of one map, in the order a map task sends them: the first batch of every partition, then the
 * second, and so on (one batch in flight per partition), the batches of one round for one sink merged up to the
 * merge size. Encoding happens as the generator is pulled, as the map task frames each step's batches when it
 * sends them.
 */
export function* mapMessages(
  workload: Workload,
  records: MapRecords,
  mapId: number,
  names: StreamNames,
  requestIds: { next: number },
): Generator<StreamMessage> {
  const { appId, shuffleId, sinkNodeIds } = names;
  const attemptId = 0;
  const cap = workload.mergeBytes;
  // Every partition's records have one size, so one partition's plan (core's rule, one view standing for each
  // record) is every partition's.
  const sample = records.record(0, 0);
  const batchSizes = planBatches(
    Array.from({ length: workload.recordsPerPartition }, () => sample),
    workload.batchBytes,
  ).map((batch) => batch.length);
  const batchesPerPartition = batchSizes.length;
  // As the map task does (core/machines/client/map-task.ts): each batch's frame an unzeroed buffer of its own,
  // filled with its records when the batch is cut and sealed in place when sent.
  const firstBatch = (partitionId: number) => partitionId * batchesPerPartition;
  const rounds = batchesPerPartition;
  const from = mapTaskNodeId(appId, shuffleId, mapId, attemptId);
  const key = shuffleKey(appId, shuffleId);
  const sinks = sinkNodeIds.length;
  for (let round = 0; round < rounds; round += 1) {
    for (let sink = 0; sink < sinks; sink += 1) {
      const partitionIds: number[] = [];
      for (let p = sink; p < workload.partitions; p += sinks) partitionIds.push(p);
      if (partitionIds.length === 0) continue;
      const framed = partitionIds.map((partitionId) => {
        const first = round * batchSizes[0]!;
        const batch = Array.from({ length: batchSizes[round]! }, (_, j) =>
          records.record(partitionId, first + j),
        );
        const frame = layoutRecordFrames([batch], unzeroedBytes)[0]!;
        fillRecordFrame(frame, batch);
        return sealBatchFrame(frame, {
          shuffleId,
          mapId,
          attemptId,
          batchId: firstBatch(partitionId) + round,
          partitionId,
          epoch: 0,
        });
      });
      let group: number[] = [];
      let bytes = 0;
      const emit = (): StreamMessage => {
        const message: Message =
          group.length === 1
            ? {
                type: 'PushData',
                shuffleKey: key,
                mode: 'PRIMARY',
                partitionId: partitionIds[group[0]!]!,
                epoch: 0,
                mapId,
                attemptId,
                batchId: firstBatch(partitionIds[group[0]!]!) + round,
                payload: framed[group[0]!]!,
              }
            : {
                type: 'PushMergedData',
                shuffleKey: key,
                mode: 'PRIMARY',
                mapId,
                attemptId,
                batches: group.map((i) => ({
                  partitionId: partitionIds[i]!,
                  epoch: 0,
                  batchId: firstBatch(partitionIds[i]!) + round,
                  payload: framed[i]!,
                })),
              };
        const pieces = encodeEnvelope({
          from,
          to: sinkNodeIds[sink]!,
          requestId: requestIds.next++,
          message,
        });
        let size = 0;
        for (const piece of pieces) size += piece.byteLength;
        return { sink, pieces, bytes: size, batches: group.length };
      };
      for (let i = 0; i < framed.length; i += 1) {
        const length = framed[i]!.length;
        if (group.length > 0 && bytes + length > cap) {
          yield emit();
          group = [];
          bytes = 0;
        }
        group.push(i);
        bytes += length;
      }
      yield emit();
    }
  }
}
