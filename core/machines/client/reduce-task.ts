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
import {
  admitFrames,
  checkWinnerCounts,
  newLedger,
  type IntegrityLedger,
  type PartitionIdentity,
} from './reader.ts';
import { recordsIn } from './records.ts';
import { ask, emptyRequests, expire, settle, type RequestTable } from './requests.ts';
import { askTimeoutOr, unansweredAsk, type AskTimeout } from './ask-timeout.ts';

/**
 * One reduce task (node `reduce-<app>-<shuffle>-<partition>`): asks the lifecycle manager for the partition's file
 * group (unless its executor already holds it: ReduceTaskConfig.cachedFileGroup), reads every epoch's committed
 * file (the primary copy, or the replica when the primary cannot be read), chunk by chunk, and streams: each chunk's
 * frames are CRC-checked and admitted by the reader's integrity layer (./reader.ts) as the chunk comes, and its
 * winning batches are handed out at once in `ready`. The consumer answers each chunk with a `consumed` input; at
 * most `maxChunksAhead` chunks are asked for, early or handed out and not consumed. The count check runs once every
 * epoch is read. docs/core/machines-client.md.
 *
 * Order: chunks are handed out in the order the files hold them (epochs ascending, each file from its start);
 * inside a batch, records keep the order the map wrote them. Order across maps or batches is no guarantee.
 */
export interface ReduceTaskConfig {
  readonly release: Release;
  readonly appId: AppId;
  readonly shuffleId: ShuffleId;
  readonly partitionId: number;
  readonly lifecycleManager: NodeId;
  /** `svc.rpc.askTimeout`: for GetReducerFileGroup when its own timeout is absent. */
  readonly requestTimeoutMs: number;
  /** `svc.client.rpc.getReducerFileGroup.askTimeout` (its fallback is the client release's). */
  readonly fileGroupTimeout?: AskTimeout;
  /** Tries of one unanswered request before the task fails. */
  readonly maxRequestAttempts: number;
  /** Wait before asking again when the stage has not ended yet (STAGE_END_TIMEOUT). */
  readonly fileGroupRetryIntervalMs: number;
  /** Asks for the file group before giving up on a stage that does not end. */
  readonly maxFileGroupAttempts: number;
  /** `svc.client.fetch.timeout`: an OpenStream or FetchChunk unanswered this long fails that copy. */
  readonly fetchTimeoutMs: number;
  /**
   * `svc.client.fetch.maxReqsInFlight`: chunks fetched ahead and not yet consumed (asked for, arrived, or handed out
   * and not yet answered by a `consumed` input). The task's memory is at most this many chunks.
   */
  readonly maxChunksAhead: number;
  /** `svc.client.spark.stageRerun.enabled`: whether unreadable data is a FetchFailure the engine answers by rerunning. */
  readonly stageRerunEnabled: boolean;
  /**
   * 'dedupe-disabled' switches the reader's integrity layer off, 'read-ahead-ignored' its read-ahead budget
   * (simulator proof only).
   */
  readonly plantedBug?: PlantedBug;
  /**
   * The shuffle's file group as the task's executor already holds it (./file-group-cache.ts): the task reads with it
   * and does not ask the lifecycle manager. Only a SUCCESS answer is used; anything else is asked for as usual.
   */
  readonly cachedFileGroup?: MessageOf<'GetReducerFileGroupResponse'>;
}

/**
 * - `file-group`: asking the lifecycle manager where the partition is (and waiting for the map stage to end).
 * - `fetching`: reading the epochs' copies chunk by chunk, handing each chunk's records out as it is admitted.
 * - `draining`: everything was read and the count check passed; handed-out chunks still wait for the consumer.
 * - `done`: the consumer has consumed every chunk. `failed`: see `error`.
 */
export type ReduceTaskPhase = 'file-group' | 'fetching' | 'draining' | 'done' | 'failed';

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

/**
 * Where the read is: which epoch and copy, and that copy's stream once open. Chunks are asked for in order, may
 * arrive in any order, and are admitted (and handed out) in order: `arrived` holds those that came early.
 */
export interface ReadCursor {
  readonly epochIndex: number;
  readonly copyIndex: number;
  /** An OpenStream of this copy is out. */
  readonly opening: boolean;
  readonly streamId?: number;
  readonly chunkOffsets?: readonly number[];
  /** The next chunk to ask for. */
  readonly nextRequest: number;
  /** The next chunk to admit. */
  readonly nextAdmit: number;
  /** Requests of this copy not yet answered (an OpenStream, which brings chunk 0, counts as one). */
  readonly inFlight: number;
  /** Chunks that arrived before the one to admit next, decoded and checked. */
  readonly arrived: ReadonlyMap<number, readonly BatchFrame[]>;
}

/**
 * One admitted chunk handed out to the consumer: its winning batches, new to the partition, each a whole number of
 * records (`recordsIn`, ./records.ts). `seq` counts the chunks handed out, from 0; the consumer answers with a
 * `consumed` input once it is done with a chunk, which frees its place in the read-ahead budget.
 */
export interface ReadyChunk {
  readonly seq: number;
  readonly batches: readonly Uint8Array[];
  readonly records: number;
}

export interface ReduceTaskState {
  readonly config: ReduceTaskConfig;
  readonly phase: ReduceTaskPhase;
  readonly requests: RequestTable<ReduceRequest>;
  readonly fileGroupAttempts: number;
  readonly plan?: ReadPlan;
  readonly cursor?: ReadCursor;
  /** Chunks handed out and not yet consumed, in `seq` order. */
  readonly ready: readonly ReadyChunk[];
  /** The `seq` the next chunk handed out gets. */
  readonly nextSeq: number;
  /** What was admitted so far (de-duplication, winners, counts): ./reader.ts. Updated in place. */
  readonly ledger: IntegrityLedger;
  /** Why copies could not be read (for the error message when no copy of an epoch can). */
  readonly copyFailures: readonly string[];
  /** While the map stage has not ended: the lifecycle manager's last word on it (which maps it waits for). */
  readonly waitingFor?: string;
  readonly error?: ReduceError;
}

/**
 * What a reduce task given up before its end (its consumer stopped iterating, or aborted) sends, so that the worker
 * forgets the stream it was reading instead of keeping it until the shuffle ends: a CloseStream for the open stream
 * of the copy being read, unless its last chunk was already asked for (the worker then ends the stream by itself).
 * The driver sends it as it stops the task; undefined when no stream is open.
 */
export function closeOnAbandon(
  state: ReduceTaskState,
): { readonly to: NodeId; readonly message: Message } | undefined {
  const { phase, plan, cursor } = state;
  if (phase !== 'fetching' || plan === undefined || cursor?.streamId === undefined) return undefined;
  const chunks = (cursor.chunkOffsets?.length ?? 1) - 1;
  if (cursor.nextRequest >= chunks) return undefined;
  const copy = plan.epochs[cursor.epochIndex]?.copies[cursor.copyIndex];
  if (copy === undefined) return undefined;
  return { to: workerKey(copy.location.worker), message: { type: 'CloseStream', streamId: cursor.streamId } };
}

/**
 * Whether the task still wants its file group (asking, or waiting for the map stage to end): once it does not, it
 * has either read it or given up, and its executor's other tasks of the shuffle no longer wait on its ask
 * (./file-group-cache.ts, `left`).
 */
export function wantsFileGroup(state: ReduceTaskState): boolean {
  return state.phase === 'file-group';
}

/** Chunks fetched ahead and not yet consumed: asked for, arrived early, or handed out (bounded by maxChunksAhead). */
export function chunksAhead(state: ReduceTaskState): number {
  const cursor = state.cursor;
  return (cursor === undefined ? 0 : cursor.inFlight + cursor.arrived.size) + state.ready.length;
}

/** The records of handed-out chunks, in order, each made as it is asked for. */
export function chunkRecords(chunks: readonly ReadyChunk[]): Iterable<Uint8Array> {
  return recordsIn(chunks.length === 1 ? chunks[0]!.batches : chunks.flatMap((chunk) => chunk.batches));
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
    ready: [],
    nextSeq: 0,
    ledger: newLedger(),
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
  ready: readonly ReadyChunk[];
  nextSeq: number;
  readonly ledger: IntegrityLedger;
  copyFailures: readonly string[];
  waitingFor?: string;
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
    case 'consumed':
      onConsumed(d, input.chunk);
      return;
    case 'ioDone':
    case 'ioFailed':
    case 'ioBatchDone':
    case 'diskSpace':
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
  if (purpose.kind !== 'fileGroup') answered(d);
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
      else copyFailed(d, describeUnexpected(message, 'ChunkData'), d.cursor!.streamId);
      return;
  }
}

/** A request of the current copy was answered (or given up on): one fewer in flight. */
function answered(d: Draft): void {
  const cursor = d.cursor!;
  d.cursor = { ...cursor, inFlight: cursor.inFlight - 1 };
}

function onNoAnswer(d: Draft, purpose: ReduceRequest, attempt: number, why: string): void {
  switch (purpose.kind) {
    case 'fileGroup':
      if (attempt < d.config.maxRequestAttempts) askFileGroup(d, attempt + 1, false);
      else fail(d, 'failure', unansweredAsk('GetReducerFileGroup', attempt, why, fileGroupTimeout(d)));
      return;
    case 'open':
      answered(d);
      copyFailed(d, `OpenStream ${why}`);
      return;
    case 'chunk':
      answered(d);
      copyFailed(d, `chunk ${purpose.chunkIndex} ${why}`, d.cursor!.streamId);
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
    fileGroupTimeout(d).ms,
  );
}

function fileGroupTimeout(d: Draft): AskTimeout {
  return askTimeoutOr(d.config.fileGroupTimeout, d.config.requestTimeoutMs);
}

function onFileGroup(d: Draft, message: MessageOf<'GetReducerFileGroupResponse'>): void {
  if (message.status === 'STAGE_END_TIMEOUT') {
    // Said at warn: a read that waits for maps that never end would otherwise wait in silence.
    d.waitingFor = message.message;
    log(d.out, 'warn', 'partition read waits for the map stage', {
      shuffleId: d.config.shuffleId,
      partitionId: d.config.partitionId,
      asks: d.fileGroupAttempts,
      lifecycleManager: message.message,
    });
    if (d.fileGroupAttempts >= d.config.maxFileGroupAttempts) {
      fail(
        d,
        'failure',
        `the map stage of shuffle ${d.config.shuffleId} did not end after ${d.fileGroupAttempts} asks: ${message.message}`,
      );
    } else setTimer(d.out, FILE_GROUP_RETRY_TIMER, d.out.now + d.config.fileGroupRetryIntervalMs);
    return;
  }
  delete d.waitingFor;
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
  d.cursor = freshCursor(0, 0);
  pump(d);
}

function freshCursor(epochIndex: number, copyIndex: number): ReadCursor {
  return {
    epochIndex,
    copyIndex,
    opening: false,
    nextRequest: 0,
    nextAdmit: 0,
    inFlight: 0,
    arrived: new Map(),
  };
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

function ahead(d: Draft): number {
  const cursor = d.cursor;
  return (cursor === undefined ? 0 : cursor.inFlight + cursor.arrived.size) + d.ready.length;
}

/**
 * Moves the read on as far as the read-ahead budget allows: opens the next copy, asks for chunks, steps to the next
 * epoch, and once every epoch is read runs the count check. Called after anything that may free budget or end a copy.
 */
function pump(d: Draft): void {
  const max = d.config.plantedBug === 'read-ahead-ignored' ? Infinity : Math.max(1, d.config.maxChunksAhead);
  for (;;) {
    if (d.phase === 'draining' && d.ready.length === 0) {
      d.phase = 'done';
      return;
    }
    if (d.phase !== 'fetching') return;
    const copy = currentCopy(d);
    if (copy === undefined) {
      finishReading(d);
      continue;
    }
    let cursor = d.cursor!;
    if (cursor.streamId === undefined) {
      if (copy.file.bytes === 0) {
        // Committed empty: nothing to read, and no need of its worker, which may be restarting (a rolling upgrade)
        // while the epoch's other copy failed its commit (upgrade-right-order seed 381476). A stream whose offsets
        // did not end at the committed length would be refused (onStreamOpened), so the length is the file's.
        d.cursor = freshCursor(cursor.epochIndex + 1, 0);
        continue;
      }
      // OpenStream brings chunk 0 with it (readFirstChunk): it needs a place in the budget.
      if (!cursor.opening && ahead(d) < max) openCopy(d, copy);
      return;
    }
    const chunks = cursor.chunkOffsets!.length - 1;
    if (cursor.nextAdmit >= chunks) {
      // No CloseStream: the worker ends a stream by itself once its last chunk was served.
      d.cursor = freshCursor(cursor.epochIndex + 1, 0);
      continue;
    }
    while (cursor.nextRequest < chunks && ahead(d) < max) {
      // The worker ends the stream once it has served the last chunk: ask for it only when no earlier request is
      // still out, so that the end cannot overtake one (a reordering network would make it refuse that request).
      if (cursor.nextRequest === chunks - 1 && cursor.inFlight > 0) break;
      requestChunk(d, copy, cursor.streamId!, cursor.nextRequest);
      cursor = { ...d.cursor!, nextRequest: cursor.nextRequest + 1, inFlight: d.cursor!.inFlight + 1 };
      d.cursor = cursor;
    }
    return;
  }
}

function openCopy(d: Draft, copy: EpochCopies['copies'][number]): void {
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
  d.cursor = { ...d.cursor!, opening: true, inFlight: d.cursor!.inFlight + 1 };
}

function onStreamOpened(d: Draft, message: MessageOf<'OpenStreamResponse'>): void {
  const copy = currentCopy(d)!;
  d.cursor = { ...d.cursor!, opening: false };
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
  d.cursor = { ...d.cursor, streamId: message.streamId, chunkOffsets: offsets };
  // The worker answered with chunk 0 (OpenStream.readFirstChunk); a server that does not only gives the offsets.
  if (message.firstChunk !== undefined && offsets.length > 1) {
    d.cursor = { ...d.cursor, nextRequest: 1 };
    acceptChunk(d, 0, message.firstChunk);
  } else pump(d);
}

function requestChunk(
  d: Draft,
  copy: EpochCopies['copies'][number],
  streamId: number,
  chunkIndex: number,
): void {
  d.requests = ask(
    d.requests,
    d.out,
    {
      to: workerKey(copy.location.worker),
      message: { type: 'FetchChunk', streamId, chunkIndex },
      purpose: { kind: 'chunk', chunkIndex },
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

/**
 * A chunk arrived (in ChunkData, or chunk 0 in the OpenStreamResponse): check its length and every frame's CRC, keep
 * it until the chunks before it are admitted, then admit it and every early one that follows it, in order.
 */
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
  // The map is the cursor's own: copied so that the previous state's cursor keeps what it had.
  const arrived = new Map(cursor.arrived);
  arrived.set(chunkIndex, decoded.value);
  let nextAdmit = cursor.nextAdmit;
  for (let frames = arrived.get(nextAdmit); frames !== undefined; frames = arrived.get(nextAdmit)) {
    arrived.delete(nextAdmit);
    nextAdmit += 1;
    if (!handOut(d, frames)) return;
  }
  d.cursor = { ...cursor, arrived, nextAdmit };
  pump(d);
}

/** Admits one chunk's frames (./reader.ts) and hands its winning batches out; false when the task failed. */
function handOut(d: Draft, frames: readonly BatchFrame[]): boolean {
  const admitted = admitFrames(d.ledger, identityOf(d), frames);
  if (!admitted.ok) {
    fail(d, 'integrity', admitted.message);
    return false;
  }
  // A chunk with nothing new (duplicates, losers) takes no place: nothing to consume.
  if (admitted.batches.length > 0) {
    d.ready = [...d.ready, { seq: d.nextSeq, batches: admitted.batches, records: admitted.records }];
    d.nextSeq += 1;
  }
  return true;
}

function identityOf(d: Draft): PartitionIdentity {
  return {
    shuffleId: d.config.shuffleId,
    partitionId: d.config.partitionId,
    mapAttempts: d.plan!.mapAttempts,
    integrity: d.config.plantedBug !== 'dedupe-disabled',
  };
}

/** The consumer is done with every chunk up to `seq`: their places in the budget are free. */
function onConsumed(d: Draft, seq: number): void {
  if (d.ready.length === 0 || d.ready[0]!.seq > seq) return;
  d.ready = d.ready.filter((chunk) => chunk.seq > seq);
  pump(d);
}

/**
 * This copy cannot be read: forget its requests and early chunks and try the epoch's next copy from its start (what
 * this copy already handed out stays out: the ledger drops those batches when the next copy holds them too); no
 * copy left is a fetch failure.
 */
function copyFailed(d: Draft, reason: string, streamId?: number): void {
  const copy = currentCopy(d)!;
  const cursor = d.cursor!;
  closeStream(d, copy, streamId);
  for (const request of [...d.requests.open.values()]) {
    if (request.purpose.kind !== 'fileGroup') d.requests = settle(d.requests, d.out, request.id).table;
  }
  const line = `${copy.location.mode} copy of epoch ${copy.location.epoch} on ${workerKey(copy.location.worker)}: ${reason}`;
  d.copyFailures = [...d.copyFailures, line];
  log(d.out, 'warn', 'partition copy unreadable; trying the next copy', {
    partitionId: d.config.partitionId,
    reason: line,
  });
  count(d.out, 'FetchFailCount');
  const epoch = d.plan!.epochs[cursor.epochIndex]!;
  if (cursor.copyIndex + 1 < epoch.copies.length) {
    d.cursor = freshCursor(cursor.epochIndex, cursor.copyIndex + 1);
    pump(d);
    return;
  }
  fetchFailure(d, `no copy of epoch ${epoch.epoch} could be read: ${d.copyFailures.join('; ')}`);
}

function closeStream(d: Draft, copy: EpochCopies['copies'][number], streamId: number | undefined): void {
  if (streamId === undefined) return;
  tell(d.out, workerKey(copy.location.worker), { type: 'CloseStream', streamId });
}

/** Every epoch was read: the count check of the integrity rules, then only the consumer's draining is left. */
function finishReading(d: Draft): void {
  const mismatch = checkWinnerCounts(d.ledger, identityOf(d), d.plan!.expected);
  if (mismatch !== undefined) {
    fail(d, 'integrity', mismatch);
    return;
  }
  d.phase = 'draining';
  d.cursor = undefined;
  log(d.out, 'info', 'partition read', {
    partitionId: d.config.partitionId,
    records: d.ledger.records,
    duplicatesDropped: d.ledger.duplicatesDropped,
    losingBatchesDropped: d.ledger.losingBatchesDropped,
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
  d.ready = []; // nothing more goes out: the consumer sees the failure
  log(d.out, 'error', 'reduce task failed', { partitionId: d.config.partitionId, kind, message });
}

function describeUnexpected(message: Message, wanted: string): string {
  return message.type === 'StatusResponse'
    ? `refused with ${message.status}: ${message.message}`
    : `protocol error: expected ${wanted}, got ${message.type}`;
}
