import { initialLifecycle } from '../../lifecycle/worker-states.ts';
import type { Rng } from '../../rng.ts';
import { parseShuffleKey } from '../../domain/ids.ts';
import type { Message } from '../../protocol/messages.ts';
import { applicationOf, authorized, SERVER, type Requirement } from '../authorization.ts';
import type { Envelope, FileRef, Input, IoError } from '../effects.ts';
import type { Machine, Step } from '../machine.ts';
import {
  COMMIT_STEP_TIMER,
  DELETE_STEP_TIMER,
  completeFlush,
  continueCommit,
  continueDeletes,
  handleCommitFiles,
  handleDestroySlots,
} from './commit.ts';
import { DISK_CHECK_TIMER, armDiskCheck, isProbeOp, onDiskCheckTimer, onProbeIo } from './disk-health.ts';
import { completeEviction, completeFileTask, type FinishedTasks } from './file-queue.ts';
import {
  DRAIN_CHECK_TIMER,
  DRAIN_DEADLINE_TIMER,
  checkDrain,
  handleAdmin,
  maybeFinishExit,
  onDrainDeadline,
  recheckGracefulDrain,
} from './leaving.ts';
import {
  HEARTBEAT_TIMER,
  REGISTER_TIMER,
  attemptRegister,
  masterRequestFailed,
  onHeartbeatAnswer,
  onHeartbeatTimer,
  onRegisterAnswer,
  startRegistration,
} from './membership.ts';
import { inputBeforeStart, log, newOutbox, refuseRecords, setEntry, type Outbox } from '../outbox.ts';
import { groupIo } from './io-batch.ts';
import { completeForward, completeLocalWrite, handlePush } from './push.ts';
import { CONGESTION_CHECK_TIMER, noteConsumed, onCongestionCheck } from './congestion.ts';
import { completeRead, handleCloseStream, handleFetchChunk, handleOpenStream } from './read.ts';
import { decodeShuffleRecord, RECOVERY_KEY_PREFIX } from './recovery.ts';
import { findLeftovers } from './leftovers.ts';
import { completeCreate, continueReserve, handleReserveSlots, RESERVE_STEP_TIMER } from './reserve.ts';
import type { WorkerMachineState } from './state.ts';
import { accountBytes, noteDiskSpace } from './storage-view.ts';

/**
 * The worker as a pure state machine. Each step routes one input to the module that owns it (reserve, push,
 * commit, read, membership at the master, leaving the cluster) and returns the effects they decided, in order,
 * with its I/O operations handed to the disks as one batch (io-batch.ts).
 * docs/core/machines-master-worker.md lists every message, timer, persisted key and effect.
 */
export const workerMachine: Machine<WorkerMachineState> = {
  step(state: WorkerMachineState, input: Input, now: number, rng: Rng): Step<WorkerMachineState> {
    const out = newOutbox(now, rng);
    const next = handle(state, input, out);
    return { state: next, effects: groupIo(out.effects) };
  },
};

function handle(s: WorkerMachineState, input: Input, out: Outbox): WorkerMachineState {
  return maybeFinishExit(dispatch(s, input, out), out);
}

function dispatch(s: WorkerMachineState, input: Input, out: Outbox): WorkerMachineState {
  if (input.kind === 'start') return onStart(s, out, input.recovered, input.leftovers ?? []);
  if (!s.started) {
    inputBeforeStart(out, 'worker', input);
    return s;
  }
  switch (input.kind) {
    case 'receive':
      return onReceive(s, out, input.envelope);
    case 'timer':
      return onTimer(s, out, input.name);
    case 'ioDone':
      return onIo(s, out, input.op, { ok: true, bytes: input.bytes });
    case 'ioFailed':
      return onIo(s, out, input.op, { ok: false, error: input.error });
    case 'ioBatchDone': {
      // Each completion is handled exactly as its own ioDone or ioFailed input would be (machine-io.test.ts).
      let state = s;
      for (const completion of input.completions) state = handle(state, completion, out);
      return state;
    }
    case 'sendFailed': {
      const request = input.requestId === undefined ? undefined : s.requests.get(input.requestId);
      if (input.requestId === undefined || request === undefined) {
        log(out, 'debug', 'worker.sendFailed', { to: input.to, message: input.message.type });
        return s;
      }
      if (request.kind === 'replicate') {
        return completeForward(s, out, input.requestId, {
          kind: 'whole',
          outcome: { kind: input.sent === true ? 'connectionLost' : 'connectFailed' },
        });
      }
      return masterRequestFailed(
        s,
        out,
        input.requestId,
        request,
        `the master ${input.to} could not be reached`,
      );
    }
    case 'admin':
      return handleAdmin(s, out, input.command, input.commandId);
    case 'consumed': // a reduce task's input only
      return s;
    case 'diskSpace':
      return noteDiskSpace(s, input.disks);
    case 'records':
    case 'recordsEnd':
      refuseRecords(out, 'worker', input);
      return s;
  }
}

/**
 * (Re)start: restore the committed files of the recovery store, take note of the files an earlier run left on the
 * disks (./leftovers.ts), then register with the master.
 */
function onStart(
  s: WorkerMachineState,
  out: Outbox,
  recovered: ReadonlyMap<string, string>,
  found: readonly FileRef[],
): WorkerMachineState {
  if (s.started) {
    log(out, 'error', 'worker.startedTwice', { hint: 'a restarted worker begins from its initial state' });
    return s;
  }
  let state: WorkerMachineState = { ...s, started: true, lifecycle: initialLifecycle(out.now) };
  // Only a worker with graceful shutdown keeps a recovery store; without it, what an earlier run wrote is a leftover.
  if (s.config.gracefulShutdown.enabled && s.config.plantedBug !== 'restart-forgets-committed') {
    state = restore(state, out, recovered);
  }
  state = findLeftovers(state, out, found);
  armDiskCheck(state, out);
  return startRegistration(state, out);
}

function restore(
  s: WorkerMachineState,
  out: Outbox,
  recovered: ReadonlyMap<string, string>,
): WorkerMachineState {
  let state = s;
  let files = 0;
  const foreign: string[] = [];
  for (const [key, value] of recovered) {
    if (!key.startsWith(RECOVERY_KEY_PREFIX)) {
      foreign.push(key);
      continue;
    }
    const decoded = decodeShuffleRecord(key, value);
    if (!decoded.ok) {
      log(out, 'error', 'worker.recovery.rejected', { key, error: decoded.error });
      continue;
    }
    state = { ...state, shuffles: new Map(state.shuffles).set(decoded.shuffleKey, decoded.shuffle) };
    for (const file of decoded.shuffle.files.values()) {
      state = accountBytes(state, file.file, file.bytes);
      files += 1;
    }
  }
  if (files > 0) log(out, 'info', 'worker.recovery.restored', { shuffles: state.shuffles.size, files });
  // Keys this release never writes: a store laid out by another release, or another node's store at this path.
  // Whatever they describe is not served; one line says so rather than silence (or one line per key).
  if (foreign.length > 0) {
    log(out, 'error', 'worker.recovery.unknownKeys', {
      count: foreign.length,
      examples: foreign.slice(0, 5),
      hint:
        `this release reads only '${RECOVERY_KEY_PREFIX}<shuffle>' entries: the store was written by another ` +
        'release, or svc.worker.graceful.shutdown.recoverPath points at a store that is not this worker’s; ' +
        'nothing those keys describe is served',
    });
  }
  return state;
}

/**
 * What an arrived message needs its connection to have proved (../authorization.ts): a client's request about a
 * shuffle needs that shuffle's application, a replica's push and the answers to the worker's own requests need a
 * server. Undefined: nothing (a stream the worker does not have is refused by its handler anyway; misrouted
 * messages are ignored).
 */
function requirementOf(s: WorkerMachineState, message: Message): Requirement | undefined {
  switch (message.type) {
    case 'ReserveSlots':
    case 'CommitFiles':
    case 'DestroySlots':
      return applicationOf(message.appId);
    case 'PushData':
    case 'PushMergedData':
      return message.mode === 'REPLICA' ? SERVER : applicationOf(parseShuffleKey(message.shuffleKey).appId);
    case 'OpenStream':
      return applicationOf(parseShuffleKey(message.shuffleKey).appId);
    case 'FetchChunk':
    case 'CloseStream': {
      const stream = s.streams.get(message.streamId);
      return stream === undefined ? undefined : applicationOf(parseShuffleKey(stream.shuffleKey).appId);
    }
    case 'PushDataResponse':
    case 'PushMergedDataResponse':
    case 'StatusResponse':
    case 'RegisterWorkerResponse':
    case 'WorkerHeartbeatResponse':
    case 'ApplicationSecretResponse':
    case 'NotLeader': // a follower master's answer; the worker's network follows the leader before it gets here
      return SERVER;
    case 'RegisterWorker':
    case 'WorkerHeartbeat':
    case 'ReportWorkerUnavailable':
    case 'ReportWorkerDecommission':
    case 'ReportWorkerLost':
    case 'RegisterApplication':
    case 'ApplicationHeartbeat':
    case 'ApplicationHeartbeatResponse':
    case 'RequestSlots':
    case 'RequestSlotsResponse':
    case 'UnregisterShuffle':
    case 'UnregisterApplication':
    case 'GetApplicationSecret':
    case 'CommitFilesResponse':
    case 'RegisterShuffle':
    case 'RegisterShuffleResponse':
    case 'Revive':
    case 'ReviveResponse':
    case 'MapperEnd':
    case 'GetReducerFileGroup':
    case 'GetReducerFileGroupResponse':
    case 'OpenStreamResponse':
    case 'ChunkData':
      // Messages for other roles: misrouted, and ignored.
      return undefined;
  }
}

function onReceive(s: WorkerMachineState, out: Outbox, envelope: Envelope): WorkerMachineState {
  const message = envelope.message;
  const inReplyTo = envelope.inReplyTo;
  if (!authorized(out, 'worker', s.config.authEnabled === true, envelope, requirementOf(s, message)))
    return s;
  switch (message.type) {
    case 'ReserveSlots':
      return handleReserveSlots(s, out, envelope, message);
    case 'PushData':
    case 'PushMergedData':
      return handlePush(s, out, envelope, message);
    case 'CommitFiles':
      return handleCommitFiles(s, out, envelope, message);
    case 'DestroySlots':
      return handleDestroySlots(s, out, envelope, message);
    case 'OpenStream':
      return handleOpenStream(s, out, envelope, message);
    case 'FetchChunk':
      return handleFetchChunk(s, out, envelope, message);
    case 'CloseStream':
      return handleCloseStream(s, out, envelope, message);
    case 'PushDataResponse':
      if (inReplyTo !== undefined)
        return completeForward(s, out, inReplyTo, { kind: 'perBatch', statuses: [message.status] });
      break;
    case 'PushMergedDataResponse':
      if (inReplyTo !== undefined)
        return completeForward(s, out, inReplyTo, { kind: 'perBatch', statuses: message.statuses });
      break;
    case 'StatusResponse':
      // A peer that refuses the forwarded push outright (for example by release) answers with a bare status.
      if (inReplyTo !== undefined && s.requests.get(inReplyTo)?.kind === 'replicate') {
        return completeForward(s, out, inReplyTo, {
          kind: 'whole',
          outcome: { kind: 'rejected', status: message.status },
        });
      }
      break;
    case 'RegisterWorkerResponse':
      if (inReplyTo !== undefined) return onRegisterAnswer(s, out, inReplyTo, message);
      break;
    case 'WorkerHeartbeatResponse':
      if (inReplyTo !== undefined) return onHeartbeatAnswer(s, out, inReplyTo, message);
      break;
    case 'NotLeader':
    case 'RegisterWorker':
    case 'WorkerHeartbeat':
    case 'ReportWorkerUnavailable':
    case 'ReportWorkerDecommission':
    case 'ReportWorkerLost':
    case 'RegisterApplication':
    case 'ApplicationHeartbeat':
    case 'ApplicationHeartbeatResponse':
    case 'RequestSlots':
    case 'RequestSlotsResponse':
    case 'UnregisterShuffle':
    case 'UnregisterApplication':
    case 'GetApplicationSecret':
    case 'ApplicationSecretResponse':
    case 'CommitFilesResponse':
    case 'RegisterShuffle':
    case 'RegisterShuffleResponse':
    case 'Revive':
    case 'ReviveResponse':
    case 'MapperEnd':
    case 'GetReducerFileGroup':
    case 'GetReducerFileGroupResponse':
    case 'OpenStreamResponse':
    case 'ChunkData':
      // Messages for other roles: a misrouted envelope.
      break;
  }
  log(out, 'warn', 'worker.unexpectedMessage', { type: message.type, from: envelope.from, inReplyTo });
  return s;
}

function onTimer(s: WorkerMachineState, out: Outbox, name: string): WorkerMachineState {
  switch (name) {
    case HEARTBEAT_TIMER:
      return onHeartbeatTimer(s, out);
    case REGISTER_TIMER:
      return attemptRegister(s, out);
    case DRAIN_CHECK_TIMER:
      return checkDrain(s, out);
    case DRAIN_DEADLINE_TIMER:
      return onDrainDeadline(s, out);
    case DISK_CHECK_TIMER:
      return onDiskCheckTimer(s, out);
    case CONGESTION_CHECK_TIMER:
      return onCongestionCheck(s, out);
  }
  if (name.startsWith(RESERVE_STEP_TIMER))
    return continueReserve(s, out, Number(name.slice(RESERVE_STEP_TIMER.length)));
  if (name === DELETE_STEP_TIMER) return continueDeletes(s, out);
  if (name.startsWith(COMMIT_STEP_TIMER))
    return continueCommit(s, out, Number(name.slice(COMMIT_STEP_TIMER.length)));
  const requestId = name.startsWith('req:') ? Number(name.slice(4)) : Number.NaN;
  const request = s.requests.get(requestId);
  if (request === undefined) return s;
  if (request.kind === 'replicate')
    return completeForward(s, out, requestId, { kind: 'whole', outcome: { kind: 'timedOut' } });
  return masterRequestFailed(
    s,
    out,
    requestId,
    request,
    `no answer within ${s.config.masterRequestTimeoutMs} ms`,
  );
}

type IoResult =
  | { readonly ok: true; readonly bytes: Uint8Array | undefined }
  | { readonly ok: false; readonly error: IoError };

function onIo(s: WorkerMachineState, out: Outbox, op: number, result: IoResult): WorkerMachineState {
  if (isProbeOp(op)) {
    // diskProblems is updated in place: remember its size before the probe can clear a disk.
    const failedDisks = s.diskProblems.size;
    const next = onProbeIo(s, out, op, result.ok ? undefined : result.error);
    return next.diskProblems.size < failedDisks ? recheckGracefulDrain(next, out) : next;
  }
  const purpose = s.ops.get(op);
  if (purpose === undefined) {
    log(out, 'warn', 'worker.io.unknownOp', { op });
    return s;
  }
  setEntry(s.ops, op, undefined);
  switch (purpose.kind) {
    case 'create':
      return completeCreate(s, out, purpose, result);
    case 'file-task': {
      const step = completeFileTask(s, out, purpose, result);
      return routeFinished(step.state, out, step.finished);
    }
    case 'evict-move': {
      const step = completeEviction(s, out, purpose, result);
      return recheckGracefulDrain(routeFinished(step.state, out, step.finished), out);
    }
    case 'read':
      return completeRead(s, out, purpose, readResult(result, purpose.length));
  }
}

/** A read must return exactly the chunk's bytes; anything else would hand a reader a torn chunk. */
function readResult(
  result: IoResult,
  length: number,
): { readonly ok: true; readonly bytes: Uint8Array } | { readonly ok: false; readonly error: IoError } {
  if (!result.ok) return result;
  if (result.bytes === undefined || result.bytes.length !== length) return { ok: false, error: 'IO_ERROR' };
  return { ok: true, bytes: result.bytes };
}

/** Hands each finished file task to its owner: a write to its push, a flush to its commit. */
function routeFinished(
  s: WorkerMachineState,
  out: Outbox,
  finished: readonly FinishedTasks[],
): WorkerMachineState {
  let state = s;
  for (const { shuffleKey, fileName, tasks, outcome } of finished) {
    for (const task of tasks) {
      if (task.kind === 'write') {
        if (outcome.ok) noteConsumed(state, out, task.bytes.length);
        state = completeLocalWrite(state, out, task.pushId, task.batch, outcome);
      } else if (task.kind === 'flush')
        state = completeFlush(state, out, task.commitId, shuffleKey, fileName, outcome);
    }
  }
  return state;
}
