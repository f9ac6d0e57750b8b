import type { ShuffleKey } from '../../domain/index.ts';
import {
  chooseEvictionTarget,
  needsEvictionOnWrite,
  isOverEvictLine,
  pickMemoryEvictions,
  type TierChoice,
} from '../../storage/index.ts';
import type { FileRef, IoError } from '../effects.ts';
import { appendBytes, editFile, fileId, getFile, type FileDraft } from './files.ts';
import { count, log, setEntry, type Outbox } from '../outbox.ts';
import {
  takeId,
  type CopyOutcome,
  type EvictReason,
  type FileTask,
  type OpPurpose,
  type PartitionFile,
  type WorkerMachineState,
} from './state.ts';
import { accountBytes, noteDiskFailure, recordLatency, storageView } from './storage-view.ts';

/**
 * The per-file task runner. Each partition file runs one operation at a time, in the order the tasks were accepted,
 * so that appends never interleave, chunk boundaries are batch boundaries and a flush covers every write accepted
 * before it. Consecutive writes queued for a file go as one operation (one `write` effect with several chunks, at
 * most MAX_RUN_TASKS and MAX_RUN_BYTES, on the memory tier never past the file's size): a merged push carries several
 * batches of a partition, and one effect and one completion per batch cost the worker more than the bytes
 * (docs/performance.md). Such a run succeeds or fails as a whole. A failure seals the file: queued writes fail at
 * once, while flushes still run, so that the acknowledged prefix of the file can be committed
 * (docs/core/machines-master-worker.md, "Write failures").
 *
 * This is the worker's hottest path (every batch of every push is one write and one completion here), so each
 * transition changes the stored record in place (files.ts editFile) rather than storing a new record per change.
 */

/**
 * Tasks of one file that ended the same way, in queue order; the machine routes each to the push, commit or shutdown
 * logic. One record per operation, not per task: a run of a merged push's batches ends as one.
 */
export interface FinishedTasks {
  readonly shuffleKey: ShuffleKey;
  readonly fileName: string;
  readonly tasks: readonly FileTask[];
  readonly outcome: CopyOutcome;
}

export interface QueueStep {
  readonly state: WorkerMachineState;
  readonly finished: readonly FinishedTasks[];
}

/** The queue of an idle file with nothing to do, shared: a queue is never changed in place, only replaced. */
const NO_TASKS: readonly FileTask[] = [];

/** The outcome of every task that succeeded, shared: outcomes are read, never changed. */
const SUCCEEDED: CopyOutcome = { ok: true };

/** The most writes, and bytes, one operation carries: bounds the time an acknowledgement waits for its run. */
export const MAX_RUN_TASKS = 16;
export const MAX_RUN_BYTES = 8 * 1024 * 1024;

/** Queues a task for the file and starts it if the file is idle. */
export function enqueueTask(
  s: WorkerMachineState,
  out: Outbox,
  shuffleKey: ShuffleKey,
  name: string,
  task: FileTask,
): WorkerMachineState {
  const file = getFile(s, shuffleKey, name);
  if (file === undefined) return s;
  return enqueueOn(s, out, shuffleKey, file, task);
}

/** Queues a task for `file` (the stored record, as the caller just looked it up) and starts it if the file is idle. */
export function enqueueOn(
  s: WorkerMachineState,
  out: Outbox,
  shuffleKey: ShuffleKey,
  file: PartitionFile,
  task: FileTask,
): WorkerMachineState {
  const draft = editFile(file);
  draft.queue = [...file.queue, task];
  return advance(s, out, shuffleKey, draft);
}

/**
 * Queues a push's writes for the file, in order, and starts the first if the file is idle: one new record for all of
 * them, where a task at a time drafted one per batch. `file` is the stored record, as the push just looked it up.
 */
export function enqueueWrites(
  s: WorkerMachineState,
  out: Outbox,
  shuffleKey: ShuffleKey,
  file: PartitionFile,
  writes: readonly FileTask[],
): WorkerMachineState {
  const draft = editFile(file);
  draft.queue = file.queue.length === 0 ? writes : [...file.queue, ...writes];
  return advance(s, out, shuffleKey, draft);
}

/** Starts the stored file's next task if it is idle. */
export function startNextTask(
  s: WorkerMachineState,
  out: Outbox,
  shuffleKey: ShuffleKey,
  name: string,
): WorkerMachineState {
  const file = getFile(s, shuffleKey, name);
  if (file === undefined || file.busyOp !== undefined || file.queue.length === 0) return s;
  return advance(s, out, shuffleKey, editFile(file));
}

/**
 * Starts the file's next task if it is idle (a write to an idle file, the completion of its task); `file` is the
 * stored record, changed in place. An evict task for a file no longer in memory is dropped.
 */
function advance(
  s: WorkerMachineState,
  out: Outbox,
  shuffleKey: ShuffleKey,
  file: FileDraft,
): WorkerMachineState {
  for (;;) {
    const head = file.queue[0];
    if (head === undefined || file.busyOp !== undefined) break;
    if (head.kind === 'evict') {
      if (file.file.tier === 'MEMORY' && startEviction(s, out, shuffleKey, file, head.reason, true)) break;
      file.queue = rest(file.queue);
      continue;
    }
    // The storage view is built only for a write that would take the file past its size (one write per batch).
    const evictFirst =
      head.kind === 'write' &&
      file.file.tier === 'MEMORY' &&
      file.bytes + head.bytes.length > s.config.memory.maxFileBytes &&
      needsEvictionOnWrite(file.bytes, head.bytes.length, s.config.memory.maxFileBytes, storageView(s));
    if (!(evictFirst && startEviction(s, out, shuffleKey, file, 'file-size', false)))
      issue(s, out, shuffleKey, file, head);
    break;
  }
  return s;
}

/** Completion of a write or flush: the file moves on, or is sealed by the failure. */
export function completeFileTask(
  s: WorkerMachineState,
  out: Outbox,
  purpose: Extract<OpPurpose, { kind: 'file-task' }>,
  result: { readonly ok: true } | { readonly ok: false; readonly error: IoError },
): QueueStep {
  const { shuffleKey, fileName } = purpose;
  const file = getFile(s, shuffleKey, fileName);
  const head = file?.queue[0];
  if (file === undefined || head === undefined || head.kind === 'evict') return { state: s, finished: [] };
  // Most often every queued task is done: the queue itself is the list (queues are replaced, never changed).
  const done = file.queue.length <= purpose.tasks ? file.queue : file.queue.slice(0, purpose.tasks);
  const next = editFile(file);
  next.busyOp = undefined;
  next.queue = after(file.queue, done.length);
  if (!result.ok) {
    const state = noteDiskFailure(s, out, file.file, result.error);
    const dropped = sealFile(out, shuffleKey, next, `${head.kind} failed: ${result.error}`);
    const outcome: CopyOutcome = { ok: false, error: result.error };
    return {
      state: advance(state, out, shuffleKey, next),
      finished: [{ shuffleKey, fileName, tasks: done, outcome }, ...dropped],
    };
  }
  const finished: FinishedTasks[] = [{ shuffleKey, fileName, tasks: done, outcome: SUCCEEDED }];
  // Writes and flushes both move bytes to the disk: their latency is its flush time for the load-aware policy.
  let state = recordLatency(s, file.file, 'flush', out.now - purpose.issuedAt);
  if (head.kind === 'flush') return { state: advance(state, out, shuffleKey, next), finished };
  let written = 0;
  for (const task of done) {
    if (task.kind !== 'write') continue;
    appendBytes(next, task.bytes.length, s.config.chunkSizeBytes);
    written += task.bytes.length;
  }
  state = accountBytes(state, file.file, written);
  // Below the evict line no file is evicted: the draft goes on to its next task and is stored once.
  if (file.file.tier !== 'MEMORY' || !overEvictLine(state))
    return { state: advance(state, out, shuffleKey, next), finished };
  // The pressure check weighs every memory file, this one with its new bytes, and may queue this one's eviction.
  state = evictUnderPressure(state, out);
  return { state: startNextTask(state, out, shuffleKey, fileName), finished };
}

/**
 * Completion of a move off the memory tier. A failed move leaves the file in memory (drivers move by copying, then
 * deleting the source), but sealed: it takes no more writes, so memory cannot grow without bound, and what it holds
 * can still be committed from memory.
 */
export function completeEviction(
  s: WorkerMachineState,
  out: Outbox,
  purpose: Extract<OpPurpose, { kind: 'evict-move' }>,
  result: { readonly ok: true } | { readonly ok: false; readonly error: IoError },
): QueueStep {
  const { shuffleKey, fileName, to } = purpose;
  const file = getFile(s, shuffleKey, fileName);
  if (file === undefined) {
    // The file was destroyed while it moved: the moved copy is an orphan.
    if (result.ok) out.effects.push({ kind: 'deleteFile', file: to });
    return { state: s, finished: [] };
  }
  const from = file.file;
  const next = editFile(file);
  next.busyOp = undefined;
  if (purpose.popsTask) next.queue = rest(file.queue);
  if (!result.ok) {
    log(out, 'warn', 'worker.evict.failed', {
      file: file.file.id,
      to: to.tier,
      mountPoint: to.mountPoint,
      error: result.error,
    });
    const state = noteDiskFailure(s, out, to, result.error);
    const dropped = sealFile(out, shuffleKey, next, `eviction to ${to.tier} failed: ${result.error}`);
    return { state: advance(state, out, shuffleKey, next), finished: dropped };
  }
  let state = accountBytes(s, from, -file.bytes);
  state = accountBytes(state, to, file.bytes);
  next.file = to;
  count(out, 'EvictedFileCount');
  log(out, 'debug', 'worker.evict.done', {
    file: from.id,
    to: to.tier,
    mountPoint: to.mountPoint,
    bytes: file.bytes,
  });
  return { state: advance(state, out, shuffleKey, next), finished: [] };
}

/**
 * Seals a file after a failure: it refuses further pushes; its queued writes fail now (returned), flushes and
 * evictions stay.
 */
function sealFile(out: Outbox, shuffleKey: ShuffleKey, file: FileDraft, failure: string): FinishedTasks[] {
  const failedWrites = file.queue.filter((task) => task.kind === 'write');
  if (file.status === 'open') file.status = 'failed';
  file.failure = failure;
  file.queue = file.queue.filter((task) => task.kind !== 'write');
  log(out, 'warn', 'worker.file.sealed', { file: file.file.id, failure, droppedWrites: failedWrites.length });
  if (failedWrites.length === 0) return [];
  return [
    { shuffleKey, fileName: file.name, tasks: failedWrites, outcome: { ok: false, error: 'file-failed' } },
  ];
}

/**
 * Issues the file's head task, with the writes queued right after it when the head is a write (on the memory tier,
 * only those that keep the file within its size); the completion comes back to completeFileTask.
 */
function issue(
  s: WorkerMachineState,
  out: Outbox,
  shuffleKey: ShuffleKey,
  file: FileDraft,
  task: Exclude<FileTask, { kind: 'evict' }>,
): void {
  const op = takeId(s);
  let tasks = 1;
  if (task.kind === 'flush') out.effects.push({ kind: 'flush', op, file: file.file });
  else {
    // A memory file's run stops where a write would take it past its size: that write may first move the file
    // off the memory tier (advance), so it must head a run of its own.
    const room =
      file.file.tier === 'MEMORY'
        ? Math.min(MAX_RUN_BYTES, s.config.memory.maxFileBytes - file.bytes)
        : MAX_RUN_BYTES;
    const more = followingWrites(file.queue, task.bytes.length, room);
    tasks += more.length;
    out.effects.push(
      more.length === 0
        ? { kind: 'write', op, file: file.file, bytes: task.bytes }
        : { kind: 'write', op, file: file.file, bytes: task.bytes, more },
    );
  }
  setEntry(s.ops, op, { kind: 'file-task', shuffleKey, fileName: file.name, issuedAt: out.now, tasks });
  file.busyOp = op;
}

/** The bytes of the writes right behind the head of the queue that can go with it (MAX_RUN_TASKS, `maxBytes`). */
function followingWrites(queue: readonly FileTask[], headBytes: number, maxBytes: number): Uint8Array[] {
  const more: Uint8Array[] = [];
  let bytes = headBytes;
  for (let i = 1; i < queue.length && i < MAX_RUN_TASKS; i += 1) {
    const task = queue[i]!;
    if (task.kind !== 'write' || bytes + task.bytes.length > maxBytes) break;
    more.push(task.bytes);
    bytes += task.bytes.length;
  }
  return more;
}

/** The queue without its first `count` tasks. */
function after(queue: readonly FileTask[], count: number): readonly FileTask[] {
  return queue.length <= count ? NO_TASKS : queue.slice(count);
}

/** The queue without its head task. */
function rest(queue: readonly FileTask[]): readonly FileTask[] {
  return after(queue, 1);
}

/** Where the evict policy would move the file now (kind 'none' with the reason when no tier can take it). */
export function evictionTarget(s: WorkerMachineState, file: PartitionFile): TierChoice {
  return chooseEvictionTarget(s.config.evictPolicy, file.file.tier, file.location.storage, storageView(s));
}

/** Whether a move off the memory tier is queued for the file or already under way. */
export function isEvicting(s: WorkerMachineState, file: PartitionFile): boolean {
  if (file.queue.some((task) => task.kind === 'evict')) return true;
  return file.busyOp !== undefined && s.ops.get(file.busyOp)?.kind === 'evict-move';
}

/** Moves a memory file to the tier the evict policy names; false (and a log line) when no tier can take it. */
function startEviction(
  s: WorkerMachineState,
  out: Outbox,
  shuffleKey: ShuffleKey,
  file: FileDraft,
  reason: EvictReason,
  popsTask: boolean,
): boolean {
  const choice = evictionTarget(s, file);
  if (choice.kind === 'none') {
    log(out, 'warn', 'worker.evict.noTarget', { file: file.file.id, reason, message: choice.message });
    return false;
  }
  const to: FileRef = { id: file.file.id, tier: choice.tier, mountPoint: choice.mountPoint };
  const op = takeId(s);
  out.effects.push({ kind: 'moveFile', op, file: file.file, to });
  setEntry(s.ops, op, { kind: 'evict-move', shuffleKey, fileName: file.name, to, popsTask });
  file.busyOp = op;
  return true;
}

function overEvictLine(s: WorkerMachineState): boolean {
  return isOverEvictLine(s.config.memory.capacityBytes, s.memoryUsedBytes, s.config.memory.evictRatio);
}

/** Under memory pressure, queues the eviction of the largest open memory files (core/storage picks them). */
function evictUnderPressure(s: WorkerMachineState, out: Outbox): WorkerMachineState {
  // Asked after every completed write: the cheap check first, so that a worker with many files does not list
  // them all each time (it made a 10,000-partition push quadratic: docs/performance.md).
  if (!overEvictLine(s)) return s;
  const memoryFiles: {
    id: string;
    bytes: number;
    committed: boolean;
    shuffleKey: ShuffleKey;
    name: string;
  }[] = [];
  for (const [shuffleKey, shuffle] of s.shuffles) {
    for (const file of shuffle.files.values()) {
      if (file.file.tier !== 'MEMORY' || file.queue.some((task) => task.kind === 'evict')) continue;
      memoryFiles.push({
        id: fileId(shuffleKey, file.name),
        bytes: file.bytes,
        committed: file.status !== 'open',
        shuffleKey,
        name: file.name,
      });
    }
  }
  const chosen = new Set(pickMemoryEvictions(memoryFiles, storageView(s), s.config.memory.evictRatio));
  let state = s;
  for (const file of memoryFiles) {
    if (chosen.has(file.id))
      state = enqueueTask(state, out, file.shuffleKey, file.name, {
        kind: 'evict',
        reason: 'memory-pressure',
      });
  }
  return state;
}
