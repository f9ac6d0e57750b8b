import { partitionFileName, workerKey, type PartitionMode, type StatusCode } from '../../domain/index.ts';
import { STATE_POLICIES } from '../../lifecycle/worker-states.ts';
import { decodeBatchFrame } from '../../protocol/batch-frame.ts';
import type { PushData, PushDataResponse } from '../../protocol/messages.ts';
import { workerNodeId } from '../../protocol/node-ids.ts';
import {
  admitPush,
  isPeerUnavailable,
  markPeerUnavailable,
  pushReply,
  type PushTarget,
  type ReplicaOutcome,
} from '../../replication/index.ts';
import { decideSplit } from '../../storage/index.ts';
import type { Envelope } from '../effects.ts';
import { admitted } from '../admission.ts';
import { replyToOf } from '../outbox.ts';
import { enqueueTask } from './file-queue.ts';
import { cancelTimer, count, log, reply, send, setTimer, setEntry, type Outbox } from '../outbox.ts';
import type {
  CopyOutcome,
  PartitionFile,
  PendingPush,
  ReplyTo,
  WorkerMachineState,
  WorkerShuffle,
} from './state.ts';
import { storageView } from './storage-view.ts';

/** The timer that bounds a forward to the replica. */
export function requestTimer(requestId: number): string {
  return `req:${requestId}`;
}

/**
 * PushData. A primary with a peer writes locally and forwards the same message (mode REPLICA) to the peer at once,
 * and answers only when both are done; core/replication decides whether to take the push and what to answer.
 */
export function handlePushData(
  s: WorkerMachineState,
  out: Outbox,
  envelope: Envelope,
  message: PushData,
): WorkerMachineState {
  // A replica push comes from the primary worker: server traffic, not admitted by client release.
  if (message.mode === 'PRIMARY' && !admitted(out, 'worker', s.config.release, envelope)) return s;
  const replyTo = replyToOf(envelope);
  const shuffle = s.shuffles.get(message.shuffleKey);
  const name = partitionFileName({
    partitionId: message.partitionId,
    epoch: message.epoch,
    mode: message.mode,
  });
  const file = shuffle?.files.get(name);
  const peer = file?.location.peer;
  const decision = admitPush({
    mode: message.mode,
    target: pushTarget(s, shuffle, file, message),
    shuttingDown: STATE_POLICIES[s.lifecycle.state].pushRedirect !== null,
    peerUnavailable:
      peer !== undefined &&
      isPeerUnavailable(
        s.unavailablePeers,
        workerKey(peer.worker),
        out.now,
        s.config.replicate.fastFailDurationMs,
      ),
  });
  if (decision.kind === 'reply') {
    answer(out, replyTo, message.mode, decision.status, decision.reason, {
      shuffle: message.shuffleKey,
      file: name,
    });
    return s;
  }
  const frameProblem = checkFrame(message);
  if (frameProblem !== null) {
    const status =
      message.mode === 'PRIMARY'
        ? 'PUSH_DATA_FAIL_NON_CRITICAL_CAUSE_PRIMARY'
        : 'PUSH_DATA_FAIL_NON_CRITICAL_CAUSE_REPLICA';
    answer(out, replyTo, message.mode, status, frameProblem, {
      shuffle: message.shuffleKey,
      file: name,
      from: envelope.from,
    });
    return s;
  }

  const pushId = s.nextId;
  let state: WorkerMachineState = { ...s, nextId: pushId + 1 };
  const push: PendingPush = {
    replyTo,
    shuffleKey: message.shuffleKey,
    fileName: name,
    mode: message.mode,
    mapId: message.mapId,
    attemptId: message.attemptId,
    batchId: message.batchId,
    local: 'pending',
    replica: decision.replicate ? 'pending' : 'none',
    softSplit: decision.softSplit,
  };
  setEntry(state.pushes, pushId, push);
  if (decision.replicate && peer !== undefined) {
    const requestId = state.nextId;
    const to = workerNodeId(peer.worker);
    send(out, to, { ...message, mode: 'REPLICA' }, requestId);
    setTimer(out, requestTimer(requestId), out.now + state.config.replicate.timeoutMs);
    state = {
      ...state,
      nextId: requestId + 1,
      requests: setEntry(state.requests, requestId, { kind: 'replicate', pushId, peer: to }),
    };
  }
  return enqueueTask(state, out, message.shuffleKey, name, { kind: 'write', pushId, bytes: message.payload });
}

/** The local write of a push ended. */
export function completeLocalWrite(
  s: WorkerMachineState,
  out: Outbox,
  pushId: number,
  outcome: CopyOutcome,
): WorkerMachineState {
  const push = s.pushes.get(pushId);
  if (push === undefined) return s;
  return finishIfDone(s, out, pushId, { ...push, local: outcome });
}

/** The replica's answer, its timeout, or the failure to reach it. */
export function completeReplica(
  s: WorkerMachineState,
  out: Outbox,
  requestId: number,
  outcome: ReplicaOutcome,
): WorkerMachineState {
  const request = s.requests.get(requestId);
  if (request?.kind !== 'replicate') return s;
  cancelTimer(out, requestTimer(requestId));
  setEntry(s.requests, requestId, undefined);
  let state: WorkerMachineState = s;
  if (outcome.kind === 'connectFailed') {
    state = {
      ...state,
      unavailablePeers: markPeerUnavailable(state.unavailablePeers, request.peer, out.now),
    };
  }
  const push = state.pushes.get(request.pushId);
  if (push === undefined) return state;
  return finishIfDone(state, out, request.pushId, { ...push, replica: outcome });
}

/** How the primary reads the replica's answer: a success code (possibly a split or congestion) or a failure. */
export function replicaAnswer(response: PushDataResponse): ReplicaOutcome {
  return REPLICA_SUCCESS_CODES.has(response.status)
    ? { kind: 'acked', body: response.status }
    : { kind: 'rejected', status: response.status };
}

/** Answers every push still waiting on a file that is going away (destroyed, or its shuffle expired). */
export function failPushesOfFiles(
  s: WorkerMachineState,
  out: Outbox,
  shuffleKey: string,
  fileNames: ReadonlySet<string> | 'all',
  reason: string,
): WorkerMachineState {
  let pushes = s.pushes;
  for (const [pushId, push] of s.pushes) {
    if (push.shuffleKey !== shuffleKey || (fileNames !== 'all' && !fileNames.has(push.fileName))) continue;
    answer(out, push.replyTo, push.mode, 'PUSH_DATA_FAIL_PARTITION_NOT_FOUND', reason, {
      shuffle: shuffleKey,
      file: push.fileName,
    });
    pushes = setEntry(pushes, pushId, undefined);
  }
  return pushes === s.pushes ? s : { ...s, pushes };
}

const REPLICA_SUCCESS_CODES: ReadonlySet<StatusCode> = new Set<StatusCode>([
  'SUCCESS',
  'SOFT_SPLIT',
  'HARD_SPLIT',
  'MAP_ENDED',
  'PUSH_DATA_SUCCESS_PRIMARY_CONGESTED',
  'PUSH_DATA_SUCCESS_REPLICA_CONGESTED',
]);

function pushTarget(
  s: WorkerMachineState,
  shuffle: WorkerShuffle | undefined,
  file: PartitionFile | undefined,
  message: PushData,
): PushTarget {
  // A committed (or committing) file is sealed: to a push it is as gone as it is in the reference after commit.
  if (
    shuffle === undefined ||
    file === undefined ||
    file.status === 'committed' ||
    file.status === 'committing'
  ) {
    const attempts = shuffle?.mapAttempts;
    const attempt = attempts?.[message.mapId];
    return {
      kind: 'missing',
      mapper:
        attempts === undefined ? 'unknown' : attempt !== undefined && attempt >= 0 ? 'ended' : 'running',
      shuffleKnown: shuffle !== undefined,
    };
  }
  const queued = file.queue.reduce((sum, task) => sum + (task.kind === 'write' ? task.bytes.length : 0), 0);
  const split = decideSplit(
    {
      tier: file.file.tier,
      mountPoint: file.file.mountPoint,
      fileBytes: file.bytes + queued,
      mode: message.mode,
    },
    storageView(s),
    {
      enabled: s.config.split.enabled,
      mode: shuffle.splitMode,
      thresholdBytes: shuffle.splitThreshold,
      minBytes: s.config.split.minBytes,
      maxBytes: s.config.split.maxBytes,
      maxMemoryFileBytes: s.config.memory.maxFileBytes,
    },
  );
  return {
    kind: 'found',
    hasPeer: file.location.peer !== undefined,
    writerFailed: file.status === 'failed',
    split: split.decision,
  };
}

/** The frame must be whole, pass its CRC, and name the batch the message names (core/protocol/batch-frame.ts). */
function checkFrame(message: PushData): string | null {
  const decoded = decodeBatchFrame(message.payload);
  if (!decoded.ok) return `the pushed batch is damaged: ${decoded.error.message}`;
  const frame = decoded.value;
  const mismatched = (['partitionId', 'mapId', 'attemptId', 'batchId'] as const).filter(
    (field) => frame[field] !== message[field],
  );
  if (mismatched.length === 0) return null;
  return `the pushed batch's frame does not match its message (${mismatched
    .map((field) => `${field} ${frame[field]} vs ${message[field]}`)
    .join(', ')}); the client framed it wrongly`;
}

function finishIfDone(
  s: WorkerMachineState,
  out: Outbox,
  pushId: number,
  push: PendingPush,
): WorkerMachineState {
  if (push.local === 'pending' || push.replica === 'pending') {
    setEntry(s.pushes, pushId, push);
    return s;
  }
  const replica = push.replica === 'none' ? undefined : push.replica;
  const status = pushReply({
    mode: push.mode,
    localWritten: push.local.ok,
    ...(replica === undefined ? {} : { replica }),
    softSplit: push.softSplit,
    congested: false,
  });
  const reason = push.local.ok
    ? replica !== undefined && replica.kind !== 'acked'
      ? `forwarding to the replica failed (${describeReplica(replica)})`
      : 'written'
    : `writing the ${push.mode === 'PRIMARY' ? 'primary' : 'replica'} copy failed (${push.local.error})`;
  answer(out, push.replyTo, push.mode, status, reason, {
    shuffle: push.shuffleKey,
    file: push.fileName,
    map: push.mapId,
    attempt: push.attemptId,
    batch: push.batchId,
  });
  setEntry(s.pushes, pushId, undefined);
  return s;
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

/** Replies to a push and counts it under the contract's worker metrics. */
function answer(
  out: Outbox,
  to: ReplyTo,
  mode: PartitionMode,
  status: StatusCode,
  reason: string,
  fields: Readonly<Record<string, unknown>>,
): void {
  reply(out, to, { type: 'PushDataResponse', status, message: reason });
  for (const name of pushMetrics(mode, status)) count(out, name);
  if (
    status === 'SUCCESS' ||
    status === 'SOFT_SPLIT' ||
    status === 'MAP_ENDED' ||
    status.endsWith('_CONGESTED')
  )
    return;
  log(out, status === 'HARD_SPLIT' ? 'debug' : 'warn', 'worker.push.notWritten', {
    status,
    reason,
    ...fields,
  });
}

/**
 * The counters a push's answer moves. A *_REPLICA failure on a primary is the forward's failure (ReplicateData*);
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
  PUSH_DATA_SUCCESS_PRIMARY_CONGESTED: ['WriteDataSuccessCount'],
  PUSH_DATA_SUCCESS_REPLICA_CONGESTED: ['WriteDataSuccessCount'],
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
