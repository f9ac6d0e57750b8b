import type { ShuffleKey } from '../../domain/index.ts';
import {
  chooseEvictionTarget,
  needsEvictionOnWrite,
  pickMemoryEvictions,
  type TierChoice,
} from '../../storage/index.ts';
import type { FileRef, IoError } from '../effects.ts';
import { appended, fileId, getFile, putFile } from './files.ts';
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
 * The per-file task runner. Each partition file runs one task at a time (write, flush, evict), in the order the tasks
 * were accepted, so that appends never interleave, chunk boundaries are batch boundaries and a flush covers every
 * write accepted before it. A failure seals the file: queued writes fail at once, while flushes still run, so that
 * the acknowledged prefix of the file can be committed (docs/core/machines-master-worker.md, "Write failures").
 */

/** A task that ended, and how; the machine routes it to the push, commit or shutdown logic. */
export interface FinishedTask {
  readonly shuffleKey: ShuffleKey;
  readonly fileName: string;
  readonly task: FileTask;
  readonly outcome: CopyOutcome;
}

export interface QueueStep {
  readonly state: WorkerMachineState;
  readonly finished: readonly FinishedTask[];
}

export function enqueueTask(
  s: WorkerMachineState,
  out: Outbox,
  shuffleKey: ShuffleKey,
  name: string,
  task: FileTask,
): WorkerMachineState {
  const file = getFile(s, shuffleKey, name);
  if (file === undefined) return s;
  const next = putFile(s, shuffleKey, { ...file, queue: [...file.queue, task] });
  return startNextTask(next, out, shuffleKey, name);
}

/** Starts the file's next task if it is idle. An evict task for a file no longer in memory is dropped. */
export function startNextTask(
  s: WorkerMachineState,
  out: Outbox,
  shuffleKey: ShuffleKey,
  name: string,
): WorkerMachineState {
  let state = s;
  for (;;) {
    const file = getFile(state, shuffleKey, name);
    const head = file?.queue[0];
    if (file === undefined || head === undefined || file.busyOp !== undefined) return state;
    switch (head.kind) {
      case 'write': {
        const max = state.config.memory.maxFileBytes;
        if (
          file.file.tier === 'MEMORY' &&
          needsEvictionOnWrite(file.bytes, head.bytes.length, max, storageView(state))
        ) {
          const evicting = startEviction(state, out, shuffleKey, file, 'file-size', false);
          if (evicting !== undefined) return evicting;
        }
        return issue(state, out, shuffleKey, file, {
          kind: 'write',
          op: 0,
          file: file.file,
          bytes: head.bytes,
        });
      }
      case 'flush':
        return issue(state, out, shuffleKey, file, { kind: 'flush', op: 0, file: file.file });
      case 'evict': {
        const evicting =
          file.file.tier === 'MEMORY'
            ? startEviction(state, out, shuffleKey, file, head.reason, true)
            : undefined;
        if (evicting !== undefined) return evicting;
        state = putFile(state, shuffleKey, { ...file, queue: file.queue.slice(1) });
        break;
      }
    }
  }
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
  const done = { ...file, busyOp: undefined, queue: file.queue.slice(1) };
  if (!result.ok) {
    const sealed = sealFile(
      noteDiskFailure(s, file.file, result.error),
      out,
      shuffleKey,
      done,
      `${head.kind} failed: ${result.error}`,
    );
    return {
      state: startNextTask(sealed.state, out, shuffleKey, fileName),
      finished: [
        { shuffleKey, fileName, task: head, outcome: { ok: false, error: result.error } },
        ...sealed.finished,
      ],
    };
  }
  // Writes and flushes both move bytes to the disk: their latency is its flush time for the load-aware policy.
  let state = recordLatency(s, file.file, 'flush', out.now - purpose.issuedAt);
  if (head.kind === 'write') {
    state = putFile(state, shuffleKey, appended(done, head.bytes.length, s.config.chunkSizeBytes));
    state = accountBytes(state, file.file, head.bytes.length);
    if (file.file.tier === 'MEMORY') state = evictUnderPressure(state, out);
  } else {
    state = putFile(state, shuffleKey, done);
  }
  return {
    state: startNextTask(state, out, shuffleKey, fileName),
    finished: [{ shuffleKey, fileName, task: head, outcome: { ok: true } }],
  };
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
  const queue = purpose.popsTask ? file.queue.slice(1) : file.queue;
  const idle = { ...file, busyOp: undefined, queue };
  if (!result.ok) {
    log(out, 'warn', 'worker.evict.failed', {
      file: file.file.id,
      to: to.tier,
      mountPoint: to.mountPoint,
      error: result.error,
    });
    const sealed = sealFile(
      noteDiskFailure(s, to, result.error),
      out,
      shuffleKey,
      idle,
      `eviction to ${to.tier} failed: ${result.error}`,
    );
    return { state: startNextTask(sealed.state, out, shuffleKey, fileName), finished: sealed.finished };
  }
  let state = accountBytes(s, file.file, -file.bytes);
  state = accountBytes(state, to, file.bytes);
  state = putFile(state, shuffleKey, { ...idle, file: to });
  count(out, 'EvictedFileCount');
  log(out, 'debug', 'worker.evict.done', {
    file: file.file.id,
    to: to.tier,
    mountPoint: to.mountPoint,
    bytes: file.bytes,
  });
  return { state: startNextTask(state, out, shuffleKey, fileName), finished: [] };
}

/** Seals a file after a failure: it refuses further pushes; its queued writes fail now, flushes and evictions stay. */
function sealFile(
  s: WorkerMachineState,
  out: Outbox,
  shuffleKey: ShuffleKey,
  file: PartitionFile,
  failure: string,
): QueueStep {
  const failedWrites = file.queue.filter((task) => task.kind === 'write');
  const status = file.status === 'open' ? 'failed' : file.status;
  const sealed: PartitionFile = {
    ...file,
    status,
    failure,
    queue: file.queue.filter((task) => task.kind !== 'write'),
  };
  log(out, 'warn', 'worker.file.sealed', { file: file.file.id, failure, droppedWrites: failedWrites.length });
  return {
    state: putFile(s, shuffleKey, sealed),
    finished: failedWrites.map((task) => ({
      shuffleKey,
      fileName: file.name,
      task,
      outcome: { ok: false, error: 'file-failed' },
    })),
  };
}

function issue(
  s: WorkerMachineState,
  out: Outbox,
  shuffleKey: ShuffleKey,
  file: PartitionFile,
  effect:
    | { kind: 'write'; op: number; file: FileRef; bytes: Uint8Array }
    | { kind: 'flush'; op: number; file: FileRef },
): WorkerMachineState {
  const op = takeId(s);
  out.effects.push({ ...effect, op });
  setEntry(s.ops, op, { kind: 'file-task', shuffleKey, fileName: file.name, issuedAt: out.now });
  return putFile(s, shuffleKey, { ...file, busyOp: op });
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

/** Moves a memory file to the tier the evict policy names; undefined (and a log line) when no tier can take it. */
function startEviction(
  s: WorkerMachineState,
  out: Outbox,
  shuffleKey: ShuffleKey,
  file: PartitionFile,
  reason: EvictReason,
  popsTask: boolean,
): WorkerMachineState | undefined {
  const choice = evictionTarget(s, file);
  if (choice.kind === 'none') {
    log(out, 'warn', 'worker.evict.noTarget', { file: file.file.id, reason, message: choice.message });
    return undefined;
  }
  const to: FileRef = { id: file.file.id, tier: choice.tier, mountPoint: choice.mountPoint };
  const op = takeId(s);
  out.effects.push({ kind: 'moveFile', op, file: file.file, to });
  setEntry(s.ops, op, { kind: 'evict-move', shuffleKey, fileName: file.name, to, popsTask });
  return putFile(s, shuffleKey, { ...file, busyOp: op });
}

/** Under memory pressure, queues the eviction of the largest open memory files (core/storage picks them). */
function evictUnderPressure(s: WorkerMachineState, out: Outbox): WorkerMachineState {
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
