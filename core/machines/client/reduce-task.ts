import { shuffleKey, uniqueId, workerKey, type AppId, type ShuffleId } from '../../domain/index.ts';
import type { PlantedBug } from '../../planted-bugs.ts';
import { decodeBatchFrames, type BatchFrame } from '../../protocol/batch-frame.ts';
import type {
  CommittedFile,
  Message,
  MessageOf,
  PartitionWritten,
  ReducerFileGroup,
} from '../../protocol/messages.ts';
import type { PartitionLocation } from '../../domain/index.ts';
import type { Release } from '../../release/version.ts';
import type { Envelope, Input, NodeId } from '../effects.ts';
import type { Machine, Step } from '../machine.ts';
import { count, log, newOutbox, refuseAdmin, refuseRecords, setTimer, tell, type Outbox } from '../outbox.ts';
import { assemblePartition } from './reader.ts';
import { recordsIn } from './records.ts';
import { ask, emptyRequests, expire, settle, type RequestTable } from './requests.ts';

/**
 * One reduce task (node `reduce-<app>-<shuffle>-<partition>`): asks the lifecycle manager for the partition's file
 * group (unless its executor already holds it: ReduceTaskConfig.cachedFileGroup), reads every epoch's committed
 * file (the primary copy, or the replica when the primary cannot be read), chunk by chunk, decodes the frames and
 * hands them to the reader's integrity layer (./reader.ts). The result is in the state: `output` (the winning
 * batches, whose records come out in a deterministic order: `outputRecords`) or `error`. docs/core/machines-client.md.
 */
export interface ReduceTaskConfig {
  readonly release: Release;
  readonly appId: AppId;
  readonly shuffleId: ShuffleId;
  readonly partitionId: number;
  readonly lifecycleManager: NodeId;
  /** `svc.rpc.askTimeout`: for GetReducerFileGroup. */
  readonly requestTimeoutMs: number;
  /** Tries of one unanswered request before the task fails. */
  readonly maxRequestAttempts: number;
  /** Wait before asking again when the stage has not ended yet (STAGE_END_TIMEOUT). */
  readonly fileGroupRetryIntervalMs: number;
  /** Asks for the file group before giving up on a stage that does not end. */
  readonly maxFileGroupAttempts: number;
  /** `svc.client.fetch.timeout`: an OpenStream or FetchChunk unanswered this long fails that copy. */
  readonly fetchTimeoutMs: number;
  /** `svc.client.spark.stageRerun.enabled`: whether unreadable data is a FetchFailure the engine answers by rerunning. */
  readonly stageRerunEnabled: boolean;
  /** 'dedupe-disabled' switches the reader's integrity layer off (simulator proof only). */
  readonly plantedBug?: PlantedBug;
  /**
   * The shuffle's file group as the task's executor already holds it (./file-group-cache.ts): the task reads with it
   * and does not ask the lifecycle manager. Only a SUCCESS answer is used; anything else is asked for as usual.
   */
  readonly cachedFileGroup?: MessageOf<'GetReducerFileGroupResponse'>;
}

export type ReduceTaskPhase = 'file-group' | 'fetching' | 'done' | 'failed';

/**
 * - `fetch-failure`: the data cannot be read (every copy of an epoch failed, or the shuffle lost data) and stage rerun
 *   is on: the engine reruns the stage that wrote the shuffle.
 * - `unreadable`: the same with stage rerun off: a task failure, and the job fails once the engine stops retrying
 *   (nothing can bring the data back).
 * - `failure`: the task could not get as far as reading (the lifecycle manager did not answer, the map stage did not
 *   end, a refusal): a task failure that a retry may cure.
 * - `integrity`: the data was read but does not match what the winning maps reported: a bug, never retried silently.
 */
export interface ReduceError {
  readonly kind: 'fetch-failure' | 'unreadable' | 'failure' | 'integrity';
  readonly message: string;
}

/** One epoch of the partition: its committed copies, the primary first. */
export interface EpochCopies {
  readonly epoch: number;
  readonly copies: readonly { readonly location: PartitionLocation; readonly file: CommittedFile }[];
}

export interface ReadPlan {
  readonly epochs: readonly EpochCopies[];
  readonly mapAttempts: readonly number[];
  readonly expected: readonly (PartitionWritten & { readonly mapId: number })[];
}

/** Where the read is: which epoch and copy, and that copy's stream once open. */
export interface ReadCursor {
  readonly epochIndex: number;
  readonly copyIndex: number;
  readonly streamId?: number;
  readonly chunkOffsets?: readonly number[];
  readonly chunkIndex: number;
  /** Frames of the copy being read, chunk by chunk; kept only when the whole copy reads cleanly. */
  readonly chunks: readonly (readonly BatchFrame[])[];
}

export interface ReduceTaskState {
  readonly config: ReduceTaskConfig;
  readonly phase: ReduceTaskPhase;
  readonly requests: RequestTable<ReduceRequest>;
  readonly fileGroupAttempts: number;
  readonly plan?: ReadPlan;
  readonly cursor?: ReadCursor;
  /** Frames of the epochs read completely so far, chunk by chunk (appending never copies frames). */
  readonly chunks: readonly (readonly BatchFrame[])[];
  /** Why copies could not be read (for the error message when no copy of an epoch can). */
  readonly copyFailures: readonly string[];
  readonly output?: ReduceOutput;
  readonly error?: ReduceError;
}

/** What a finished read gives back: the winning batches (records in order: `recordsIn`, ./records.ts). */
export interface ReduceOutput {
  readonly batches: readonly Uint8Array[];
  readonly records: number;
}

/** A finished read's records in order, each made as it is asked for (none for no output). */
export function outputRecords(output: ReduceOutput | undefined): Iterable<Uint8Array> {
  return recordsIn(output?.batches ?? []);
}

export type ReduceRequest =
  | { readonly kind: 'fileGroup' }
  | { readonly kind: 'open' }
  | { readonly kind: 'chunk'; readonly chunkIndex: number };

const FILE_GROUP_RETRY_TIMER = 'file-group-retry';

export function initialReduceTaskState(config: ReduceTaskConfig): ReduceTaskState {
  return {
    config,
    phase: 'file-group',
    requests: emptyRequests(),
    fileGroupAttempts: 0,
    chunks: [],
    copyFailures: [],
  };
}

interface Draft {
  readonly config: ReduceTaskConfig;
  phase: ReduceTaskPhase;
  requests: RequestTable<ReduceRequest>;
  fileGroupAttempts: number;
  plan?: ReadPlan;
  cursor?: ReadCursor;
  chunks: readonly (readonly BatchFrame[])[];
  copyFailures: readonly string[];
  output?: ReduceOutput;
  error?: ReduceError;
  readonly out: Outbox;
}

export const reduceTaskMachine: Machine<ReduceTaskState> = {
  step(state, input, now, rng): Step<ReduceTaskState> {
    // New fields before the spread: V8 (Node 20) builds `{ ...state, out }` through a slow path, ~1 µs per field.
    const draft: Draft = { out: newOutbox(now, rng), ...state };
    handle(draft, input);
    const { out, ...next } = draft;
    return { state: next, effects: out.effects };
  },
};

function handle(d: Draft, input: Input): void {
  if (d.phase === 'done' || d.phase === 'failed') return;
  switch (input.kind) {
    case 'start':
      if (d.config.cachedFileGroup?.status === 'SUCCESS') {
        // Said in the log (and so in a simulator trace): the task reads without having asked anyone.
        log(d.out, 'debug', "file group from the executor's cache", { shuffleId: d.config.shuffleId });
        onFileGroup(d, d.config.cachedFileGroup);
      } else askFileGroup(d, 1);
      return;
    case 'receive':
      onReceive(d, input.envelope);
      return;
    case 'timer': {
      if (input.name === FILE_GROUP_RETRY_TIMER) {
        askFileGroup(d, 1);
        return;
      }
      const expired = expire(d.requests, input.name);
      d.requests = expired.table;
      if (expired.request !== undefined)
        onNoAnswer(d, expired.request.purpose, expired.request.attempt, 'timed out');
      return;
    }
    case 'sendFailed': {
      const closed = settle(d.requests, d.out, input.requestId);
      d.requests = closed.table;
      if (closed.request !== undefined) {
        onNoAnswer(d, closed.request.purpose, closed.request.attempt, `could not reach ${input.to}`);
      }
      return;
    }
    case 'ioDone':
    case 'ioFailed':
    case 'ioBatchDone':
      return;
    case 'admin':
      refuseAdmin(d.out, 'reduce task', input);
      return;
    case 'records':
    case 'recordsEnd':
      refuseRecords(d.out, 'reduce task', input);
      return;
  }
}

function onReceive(d: Draft, envelope: Envelope): void {
  const closed = settle(d.requests, d.out, envelope.inReplyTo);
  d.requests = closed.table;
  if (closed.request === undefined) return; // late answer to a request already given up on
  const message = envelope.message;
  const purpose = closed.request.purpose;
  switch (purpose.kind) {
    case 'fileGroup':
      if (message.type === 'GetReducerFileGroupResponse') onFileGroup(d, message);
      else fail(d, 'failure', describeUnexpected(message, 'GetReducerFileGroupResponse'));
      return;
    case 'open':
      if (message.type === 'OpenStreamResponse') onStreamOpened(d, message);
      else copyFailed(d, describeUnexpected(message, 'OpenStreamResponse'));
      return;
    case 'chunk':
      if (message.type === 'ChunkData') onChunk(d, purpose.chunkIndex, message);
      else copyFailed(d, describeUnexpected(message, 'ChunkData'));
      return;
  }
}

function onNoAnswer(d: Draft, purpose: ReduceRequest, attempt: number, why: string): void {
  switch (purpose.kind) {
    case 'fileGroup':
      if (attempt < d.config.maxRequestAttempts) askFileGroup(d, attempt + 1, false);
      else
        fail(
          d,
          'failure',
          `the lifecycle manager did not answer GetReducerFileGroup (${attempt} tries, ${why})`,
        );
      return;
    case 'open':
      copyFailed(d, `OpenStream ${why}`);
      return;
    case 'chunk':
      copyFailed(d, `chunk ${purpose.chunkIndex} ${why}`);
      return;
  }
}

/** `fresh`: a new round of asking (after STAGE_END_TIMEOUT), as opposed to a retry of an unanswered ask. */
function askFileGroup(d: Draft, attempt: number, fresh = true): void {
  if (fresh) d.fileGroupAttempts += 1;
  const { appId, shuffleId, lifecycleManager } = d.config;
  d.requests = ask(
    d.requests,
    d.out,
    {
      to: lifecycleManager,
      message: { type: 'GetReducerFileGroup', appId, shuffleId },
      purpose: { kind: 'fileGroup' },
      attempt,
    },
    d.config.requestTimeoutMs,
  );
}

function onFileGroup(d: Draft, message: MessageOf<'GetReducerFileGroupResponse'>): void {
  if (message.status === 'STAGE_END_TIMEOUT') {
    if (d.fileGroupAttempts >= d.config.maxFileGroupAttempts) {
      fail(
        d,
        'failure',
        `the map stage of shuffle ${d.config.shuffleId} did not end after ${d.fileGroupAttempts} asks: ${message.message}`,
      );
    } else setTimer(d.out, FILE_GROUP_RETRY_TIMER, d.out.now + d.config.fileGroupRetryIntervalMs);
    return;
  }
  if (message.status === 'SHUFFLE_DATA_LOST') {
    fetchFailure(d, `the lifecycle manager reports lost data: ${message.message}`);
    return;
  }
  if (message.status !== 'SUCCESS') {
    fail(d, 'failure', `GetReducerFileGroup failed with ${message.status}: ${message.message}`);
    return;
  }
  // Our lifecycle manager lists the groups by partition id, so the group is usually at its own index.
  const { partitionId } = d.config;
  const atIndex = message.fileGroups[partitionId];
  const group =
    atIndex?.partitionId === partitionId
      ? atIndex
      : message.fileGroups.find((g) => g.partitionId === partitionId);
  const plan = readPlan(group, message.mapAttempts);
  if (typeof plan === 'string') {
    fetchFailure(d, plan);
    return;
  }
  d.plan = plan;
  d.phase = 'fetching';
  d.cursor = { epochIndex: 0, copyIndex: 0, chunkIndex: 0, chunks: [] };
  openCopy(d);
}

/** Copies grouped by epoch (ascending), each epoch's primary before its replica; or why an epoch is unreadable. */
function readPlan(group: ReducerFileGroup | undefined, mapAttempts: readonly number[]): ReadPlan | string {
  if (group === undefined) return { epochs: [], mapAttempts, expected: [] };
  const byEpoch = new Map<number, { location: PartitionLocation; file: CommittedFile }[]>();
  for (const location of group.locations) {
    const copies = byEpoch.get(location.epoch) ?? [];
    byEpoch.set(location.epoch, copies);
    const file = group.files.find((f) => f.uniqueId === uniqueId(location) && f.mode === location.mode);
    if (file !== undefined) copies.push({ location, file });
  }
  const epochs: EpochCopies[] = [];
  for (const epoch of [...byEpoch.keys()].sort((a, b) => a - b)) {
    const copies = byEpoch.get(epoch)!.sort((a, b) => modeRank(a.location) - modeRank(b.location));
    if (copies.length === 0) {
      return `epoch ${epoch} of partition ${group.partitionId} is listed without any committed file`;
    }
    epochs.push({ epoch, copies });
  }
  return { epochs, mapAttempts, expected: group.expected };
}

function modeRank(location: PartitionLocation): number {
  return location.mode === 'PRIMARY' ? 0 : 1;
}

function currentCopy(d: Draft) {
  const { plan, cursor } = d;
  if (plan === undefined || cursor === undefined) return undefined;
  return plan.epochs[cursor.epochIndex]?.copies[cursor.copyIndex];
}

/** Opens the cursor's copy, or, when every epoch is read, assembles the partition. */
function openCopy(d: Draft): void {
  const copy = currentCopy(d);
  if (copy === undefined) {
    finish(d);
    return;
  }
  const { appId, shuffleId } = d.config;
  d.requests = ask(
    d.requests,
    d.out,
    {
      to: workerKey(copy.location.worker),
      message: {
        type: 'OpenStream',
        shuffleKey: shuffleKey(appId, shuffleId),
        uniqueId: copy.file.uniqueId,
        mode: copy.file.mode,
        readFirstChunk: true,
      },
      purpose: { kind: 'open' },
    },
    d.config.fetchTimeoutMs,
  );
}

function onStreamOpened(d: Draft, message: MessageOf<'OpenStreamResponse'>): void {
  const copy = currentCopy(d)!;
  if (message.status !== 'SUCCESS') {
    copyFailed(d, `OpenStream refused with ${message.status}: ${message.message}`);
    return;
  }
  const offsets = message.chunkOffsets;
  if (offsets[0] !== 0 || offsets[offsets.length - 1] !== copy.file.bytes) {
    copyFailed(
      d,
      `the stream's chunk offsets end at ${offsets[offsets.length - 1]} but the committed file has ${copy.file.bytes} bytes`,
      message.streamId,
    );
    return;
  }
  const { epochIndex, copyIndex } = d.cursor!;
  d.cursor = {
    epochIndex,
    copyIndex,
    streamId: message.streamId,
    chunkOffsets: offsets,
    chunkIndex: 0,
    chunks: [],
  };
  // The worker answered with chunk 0 (OpenStream.readFirstChunk); a server that does not only gives the offsets.
  if (message.firstChunk !== undefined && offsets.length > 1) acceptChunk(d, 0, message.firstChunk);
  else fetchNextChunk(d);
}

function fetchNextChunk(d: Draft): void {
  const cursor = d.cursor!;
  const chunks = cursor.chunkOffsets!.length - 1;
  if (cursor.chunkIndex >= chunks) {
    copyDone(d);
    return;
  }
  const copy = currentCopy(d)!;
  d.requests = ask(
    d.requests,
    d.out,
    {
      to: workerKey(copy.location.worker),
      message: { type: 'FetchChunk', streamId: cursor.streamId!, chunkIndex: cursor.chunkIndex },
      purpose: { kind: 'chunk', chunkIndex: cursor.chunkIndex },
    },
    d.config.fetchTimeoutMs,
  );
}

function onChunk(d: Draft, chunkIndex: number, message: MessageOf<'ChunkData'>): void {
  if (message.status !== 'SUCCESS') {
    copyFailed(
      d,
      `chunk ${chunkIndex} refused with ${message.status}: ${message.message}`,
      d.cursor!.streamId,
    );
    return;
  }
  acceptChunk(d, chunkIndex, message.bytes);
}

/** A chunk arrived (in ChunkData, or chunk 0 in the OpenStreamResponse): check it, keep its frames, go on. */
function acceptChunk(d: Draft, chunkIndex: number, bytes: Uint8Array): void {
  const cursor = d.cursor!;
  const offsets = cursor.chunkOffsets!;
  const length = offsets[chunkIndex + 1]! - offsets[chunkIndex]!;
  if (bytes.length !== length) {
    copyFailed(d, `chunk ${chunkIndex} has ${bytes.length} bytes, expected ${length}`, cursor.streamId);
    return;
  }
  const decoded = decodeBatchFrames(bytes);
  if (!decoded.ok) {
    count(d.out, 'FetchChunkCorruptCount');
    copyFailed(d, `chunk ${chunkIndex}: ${decoded.error.message}`, cursor.streamId);
    return;
  }
  d.cursor = { ...cursor, chunkIndex: chunkIndex + 1, chunks: [...cursor.chunks, decoded.value] };
  fetchNextChunk(d);
}

function copyDone(d: Draft): void {
  const cursor = d.cursor!;
  // No CloseStream: the worker ends a stream by itself once its last chunk was served.
  d.chunks = [...d.chunks, ...cursor.chunks];
  d.cursor = { epochIndex: cursor.epochIndex + 1, copyIndex: 0, chunkIndex: 0, chunks: [] };
  openCopy(d);
}

/** This copy cannot be read: drop what it gave, try the epoch's next copy; none left is a fetch failure. */
function copyFailed(d: Draft, reason: string, streamId?: number): void {
  const copy = currentCopy(d)!;
  const cursor = d.cursor!;
  closeStream(d, streamId);
  const line = `${copy.location.mode} copy of epoch ${copy.location.epoch} on ${workerKey(copy.location.worker)}: ${reason}`;
  d.copyFailures = [...d.copyFailures, line];
  log(d.out, 'warn', 'partition copy unreadable; trying the next copy', {
    partitionId: d.config.partitionId,
    reason: line,
  });
  count(d.out, 'FetchFailCount');
  const epoch = d.plan!.epochs[cursor.epochIndex]!;
  if (cursor.copyIndex + 1 < epoch.copies.length) {
    d.cursor = { epochIndex: cursor.epochIndex, copyIndex: cursor.copyIndex + 1, chunkIndex: 0, chunks: [] };
    openCopy(d);
    return;
  }
  fetchFailure(d, `no copy of epoch ${epoch.epoch} could be read: ${d.copyFailures.join('; ')}`);
}

function closeStream(d: Draft, streamId: number | undefined): void {
  if (streamId === undefined) return;
  const copy = currentCopy(d)!;
  tell(d.out, workerKey(copy.location.worker), { type: 'CloseStream', streamId });
}

function finish(d: Draft): void {
  const plan = d.plan!;
  const result = assemblePartition({
    shuffleId: d.config.shuffleId,
    partitionId: d.config.partitionId,
    frames: d.chunks.flat(),
    mapAttempts: plan.mapAttempts,
    expected: plan.expected,
    integrity: d.config.plantedBug !== 'dedupe-disabled',
  });
  if (!result.ok) {
    fail(d, 'integrity', result.message);
    return;
  }
  d.phase = 'done';
  d.output = { batches: result.batches, records: result.records };
  d.chunks = []; // the batches are out; the frames would only hold memory
  log(d.out, 'info', 'partition read', {
    partitionId: d.config.partitionId,
    records: result.records,
    duplicatesDropped: result.duplicatesDropped,
    losingBatchesDropped: result.losingBatchesDropped,
  });
}

function fetchFailure(d: Draft, reason: string): void {
  const { shuffleId, partitionId, stageRerunEnabled } = d.config;
  if (stageRerunEnabled) {
    fail(
      d,
      'fetch-failure',
      `FetchFailure for shuffle ${shuffleId} partition ${partitionId}: ${reason}. The engine reruns the map stage ` +
        'that wrote this shuffle (svc.client.spark.stageRerun.enabled=true).',
    );
  } else {
    fail(
      d,
      'unreadable',
      `cannot read shuffle ${shuffleId} partition ${partitionId}: ${reason}. Stage rerun is off ` +
        '(svc.client.spark.stageRerun.enabled=false), so the job fails; turn it on, or turn on replication ' +
        '(svc.client.push.replicate.enabled) to survive the loss of a worker.',
    );
  }
}

function fail(d: Draft, kind: ReduceError['kind'], message: string): void {
  d.phase = 'failed';
  d.error = { kind, message };
  log(d.out, 'error', 'reduce task failed', { partitionId: d.config.partitionId, kind, message });
}

function describeUnexpected(message: Message, wanted: string): string {
  return message.type === 'StatusResponse'
    ? `refused with ${message.status}: ${message.message}`
    : `protocol error: expected ${wanted}, got ${message.type}`;
}
