import {
  fullPushLimit,
  onCongestedPush,
  onPlainPushSuccess,
  pushFailureCause,
  pushPauseMs,
  reactToPushFailure,
  reactToPushReply,
  reactToReviveAnswer,
  type PushFailureStatus,
  type PushLimit,
  type PushReaction,
} from '../../client/index.ts';
import {
  shuffleKey,
  workerKey,
  type AppId,
  type PartitionLocation,
  type ShuffleId,
  type StatusCode,
} from '../../domain/index.ts';
import {
  FRAME_HEADER_BYTES,
  encodeBatchFrame,
  sealBatchFrame,
  type BatchHeader,
} from '../../protocol/batch-frame.ts';
import { getU32 } from '../../protocol/big-endian.ts';
import type {
  MergedBatch,
  Message,
  MessageOf,
  PartitionWritten,
  ReviveRequest,
} from '../../protocol/messages.ts';
import type { Release } from '../../release/version.ts';
import type { Envelope, Input, NodeId } from '../effects.ts';
import type { Machine, Step } from '../machine.ts';
import { count, log, newOutbox, refuseAdmin, setTimer, type Outbox } from '../outbox.ts';
import { ask, emptyRequests, expire, settle, type RequestTable } from './requests.ts';
import { checkRecords, encodeRecords, RECORD_LENGTH_BYTES } from './records.ts';
import { askTimeoutOr, unansweredAsk, type AskTimeout } from './ask-timeout.ts';

/**
 * One attempt of one map task (node `map-<app>-<shuffle>-<map>-<attempt>`): registers the shuffle with its lifecycle
 * manager, takes the records the application writes (`records` inputs, then `recordsEnd`), packs each partition's
 * into a batch and pushes the batch as soon as it is full (the rest at the end) to the partition's primary (at most
 * `maxInFlightPerPartition` batches of a partition in flight; batches bound for the same primary and peer travel
 * merged in one PushMergedData, a few waiting while a push to that pair awaits its answer), follows splits and failures through revives (core/client decides each
 * reaction), and reports what was acknowledged with MapperEnd. It holds at most about `maxUnacknowledgedBytes` of
 * buffers (counted at their capacity: open batches, and frames until acknowledged): `mapTaskHasRoom` tells the
 * driver when to stop feeding it (back-pressure).
 * It then stays idle: a task is part of an engine's executor, not a process to stop.
 * docs/core/machines-client.md describes the messages, timers and outcomes.
 */
export interface MapTaskConfig {
  readonly release: Release;
  readonly appId: AppId;
  readonly shuffleId: ShuffleId;
  readonly mapId: number;
  readonly attemptId: number;
  readonly numMappers: number;
  readonly numPartitions: number;
  readonly lifecycleManager: NodeId;
  /**
   * `svc.client.push.buffer.max.size`: records are packed into batches of at most this many bytes; a partition's
   * batch is pushed as soon as it is full.
   */
  readonly batchSizeBytes: number;
  /**
   * `svc.client.push.maxUnacknowledgedBytes`: the memory the task holds (`heldBytes`: every buffer it allocated and
   * still references, at its capacity) before it says it has no room (`mapTaskHasRoom`). Reaching it also cuts the
   * largest open batches until they hold at most half of it, so that room returns whatever the spread of the
   * records over partitions, while batches stay as large as the budget allows.
   */
  readonly maxUnacknowledgedBytes: number;
  /**
   * `svc.client.push.merge.maxSize`: a merged push carries frames of at most this many bytes in all (a larger frame
   * travels alone).
   */
  readonly mergeSizeBytes: number;
  /**
   * `svc.client.push.maxInFlightPerPartition`: batches of one partition pushed and not yet answered. 1 waits for
   * each batch's answer before the next; more keep the worker busy while the answer of the one before travels.
   * Readers order batches by id, so the order in which they land in a file does not matter.
   */
  readonly maxInFlightPerPartition: number;
  /** `svc.client.push.revive.maxRetries`: revives one batch may ask for after failures (splits are free). */
  readonly maxReviveRetries: number;
  /** `svc.client.push.timeout`: a push unanswered this long failed (PUSH_DATA_TIMEOUT_PRIMARY). */
  readonly pushTimeoutMs: number;
  /** `svc.rpc.askTimeout`: for MapperEnd, and for RegisterShuffle and Revive when their own is absent. */
  readonly requestTimeoutMs: number;
  /** `svc.client.rpc.registerShuffle.askTimeout` (its fallback is the client release's). */
  readonly registerShuffleTimeout?: AskTimeout;
  /** `svc.client.rpc.requestPartition.askTimeout`: for Revive (revives and splits). */
  readonly requestPartitionTimeout?: AskTimeout;
  /** Tries of one request to the lifecycle manager before the task fails. */
  readonly maxRequestAttempts: number;
  /** `svc.client.push.excludeWorkerOnFailure.enabled`. */
  readonly excludeWorkerOnFailure: boolean;
  /**
   * Allocates the task's buffers (open batches' chunks, and frames); they need not be zero-filled, as every byte is
   * written before it is read. Default: a zeroed Uint8Array. The task counts each at its `length`.
   */
  readonly allocate?: (length: number) => Uint8Array;
  /**
   * Takes back a buffer of a chunk's or a whole batch's length that the task lets go and nothing else holds: an open
   * batch's chunk once its bytes were copied into the batch's frame, an acknowledged frame's buffer where
   * `reuseAcknowledgedFrames` allows it, a spare at the map's end. The allocator may hand it out again to any task
   * (the runtime's executor keeps such buffers for its later tasks: a task's first buffers were otherwise fresh
   * memory, for a task of a few MiB nearly all of them). Buffers of other lengths, and frames sent more than once,
   * are only let go. Default: none.
   */
  readonly giveBack?: (buffer: Uint8Array) => void;
  /**
   * Whether an acknowledged frame's buffer may be filled again (kept as a spare): true where the transport copies a
   * frame's bytes out before its answer can come (a socket: the worker answers bytes it received, which the
   * kernel copied at the write). A transport that hands the buffer itself to the worker (the simulator's network)
   * must leave it off. A frame sent more than once is never reused: an earlier send may still wait in a queue.
   */
  readonly reuseAcknowledgedFrames?: boolean;
  /**
   * The shuffle's locations, one per partition, as the executor's shuffle client already holds them (an earlier
   * task's registration and revives, core/machines/client/location-cache.ts): the task pushes at once and never
   * sends RegisterShuffle. Absent: it registers the shuffle first.
   */
  readonly registeredLocations?: readonly PartitionLocation[];
}

/**
 * - `registering`: waiting for the shuffle's locations.
 * - `pushing`: batches in flight; revives may be pending.
 * - `ending`: every batch acknowledged; MapperEnd sent.
 * - `won`: this attempt is the map's winner; its data is what readers get.
 * - `lost`: another attempt of the map (or the stage) ended first; this attempt's data is ignored by readers.
 * - `failed`: see `error`; the engine retries the task.
 */
export type MapTaskPhase = 'registering' | 'pushing' | 'ending' | 'won' | 'lost' | 'failed';

export interface MapTaskState {
  readonly config: MapTaskConfig;
  readonly phase: MapTaskPhase;
  readonly requests: RequestTable<MapRequest>;
  /**
   * The newest location known for each partition (the primary, carrying its peer), by partition id: an array, not a
   * Map, as a task looks a partition's location up several times per batch (a tenth of the map task's own time in
   * `map-steps many` went to Map lookups at 10,000 partitions). Changed in place by the machine.
   */
  readonly locations: readonly (PartitionLocation | undefined)[];
  /**
   * The worker pair (`workerPairOf`) of each partition's location, by partition id, kept once built (a string built
   * per partition per step otherwise), undefined until needed and whenever the location changes. Changed in place.
   */
  readonly pairs: readonly (string | undefined)[];
  /** Each partition's open batch, unpushed chain, window and counts, as columns. Changed in place by the machine. */
  readonly partitions: PartitionColumns;
  /** Every batch cut and not yet acknowledged, of every partition. Changed in place by the machine. */
  readonly batches: BatchColumns;
  /** Partitions with a revive request on its way to the lifecycle manager. */
  readonly reviving: ReadonlySet<number>;
  /** Why the task failed or lost. */
  readonly error?: string;
  /** The status that failed it, when one did (QUOTA_EXCEEDED: the client shows a QuotaExceededError). */
  readonly errorStatus?: StatusCode;
  /** Whether the application said it wrote everything (`recordsEnd`). */
  readonly ended: boolean;
  /**
   * Records (encoded: 4 + length bytes each) taken and not yet acknowledged: in open batches, cut batches waiting
   * for their push, and batches in flight (what `acknowledged` will count).
   */
  readonly unacknowledgedBytes: number;
  /**
   * The capacity of every buffer the task holds: its open batches' chunks, its spare chunks, and each cut batch's
   * frame until it is acknowledged. Back-pressure compares it with `maxUnacknowledgedBytes`, so that the budget is
   * the memory the task keeps alive, not only the records in it (a sent frame may stay in a socket's queue a little
   * longer; an acknowledged one is garbage for the runtime to collect).
   */
  readonly heldBytes: number;
  /**
   * Payload bytes of batches cut and never pushed: queued behind their partition's full window, a merged push held
   * back, a revive or the registration. Back-pressure keeps it under `unsentLimit`.
   */
  readonly unsentBytes: number;
  /**
   * Chunks of cut open batches, and buffers of acknowledged frames of a chunk's length (`reuseAcknowledgedFrames`),
   * kept to be filled again: with `spareBatches`, at most a quarter of the budget. Filling warm memory again costs
   * less than a fresh buffer (its pages faulted in, then collected). Changed in place by the machine.
   */
  readonly spareChunks: readonly Uint8Array[];
  /**
   * Buffers of acknowledged frames of a whole batch's size (header and `batchSizeBytes`, larger than a chunk), kept
   * to be filled again by a batch that arrives whole. Changed in place by the machine.
   */
  readonly spareBatches: readonly Uint8Array[];
  /** Frames sent more than once, until acknowledged: never reused (an earlier send may still wait in a queue). */
  readonly resentFrames: ReadonlySet<Uint8Array>;
  /** Push requests awaiting their answer, by worker pair (`workerPairOf`). Changed in place by the machine. */
  readonly pushesOut: ReadonlyMap<string, number>;
  /**
   * Partitions with batches held back while a push to their worker pair awaits its answer (fillWindows), by pair,
   * with the bytes their windows held when last planned; planned again when touched or when that pair's push is
   * answered, not at every step (10,000 partitions held back made each step cost milliseconds). Changed in place by
   * the machine.
   */
  readonly deferred: ReadonlyMap<string, HeldBack>;
  /** The pair each held-back partition waits under (`deferred`). Changed in place by the machine. */
  readonly deferredPairs: ReadonlyMap<number, string>;
  /** The id the next batch cut gets: batch ids are unique within the attempt, in the order batches are cut. */
  readonly nextBatchId: number;
  /**
   * Workers (by `workerKey` of the primary) that answered *_CONGESTED and whose limit is not back at the maximum
   * (core/client/slow-start.ts). Changed in place by the machine.
   */
  readonly pushLimits: ReadonlyMap<string, PushLimit>;
  /** Workers pushed to while slowed down, with when the next push to them may go. Changed in place. */
  readonly pausedUntil: ReadonlyMap<string, number>;
  /** Record bytes (encoded) the task has taken since it started: the clock open batches go stale by. */
  readonly takenBytes: number;
  /**
   * Record bytes the task takes after a partition's last write before it cuts that partition's open batch
   * (cutStaleOpenBatches): `staleAfterBytes(config)` at the start, doubled (up to the budget) whenever the map
   * writes again to a partition whose batch it cut that way. A map that comes back to partitions spreads its records
   * over them, and cutting their batches while it still writes to them only makes them smaller: a map writing records
   * of 1 KiB over 10,000 partitions comes back to each every 10 MiB, and with the first eighth of its budget (8 MiB)
   * sent every record as a batch of its own (docs/performance.md, "Many partitions").
   */
  readonly staleAfterBytes: number;
  /**
   * Partitions with an open batch, in about the order they were last looked at (`cutStaleOpenBatches`), each at most
   * once (`PartitionColumns.staleQueued`), with the `takenBytes` each was last written at when queued. Changed in
   * place by the machine; `head` is where it starts.
   */
  readonly staleQueue: StaleQueue;
  /**
   * Once the records ended, the partitions below this index were finished (nothing open, unsent, in flight or to
   * retry) when the task last looked: each answer looks on from here rather than from partition 0 (`maybeEnd`).
   */
  readonly finishedBelow: number;
}

/** A first-in first-out queue of partitions and stamps, as two arrays and a head (no object per entry). */
export interface StaleQueue {
  readonly partitionIds: number[];
  readonly stamps: number[];
  head: number;
}

/**
 * Whether the task takes more records without going past its budget: the driver feeds it only while this holds,
 * and tells the application to wait (Node's `write() === false`, then `'drain'`) otherwise. A settled task has
 * room: what it is given is dropped.
 */
export function mapTaskHasRoom(state: MapTaskState): boolean {
  if (isSettled(state.phase)) return true;
  const limit = unsentLimit(state.config);
  // Before the registration is answered nothing can be sent: everything held waits to be.
  if (state.phase === 'registering' && state.heldBytes >= limit) return false;
  return state.heldBytes < state.config.maxUnacknowledgedBytes && state.unsentBytes < limit;
}

/**
 * How many bytes of cut batches may wait to be pushed before the task says it has no room: an eighth of the budget.
 * A map writing partition after partition (as a sorting writer does) fills one partition's batches faster than its
 * window lets them go, and moves on; with the whole budget to wait in, every batch waited long enough to leave the
 * CPU's caches between being filled and being checksummed and written to its socket, and its buffer was touched
 * cold three times. With an eighth, a batch is sent while warm: the client's CPU per GiB of the memory push fell by
 * a quarter on 2 cores (docs/performance.md). Batches in flight still use the rest of the budget; only the queue is
 * shorter. Until the registration is answered nothing can be sent, so the task then holds at most this much in all:
 * a map writing into 10,000 partitions filled its whole budget in open batches first, and in a client whose
 * application and lifecycle manager share one event loop, its registration waited for the writes to stop.
 */
export function unsentLimit(config: MapTaskConfig): number {
  return config.maxUnacknowledgedBytes / 8;
}

/**
 * The task's partitions as columns indexed by partition id: what each one has open, cut and unpushed, in flight and
 * acknowledged. A record per partition made a map over 10,000 partitions allocate 10,000 objects of sixteen fields
 * at its start, each alive for the task's whole life and so copied by every scavenge until promoted: the largest
 * site of the client's promoted bytes in the many-partitions benchmark (11 MB a run, docs/performance.md). Numbers
 * live in typed arrays, outside the collected heap; the two lists per partition share one frozen empty array until
 * the partition needs its own. Changed in place by the machine.
 */
export interface PartitionColumns {
  /**
   * Each partition's batch being filled (`openBytes` of encoded records), as buffers filled in order, every one but
   * the last full: the first starts with header space (a chunk, or a whole batch's buffer when an input brings more
   * than a chunk), so that a batch alone in it is sent as it is; then chunks. It is cut into a batch when full, when
   * the budget is reached (largest first) and at the end. The shared empty array when nothing is open.
   */
  readonly openBuffers: Uint8Array[][];
  /** Bytes used in the last of `openBuffers` (header space included). */
  readonly openLastFilled: Float64Array;
  readonly openBytes: Float64Array;
  /** `takenBytes` when the open batch was last written to. */
  readonly openWrittenAt: Float64Array;
  /** 1 while the partition is in `staleQueue`. */
  readonly staleQueued: Uint8Array;
  /** 1 when its last batch was cut for going stale, and it was not written to since. */
  readonly cutStale: Uint8Array;
  /**
   * The first of each partition's batches never pushed (its slot in `batches`), or NO_BATCH; the others follow it
   * through `BatchColumns.nextUnpushed`, in the order they were cut.
   */
  readonly next: Int32Array;
  /** The last batch cut and never pushed (the end of the chain from `next`), or NO_BATCH. */
  readonly lastUnpushed: Int32Array;
  /** Batches cut and never pushed: the length of the chain from `next`. */
  readonly unpushed: Int32Array;
  /** Batches cut since the task started. */
  readonly cut: Int32Array;
  /** Batches pushed (or queued to be, this step) and not yet answered. */
  readonly inFlight: Int32Array;
  /** Batches whose push failed (their slots), to be pushed again to the newest location, oldest first. */
  readonly retries: (readonly number[])[];
  /** 1 (waiting) when a failure asked for a revive, and nothing of the partition is pushed until it answers. */
  readonly waiting: Uint8Array;
  /** Batches acknowledged, and their payload bytes: what MapperEnd reports. */
  readonly acknowledgedBatches: Int32Array;
  readonly acknowledgedBytes: Float64Array;
}

/** One partition's columns as a record: for inspection and tests, not for the machine's steps. */
export interface PartitionPush {
  readonly partitionId: number;
  readonly openBuffers: readonly Uint8Array[];
  readonly openLastFilled: number;
  readonly openBytes: number;
  readonly openWrittenAt: number;
  readonly staleQueued: boolean;
  readonly cutStale: boolean;
  readonly next: number;
  readonly lastUnpushed: number;
  readonly unpushed: number;
  readonly cut: number;
  readonly inFlight: number;
  readonly retries: readonly number[];
  readonly status: 'active' | 'waiting';
  readonly acknowledgedBatches: number;
  readonly acknowledgedBytes: number;
}

/** Partition `partitionId` of the task, read out of its columns. */
export function partitionOf(state: MapTaskState, partitionId: number): PartitionPush {
  const p = state.partitions;
  if (!Number.isInteger(partitionId) || partitionId < 0 || partitionId >= p.next.length)
    throw new RangeError(`no partition ${partitionId}`);
  return {
    partitionId,
    openBuffers: p.openBuffers[partitionId]!,
    openLastFilled: p.openLastFilled[partitionId]!,
    openBytes: p.openBytes[partitionId]!,
    openWrittenAt: p.openWrittenAt[partitionId]!,
    staleQueued: p.staleQueued[partitionId] === 1,
    cutStale: p.cutStale[partitionId] === 1,
    next: p.next[partitionId]!,
    lastUnpushed: p.lastUnpushed[partitionId]!,
    unpushed: p.unpushed[partitionId]!,
    cut: p.cut[partitionId]!,
    inFlight: p.inFlight[partitionId]!,
    retries: p.retries[partitionId]!,
    status: p.waiting[partitionId] === 1 ? 'waiting' : 'active',
    acknowledgedBatches: p.acknowledgedBatches[partitionId]!,
    acknowledgedBytes: p.acknowledgedBytes[partitionId]!,
  };
}

/** Every partition of the task, read out of its columns (`partitionOf`). */
export function allPartitionsOf(state: MapTaskState): PartitionPush[] {
  return Array.from({ length: state.config.numPartitions }, (_, partitionId) =>
    partitionOf(state, partitionId),
  );
}

/**
 * The task's unacknowledged batches as columns indexed by slot: a batch takes a free slot when it is cut and gives
 * it back when acknowledged, so the columns are as long as the most batches the task held at once. Each partition
 * used to keep six arrays of its own batches; at 10,000 partitions a map made six arrays per partition, each grown
 * from one entry to seventeen at its second batch, a tenth of the client's time in the many-partitions benchmark.
 * Changed in place by the machine.
 */
export interface BatchColumns {
  /**
   * Each batch's frame: header space, then its payload (the encoded records). Its records were copied in as they
   * were taken; it is sealed in place when cut (its partition's location known) or when first pushed, and sent as
   * it is whenever it is pushed again with the same epoch. RELEASED in a free slot, so that its memory goes.
   */
  readonly frames: Uint8Array[];
  /**
   * The epoch each batch's frame was sealed with, or UNSEALED. A batch never pushed is sealed again in place for
   * another epoch; one pushed again with another epoch (after a revive) is framed into a copy instead: the frame
   * sealed before may still wait in a socket's queue.
   */
  readonly sealedEpochs: number[];
  /** Each batch's payload length (what its acknowledgement counts). */
  readonly payloadBytes: number[];
  /** The capacity of the buffer each batch's frame is in (what `heldBytes` counts for it until it is acknowledged). */
  readonly capacities: number[];
  readonly batchIds: number[];
  /** Each batch's partition; NO_BATCH in a free slot. */
  readonly partitionIds: number[];
  /**
   * Revives each batch may still spend on failures (`svc.client.push.revive.maxRetries` per batch, as the
   * reference counts them).
   */
  readonly revivesLeft: number[];
  /** The batch of the same partition cut after it and never pushed (`PartitionColumns.next`), or NO_BATCH. */
  readonly nextUnpushed: number[];
  /** Slots whose batch was acknowledged, to be taken again. */
  readonly freeSlots: number[];
}

/** No batch: the end of a partition's chain of unpushed batches, and the partition of a free slot. */
export const NO_BATCH = -1;

/**
 * A partition's batches cut and not yet acknowledged (in flight, to push again, or never pushed), oldest first:
 * their slots in `state.batches`. It walks every slot: for inspection and tests, not for the machine's steps.
 */
export function unacknowledgedBatchesOf(state: MapTaskState, partitionId: number): number[] {
  const { partitionIds, batchIds } = state.batches;
  const slots: number[] = [];
  for (let slot = 0; slot < partitionIds.length; slot += 1) {
    if (partitionIds[slot] === partitionId) slots.push(slot);
  }
  return slots.sort((a, b) => batchIds[a]! - batchIds[b]!);
}

export type MapRequest =
  | { readonly kind: 'register' }
  /** A PushData (one batch) or a PushMergedData (several, in this order); each batch answers for itself. */
  | { readonly kind: 'push'; readonly batches: readonly PushedBatch[]; readonly pair: string }
  | { readonly kind: 'revive'; readonly requests: readonly ReviveRequest[] }
  | { readonly kind: 'mapperEnd' };

/** One batch of a push request: the batch in slot `batch` of the task's columns, sent to this location. */
export interface PushedBatch {
  readonly partitionId: number;
  readonly batch: number;
  readonly location: PartitionLocation;
}

/**
 * The empty array every partition starts with in place of its open buffers and its retries: a map over 10,000
 * partitions made an array of each per partition, and the first push into an empty array gives it room for 17
 * entries, about 150 bytes; collecting such arrays was a fifth of the client's time in the many-partitions
 * benchmark. A partition's first open buffer replaces it with an array of one entry (`takeRecords`); frozen, so that
 * a push into the shared one throws rather than corrupting every partition.
 */
const NONE = Object.freeze([]) as unknown as never[];

export function initialMapTaskState(config: MapTaskConfig): MapTaskState {
  if (!Number.isSafeInteger(config.maxInFlightPerPartition) || config.maxInFlightPerPartition < 1) {
    throw new RangeError(
      `maxInFlightPerPartition must be a whole number of at least 1, not ${config.maxInFlightPerPartition}`,
    );
  }
  if (!(config.batchSizeBytes > 0))
    throw new RangeError(`batch size must be positive, got ${config.batchSizeBytes}`);
  if (!(config.maxUnacknowledgedBytes > 0)) {
    throw new RangeError(`maxUnacknowledgedBytes must be positive, got ${config.maxUnacknowledgedBytes}`);
  }
  const count = config.numPartitions;
  const partitions: PartitionColumns = {
    openBuffers: new Array<Uint8Array[]>(count).fill(NONE),
    openLastFilled: new Float64Array(count),
    openBytes: new Float64Array(count),
    openWrittenAt: new Float64Array(count),
    staleQueued: new Uint8Array(count),
    cutStale: new Uint8Array(count),
    next: new Int32Array(count).fill(NO_BATCH),
    lastUnpushed: new Int32Array(count).fill(NO_BATCH),
    unpushed: new Int32Array(count),
    cut: new Int32Array(count),
    inFlight: new Int32Array(count),
    retries: new Array<readonly number[]>(count).fill(NONE),
    waiting: new Uint8Array(count),
    acknowledgedBatches: new Int32Array(count),
    acknowledgedBytes: new Float64Array(count),
  };
  return {
    config,
    phase: 'registering',
    requests: emptyRequests(),
    locations: new Array<PartitionLocation | undefined>(config.numPartitions).fill(undefined),
    pairs: new Array<string | undefined>(config.numPartitions).fill(undefined),
    partitions,
    batches: {
      frames: [],
      sealedEpochs: [],
      payloadBytes: [],
      capacities: [],
      batchIds: [],
      partitionIds: [],
      revivesLeft: [],
      nextUnpushed: [],
      freeSlots: [],
    },
    reviving: new Set(),
    ended: false,
    unacknowledgedBytes: 0,
    heldBytes: 0,
    unsentBytes: 0,
    spareChunks: [],
    spareBatches: [],
    resentFrames: new Set(),
    pushesOut: new Map(),
    deferred: new Map(),
    deferredPairs: new Map(),
    nextBatchId: 0,
    pushLimits: new Map(),
    pausedUntil: new Map(),
    takenBytes: 0,
    staleAfterBytes: staleAfterBytes(config),
    staleQueue: { partitionIds: [], stamps: [], head: 0 },
    finishedBelow: 0,
  };
}

/**
 * The machine of a task whose records are all known when it starts (tests, tools): its start also takes `records`
 * (by partition) and the end, as if the application wrote them all at once.
 */
export function mapTaskWritingAll(records: readonly (readonly Uint8Array[])[]): Machine<MapTaskState> {
  return {
    step(state, input, now, rng) {
      const first = mapTaskMachine.step(state, input, now, rng);
      if (input.kind !== 'start') return first;
      const second = mapTaskMachine.step(first.state, recordsInput(records), now, rng);
      const third = mapTaskMachine.step(second.state, { kind: 'recordsEnd' }, now, rng);
      return { state: third.state, effects: [...first.effects, ...second.effects, ...third.effects] };
    },
  };
}

/** One `records` input carrying records by partition (index = partitionId), in order: one run per partition. */
export function recordsInput(
  records: readonly (readonly Uint8Array[])[],
): Extract<Input, { kind: 'records' }> {
  const partitionIds: number[] = [];
  const runs: Uint8Array[] = [];
  records.forEach((partition, partitionId) => {
    if (partition.length === 0) return;
    partitionIds.push(partitionId);
    runs.push(encodeRecords(partition));
  });
  return { kind: 'records', partitionIds, runs };
}

/** The state as one step works on it: its own collections, changed in place, plus the step's outbox. */
interface Draft {
  readonly config: MapTaskConfig;
  phase: MapTaskPhase;
  requests: RequestTable<MapRequest>;
  locations: (PartitionLocation | undefined)[];
  pairs: (string | undefined)[];
  readonly partitions: PartitionColumns;
  readonly batches: BatchColumns;
  reviving: Set<number>;
  error?: string;
  errorStatus?: StatusCode;
  ended: boolean;
  unacknowledgedBytes: number;
  heldBytes: number;
  unsentBytes: number;
  spareChunks: Uint8Array[];
  spareBatches: Uint8Array[];
  resentFrames: Set<Uint8Array>;
  pushesOut: Map<string, number>;
  deferred: Map<string, HeldBack>;
  deferredPairs: Map<number, string>;
  nextBatchId: number;
  pushLimits: Map<string, PushLimit>;
  pausedUntil: Map<string, number>;
  takenBytes: number;
  staleAfterBytes: number;
  readonly staleQueue: StaleQueue;
  finishedBelow: number;
  /**
   * Partitions whose window may have room: filled once the step has handled its whole input, so that a failure
   * later in the same answer stops pushes to the location that failed.
   */
  refill: Set<number>;
  /**
   * Batches this step decided to push, by worker pair, each framed for its location as it was queued: sent, merged,
   * at its end.
   */
  readonly pushQueue: Map<string, OutgoingBatch[]>;
  /** Revive requests gathered during this step: sent together as one Revive at its end. */
  reviveQueue: ReviveRequest[];
  readonly out: Outbox;
}

export const mapTaskMachine: Machine<MapTaskState> = {
  step(state, input, now, rng): Step<MapTaskState> {
    // The machine owns its state (machine.ts): the draft works on the state's own collections, in place.
    // New fields before the spread: V8 (Node 20) builds `{ ...state, out }` through a slow path, ~1 µs per field.
    const draft: Draft = {
      refill: new Set(),
      pushQueue: new Map(),
      reviveQueue: [],
      out: newOutbox(now, rng),
      ...state,
      locations: state.locations as (PartitionLocation | undefined)[],
      pairs: state.pairs as (string | undefined)[],
      reviving: state.reviving as Set<number>,
      spareChunks: state.spareChunks as Uint8Array[],
      spareBatches: state.spareBatches as Uint8Array[],
      resentFrames: state.resentFrames as Set<Uint8Array>,
      pushesOut: state.pushesOut as Map<string, number>,
      deferred: state.deferred as Map<string, HeldBack>,
      deferredPairs: state.deferredPairs as Map<number, string>,
      pushLimits: state.pushLimits as Map<string, PushLimit>,
      pausedUntil: state.pausedUntil as Map<string, number>,
    };
    handle(draft, input);
    fillWindows(draft);
    flushPushes(draft);
    flushRevives(draft);
    const { out, refill: _refill, pushQueue: _pushes, reviveQueue: _revives, ...next } = draft;
    return { state: next, effects: out.effects };
  },
};

function handle(d: Draft, input: Input): void {
  if (isSettled(d.phase)) return;
  switch (input.kind) {
    case 'start':
      if (d.config.registeredLocations === undefined) registerShuffle(d, 1);
      else beginPushing(d, d.config.registeredLocations);
      return;
    case 'receive':
      onReceive(d, input.envelope);
      return;
    case 'timer': {
      if (input.name.startsWith(SLOWDOWN_TIMER)) {
        endPause(d, input.name.slice(SLOWDOWN_TIMER.length));
        return;
      }
      const expired = expire(d.requests, input.name);
      d.requests = expired.table;
      if (expired.request !== undefined)
        onNoAnswer(d, expired.request.purpose, expired.request.attempt, 'timedOut');
      return;
    }
    case 'sendFailed': {
      const closed = settle(d.requests, d.out, input.requestId);
      d.requests = closed.table;
      if (closed.request !== undefined) {
        const why = input.sent === true ? 'connectionLost' : 'sendFailed';
        onNoAnswer(d, closed.request.purpose, closed.request.attempt, why);
      }
      return;
    }
    case 'records':
      takeRecords(d, input.partitionIds, input.runs);
      return;
    case 'recordsEnd':
      endRecords(d);
      return;
    case 'ioDone':
    case 'ioFailed':
    case 'ioBatchDone':
    case 'diskSpace':
    case 'consumed': // a reduce task's input only
      return;
    case 'admin':
      refuseAdmin(d.out, 'map task', input);
      return;
  }
}

/**
 * The chunks an open batch is filled in when its records arrive a little at a time (a map spread over many
 * partitions): capacity follows what was written to within a chunk per partition (1,000 partitions: 4 MiB at
 * most), nothing is copied as the batch grows, and a cut batch's chunks are filled again. Every chunk has room for a
 * frame header besides CHUNK_BYTES of records, and a batch starts behind that room: a batch that fits in one chunk
 * (many partitions, small batches) is sent from it as it is, neither copied nor allocated again; a larger one is
 * copied once, at its cut, into a frame of exactly its size. (Growing a buffer by doubling held up to twice its
 * records, and left the smaller buffers behind as garbage.)
 */
const CHUNK_BYTES = 4096;

/** The length of a task's chunks: header room and CHUNK_BYTES, or less when a whole batch is smaller. */
function chunkLengthOf(config: MapTaskConfig): number {
  return FRAME_HEADER_BYTES + Math.min(CHUNK_BYTES, config.batchSizeBytes);
}

/**
 * Copies runs of encoded records into their partitions' open batches (the caller may reuse their memory once the
 * step returns), as many whole records at once as the open batch takes, cutting a batch as soon as it is full; once
 * the task holds its budget, the largest open batches are cut too, so that pushes free room whatever the spread of
 * the records. A run is one partition's records as a batch payload lays them out (`encodeRecords`), so that the
 * records of a map writing partition after partition are copied a batch at a time, not one by one.
 */
function takeRecords(d: Draft, partitionIds: readonly number[], runs: readonly Uint8Array[]): void {
  if (d.ended) {
    fail(d, 'records written after the end of the attempt');
    return;
  }
  if (partitionIds.length !== runs.length) {
    fail(d, `a records input with ${partitionIds.length} partition ids for ${runs.length} runs`);
    return;
  }
  const { numPartitions, batchSizeBytes } = d.config;
  // What this input brings each partition, still to be placed: more than a chunk's worth opens a batch in a buffer
  // of a whole batch's size, filled on by later inputs and sent as it is (no chunks, no copy at its cut). Kept for
  // the input's partitions only: an array of every partition, allocated per input (80 KB at 10,000 partitions for
  // the some 85 of a 256 KiB input), was a third of this function's own time (`map-steps` many).
  const coming = new Map<number, number>();
  for (let i = 0; i < runs.length; i += 1) {
    const partitionId = partitionIds[i]!;
    if (!(Number.isInteger(partitionId) && partitionId >= 0 && partitionId < numPartitions)) {
      fail(d, `a record for partition ${partitionId}, outside 0..${numPartitions - 1}`);
      return;
    }
    const checked = checkRecords(runs[i]!);
    if (!checked.ok) {
      fail(d, `a records input's run for partition ${partitionId} is not whole records: ${checked.message}`);
      return;
    }
    coming.set(partitionId, (coming.get(partitionId) ?? 0) + runs[i]!.length);
  }
  const chunkLength = chunkLengthOf(d.config);
  const p = d.partitions;
  for (let i = 0; i < runs.length; i += 1) {
    const partitionId = partitionIds[i]!;
    const run = runs[i]!;
    let offset = 0;
    while (offset < run.length) {
      const openBytes = p.openBytes[partitionId]!;
      const end = wholeRecordsEnd(run, offset, batchSizeBytes - openBytes, openBytes === 0);
      if (end === offset) {
        cutBatch(d, partitionId); // the next record does not fit the open batch
        continue;
      }
      const taken = end - offset;
      if (p.openBuffers[partitionId]!.length === 0) {
        // Header space first; more than a chunk's worth coming at once gets a whole batch's buffer, a record
        // larger than a batch one of its size. A literal of one entry, not a push into an empty array (NONE).
        const length =
          FRAME_HEADER_BYTES + Math.max(taken, Math.min(batchSizeBytes, coming.get(partitionId)!));
        p.openBuffers[partitionId] = [
          length <= chunkLength
            ? takeChunk(d, chunkLength)
            : length <= FRAME_HEADER_BYTES + batchSizeBytes
              ? (d.spareBatches.pop() ?? allocateHeld(d, FRAME_HEADER_BYTES + batchSizeBytes))
              : allocateHeld(d, length),
        ];
        p.openLastFilled[partitionId] = FRAME_HEADER_BYTES;
        p.openWrittenAt[partitionId] = d.takenBytes;
        if (p.staleQueued[partitionId] === 0) queueStale(d, partitionId);
        // A batch cut as stale leaves its partition with nothing open: a write to it again opens one here.
        if (p.cutStale[partitionId] === 1) cameBack(d, partitionId);
      }
      coming.set(partitionId, coming.get(partitionId)! - taken);
      appendEncoded(d, partitionId, run.subarray(offset, end), chunkLength);
      p.openBytes[partitionId] = openBytes + taken;
      d.unacknowledgedBytes += taken;
      d.takenBytes += taken;
      p.openWrittenAt[partitionId] = d.takenBytes;
      offset = end;
      if (openBytes + taken >= batchSizeBytes) cutBatch(d, partitionId);
    }
  }
  cutStaleOpenBatches(d);
  if (d.heldBytes >= d.config.maxUnacknowledgedBytes) cutLargestOpenBatches(d);
}

/**
 * Cuts the open batches of partitions the map has moved on from: not written to while the task took another
 * `staleAfterBytes` of records. A map writing partition after partition (a sorting writer, the benchmark's maps)
 * leaves each partition's last batch partial; cut only at the end, those batches all waited for the map's last
 * record, and a map over 10,000 partitions pushed nothing until then, its worker idle while it wrote. Cut once the
 * map is an eighth of its budget further on, they go while it writes. A map spreading its records over the
 * partitions writes each again long before that (at 10,000 partitions of 100-byte records, every 1 MiB on average),
 * so its batches still fill.
 *
 * Cheap rather than exact: each open partition is in `staleQueue` once, looked at when its entry's stamp (its
 * last write, or the task's count when it opened) is `staleAfterBytes` old, then cut or queued again with its last
 * write. Stamps are queued in about the order of time, so a stale batch can wait behind a younger entry: every
 * entry's stamp is at most `staleAfterBytes` older than when it was queued, so a batch is cut once the task took
 * between one and two times `staleAfterBytes` since its last write, and each partition is looked at about once per
 * `staleAfterBytes` of records.
 */
function cutStaleOpenBatches(d: Draft): void {
  const queue = d.staleQueue;
  const staleAfter = d.staleAfterBytes;
  const p = d.partitions;
  while (queue.head < queue.partitionIds.length) {
    if (d.takenBytes - queue.stamps[queue.head]! < staleAfter) break;
    const partitionId = queue.partitionIds[queue.head]!;
    queue.head += 1;
    p.staleQueued[partitionId] = 0;
    if (p.openBuffers[partitionId]!.length === 0) continue;
    if (d.takenBytes - p.openWrittenAt[partitionId]! >= staleAfter) {
      cutBatch(d, partitionId);
      p.cutStale[partitionId] = 1;
    } else queueStale(d, partitionId);
  }
  if (queue.head > 1024 && queue.head * 2 > queue.partitionIds.length) {
    queue.partitionIds.splice(0, queue.head);
    queue.stamps.splice(0, queue.head);
    queue.head = 0;
  }
}

function queueStale(d: Draft, partitionId: number): void {
  d.partitions.staleQueued[partitionId] = 1;
  d.staleQueue.partitionIds.push(partitionId);
  d.staleQueue.stamps.push(d.partitions.openWrittenAt[partitionId]!);
}

/**
 * How many record bytes a map takes after a partition's last write before that partition's open batch is cut, until
 * the map comes back to a partition it was cut for (MapTaskState.staleAfterBytes).
 */
export function staleAfterBytes(config: MapTaskConfig): number {
  return unsentLimit(config);
}

/**
 * The map writes again to a partition whose batch it cut as stale: it spreads its records, so it waits twice as
 * long before it cuts a partition's batch as stale (up to its budget, where the budget's own cut takes over). Once
 * the wait is longer than the map takes to come back to a partition, no batch is cut before it fills.
 */
function cameBack(d: Draft, partitionId: number): void {
  d.partitions.cutStale[partitionId] = 0;
  const longer = Math.min(2 * d.staleAfterBytes, d.config.maxUnacknowledgedBytes);
  if (longer === d.staleAfterBytes) return;
  d.staleAfterBytes = longer;
  log(d.out, 'debug', 'the map comes back to partitions: their open batches are cut later', {
    mapId: d.config.mapId,
    staleAfterBytes: longer,
  });
}

/**
 * Where the whole records of `run` from `offset` that fit in `room` bytes end (the run was checked to be whole
 * records); an empty batch takes at least its first record, however large (a record larger than a batch travels
 * alone).
 */
function wholeRecordsEnd(run: Uint8Array, offset: number, room: number, empty: boolean): number {
  if (run.length - offset <= room) return run.length;
  let end = offset;
  for (;;) {
    const next = end + RECORD_LENGTH_BYTES + getU32(run, end);
    if (next - offset > room) return end === offset && empty ? next : end;
    end = next;
  }
}

/** Appends encoded records to the partition's open batch, taking chunks as the last buffer fills. */
function appendEncoded(d: Draft, partitionId: number, bytes: Uint8Array, chunkLength: number): void {
  const buffers = d.partitions.openBuffers[partitionId]!;
  const lastFilled = d.partitions.openLastFilled;
  let last = buffers[buffers.length - 1]!;
  let filled = lastFilled[partitionId]!;
  if (last.length - filled >= bytes.length) {
    // The common case: everything fits where the batch ends.
    last.set(bytes, filled);
    lastFilled[partitionId] = filled + bytes.length;
    return;
  }
  let offset = 0;
  while (offset < bytes.length) {
    if (filled === last.length) {
      last = takeChunk(d, chunkLength);
      buffers.push(last);
      filled = 0;
    }
    const n = Math.min(last.length - filled, bytes.length - offset);
    last.set(bytes.subarray(offset, offset + n), filled);
    filled += n;
    offset += n;
  }
  lastFilled[partitionId] = filled;
}

/** A new buffer of `length` bytes, counted as held. */
function allocateHeld(d: Draft, length: number): Uint8Array {
  const buffer = (d.config.allocate ?? zeroed)(length);
  if (buffer.length < length) throw new RangeError(`asked for ${length} bytes, allocated ${buffer.length}`);
  d.heldBytes += buffer.length;
  return buffer;
}

/** A chunk for an open batch: a spare one (already counted as held), or a new one. */
function takeChunk(d: Draft, chunkLength: number): Uint8Array {
  return d.spareChunks.pop() ?? allocateHeld(d, chunkLength);
}

/**
 * A buffer the task is done with (a cut open batch's, its bytes copied into the batch's frame, or an acknowledged
 * frame's): kept as a spare, if it has a chunk's or a whole batch's length, while the task holds no more than its
 * budget and spares hold at most a quarter of it, otherwise let go (`giveBack`). The first keeps a cut from taking
 * the task further past its budget than the frame's header; the second leaves room for frames, so that room always
 * returns once every frame is acknowledged.
 */
function dropOpenBuffer(d: Draft, buffer: Uint8Array): void {
  const chunkLength = chunkLengthOf(d.config);
  const batchLength = FRAME_HEADER_BYTES + d.config.batchSizeBytes;
  const budget = d.config.maxUnacknowledgedBytes;
  const spares = d.spareChunks.length * chunkLength + d.spareBatches.length * batchLength;
  const reusable = buffer.length === chunkLength || buffer.length === batchLength;
  const keep = reusable && !d.ended && d.heldBytes <= budget && spares + buffer.length <= budget / 4;
  if (!keep) letGo(d, buffer, reusable);
  else if (buffer.length === chunkLength) d.spareChunks.push(buffer);
  else d.spareBatches.push(buffer);
}

/** A buffer the task no longer holds: given back to the allocator when `reusable` (a length the task allocates). */
function letGo(d: Draft, buffer: Uint8Array, reusable: boolean): void {
  d.heldBytes -= buffer.length;
  if (reusable) d.config.giveBack?.(buffer);
}

/**
 * An acknowledged frame's memory: filled again when the transport allows it and the frame went once, else let go
 * (a socket may still hold a frame sent again until it is written).
 */
function releaseFrame(d: Draft, frame: Uint8Array, capacity: number): void {
  if (d.resentFrames.delete(frame) || d.config.reuseAcknowledgedFrames !== true) d.heldBytes -= capacity;
  else dropOpenBuffer(d, new Uint8Array(frame.buffer, frame.byteOffset, capacity));
}

function zeroed(length: number): Uint8Array {
  return new Uint8Array(length);
}

/**
 * The budget is reached: cuts open batches, largest first, until they hold at most half of it. The rest of the
 * budget is then in batches cut and not yet acknowledged, whose answers bring room back; and a partition's batch is
 * cut at the largest size the budget allows it (cutting every partial batch instead cut thousands of batches of a
 * few KiB each time a map over 1,000 partitions reached its budget).
 */
function cutLargestOpenBatches(d: Draft): void {
  const { openBuffers, openBytes } = d.partitions;
  const open: number[] = [];
  let openHeld = 0;
  for (let partitionId = 0; partitionId < openBuffers.length; partitionId += 1) {
    const buffers = openBuffers[partitionId]!;
    if (buffers.length === 0) continue;
    open.push(partitionId);
    for (const buffer of buffers) openHeld += buffer.length;
  }
  const target = d.config.maxUnacknowledgedBytes / 2;
  if (openHeld <= target) return;
  open.sort((a, b) => openBytes[b]! - openBytes[a]! || a - b);
  for (const partitionId of open) {
    if (openHeld <= target) return;
    for (const buffer of openBuffers[partitionId]!) openHeld -= buffer.length;
    cutBatch(d, partitionId);
  }
}

/**
 * Cuts the partition's open batch (if it holds records) into a batch to push: a batch alone in its first buffer
 * (which starts with header space) is its own frame; one over several is copied into a frame of exactly its size,
 * and its chunks are filled again.
 */
function cutBatch(d: Draft, partitionId: number): void {
  const p = d.partitions;
  const buffers = p.openBuffers[partitionId]!;
  if (buffers.length === 0) return;
  const payloadLength = p.openBytes[partitionId]!;
  const lastFilled = p.openLastFilled[partitionId]!;
  p.openBuffers[partitionId] = NONE;
  p.openLastFilled[partitionId] = 0;
  p.openBytes[partitionId] = 0;
  if (payloadLength === 0) {
    for (const buffer of buffers) dropOpenBuffer(d, buffer);
    return;
  }
  let frame: Uint8Array;
  let capacity: number;
  if (buffers.length === 1) {
    capacity = buffers[0]!.length;
    frame = buffers[0]!.subarray(0, FRAME_HEADER_BYTES + payloadLength);
  } else {
    const buffer = allocateHeld(d, FRAME_HEADER_BYTES + payloadLength);
    capacity = buffer.length;
    frame = buffer.subarray(0, FRAME_HEADER_BYTES + payloadLength);
    let at = FRAME_HEADER_BYTES;
    buffers.forEach((piece, k) => {
      const from = k === 0 ? FRAME_HEADER_BYTES : 0;
      const to = k === buffers.length - 1 ? lastFilled : piece.length;
      frame.set(piece.subarray(from, to), at);
      at += to - from;
    });
    for (const piece of buffers) dropOpenBuffer(d, piece);
  }
  const batches = d.batches;
  const slot = batches.freeSlots.pop() ?? batches.frames.length;
  batches.frames[slot] = frame;
  batches.payloadBytes[slot] = payloadLength;
  batches.capacities[slot] = capacity;
  batches.sealedEpochs[slot] = sealWhileWarm(d, partitionId, frame);
  batches.batchIds[slot] = d.nextBatchId;
  batches.partitionIds[slot] = partitionId;
  batches.revivesLeft[slot] = d.config.maxReviveRetries;
  batches.nextUnpushed[slot] = NO_BATCH;
  const lastUnpushed = p.lastUnpushed[partitionId]!;
  if (lastUnpushed === NO_BATCH) p.next[partitionId] = slot;
  else batches.nextUnpushed[lastUnpushed] = slot;
  p.lastUnpushed[partitionId] = slot;
  p.unpushed[partitionId]! += 1;
  p.cut[partitionId]! += 1;
  d.unsentBytes += payloadLength;
  d.nextBatchId += 1;
  d.refill.add(partitionId);
}

/**
 * Seals a batch's frame as it is cut, when its partition's location is known: its bytes were just copied in, so
 * its checksum reads them from the CPU's caches, where at its first push (after it waited for its partition's
 * window) it read them from memory: the memory push's client spent 0.23 CPU s per GiB on checksums, the bare client
 * 0.06 on the same bytes checked as they are filled (docs/performance.md). Gives what goes into `sealedEpochs`:
 * the epoch, or UNSEALED when the location is not known yet.
 */
function sealWhileWarm(d: Draft, partitionId: number, frame: Uint8Array): number {
  const location = d.phase === 'pushing' ? d.locations[partitionId] : undefined;
  if (location === undefined) return UNSEALED;
  sealBatchFrame(frame, headerOf(d, partitionId, d.nextBatchId, location.epoch));
  return location.epoch;
}

/**
 * The application wrote everything: the partial batches are cut, the spare chunks let go (back to the allocator),
 * and the task ends once all are acknowledged.
 */
function endRecords(d: Draft): void {
  if (d.ended) return;
  d.ended = true;
  for (let partitionId = 0; partitionId < d.config.numPartitions; partitionId += 1) cutBatch(d, partitionId);
  // Spares have a chunk's or a whole batch's length (dropOpenBuffer).
  for (const spare of [...d.spareChunks, ...d.spareBatches]) letGo(d, spare, true);
  d.spareChunks.length = 0;
  d.spareBatches.length = 0;
  maybeEnd(d);
}

function isSettled(phase: MapTaskPhase): boolean {
  return phase === 'won' || phase === 'lost' || phase === 'failed';
}

function onReceive(d: Draft, envelope: Envelope): void {
  const closed = settle(d.requests, d.out, envelope.inReplyTo);
  d.requests = closed.table;
  const request = closed.request;
  if (request === undefined) return; // a late answer to a request that already timed out and was retried
  const message = envelope.message;
  switch (request.purpose.kind) {
    case 'register':
      if (message.type === 'RegisterShuffleResponse') onRegistered(d, message);
      else unexpected(d, message, 'RegisterShuffleResponse');
      return;
    case 'push':
      pushSettled(d, request.purpose.pair);
      onPushAnswer(d, request.purpose.batches, message);
      return;
    case 'revive':
      if (message.type === 'ReviveResponse') onReviveResponse(d, request.purpose.requests, message);
      else unexpected(d, message, 'ReviveResponse');
      return;
    case 'mapperEnd':
      if (message.type === 'StatusResponse') onMapperEndAnswer(d, message);
      else unexpected(d, message, 'StatusResponse');
      return;
  }
}

function onNoAnswer(
  d: Draft,
  purpose: MapRequest,
  attempt: number,
  why: 'timedOut' | 'sendFailed' | 'connectionLost',
): void {
  switch (purpose.kind) {
    case 'push':
      pushSettled(d, purpose.pair);
      failPushedBatches(d, purpose.batches, pushFailureCause({ kind: why }));
      return;
    case 'register':
      if (attempt < d.config.maxRequestAttempts) registerShuffle(d, attempt + 1);
      else fail(d, unansweredAsk('RegisterShuffle', attempt, why, registerTimeout(d)));
      return;
    case 'mapperEnd':
      if (attempt < d.config.maxRequestAttempts) sendMapperEnd(d, attempt + 1);
      else fail(d, `the lifecycle manager did not answer MapperEnd ${attempt} times (${why})`);
      return;
    case 'revive':
      if (attempt < d.config.maxRequestAttempts) {
        d.requests = ask(
          d.requests,
          d.out,
          {
            to: d.config.lifecycleManager,
            message: reviveMessage(d, purpose.requests),
            purpose,
            attempt: attempt + 1,
          },
          reviveTimeout(d).ms,
        );
      } else {
        fail(d, `${unansweredAsk('Revive', attempt, why, reviveTimeout(d))}; REVIVE_FAILED`);
      }
      return;
  }
}

/** A push to `pair` was answered or failed: batches held back for that pair may go (fillWindows). */
function pushSettled(d: Draft, pair: string): void {
  const out = (d.pushesOut.get(pair) ?? 1) - 1;
  if (out > 0) d.pushesOut.set(pair, out);
  else d.pushesOut.delete(pair);
  const held = d.deferred.get(pair);
  if (held !== undefined) for (const partitionId of held.partitions.keys()) d.refill.add(partitionId);
}

function registerShuffle(d: Draft, attempt: number): void {
  const { appId, shuffleId, numMappers, numPartitions, lifecycleManager } = d.config;
  d.requests = ask(
    d.requests,
    d.out,
    {
      to: lifecycleManager,
      message: { type: 'RegisterShuffle', appId, shuffleId, numMappers, numPartitions },
      purpose: { kind: 'register' },
      attempt,
    },
    registerTimeout(d).ms,
  );
}

function registerTimeout(d: Draft): AskTimeout {
  return askTimeoutOr(d.config.registerShuffleTimeout, d.config.requestTimeoutMs);
}

function reviveTimeout(d: Draft): AskTimeout {
  return askTimeoutOr(d.config.requestPartitionTimeout, d.config.requestTimeoutMs);
}

function onRegistered(d: Draft, message: MessageOf<'RegisterShuffleResponse'>): void {
  if (message.status !== 'SUCCESS') {
    fail(d, `shuffle registration failed with ${message.status}: ${message.message}`, message.status);
    return;
  }
  beginPushing(d, message.locations);
}

/** The shuffle's locations are known: batches cut while they were not go now. */
function beginPushing(d: Draft, locations: readonly PartitionLocation[]): void {
  for (const location of locations) {
    // A location outside the shuffle's partitions is the lifecycle manager's mistake: no batch goes there.
    if (location.partitionId >= 0 && location.partitionId < d.locations.length) {
      d.locations[location.partitionId] = location;
      d.pairs[location.partitionId] = undefined;
    }
  }
  d.phase = 'pushing';
  const { unpushed } = d.partitions;
  for (let partitionId = 0; partitionId < unpushed.length; partitionId += 1) {
    if (unpushed[partitionId]! > 0) d.refill.add(partitionId);
  }
  maybeEnd(d);
}

/** The batches a partition may push this step, up to its window: those to push again first, then new ones. */
interface WindowPlan {
  readonly partitionId: number;
  readonly retries: readonly number[];
  readonly fresh: number;
  readonly bytes: number;
}

/**
 * Fills the windows of the partitions the step touched (and of those held back before), merged by worker pair
 * like Nagle's algorithm: a pair's batches go at once when no push to that pair awaits its answer, or when they
 * fill a merged push (no further batch would fit under `mergeSizeBytes`); otherwise they wait, in their partitions,
 * for that answer, which is sure to come (or to time out), and then travel together. Without this, a map whose
 * batches became ready a few at a time sent a message per few batches for as long as it ran: each answer freed a
 * few windows, and the next message carried as few.
 */
function fillWindows(d: Draft): void {
  if (d.phase !== 'pushing') return; // batches cut before the registration's answer wait for it
  const byPair = new Map<string, WindowPlan[]>();
  for (const partitionId of d.refill) {
    releaseHeldBack(d, partitionId); // planned again here
    const plan = planWindow(d, partitionId);
    if (plan === undefined) continue;
    const pair = (d.pairs[partitionId] ??= workerPairOf(d.locations[partitionId]!));
    const group = byPair.get(pair);
    if (group === undefined) byPair.set(pair, [plan]);
    else group.push(plan);
  }
  const fullMessage = d.config.mergeSizeBytes - (FRAME_HEADER_BYTES + d.config.batchSizeBytes);
  for (const [pair, plans] of byPair) {
    const held = d.deferred.get(pair);
    let bytes = held?.bytes ?? 0;
    for (const plan of plans) bytes += plan.bytes;
    if ((d.pushesOut.get(pair) ?? 0) > 0 && bytes < fullMessage) {
      for (const plan of plans) holdBack(d, pair, plan);
      continue;
    }
    // Held-back partitions first: their batches became ready first.
    if (held !== undefined) {
      d.deferred.delete(pair);
      for (const partitionId of held.partitions.keys()) {
        d.deferredPairs.delete(partitionId);
        const plan = planWindow(d, partitionId);
        if (plan !== undefined) commitWindow(d, plan, pair);
      }
    }
    for (const plan of plans) commitWindow(d, plan, pair);
  }
}

/** Partitions held back under one worker pair (`MapTaskState.deferred`): each one's window bytes, and their sum. */
export interface HeldBack {
  bytes: number;
  readonly partitions: Map<number, number>;
}

function holdBack(d: Draft, pair: string, plan: WindowPlan): void {
  let held = d.deferred.get(pair);
  if (held === undefined) {
    held = { bytes: 0, partitions: new Map() };
    d.deferred.set(pair, held);
  }
  held.partitions.set(plan.partitionId, plan.bytes);
  held.bytes += plan.bytes;
  d.deferredPairs.set(plan.partitionId, pair);
}

function releaseHeldBack(d: Draft, partitionId: number): void {
  const pair = d.deferredPairs.get(partitionId);
  if (pair === undefined) return;
  d.deferredPairs.delete(partitionId);
  const held = d.deferred.get(pair)!;
  held.bytes -= held.partitions.get(partitionId)!;
  held.partitions.delete(partitionId);
  if (held.partitions.size === 0) d.deferred.delete(pair);
}

/**
 * What the partition may push now, up to its window; undefined when nothing (or while it waits for a revive). A
 * partition without a location asks one (the reference client's rule: revive from epoch -1).
 */
function planWindow(d: Draft, partitionId: number): WindowPlan | undefined {
  const p = d.partitions;
  if (p.waiting[partitionId] === 1) return undefined;
  const location = d.locations[partitionId];
  if (location === undefined) {
    p.waiting[partitionId] = 1;
    queueRevive(d, partitionId, 'PUSH_DATA_FAIL_NON_CRITICAL_CAUSE_PRIMARY', undefined);
    return undefined;
  }
  // Every batch sent and none to send again (an answer refills its partition): nothing to plan. Past this, with
  // room, the plan holds a retry or a fresh batch.
  const toRetry = p.retries[partitionId]!;
  const unpushed = p.unpushed[partitionId]!;
  if (toRetry.length === 0 && unpushed === 0) return undefined;
  let limit = d.config.maxInFlightPerPartition;
  // A worker's key is a new string each time: built only when some worker is paused or limited.
  if (d.pausedUntil.size > 0 || d.pushLimits.size > 0) {
    const worker = workerKey(location.worker);
    const paused = d.pausedUntil.get(worker);
    if (paused !== undefined && paused > d.out.now) return undefined; // the pause's timer refills it
    limit = d.pushLimits.get(worker)?.limit ?? limit;
  }
  const room = limit - p.inFlight[partitionId]!;
  if (room <= 0) return undefined;
  // No retries is most often the shared empty array, frozen, which V8 slices on its slow path (400 ns against 45).
  const retries = toRetry.length === 0 ? toRetry : toRetry.slice(0, room);
  const fresh = Math.min(room - retries.length, unpushed);
  const { frames, nextUnpushed } = d.batches;
  let bytes = 0;
  for (const slot of retries) bytes += frames[slot]!.length;
  for (let k = 0, slot = p.next[partitionId]!; k < fresh; k += 1, slot = nextUnpushed[slot]!) {
    bytes += frames[slot]!.length;
  }
  return { partitionId, retries, fresh, bytes };
}

/** Queues a planned window's batches under their worker pair; the step's end sends them (see flushPushes). */
function commitWindow(d: Draft, { partitionId, retries, fresh }: WindowPlan, pair: string): void {
  const p = d.partitions;
  const { payloadBytes, nextUnpushed } = d.batches;
  let queue = d.pushQueue.get(pair);
  if (queue === undefined) {
    queue = [];
    d.pushQueue.set(pair, queue);
  }
  let next = p.next[partitionId]!;
  for (const batch of retries) queue.push(framedBatch(d, partitionId, batch, false));
  for (let k = 0; k < fresh; k += 1) {
    d.unsentBytes -= payloadBytes[next]!;
    queue.push(framedBatch(d, partitionId, next, true));
    next = nextUnpushed[next]!;
  }
  p.next[partitionId] = next;
  p.unpushed[partitionId]! -= fresh;
  if (next === NO_BATCH) p.lastUnpushed[partitionId] = NO_BATCH;
  p.inFlight[partitionId]! += retries.length + fresh;
  if (retries.length > 0) p.retries[partitionId] = p.retries[partitionId]!.slice(retries.length);
}

/** A queued batch, framed for the location it goes to (`batch`: its slot). */
interface OutgoingBatch extends PushedBatch {
  readonly batchId: number;
  readonly frame: Uint8Array;
}

/**
 * The most batches one merged push carries. A worker judges, writes and answers a merged push in one turn of its
 * event loop, and at 10,000 partitions each batch goes to a file of its own: 2 MiB of 3 KiB batches (about 700) held
 * its loop for 43-183 ms. Cut at 128, the many-partitions row's worker event-loop p99 fell from 76-159 to 34-40 ms,
 * its throughput and the worker's CPU no worse (three alternating rounds, 30 November); pushes of larger batches
 * (64 KiB: 32 to 2 MiB; 4 KiB: about 115 in the small-batches row) never reach it.
 */
export const MAX_BATCHES_PER_PUSH = 128;

/**
 * Sends the batches queued during the step, merged by worker pair: batches whose primary is on the same worker and
 * whose replica is on the same peer (or that have none) go in one message, so that the primary can forward what it
 * takes to that peer in one message too. A group is cut, in queue order, into messages of at most `mergeSizeBytes`
 * of frames and MAX_BATCHES_PER_PUSH batches (at least one batch each). A task that stopped during the step sends
 * nothing.
 */
function flushPushes(d: Draft): void {
  if (d.pushQueue.size === 0 || d.phase !== 'pushing') return;
  const cap = d.config.mergeSizeBytes;
  for (const [pair, group] of d.pushQueue) {
    let message: OutgoingBatch[] = [];
    let bytes = 0;
    for (const batch of group) {
      if (
        message.length > 0 &&
        (bytes + batch.frame.length > cap || message.length === MAX_BATCHES_PER_PUSH)
      ) {
        sendPush(d, pair, message);
        message = [];
        bytes = 0;
      }
      message.push(batch);
      bytes += batch.frame.length;
    }
    sendPush(d, pair, message);
  }
}

/**
 * Frames a batch (its slot: `batch`) for its partition's newest location as it is queued: in place the first time
 * (its payload is already behind its header space; sealed again if it was sealed at its cut for an older epoch: no
 * socket holds it yet), as it is when pushed again with the epoch it was sealed with (`fresh` false), and into a copy
 * for another epoch, which the batch keeps from then on instead of the frame before (that one may still wait in a
 * socket's queue, so it is not sealed again; the task no longer holds it). The location cannot change between the
 * queueing and the step's end: windows are filled once the step's input was handled.
 */
function framedBatch(d: Draft, partitionId: number, batch: number, fresh: boolean): OutgoingBatch {
  const { frames, sealedEpochs, capacities, batchIds } = d.batches;
  const location = d.locations[partitionId]!;
  const batchId = batchIds[batch]!;
  let frame = frames[batch]!;
  if (sealedEpochs[batch] !== location.epoch) {
    const header = headerOf(d, partitionId, batchId, location.epoch);
    if (fresh) sealBatchFrame(frame, header);
    else {
      frame = encodeBatchFrame(header, frame.subarray(FRAME_HEADER_BYTES));
      d.heldBytes += frame.length - capacities[batch]!;
      capacities[batch] = frame.length;
      frames[batch] = frame;
    }
    sealedEpochs[batch] = location.epoch;
  } else if (!fresh && d.config.reuseAcknowledgedFrames === true) d.resentFrames.add(frame);
  return { partitionId, batch, location, batchId, frame };
}

/** No epoch is negative: a batch's frame not sealed yet. */
const UNSEALED = -1;

function headerOf(d: Draft, partitionId: number, batchId: number, epoch: number): BatchHeader {
  const { shuffleId, mapId, attemptId } = d.config;
  return { shuffleId, mapId, attemptId, batchId, partitionId, epoch };
}

/** What an acknowledged batch's frame and payload become. */
const RELEASED = new Uint8Array(0);

/** The merge key of a location: its primary's worker and its peer's (none when the partition is not replicated). */
function workerPairOf(location: PartitionLocation): string {
  const primary = workerKey(location.worker);
  return location.peer === undefined ? primary : `${primary} ${workerKey(location.peer.worker)}`;
}

/** One batch: a PushData, exactly as without merging. Several: a PushMergedData, answered with a status each. */
function sendPush(d: Draft, pair: string, batches: readonly OutgoingBatch[]): void {
  const { appId, shuffleId, mapId, attemptId } = d.config;
  const first = batches[0]!;
  d.pushesOut.set(pair, (d.pushesOut.get(pair) ?? 0) + 1);
  const message: Message =
    batches.length === 1
      ? {
          type: 'PushData',
          shuffleKey: shuffleKey(appId, shuffleId),
          mode: 'PRIMARY',
          partitionId: first.partitionId,
          epoch: first.location.epoch,
          mapId,
          attemptId,
          batchId: first.batchId,
          payload: first.frame,
        }
      : {
          type: 'PushMergedData',
          shuffleKey: shuffleKey(appId, shuffleId),
          mode: 'PRIMARY',
          mapId,
          attemptId,
          batches: batches.map((b): MergedBatch => ({
            partitionId: b.partitionId,
            epoch: b.location.epoch,
            batchId: b.batchId,
            payload: b.frame,
          })),
        };
  const worker = workerKey(first.location.worker);
  d.requests = ask(
    d.requests,
    d.out,
    { to: worker, message, purpose: { kind: 'push', batches, pair } },
    d.config.pushTimeoutMs,
  );
  pauseWorker(d, worker);
}

/** While the worker's limit is under the maximum, the next push to it waits (the reference sleeps before it). */
function pauseWorker(d: Draft, worker: string): void {
  const limit = d.pushLimits.get(worker);
  const pause = limit === undefined ? 0 : pushPauseMs(limit, d.config.maxInFlightPerPartition);
  const until = d.out.now + pause;
  if (pause <= 0 || (d.pausedUntil.get(worker) ?? 0) >= until) return;
  d.pausedUntil.set(worker, until);
  setTimer(d.out, SLOWDOWN_TIMER + worker, until);
}

/** The timer of a push pause to a slowed-down worker (followed by the worker's key). */
const SLOWDOWN_TIMER = 'slowdown:';

/** A slowed-down worker's pause ended: its partitions may push again. */
function endPause(d: Draft, worker: string): void {
  if ((d.pausedUntil.get(worker) ?? 0) > d.out.now) return; // a later pause replaced this one's timer
  d.pausedUntil.delete(worker);
  d.locations.forEach((location, partitionId) => {
    if (location !== undefined && workerKey(location.worker) === worker) d.refill.add(partitionId);
  });
}

/** A worker's answer moves its push limit: down on congestion, back up on plain success. */
function adjustPushLimit(d: Draft, location: PartitionLocation, congested: boolean): void {
  const worker = workerKey(location.worker);
  const max = d.config.maxInFlightPerPartition;
  const current = d.pushLimits.get(worker);
  if (!congested && current === undefined) return;
  const next = congested ? onCongestedPush(current ?? fullPushLimit(max)) : onPlainPushSuccess(current!, max);
  // One line when the task starts slowing down for a worker and one when it is back at full speed, not one per answer.
  if (current === undefined) {
    log(d.out, 'info', 'push slowed down: the worker answered CONGESTED', {
      worker,
      window: next.limit,
      maxInFlightPerPartition: max,
    });
  }
  if (next.limit >= max && next.congestedAtOne === 0) {
    d.pushLimits.delete(worker);
    log(d.out, 'info', 'push back at full speed', { worker, window: max });
  } else d.pushLimits.set(worker, next);
  if (congested) pauseWorker(d, worker);
}

/**
 * The answer to a push: each batch, in request order, reacts to its own status as it would to a PushDataResponse.
 * A refusal (StatusResponse, e.g. by release) fails the task as for any request. An answer that does not fit the
 * request (another type, or not one status per batch) is a protocol error, which every batch of it treats as a
 * non-critical failure: it revives, and the revive budget bounds a worker that keeps answering nonsense.
 */
function onPushAnswer(d: Draft, batches: readonly PushedBatch[], message: Message): void {
  if (message.type === 'StatusResponse') {
    unexpected(d, message, batches.length === 1 ? 'PushDataResponse' : 'PushMergedDataResponse');
    return;
  }
  const statuses = statusPerBatch(message, batches.length);
  if (statuses === undefined) {
    log(d.out, 'error', 'push answer does not fit the push; every batch of it counts as failed', {
      batches: batches.length,
      answer: message.type,
      ...(message.type === 'PushMergedDataResponse' ? { statuses: message.statuses.length } : {}),
      partitions: batches.map((b) => b.partitionId),
    });
    failPushedBatches(d, batches, 'PUSH_DATA_FAIL_NON_CRITICAL_CAUSE_PRIMARY');
    return;
  }
  for (let i = 0; i < batches.length; i += 1) {
    const pushed = batches[i]!;
    react(d, pushed, reactToPushReply(statuses[i]!, reactionContext(d, pushed)));
  }
  maybeEnd(d);
}

/** The status the answer gives each batch, in request order; undefined when it is not an answer to this push. */
function statusPerBatch(message: Message, batches: number): readonly StatusCode[] | undefined {
  if (batches === 1 && message.type === 'PushDataResponse') return [message.status];
  if (batches > 1 && message.type === 'PushMergedDataResponse' && message.statuses.length === batches) {
    return message.statuses;
  }
  return undefined;
}

/**
 * A push that failed as the client saw it (no answer, no connection, an unreadable answer): every batch of it reacts
 * to `cause`. PushDataFailCount counts batches, as the reference's does, so that it means the same with or without
 * merging.
 */
function failPushedBatches(d: Draft, batches: readonly PushedBatch[], cause: PushFailureStatus): void {
  count(d.out, 'PushDataFailCount', batches.length, { cause });
  for (const pushed of batches) {
    react(d, pushed, reactToPushFailure(cause, reactionContext(d, pushed)));
  }
}

function reactionContext(d: Draft, { partitionId, batch, location }: PushedBatch) {
  const newest = d.locations[partitionId];
  return {
    location,
    remainingRevives: d.batches.revivesLeft[batch]!,
    mapperEnded: false,
    newerEpochKnown: newest !== undefined && newest.epoch > location.epoch,
    excludeWorkerOnFailure: d.config.excludeWorkerOnFailure,
  };
}

/** One pushed batch reacts to its answer (or to the push's failure): acknowledged, retried, or the end of the task. */
function react(d: Draft, pushed: PushedBatch, reaction: PushReaction): void {
  if (d.phase !== 'pushing') return;
  const { partitionId, location } = pushed;
  const p = d.partitions;
  switch (reaction.kind) {
    case 'done': {
      const bytes = releaseBatch(d, pushed.batch);
      d.unacknowledgedBytes -= bytes;
      p.inFlight[partitionId]! -= 1;
      p.acknowledgedBatches[partitionId]! += 1;
      p.acknowledgedBytes[partitionId]! += bytes;
      if (reaction.reviveInBackground === true) queueRevive(d, partitionId, 'SOFT_SPLIT', location);
      adjustPushLimit(d, location, reaction.slowDown !== undefined);
      d.refill.add(partitionId);
      return;
    }
    case 'dropBatch':
      lose(d, reaction.reason);
      return;
    case 'giveUp':
      fail(d, reaction.message);
      return;
    case 'retry':
      // HARD_SPLIT is a move the cluster asked for (the file reached its split size, or its worker is leaving):
      // expected, so an info line the client library summarises per episode, not a warning per push.
      log(d.out, reaction.cause === 'HARD_SPLIT' ? 'info' : 'warn', pushRetryEvent(reaction.cause), {
        partitionId,
        epoch: location.epoch,
        cause: reaction.cause,
      });
      if (reaction.consumesRevive) d.batches.revivesLeft[pushed.batch]! -= 1;
      p.inFlight[partitionId]! -= 1;
      p.retries[partitionId] = withRetry(p.retries[partitionId]!, pushed.batch, d.batches.batchIds);
      if (reaction.revive) p.waiting[partitionId] = 1;
      if (reaction.revive) queueRevive(d, partitionId, reaction.cause, location);
      // Otherwise a newer location is already known: push there (unless a revive's answer is awaited).
      else d.refill.add(partitionId);
  }
}

/** The event of an expected move: a partition continues on a new location the worker asked for (HARD_SPLIT). */
export const PUSH_MOVED_EVENT = 'push moved; the partition continues on its next location';

function pushRetryEvent(cause: string): string {
  return cause === 'HARD_SPLIT' ? PUSH_MOVED_EVENT : 'push failed; retrying';
}

/**
 * An acknowledged batch gives its slot back, and its frame's memory goes or is filled again (releaseFrame). Gives
 * its payload's length.
 */
function releaseBatch(d: Draft, slot: number): number {
  const batches = d.batches;
  const bytes = batches.payloadBytes[slot]!;
  releaseFrame(d, batches.frames[slot]!, batches.capacities[slot]!);
  batches.frames[slot] = RELEASED;
  batches.capacities[slot] = 0;
  batches.partitionIds[slot] = NO_BATCH;
  batches.freeSlots.push(slot);
  return bytes;
}

/** The batches (slots) to push again with `batch` among them, oldest (by batch id) first. */
function withRetry(retries: readonly number[], batch: number, batchIds: readonly number[]): number[] {
  const id = batchIds[batch]!;
  const at = retries.findIndex((b) => batchIds[b]! > id);
  return at < 0 ? [...retries, batch] : [...retries.slice(0, at), batch, ...retries.slice(at)];
}

function queueRevive(
  d: Draft,
  partitionId: number,
  cause: StatusCode,
  oldLocation: PartitionLocation | undefined,
): void {
  if (d.reviving.has(partitionId)) return; // one revive per partition at a time; its answer serves every need
  d.reviving.add(partitionId);
  d.reviveQueue.push({
    partitionId,
    epoch: oldLocation?.epoch ?? -1,
    cause,
    ...(oldLocation === undefined ? {} : { oldLocation }),
  });
}

function flushRevives(d: Draft): void {
  if (d.reviveQueue.length === 0 || d.phase !== 'pushing') return;
  const requests = d.reviveQueue;
  d.requests = ask(
    d.requests,
    d.out,
    {
      to: d.config.lifecycleManager,
      message: reviveMessage(d, requests),
      purpose: { kind: 'revive', requests },
    },
    reviveTimeout(d).ms,
  );
}

function reviveMessage(d: Draft, requests: readonly ReviveRequest[]): Message {
  const { appId, shuffleId, mapId, attemptId } = d.config;
  return { type: 'Revive', appId, shuffleId, mapId, attemptId, requests };
}

function onReviveResponse(
  d: Draft,
  asked: readonly ReviveRequest[],
  message: MessageOf<'ReviveResponse'>,
): void {
  for (const request of asked) d.reviving.delete(request.partitionId);
  if (message.endedMapIds.includes(d.config.mapId)) {
    lose(d, `map ${d.config.mapId} has already ended (another attempt won)`);
    return;
  }
  for (const request of asked) {
    const { partitionId } = request;
    const result = message.results.find((r) => r.partitionId === partitionId) ?? {
      partitionId,
      status: 'REVIVE_FAILED' as const,
      oldAvailable: false,
    };
    const reaction = reactToReviveAnswer(
      {
        status: result.status,
        ...(result.newLocation === undefined ? {} : { location: result.newLocation }),
      },
      { partitionId, cause: request.cause, mapperEnded: false },
    );
    const waiting = d.partitions.waiting[partitionId] === 1;
    switch (reaction.kind) {
      case 'pushTo': {
        const known = d.locations[partitionId];
        if (known === undefined || reaction.location.epoch > known.epoch) {
          d.locations[partitionId] = reaction.location;
          d.pairs[partitionId] = undefined;
        }
        if (waiting) d.partitions.waiting[partitionId] = 0;
        d.refill.add(partitionId);
        break;
      }
      case 'dropBatch':
        lose(d, reaction.reason);
        return;
      case 'giveUp':
        if (!waiting) {
          // A background revive after a soft split: the old location still takes data, so carry on with it.
          log(d.out, 'warn', 'background revive failed; keeping the current location', {
            partitionId,
            message: reaction.message,
          });
          break;
        }
        fail(d, reaction.message, result.status);
        return;
    }
  }
}

/**
 * Ends the attempt once the records ended and every partition is finished. Each answer looks on from the first
 * partition not finished when last looked at (`finishedBelow`): looking from partition 0 at every answer after the
 * end of the records walked thousands of finished partitions per answer in a map over 10,000, half of the answer
 * path's own time (`map-steps` many). The end itself is declared on one whole pass, so that a partition found
 * finished earlier still holds it back should it be busy again since.
 */
function maybeEnd(d: Draft): void {
  if (d.phase !== 'pushing' || !d.ended) return;
  const count = d.config.numPartitions;
  let below = firstUnfinished(d.partitions, d.finishedBelow, count);
  if (below === count) below = firstUnfinished(d.partitions, 0, count);
  if (below < count) {
    d.finishedBelow = below;
    return;
  }
  d.phase = 'ending';
  sendMapperEnd(d, 1);
}

/** The first partition from `from` that is not finished, or `count` when every one is. */
function firstUnfinished(p: PartitionColumns, from: number, count: number): number {
  let partitionId = from;
  while (partitionId < count && isFinished(p, partitionId)) partitionId += 1;
  return partitionId;
}

/** Nothing of the partition open, unsent, in flight or to be retried. */
function isFinished(p: PartitionColumns, partitionId: number): boolean {
  return (
    p.openBuffers[partitionId]!.length === 0 &&
    p.unpushed[partitionId] === 0 &&
    p.inFlight[partitionId] === 0 &&
    p.retries[partitionId]!.length === 0
  );
}

function sendMapperEnd(d: Draft, attempt: number): void {
  const { appId, shuffleId, mapId, attemptId, numMappers, lifecycleManager } = d.config;
  const { acknowledgedBatches, acknowledgedBytes } = d.partitions;
  // Counted first, so that the list is made at its size (it lives until the lifecycle manager's answer).
  let reported = 0;
  for (const batches of acknowledgedBatches) if (batches > 0) reported += 1;
  const written = new Array<PartitionWritten>(reported);
  for (let partitionId = 0, at = 0; at < reported; partitionId += 1) {
    const batches = acknowledgedBatches[partitionId]!;
    if (batches > 0) written[at++] = { partitionId, batches, bytes: acknowledgedBytes[partitionId]! };
  }
  d.requests = ask(
    d.requests,
    d.out,
    {
      to: lifecycleManager,
      message: { type: 'MapperEnd', appId, shuffleId, mapId, attemptId, numMappers, written },
      purpose: { kind: 'mapperEnd' },
      attempt,
    },
    d.config.requestTimeoutMs,
  );
}

function onMapperEndAnswer(d: Draft, message: MessageOf<'StatusResponse'>): void {
  if (message.status === 'SUCCESS') {
    d.phase = 'won';
    log(d.out, 'info', 'map attempt won', {
      mapId: d.config.mapId,
      attemptId: d.config.attemptId,
      // Whether it registered the shuffle or started from what its executor held (registeredLocations).
      locationsFrom: d.config.registeredLocations === undefined ? 'lifecycleManager' : 'executor',
    });
  } else if (message.status === 'MAP_ENDED') lose(d, message.message);
  else fail(d, `MapperEnd refused with ${message.status}: ${message.message}`, message.status);
}

function lose(d: Draft, reason: string): void {
  d.phase = 'lost';
  d.error = reason;
  log(d.out, 'info', 'map attempt stopped: another attempt or the stage ended first', {
    mapId: d.config.mapId,
    attemptId: d.config.attemptId,
    reason,
  });
}

function fail(d: Draft, message: string, status?: StatusCode): void {
  d.phase = 'failed';
  d.error = message;
  if (status !== undefined) d.errorStatus = status;
  log(d.out, 'error', 'map task failed', { mapId: d.config.mapId, attemptId: d.config.attemptId, message });
  count(d.out, 'MapTaskFailCount');
}

/** A reply of the wrong kind (a refusal arrives as StatusResponse): the request is closed, so the task fails. */
function unexpected(d: Draft, message: Message, wanted: string): void {
  if (message.type === 'StatusResponse')
    fail(d, `refused with ${message.status}: ${message.message}`, message.status);
  else fail(d, `protocol error: expected ${wanted}, got ${message.type}`);
}
