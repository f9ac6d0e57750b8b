import {
  shuffleKey as shuffleKeyOf,
  type PartitionMode,
  type ShuffleKey,
  type StatusCode,
} from '../../domain/index.ts';
import { STATE_POLICIES } from '../../lifecycle/worker-states.ts';
import type { CommitFiles, CommittedFile, DestroySlots } from '../../protocol/messages.ts';
import type { Envelope } from '../effects.ts';
import { admitted } from '../admission.ts';
import { replyToOf } from '../outbox.ts';
import { enqueueOn } from './file-queue.ts';
import { committedFileOf, editFile, fileNameFor, filesPerStep, getFile, shuffleRecord } from './files.ts';
import { count, log, reply, setEntry, setTimer, type Outbox } from '../outbox.ts';
import { failPushesOfFiles } from './push.ts';
import { encodeShuffleRecord, recoveryKey } from './recovery.ts';
import {
  owned,
  takeId,
  type CopyOutcome,
  type PendingCommit,
  type PendingDelete,
  type WorkerMachineState,
} from './state.ts';
import { accountBytes } from './storage-view.ts';

/**
 * CommitFiles: flush each listed file after every write accepted before the commit, seal it, and answer with each
 * committed file's final storage, length and chunk offsets, and the ids that could not be committed. The shuffle's
 * committed files are written to the recovery store before the answer, so that an acknowledged commit survives a
 * restart. A file sealed by an earlier write failure is committed with its acknowledged prefix.
 */
export function handleCommitFiles(
  s: WorkerMachineState,
  out: Outbox,
  envelope: Envelope,
  message: CommitFiles,
): WorkerMachineState {
  if (!admitted(out, 'worker', s.config.release, envelope)) return s;
  const replyTo = replyToOf(envelope);
  const key = shuffleKeyOf(message.appId, message.shuffleId);
  const pending: PendingCommit = {
    replyTo,
    shuffleKey: key,
    flushing: new Set(),
    primaryIds: message.primaryIds,
    replicaIds: message.replicaIds,
    next: message.primaryIds.length + message.replicaIds.length,
    started: 0,
  };
  if (!STATE_POLICIES[s.lifecycle.state].servesCommitsAndFetches) {
    return answerCommit(
      s,
      out,
      pending,
      'WORKER_SHUTDOWN',
      `the worker is ${s.lifecycle.state} and commits nothing more`,
    );
  }
  const shuffle = s.shuffles.get(key);
  if (shuffle === undefined) {
    return answerCommit(s, out, pending, undefined, `this worker holds no files of ${key}`);
  }
  const commitId = takeId(s);
  setEntry(s.shuffles, key, shuffleRecord(shuffle, { mapAttempts: message.mapAttempts }));
  return startFlushes(s, out, commitId, { ...pending, next: 0 });
}

/** The timer that goes on with a commit's files in the next step (followed by the commit's id). */
export const COMMIT_STEP_TIMER = 'commit:';

/** Goes on with a commit whose files did not all fit one step (COMMIT_STEP_TIMER). */
export function continueCommit(s: WorkerMachineState, out: Outbox, commitId: number): WorkerMachineState {
  const pending = s.commits.get(commitId);
  if (pending === undefined || pending.next >= listedCount(pending)) return s;
  return startFlushes(s, out, commitId, pending);
}

function listedCount(pending: PendingCommit): number {
  return pending.primaryIds.length + pending.replicaIds.length;
}

/**
 * Starts the flushes of the commit's next listed files, at most filesPerStep of them (committing 10,000 files in
 * one step held the worker's event loop for about 100 ms); the rest go on in the next step.
 */
function startFlushes(
  s: WorkerMachineState,
  out: Outbox,
  commitId: number,
  pending: PendingCommit,
): WorkerMachineState {
  const key = pending.shuffleKey;
  const flushing = owned(pending.flushing);
  const primaries = pending.primaryIds.length;
  const end = Math.min(listedCount(pending), pending.next + filesPerStep(s));
  let started = pending.started;
  let state = s;
  for (let k = pending.next; k < end; k += 1) {
    const name =
      k < primaries
        ? fileNameFor(pending.primaryIds[k]!, 'PRIMARY')
        : fileNameFor(pending.replicaIds[k - primaries]!, 'REPLICA');
    const file = getFile(state, key, name);
    if (file === undefined || file.status === 'committed' || flushing.has(name)) continue;
    editFile(file).status = 'committing';
    state = enqueueOn(state, out, key, file, { kind: 'flush', commitId });
    flushing.add(name);
    started += 1;
  }
  const next: PendingCommit = { ...pending, next: end, started };
  if (end < listedCount(next)) {
    setEntry(state.commits, commitId, next);
    setTimer(out, `${COMMIT_STEP_TIMER}${commitId}`, out.now);
    return state;
  }
  if (flushing.size === 0) {
    setEntry(state.commits, commitId, undefined);
    return answerCommit(state, out, next, undefined, started === 0 ? 'nothing to flush' : 'committed');
  }
  setEntry(state.commits, commitId, next);
  return state;
}

/** A file's flush for a commit ended: the file is committed, or it failed. */
export function completeFlush(
  s: WorkerMachineState,
  out: Outbox,
  commitId: number,
  shuffleKey: ShuffleKey,
  name: string,
  outcome: CopyOutcome,
): WorkerMachineState {
  const file = getFile(s, shuffleKey, name);
  if (file !== undefined) {
    const sealed = editFile(file);
    if (outcome.ok) sealed.status = 'committed';
    else {
      sealed.status = 'failed';
      sealed.failure = `flush failed: ${outcome.error}`;
    }
  }
  return flushSettled(s, out, commitId, name);
}

/**
 * DestroySlots: delete the listed files (a reserve the client abandons). Unknown ids are ignored, so that a repeated
 * destroy succeeds.
 */
export function handleDestroySlots(
  s: WorkerMachineState,
  out: Outbox,
  envelope: Envelope,
  message: DestroySlots,
): WorkerMachineState {
  if (!admitted(out, 'worker', s.config.release, envelope)) return s;
  const key = shuffleKeyOf(message.appId, message.shuffleId);
  const names = new Set([
    ...message.primaryIds.map((id) => fileNameFor(id, 'PRIMARY')),
    ...message.replicaIds.map((id) => fileNameFor(id, 'REPLICA')),
  ]);
  const before = s.shuffles.get(key)?.files.size ?? 0;
  const state = removeFiles(s, out, key, names, 'the partition was destroyed by its lifecycle manager');
  persistShuffle(state, out, key);
  const removed = before - (state.shuffles.get(key)?.files.size ?? 0);
  reply(out, replyToOf(envelope), {
    type: 'StatusResponse',
    status: 'SUCCESS',
    message: `destroyed ${removed} of ${names.size} listed file(s) of ${key}`,
  });
  return state;
}

/**
 * Forgets a whole shuffle: its files are deleted and its recovery entry removed (expired, or the worker exits). The
 * shuffle is gone at once (pushes, reads and commits find no file); deleting its files goes `filesPerStep` a step
 * when there are more (DELETE_STEP_TIMER), as a reserve and a commit do, since each delete costs the tier a few
 * microseconds. Every file goes, so nothing is copied or looked up by name.
 */
export function dropShuffle(
  s: WorkerMachineState,
  out: Outbox,
  key: ShuffleKey,
  reason: string,
): WorkerMachineState {
  const shuffle = s.shuffles.get(key);
  if (shuffle === undefined) return s;
  // The delete timer is set exactly while files wait: a drop behind others joins their queue.
  const queued = s.pendingDeletes.length > 0;
  const later = queued || shuffle.files.size > filesPerStep(s);
  for (const file of shuffle.files.values()) {
    const pending = { file: file.file, bytes: file.bytes };
    if (later) owned(s.pendingDeletes).push(pending);
    else deleteNow(s, out, pending);
  }
  let state: WorkerMachineState = { ...s, shuffles: setEntry(s.shuffles, key, undefined) };
  if (shuffle.files.size > 0) state = forgetFiles(state, out, key, 'all', reason);
  persistShuffle(state, out, key);
  log(out, 'info', 'worker.shuffle.dropped', { shuffle: key, reason });
  if (later && !queued) setTimer(out, DELETE_STEP_TIMER, out.now);
  return state;
}

/** The timer that deletes the next `filesPerStep` files of dropped shuffles (WorkerMachineState.pendingDeletes). */
export const DELETE_STEP_TIMER = 'delete:step';

/** Deletes the next files of dropped shuffles, at most `filesPerStep` (all of them when `all`); the rest next step. */
export function continueDeletes(s: WorkerMachineState, out: Outbox, all = false): WorkerMachineState {
  const queue = owned(s.pendingDeletes);
  const taken = queue.splice(0, all ? queue.length : filesPerStep(s));
  for (const pending of taken) deleteNow(s, out, pending);
  if (queue.length > 0 && !all) setTimer(out, DELETE_STEP_TIMER, out.now);
  return s;
}

function deleteNow(s: WorkerMachineState, out: Outbox, pending: PendingDelete): void {
  out.effects.push({ kind: 'deleteFile', file: pending.file });
  accountBytes(s, pending.file, -pending.bytes);
}

/**
 * Writes the shuffle's committed files to the recovery store (or deletes its key when there are none). A worker
 * without graceful shutdown keeps no recovery store, as the reference's (its driver opens none on disk): nothing is
 * written, and a restart serves none of the earlier files (./leftovers.ts removes them).
 */
export function persistShuffle(s: WorkerMachineState, out: Outbox, key: ShuffleKey): void {
  if (!s.config.gracefulShutdown.enabled) return;
  const shuffle = s.shuffles.get(key);
  out.effects.push({
    kind: 'persist',
    store: 'recovery',
    key: recoveryKey(key),
    value: shuffle === undefined ? null : encodeShuffleRecord(shuffle),
  });
}

function removeFiles(
  s: WorkerMachineState,
  out: Outbox,
  key: ShuffleKey,
  names: ReadonlySet<string>,
  reason: string,
): WorkerMachineState {
  const shuffle = s.shuffles.get(key);
  if (shuffle === undefined) return s;
  const files = new Map(shuffle.files);
  for (const name of names) {
    const file = files.get(name);
    if (file === undefined) continue;
    deleteNow(s, out, { file: file.file, bytes: file.bytes });
    files.delete(name);
  }
  if (files.size === shuffle.files.size) return s;
  const state: WorkerMachineState =
    files.size === 0
      ? { ...s, shuffles: setEntry(s.shuffles, key, undefined) }
      : { ...s, shuffles: setEntry(s.shuffles, key, shuffleRecord(shuffle, { files })) };
  return forgetFiles(state, out, key, names, reason);
}

/** The pushes waiting on, the read streams of, and the commit flushes of removed files (or all of the shuffle's) end. */
function forgetFiles(
  s: WorkerMachineState,
  out: Outbox,
  key: ShuffleKey,
  names: ReadonlySet<string> | 'all',
  reason: string,
): WorkerMachineState {
  let state = failPushesOfFiles(s, out, key, names, reason);
  let streams = state.streams;
  for (const [streamId, stream] of state.streams) {
    if (stream.shuffleKey === key && (names === 'all' || names.has(stream.fileName)))
      streams = setEntry(streams, streamId, undefined);
  }
  state = { ...state, streams };
  for (const [commitId, commit] of state.commits) {
    if (commit.shuffleKey !== key) continue;
    if (names === 'all') {
      for (const name of [...commit.flushing]) state = flushSettled(state, out, commitId, name);
    } else {
      for (const name of names)
        if (commit.flushing.has(name)) state = flushSettled(state, out, commitId, name);
    }
  }
  return state;
}

/** One of a commit's flushes is settled; answer the commit when none is left. */
function flushSettled(
  s: WorkerMachineState,
  out: Outbox,
  commitId: number,
  name: string,
): WorkerMachineState {
  const pending = s.commits.get(commitId);
  if (pending === undefined) return s;
  owned(pending.flushing).delete(name);
  if (pending.flushing.size > 0 || pending.next < listedCount(pending)) return s;
  setEntry(s.commits, commitId, undefined);
  return answerCommit(s, out, pending, undefined, 'committed');
}

/**
 * Answers a commit from the files' current state: SUCCESS when every listed file is committed, PARTIAL_SUCCESS
 * when some are, COMMIT_FILE_EXCEPTION when none is (or `status` when the worker refuses to commit at all).
 */
function answerCommit(
  s: WorkerMachineState,
  out: Outbox,
  pending: PendingCommit,
  status: StatusCode | undefined,
  note: string,
): WorkerMachineState {
  const key = pending.shuffleKey;
  const split = (ids: readonly string[], mode: PartitionMode) => {
    const committed: CommittedFile[] = [];
    const failed: string[] = [];
    for (const id of ids) {
      const file = status === undefined ? getFile(s, key, fileNameFor(id, mode)) : undefined;
      if (file?.status === 'committed') committed.push(committedFileOf(file));
      else failed.push(id);
    }
    return { committed, failed };
  };
  const primaries = split(pending.primaryIds, 'PRIMARY');
  const replicas = split(pending.replicaIds, 'REPLICA');
  const failed = primaries.failed.length + replicas.failed.length;
  const committed = primaries.committed.length + replicas.committed.length;
  const finalStatus: StatusCode =
    status ?? (failed === 0 ? 'SUCCESS' : committed > 0 ? 'PARTIAL_SUCCESS' : 'COMMIT_FILE_EXCEPTION');
  if (committed > 0) persistShuffle(s, out, key);
  if (failed > 0) {
    count(out, 'CommitFilesFailCount', failed);
    log(out, 'warn', 'worker.commit.failed', {
      shuffle: key,
      failedPrimaryIds: primaries.failed,
      failedReplicaIds: replicas.failed,
      note,
    });
  }
  reply(out, pending.replyTo, {
    type: 'CommitFilesResponse',
    status: finalStatus,
    committedPrimaries: primaries.committed,
    committedReplicas: replicas.committed,
    failedPrimaryIds: primaries.failed,
    failedReplicaIds: replicas.failed,
    message:
      failed === 0
        ? `committed ${committed} file(s) of ${key}`
        : `committed ${committed} and failed ${failed} file(s) of ${key}: ${note}; a failed id is unknown to this worker or its flush failed`,
  });
  return s;
}
