import {
  partitionEpochNumber,
  partitionFileName,
  workerKey,
  type PartitionMode,
  type StatusCode,
} from '../../domain/index.ts';
import { STATE_POLICIES } from '../../lifecycle/worker-states.ts';
import { decodeBatchFrame, isFrameOfBatch } from '../../protocol/batch-frame.ts';
import type { MergedBatch, PushData, PushMergedData } from '../../protocol/messages.ts';
import { workerNodeId } from '../../protocol/node-ids.ts';
import {
  admitPush,
  isPeerUnavailable,
  markPeerUnavailable,
  pushReply,
  type PushTarget,
  type ReplicaOutcome,
} from '../../replication/index.ts';
import { decideSplit, type SplitOptions, type WorkerStorage } from '../../storage/index.ts';
import type { Envelope, NodeId } from '../effects.ts';
import { admitted } from '../admission.ts';
import { replyToOf } from '../outbox.ts';
import { enqueueWrites } from './file-queue.ts';
import { cancelTimer, count, log, reply, send, setTimer, setEntry, type Outbox } from '../outbox.ts';
import {
  owned,
  takeId,
  type CopyOutcome,
  type FileTask,
  type PartitionFile,
  type PendingPush,
  type PushBatch,
  type SettledBatch,
  type WaitingBatch,
  type WorkerMachineState,
  type WorkerShuffle,
} from './state.ts';
import { storageView } from './storage-view.ts';
import { noteCongested, noteProduced, userCongested } from './congestion.ts';

/**
 * A file one push names, looked up once per push rather than once per batch (a merged push of 4 KiB batches names
 * each of its files a hundred times): its record, the bytes its queue already holds, and this push's writes to it.
 */
interface PushedFile {
  readonly name: string;
  readonly file: PartitionFile | undefined;
  /** Write bytes queued on the file before this push: its queue is walked once per push, not once per batch. */
  readonly queuedBefore: number;
  readonly tasks: FileTask[];
  /** Bytes of this push's accepted batches to the file so far. */
  bytes: number;
}

/** The timer that bounds a forward to the replica. */
export function requestTimer(requestId: number): string {
  return `req:${requestId}`;
}

/**
 * PushData and PushMergedData, one code path: a PushData is a merged push of its one batch, answered with a
 * PushDataResponse. Each batch is judged on its own, exactly as a PushData of it would be: the frame must be whole
 * and name the batch, and core/replication decides whether to take it (missing location, shutting down, failed
 * writer, split, peer fast-fail). The accepted batches are written (one task each on their file's queue, so appends
 * never interleave) and, on a primary, forwarded to the file's peer: one message per distinct peer (mode REPLICA,
 * the original's type), with one request id and one timeout each. The message is answered once, when every batch's
 * status is known (`pushReply` for the accepted ones).
 */
export function handlePush(
  s: WorkerMachineState,
  out: Outbox,
  envelope: Envelope,
  message: PushData | PushMergedData,
): WorkerMachineState {
  // A replica push comes from the primary worker: server traffic, not admitted by client release.
  if (message.mode === 'PRIMARY' && !admitted(out, 'worker', s.config.release, envelope)) return s;
  const { shuffleKey, mode } = message;
  const batches: readonly MergedBatch[] = message.type === 'PushData' ? [message] : message.batches;
  const shuffle = s.shuffles.get(shuffleKey);
  const shuttingDown = STATE_POLICIES[s.lifecycle.state].pushRedirect !== null;
  const checkPeers = mode === 'PRIMARY' && s.unavailablePeers.size > 0;
  // Enqueueing a write changes no tier's usage: one view of the storage serves every batch of the message.
  let view: WorkerStorage | undefined;
  let splitOptions: SplitOptions | undefined;
  let state = s;
  let pushId: number | undefined;
  let waiting = 0;
  let forwards: Map<NodeId, number[]> | undefined;
  // The files this push names, by partition and epoch; each one's writes are queued once every batch is judged, in
  // the order of each file's first accepted batch.
  const pushed = new Map<number | string, PushedFile>();
  const written: PushedFile[] = [];
  let acceptedBytes = 0;
  const judged: PushBatch[] = [];
  for (let index = 0; index < batches.length; index += 1) {
    const batch = batches[index]!;
    const target = pushedFile(pushed, shuffle, batch, mode);
    const { name: fileName, file } = target;
    const peer = file?.location.peer?.worker;
    let pushTarget: PushTarget;
    if (
      shuffle === undefined ||
      file === undefined ||
      file.status === 'committed' ||
      file.status === 'committing'
    ) {
      pushTarget = missingTarget(shuffle, message.mapId);
    } else {
      view ??= storageView(state);
      splitOptions ??= splitOptionsOf(state, shuffle);
      pushTarget = foundTarget(file, target.queuedBefore + target.bytes, mode, view, splitOptions);
    }
    const decision = admitPush({
      mode,
      target: pushTarget,
      shuttingDown,
      peerUnavailable:
        checkPeers &&
        peer !== undefined &&
        isPeerUnavailable(
          state.unavailablePeers,
          workerKey(peer),
          out.now,
          state.config.replicate.fastFailDurationMs,
        ),
    });
    if (decision.kind === 'reply') {
      judged.push(settled(fileName, batch.batchId, decision.status, decision.reason));
      continue;
    }
    const frameProblem = checkFrame(batch, message);
    if (frameProblem !== null) {
      const status =
        mode === 'PRIMARY'
          ? 'PUSH_DATA_FAIL_NON_CRITICAL_CAUSE_PRIMARY'
          : 'PUSH_DATA_FAIL_NON_CRITICAL_CAUSE_REPLICA';
      judged.push(settled(fileName, batch.batchId, status, frameProblem));
      continue;
    }
    judged.push({
      kind: 'waiting',
      fileName,
      batchId: batch.batchId,
      local: 'pending',
      replica: decision.replicate ? 'pending' : 'none',
      softSplit: decision.softSplit,
    });
    waiting += 1;
    if (decision.replicate && peer !== undefined) {
      forwards ??= new Map();
      const to = workerNodeId(peer);
      const group = forwards.get(to);
      if (group === undefined) forwards.set(to, [index]);
      else group.push(index);
    }
    if (pushId === undefined) pushId = takeId(state);
    if (target.tasks.length === 0) written.push(target);
    target.tasks.push({ kind: 'write', pushId, batch: index, bytes: batch.payload });
    target.bytes += batch.payload.length;
    acceptedBytes += batch.payload.length;
  }
  if (shuffle !== undefined) noteProduced(state, out, shuffle.appId, acceptedBytes);
  // Queued once every batch is judged: a file's batches of this push then go to its tier as one write.
  // Each target's record is still the stored one: judging a push changes no file.
  for (const target of written)
    if (target.file !== undefined) state = enqueueWrites(state, out, shuffleKey, target.file, target.tasks);

  const push: PendingPush = {
    replyTo: replyToOf(envelope),
    shuffleKey,
    mode,
    mapId: message.mapId,
    attemptId: message.attemptId,
    answer: message.type === 'PushData' ? 'PushDataResponse' : 'PushMergedDataResponse',
    batches: judged,
    waiting,
  };
  if (pushId === undefined) {
    answerPush(out, push);
    return state;
  }
  if (forwards !== undefined) forward(state, out, message, batches, pushId, forwards);
  setEntry(state.pushes, pushId, push);
  return state;
}

/** The local write of batch `batch` of a push ended. */
export function completeLocalWrite(
  s: WorkerMachineState,
  out: Outbox,
  pushId: number,
  batch: number,
  outcome: CopyOutcome,
): WorkerMachineState {
  const push = s.pushes.get(pushId);
  const current = push?.batches[batch];
  if (push === undefined || current?.kind !== 'waiting') return s;
  settleIfDone(s, out, pushId, push, batch, current, outcome, current.replica);
  return s;
}

/**
 * How a forward to the replica ended: the replica's statuses, one per forwarded batch in the forward's order, or one
 * outcome for all of them (its timer fired, the peer could not be reached, or it refused the message as a whole).
 */
export type ForwardResult =
  | { readonly kind: 'perBatch'; readonly statuses: readonly StatusCode[] }
  | { readonly kind: 'whole'; readonly outcome: ReplicaOutcome };

/** The replica's answer, its timeout, or the failure to reach it: the replica outcome of each forwarded batch. */
export function completeForward(
  s: WorkerMachineState,
  out: Outbox,
  requestId: number,
  result: ForwardResult,
): WorkerMachineState {
  const request = s.requests.get(requestId);
  if (request?.kind !== 'replicate') return s;
  cancelTimer(out, requestTimer(requestId));
  setEntry(s.requests, requestId, undefined);
  let state: WorkerMachineState = s;
  let whole = result.kind === 'whole' ? result.outcome : undefined;
  if (whole?.kind === 'connectFailed') {
    state = {
      ...state,
      unavailablePeers: markPeerUnavailable(state.unavailablePeers, request.peer, out.now),
    };
  }
  if (result.kind === 'perBatch' && result.statuses.length !== request.batches.length) {
    log(out, 'warn', 'worker.replicate.malformedAnswer', {
      peer: request.peer,
      forwarded: request.batches.length,
      statuses: result.statuses.length,
      note: 'the replica answered a different number of statuses than batches forwarded: each counts as refused',
    });
    whole = { kind: 'rejected', status: 'PUSH_DATA_FAIL_NON_CRITICAL_CAUSE_REPLICA' };
  }
  for (let k = 0; k < request.batches.length; k += 1) {
    const push = state.pushes.get(request.pushId);
    if (push === undefined) break;
    const index = request.batches[k]!;
    const batch = push.batches[index];
    if (batch?.kind !== 'waiting' || batch.replica !== 'pending') continue;
    const replica = whole ?? replicaOutcomeOf(result, k);
    settleIfDone(state, out, request.pushId, push, index, batch, batch.local, replica);
  }
  return state;
}

/** Answers every push still waiting on a file that is going away (destroyed, or its shuffle expired). */
export function failPushesOfFiles(
  s: WorkerMachineState,
  out: Outbox,
  shuffleKey: string,
  fileNames: ReadonlySet<string> | 'all',
  reason: string,
): WorkerMachineState {
  for (const [pushId, pending] of s.pushes) {
    if (pending.shuffleKey !== shuffleKey) continue;
    let push: PendingPush | undefined = pending;
    for (let index = 0; push !== undefined && index < push.batches.length; index += 1) {
      const batch = push.batches[index]!;
      if (batch.kind !== 'waiting' || (fileNames !== 'all' && !fileNames.has(batch.fileName))) continue;
      const status = 'PUSH_DATA_FAIL_PARTITION_NOT_FOUND';
      push = settle(s, out, pushId, push, index, settled(batch.fileName, batch.batchId, status, reason));
    }
  }
  return s;
}

/** Sends the batches each peer must replicate in one message per peer, each with its own request and timer. */
function forward(
  s: WorkerMachineState,
  out: Outbox,
  message: PushData | PushMergedData,
  batches: readonly MergedBatch[],
  pushId: number,
  forwards: ReadonlyMap<NodeId, readonly number[]>,
): void {
  for (const [peer, indexes] of forwards) {
    const requestId = takeId(s);
    send(
      out,
      peer,
      message.type === 'PushData'
        ? { ...message, mode: 'REPLICA' }
        : {
            type: 'PushMergedData',
            shuffleKey: message.shuffleKey,
            mode: 'REPLICA',
            mapId: message.mapId,
            attemptId: message.attemptId,
            batches: indexes.map((index) => batches[index]!),
          },
      requestId,
    );
    setTimer(out, requestTimer(requestId), out.now + s.config.replicate.timeoutMs);
    setEntry(s.requests, requestId, { kind: 'replicate', pushId, peer, batches: indexes });
  }
}

function replicaOutcomeOf(result: ForwardResult, k: number): ReplicaOutcome {
  if (result.kind === 'whole') return result.outcome;
  const status = result.statuses[k]!;
  return REPLICA_SUCCESS_CODES.has(status) ? { kind: 'acked', body: status } : { kind: 'rejected', status };
}

/**
 * Stores a batch that still waits for a copy, or settles it with `pushReply`'s status once both are known. The
 * copies' outcomes come apart from the waiting record: the batch that settles at once (most do) needs no new one.
 */
function settleIfDone(
  s: WorkerMachineState,
  out: Outbox,
  pushId: number,
  push: PendingPush,
  index: number,
  batch: WaitingBatch,
  local: WaitingBatch['local'],
  copy: WaitingBatch['replica'],
): void {
  if (local === 'pending' || copy === 'pending') {
    owned(push.batches)[index] = { ...batch, local, replica: copy };
    return;
  }
  const replica = copy === 'none' ? undefined : copy;
  const user = s.shuffles.get(push.shuffleKey)?.appId;
  const status = pushReply({
    mode: push.mode,
    localWritten: local.ok,
    ...(replica === undefined ? {} : { replica }),
    softSplit: batch.softSplit,
    congested: userCongested(s, user),
  });
  if (user !== undefined && CONGESTED.has(status)) noteCongested(s, user);
  const reason = local.ok
    ? replica !== undefined && replica.kind !== 'acked'
      ? `forwarding to the replica failed (${describeReplica(replica)})`
      : 'written'
    : `writing the ${push.mode === 'PRIMARY' ? 'primary' : 'replica'} copy failed (${local.error})`;
  settle(s, out, pushId, push, index, settled(batch.fileName, batch.batchId, status, reason));
}

/**
 * Records a batch's final status (in place, in the push's own array); the push is answered and forgotten when it
 * was the last one waiting. Returns the push as it stands, or undefined once answered.
 */
function settle(
  s: WorkerMachineState,
  out: Outbox,
  pushId: number,
  push: PendingPush,
  index: number,
  batch: SettledBatch,
): PendingPush | undefined {
  owned(push.batches)[index] = batch;
  const waiting = push.waiting - 1;
  if (waiting > 0) {
    // In place, as its batches are: a copy of the push for each of its hundreds of batches was garbage.
    (push as { waiting: number }).waiting = waiting;
    return push;
  }
  setEntry(s.pushes, pushId, undefined);
  answerPush(out, push);
  return undefined;
}

function settled(fileName: string, batchId: number, status: StatusCode, reason: string): SettledBatch {
  return { kind: 'settled', fileName, batchId, status, reason };
}

const REPLICA_SUCCESS_CODES: ReadonlySet<StatusCode> = new Set<StatusCode>([
  'SUCCESS',
  'SOFT_SPLIT',
  'HARD_SPLIT',
  'MAP_ENDED',
  'PUSH_DATA_SUCCESS_PRIMARY_CONGESTED',
  'PUSH_DATA_SUCCESS_REPLICA_CONGESTED',
]);

/** A push to a location this worker does not hold (or no longer takes writes for: committed or committing). */
function missingTarget(shuffle: WorkerShuffle | undefined, mapId: number): PushTarget {
  // A committed (or committing) file is sealed: to a push it is as gone as it is in the reference after commit.
  const attempts = shuffle?.mapAttempts;
  const attempt = attempts?.[mapId];
  return {
    kind: 'missing',
    mapper: attempts === undefined ? 'unknown' : attempt !== undefined && attempt >= 0 ? 'ended' : 'running',
    shuffleKnown: shuffle !== undefined,
  };
}

/** The file `batch` goes to, looked up on the push's first batch to it. */
function pushedFile(
  pushed: Map<number | string, PushedFile>,
  shuffle: WorkerShuffle | undefined,
  batch: MergedBatch,
  mode: PartitionMode,
): PushedFile {
  const { partitionId, epoch } = batch;
  // A number where it is exact, without building a string per batch.
  const key = partitionEpochNumber(partitionId, epoch) ?? `${partitionId}-${epoch}`;
  const known = pushed.get(key);
  if (known !== undefined) return known;
  const name = partitionFileName({ partitionId, epoch, mode });
  const file = shuffle?.files.get(name);
  let queuedBefore = 0;
  if (file !== undefined)
    for (const task of file.queue) if (task.kind === 'write') queuedBefore += task.bytes.length;
  const found: PushedFile = { name, file, queuedBefore, tasks: [], bytes: 0 };
  pushed.set(key, found);
  return found;
}

/** How the shuffle's files split on this worker: the same for every batch of a push. */
function splitOptionsOf(s: WorkerMachineState, shuffle: WorkerShuffle): SplitOptions {
  return {
    enabled: s.config.split.enabled,
    mode: shuffle.splitMode,
    thresholdBytes: shuffle.splitThreshold,
    minBytes: s.config.split.minBytes,
    maxBytes: s.config.split.maxBytes,
    maxMemoryFileBytes: s.config.memory.maxFileBytes,
  };
}

function foundTarget(
  file: PartitionFile,
  queued: number,
  mode: PartitionMode,
  view: WorkerStorage,
  options: SplitOptions,
): PushTarget {
  const split = decideSplit(
    {
      tier: file.file.tier,
      mountPoint: file.file.mountPoint,
      // The file's size once its queued writes and this push's earlier batches are written.
      fileBytes: file.bytes + queued,
      mode,
    },
    view,
    options,
  );
  return {
    kind: 'found',
    hasPeer: file.location.peer !== undefined,
    writerFailed: file.status === 'failed',
    split: split.decision,
  };
}

/** The frame must be whole, pass its CRC, and name the batch and the map attempt the message names. */
function checkFrame(batch: MergedBatch, message: PushData | PushMergedData): string | null {
  if (isFrameOfBatch(batch.payload, batch.partitionId, message.mapId, message.attemptId, batch.batchId))
    return null;
  const decoded = decodeBatchFrame(batch.payload);
  if (!decoded.ok) return `the pushed batch is damaged: ${decoded.error.message}`;
  const frame = decoded.value;
  if (
    frame.partitionId === batch.partitionId &&
    frame.mapId === message.mapId &&
    frame.attemptId === message.attemptId &&
    frame.batchId === batch.batchId
  )
    return null;
  const expected = {
    partitionId: batch.partitionId,
    mapId: message.mapId,
    attemptId: message.attemptId,
    batchId: batch.batchId,
  };
  const mismatched = (['partitionId', 'mapId', 'attemptId', 'batchId'] as const).filter(
    (field) => frame[field] !== expected[field],
  );
  return `the pushed batch's frame does not match its message (${mismatched
    .map((field) => `${field} ${frame[field]} vs ${expected[field]}`)
    .join(', ')}); the client framed it wrongly`;
}

function describeReplica(outcome: Exclude<ReplicaOutcome, { kind: 'acked' }>): string {
  switch (outcome.kind) {
    case 'rejected':
      return `it answered ${outcome.status}`;
    case 'connectFailed':
      return 'it could not be reached';
    case 'connectionLost':
      return 'the connection broke';
    case 'timedOut':
      return 'it did not answer in time';
  }
}

const CONGESTED: ReadonlySet<StatusCode> = new Set<StatusCode>([
  'PUSH_DATA_SUCCESS_PRIMARY_CONGESTED',
  'PUSH_DATA_SUCCESS_REPLICA_CONGESTED',
]);

/** Statuses of a batch that was written (a split or congestion code still means the bytes landed). */
const WRITTEN: ReadonlySet<StatusCode> = new Set<StatusCode>([
  'SUCCESS',
  'SOFT_SPLIT',
  'PUSH_DATA_SUCCESS_PRIMARY_CONGESTED',
  'PUSH_DATA_SUCCESS_REPLICA_CONGESTED',
]);

/**
 * Answers a push whose batches are all settled: a PushDataResponse (its one batch's status and reason) or a
 * PushMergedDataResponse (every batch's status, and one clause per distinct reason a batch was not written). Its
 * counters are emitted once per name with the number of batches that moved them, and at most one log line
 * summarises the batches that failed (warn; debug when they were only hard splits).
 */
function answerPush(out: Outbox, push: PendingPush): void {
  const statuses: StatusCode[] = [];
  const counters = new Map<string, number>();
  let notWritten: Map<string, { status: StatusCode; reason: string; batches: number }> | undefined;
  let failed = 0;
  let firstFailure: SettledBatch | undefined;
  let firstWarning: SettledBatch | undefined;
  for (const batch of push.batches) {
    if (batch.kind !== 'settled') throw new Error(`push answered while batch ${batch.batchId} still waits`);
    const { status } = batch;
    statuses.push(status);
    for (const name of pushMetrics(push.mode, status)) counters.set(name, (counters.get(name) ?? 0) + 1);
    if (WRITTEN.has(status)) continue;
    notWritten ??= new Map();
    const key = `${status}\n${batch.reason}`;
    const clause = notWritten.get(key);
    if (clause === undefined) notWritten.set(key, { status, reason: batch.reason, batches: 1 });
    else clause.batches += 1;
    if (status === 'MAP_ENDED') continue;
    failed += 1;
    firstFailure ??= batch;
    if (status !== 'HARD_SPLIT') firstWarning ??= batch;
  }
  const single = push.answer === 'PushDataResponse' ? push.batches[0] : undefined;
  if (single?.kind === 'settled') {
    reply(out, push.replyTo, { type: 'PushDataResponse', status: single.status, message: single.reason });
  } else {
    const clauses = notWritten === undefined ? [] : [...notWritten.values()];
    reply(out, push.replyTo, {
      type: 'PushMergedDataResponse',
      statuses,
      message: clauses
        .map((clause) => `${clause.batches} batch(es) ${clause.status}: ${clause.reason}`)
        .join('; '),
    });
  }
  for (const [name, n] of counters) count(out, name, n);
  const first = firstWarning ?? firstFailure;
  if (first === undefined) return;
  const summary = new Map<StatusCode, number>();
  for (const status of statuses) {
    if (!WRITTEN.has(status) && status !== 'MAP_ENDED') summary.set(status, (summary.get(status) ?? 0) + 1);
  }
  log(out, firstWarning === undefined ? 'debug' : 'warn', 'worker.push.notWritten', {
    shuffle: push.shuffleKey,
    mode: push.mode,
    map: push.mapId,
    attempt: push.attemptId,
    failed,
    of: statuses.length,
    statuses: [...summary].map(([status, n]) => `${status}×${n}`).join(', '),
    reason: first.reason,
    file: first.fileName,
    batch: first.batchId,
  });
}

/**
 * The counters a batch's status moves. A *_REPLICA failure on a primary is the forward's failure (ReplicateData*);
 * the same code answered by the replica itself is that worker's own write failure (WriteDataFailCount).
 */
function pushMetrics(mode: PartitionMode, status: StatusCode): readonly string[] {
  const byMode = MODE_DEPENDENT_METRICS[status];
  if (byMode !== undefined) return mode === 'PRIMARY' ? byMode.primary : byMode.replica;
  return PUSH_METRICS[status] ?? ['WriteDataFailCount'];
}

const PUSH_METRICS: Partial<Record<StatusCode, readonly string[]>> = {
  SUCCESS: ['WriteDataSuccessCount'],
  SOFT_SPLIT: ['WriteDataSuccessCount'],
  PUSH_DATA_SUCCESS_PRIMARY_CONGESTED: ['WriteDataSuccessCount', 'PushDataCongestedCount'],
  PUSH_DATA_SUCCESS_REPLICA_CONGESTED: ['WriteDataSuccessCount', 'PushDataCongestedCount'],
  MAP_ENDED: [],
  HARD_SPLIT: ['WriteDataHardSplitCount'],
  PUSH_DATA_CREATE_CONNECTION_FAIL_REPLICA: [
    'ReplicateDataFailCount',
    'ReplicateDataCreateConnectionFailCount',
  ],
  PUSH_DATA_CONNECTION_EXCEPTION_REPLICA: ['ReplicateDataFailCount', 'ReplicateDataConnectionExceptionCount'],
  PUSH_DATA_TIMEOUT_REPLICA: ['ReplicateDataFailCount', 'ReplicateDataTimeoutCount'],
};

const MODE_DEPENDENT_METRICS: Partial<
  Record<StatusCode, { primary: readonly string[]; replica: readonly string[] }>
> = {
  PUSH_DATA_WRITE_FAIL_REPLICA: {
    primary: ['ReplicateDataFailCount', 'ReplicateDataWriteFailCount'],
    replica: ['WriteDataFailCount'],
  },
  PUSH_DATA_FAIL_NON_CRITICAL_CAUSE_REPLICA: {
    primary: ['ReplicateDataFailCount', 'ReplicateDataFailNonCriticalCauseCount'],
    replica: ['WriteDataFailCount'],
  },
};
