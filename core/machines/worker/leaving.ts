import {
  applyTrigger,
  EXIT_PLANS,
  eventForExitType,
  isDrained,
  parseExitType,
  STATE_POLICIES,
  transition,
  type LifecycleTrigger,
} from '../../lifecycle/worker-states.ts';
import type { ShuffleKey, WorkerState } from '../../domain/index.ts';
import type { AdminCommand } from '../effects.ts';
import { setCongestionWatermarks } from './congestion.ts';
import { continueDeletes, dropShuffle, persistShuffle } from './commit.ts';
import { enqueueTask, evictionTarget, isEvicting } from './file-queue.ts';
import { uncommittedCount } from './files.ts';
import {
  adminReply,
  cancelTimer,
  count,
  gauge,
  log,
  send,
  setEntry,
  setTimer,
  type Outbox,
} from '../outbox.ts';
import { requestTimer } from './push.ts';
import { takeId, type PartitionFile, type WorkerMachineState } from './state.ts';
import { diskInfos } from './storage-view.ts';

/** The longest a worker's exit waits for the master to acknowledge its exit report. */
export const EXIT_REPORT_WAIT_MS = 5_000;

/** membership.ts's heartbeat timer, named here since membership.ts imports this module. */
const HEARTBEAT_TIMER_NAME = 'heartbeat';

/**
 * The worker's way out of the cluster, driven by core/lifecycle's transition table: operator events (from the
 * master's heartbeat reply) and the worker's own exit endpoint (admin `exit`) become triggers; entering a state
 * announces it to the master, then the worker waits for what the state drains (partitions committed or destroyed,
 * or no shuffle held; a graceful shutdown also for its committed memory files to reach disk), bounded by the state's
 * deadline, and finally exits as its exit kind's plan says.
 */
export const DRAIN_CHECK_TIMER = 'drain:check';
export const DRAIN_DEADLINE_TIMER = 'drain:deadline';

export function applyWorkerTrigger(
  s: WorkerMachineState,
  out: Outbox,
  trigger: LifecycleTrigger,
  source: string,
): WorkerMachineState {
  const from = s.lifecycle.state;
  const { lifecycle, transition } = applyTrigger(s.lifecycle, trigger, out.now);
  switch (transition.outcome) {
    case 'refuse':
      log(out, 'warn', 'worker.lifecycle.refused', {
        state: from,
        trigger,
        source,
        reason: transition.reason,
      });
      return s;
    case 'stay':
      log(out, 'debug', 'worker.lifecycle.unchanged', {
        state: from,
        trigger,
        source,
        note: transition.note,
      });
      return s;
    case 'move':
      log(out, 'info', 'worker.lifecycle.transition', { from, to: lifecycle.state, trigger, source });
      return enterState({ ...s, lifecycle }, out);
  }
}

/**
 * The worker's exit endpoint (admin `exit {type}`); the other admin commands belong to the master. The answer says
 * what the worker does now, or why it refuses (the transition table's reason).
 */
export function handleAdmin(
  s: WorkerMachineState,
  out: Outbox,
  command: AdminCommand,
  commandId?: number,
): WorkerMachineState {
  if (command.type === 'congestionWatermarks')
    return setCongestionWatermarks(s, out, command.watermarks, commandId);
  if (command.type !== 'exit') {
    log(out, 'warn', 'worker.admin.unsupported', {
      command: command.type,
      hint: 'send this command to the master',
    });
    adminReply(out, commandId, false, `${command.type} is a master command: send it to the master`);
    return s;
  }
  let exitType;
  try {
    exitType = parseExitType(command.exitType);
  } catch (error) {
    const message = error instanceof Error ? error.message : String(error);
    log(out, 'error', 'worker.admin.badExitType', { message });
    adminReply(out, commandId, false, message);
    return s;
  }
  const event = eventForExitType(exitType, { gracefulShutdownEnabled: s.config.gracefulShutdown.enabled });
  const verdict = transition(s.lifecycle.state, event);
  // The answer goes out before the trigger's effects: an immediate exit ends with an `exit` effect, after which a
  // driver executes nothing more, and the operator must still learn that the command was taken.
  switch (verdict.outcome) {
    case 'move':
      adminReply(
        out,
        commandId,
        true,
        `exit ${exitType}: the worker is now ${verdict.to} (was ${s.lifecycle.state})`,
      );
      break;
    case 'stay':
      adminReply(out, commandId, true, `exit ${exitType}: nothing to do (${verdict.note})`);
      break;
    case 'refuse':
      adminReply(
        out,
        commandId,
        false,
        `exit ${exitType} refused in state ${s.lifecycle.state}: ${verdict.reason}`,
      );
      break;
  }
  return applyWorkerTrigger(s, out, event, `admin exit ${exitType}`);
}

/**
 * Whether what the current state waits for has happened; fires `drained` if so, else checks again later. A state
 * whose exit keeps the data (graceful) also waits until every committed memory file is on a durable tier: each check
 * starts the moves that can start now, so a disk that came back (disk monitor) is used at the next check at the
 * latest. The state's deadline still bounds the whole wait.
 */
export function checkDrain(s: WorkerMachineState, out: Outbox): WorkerMachineState {
  const state = s.lifecycle.state;
  if (STATE_POLICIES[state].drainUntil === null) return s;
  let next = s;
  let inMemory = 0;
  if (keepsMemoryFiles(state)) {
    const saving = saveMemoryFiles(s, out);
    next = noteAwaitingDisk(saving.state, out, saving.stranded);
    inMemory = saving.inMemory;
  }
  const holdings = { partitions: uncommittedCount(next), shuffleKeys: next.shuffles.size };
  if (inMemory === 0 && isDrained(state, holdings)) {
    cancelTimer(out, DRAIN_CHECK_TIMER);
    return applyWorkerTrigger(next, out, 'drained', 'drain check');
  }
  setTimer(out, DRAIN_CHECK_TIMER, out.now + drainCheckInterval(next, state));
  return next;
}

/**
 * Storage changed in a way that may let a graceful shutdown move on (a disk recovered, a memory file reached disk):
 * check at once rather than at the next poll.
 */
export function recheckGracefulDrain(s: WorkerMachineState, out: Outbox): WorkerMachineState {
  return keepsMemoryFiles(s.lifecycle.state) ? checkDrain(s, out) : s;
}

export function onDrainDeadline(s: WorkerMachineState, out: Outbox): WorkerMachineState {
  log(out, 'warn', 'worker.lifecycle.drainTimedOut', {
    state: s.lifecycle.state,
    uncommittedPartitions: uncommittedCount(s),
    committedMemoryFiles: committedMemoryFiles(s).length,
    shuffles: s.shuffles.size,
  });
  return applyWorkerTrigger(s, out, 'drainTimedOut', 'drain deadline');
}

/** Once every memory file has moved to disk (or failed to), the pending exit completes. */
export function maybeFinishExit(s: WorkerMachineState, out: Outbox): WorkerMachineState {
  if (!s.exitPending) return s;
  for (const purpose of s.ops.values()) if (purpose.kind === 'evict-move') return s;
  for (const shuffle of s.shuffles.values()) {
    for (const file of shuffle.files.values()) if (file.queue.some((task) => task.kind === 'evict')) return s;
  }
  return finishExit(s, out);
}

function enterState(s: WorkerMachineState, out: Outbox): WorkerMachineState {
  const state = s.lifecycle.state;
  const policy = STATE_POLICIES[state];
  gauge(out, 'IsDecommissioningWorker', policy.isDecommissioning ? 1 : 0);
  const worker = s.config.id;
  switch (policy.announce) {
    case 'ReportWorkerUnavailable':
      send(out, s.config.master, { type: 'ReportWorkerUnavailable', worker });
      break;
    case 'ReportWorkerDecommission':
      send(out, s.config.master, { type: 'ReportWorkerDecommission', worker });
      break;
    case 'WorkerLost':
      send(out, s.config.master, { type: 'ReportWorkerLost', worker });
      break;
    case null:
      break;
  }
  cancelTimer(out, DRAIN_CHECK_TIMER);
  cancelTimer(out, DRAIN_DEADLINE_TIMER);
  if (state === 'Exit') return beginExit(s, out);
  const deadline = drainDeadline(s, state);
  if (deadline !== null) setTimer(out, DRAIN_DEADLINE_TIMER, out.now + deadline);
  return checkDrain(s, out);
}

/**
 * Exit: with a plan that keeps the data, a last attempt to move what is still in memory (normally nothing: the
 * graceful wait moved it, unless its deadline passed); the exit completes once those moves ended.
 */
function beginExit(s: WorkerMachineState, out: Outbox): WorkerMachineState {
  const plan = EXIT_PLANS[s.lifecycle.exitKind ?? 'IMMEDIATELY'];
  if (!plan.evictMemoryToDisk) return finishExit(s, out);
  return saveMemoryFiles({ ...s, exitPending: true }, out).state;
}

function finishExit(s: WorkerMachineState, out: Outbox): WorkerMachineState {
  const kind = s.lifecycle.exitKind ?? 'IMMEDIATELY';
  const plan = EXIT_PLANS[kind];
  let state: WorkerMachineState = { ...s, exitPending: false };
  if (plan.evictMemoryToDisk) reportLostMemoryFiles(state, out);
  if (plan.persistCommittedFileInfos) {
    for (const key of state.shuffles.keys()) persistShuffle(state, out, key);
  }
  if (plan.deleteShuffleData) {
    for (const key of [...state.shuffles.keys()]) {
      state = dropShuffle(state, out, key, `the worker exits (${kind})`);
    }
  }
  // A drop's files still queued are deleted before the worker goes: a restart would otherwise find them again.
  state = continueDeletes(state, out, true);
  log(out, 'info', 'worker.exit', { kind, shufflesKept: state.shuffles.size });
  return reportExit(state, out, 0, `worker exit (${kind})`);
}

/**
 * A registered worker's last heartbeat says Exit, so that the master records a planned stop rather than declare the
 * worker lost when its heartbeats stop; the process exits once the master answered, or after the request's deadline
 * or EXIT_REPORT_WAIT_MS, whichever is sooner (the master is down or unreachable: it will count the worker lost,
 * there is no one else to tell). Reads are refused meanwhile: the worker is on its way out.
 */
function reportExit(s: WorkerMachineState, out: Outbox, code: number, reason: string): WorkerMachineState {
  cancelTimer(out, HEARTBEAT_TIMER_NAME);
  if (s.registration.status !== 'registered') {
    out.effects.push({ kind: 'exit', code, reason });
    return s;
  }
  const requestId = takeId(s);
  send(
    out,
    s.config.master,
    {
      type: 'WorkerHeartbeat',
      worker: s.config.id,
      disks: diskInfos(s),
      activeShuffleKeys: [],
      highWorkload: false,
      state: 'Exit',
    },
    requestId,
  );
  // An exit is held for a master that does not answer no longer than this: the master then counts the worker lost,
  // and an operator's stop (a service manager's timeout) is not spent waiting on it.
  setTimer(
    out,
    requestTimer(requestId),
    out.now + Math.min(s.config.masterRequestTimeoutMs, EXIT_REPORT_WAIT_MS),
  );
  return { ...s, requests: setEntry(s.requests, requestId, { kind: 'exitReport', code, reason }) };
}

/** The master answered the exit report, or could not be told: the process exits now. */
export function completeExit(
  s: WorkerMachineState,
  out: Outbox,
  requestId: number,
  outcome: string,
): WorkerMachineState {
  const request = s.requests.get(requestId);
  if (request?.kind !== 'exitReport') return s;
  cancelTimer(out, requestTimer(requestId));
  log(out, 'debug', 'worker.exitReported', { outcome });
  out.effects.push({ kind: 'exit', code: request.code, reason: request.reason });
  return { ...s, requests: setEntry(s.requests, requestId, undefined) };
}

/** Whether the state ends in an exit that keeps the worker's data, and so must first save its memory files. */
function keepsMemoryFiles(state: WorkerState): boolean {
  const kind = STATE_POLICIES[state].exitKind;
  return kind !== null && EXIT_PLANS[kind].evictMemoryToDisk;
}

interface MemoryFileRef {
  readonly shuffleKey: ShuffleKey;
  readonly file: PartitionFile;
}

/** Committed files still on the memory tier: they die with the process unless they move first. */
function committedMemoryFiles(s: WorkerMachineState): MemoryFileRef[] {
  const found: MemoryFileRef[] = [];
  for (const [shuffleKey, shuffle] of s.shuffles) {
    for (const file of shuffle.files.values()) {
      if (file.file.tier === 'MEMORY' && file.status === 'committed') found.push({ shuffleKey, file });
    }
  }
  return found;
}

/**
 * Starts moving every committed memory file that is not moving yet and has a tier to go to now. Returns how many
 * are still in memory (moving or not) and the ids of those with nowhere to go.
 */
function saveMemoryFiles(
  s: WorkerMachineState,
  out: Outbox,
): { readonly state: WorkerMachineState; readonly inMemory: number; readonly stranded: readonly string[] } {
  const files = committedMemoryFiles(s);
  let state = s;
  const stranded: string[] = [];
  for (const { shuffleKey, file } of files) {
    if (isEvicting(state, file)) continue;
    if (evictionTarget(state, file).kind === 'none') {
      stranded.push(file.file.id);
      continue;
    }
    state = enqueueTask(state, out, shuffleKey, file.name, { kind: 'evict', reason: 'shutdown' });
  }
  return { state, inMemory: files.length, stranded };
}

/** Says (once per change, not at every poll) that the shutdown waits for a disk to take committed memory files. */
function noteAwaitingDisk(
  s: WorkerMachineState,
  out: Outbox,
  stranded: readonly string[],
): WorkerMachineState {
  if (stranded.length === s.memoryFilesAwaitingDisk) return s;
  if (stranded.length > 0) {
    log(out, 'warn', 'worker.graceful.awaitingDisk', {
      files: stranded,
      note:
        'no healthy tier can take these committed memory files; the shutdown waits for a disk to recover ' +
        `(retried every ${s.config.gracefulShutdown.checkIntervalMs} ms and when the disk monitor clears a disk) ` +
        `and exits without them when svc.worker.graceful.shutdown.checkSlotsFinished.timeout passes`,
    });
  }
  return { ...s, memoryFilesAwaitingDisk: stranded.length };
}

/**
 * A graceful exit that still holds committed memory files (its deadline passed before a tier could take them) loses
 * them: an error per file naming it and its shuffle, and GracefulShutdownLostFileCount. The recovery store never
 * lists memory files (recovery.ts), so the restarted worker does not claim them: readers get a clear refusal and
 * the engine recomputes or reads the replica, instead of a file that is silently empty.
 */
function reportLostMemoryFiles(s: WorkerMachineState, out: Outbox): void {
  const lost = committedMemoryFiles(s);
  if (lost.length === 0) return;
  for (const { shuffleKey, file } of lost) {
    log(out, 'error', 'worker.graceful.memoryFileLost', {
      shuffle: shuffleKey,
      file: file.name,
      bytes: file.bytes,
      reason: 'no tier could take it before svc.worker.graceful.shutdown.checkSlotsFinished.timeout passed',
      ...(file.failure === undefined ? {} : { lastFailure: file.failure }),
      consequence: 'the restarted worker will not serve it; readers recompute it or read its replica',
    });
  }
  count(out, 'GracefulShutdownLostFileCount', lost.length);
}

function drainCheckInterval(s: WorkerMachineState, state: WorkerState): number {
  return state === 'InGraceful'
    ? s.config.gracefulShutdown.checkIntervalMs
    : s.config.decommission.checkIntervalMs;
}

/** The wait deadline of the state (its drainDeadlineKey in core/lifecycle), or null when it waits without one. */
function drainDeadline(s: WorkerMachineState, state: WorkerState): number | null {
  if (STATE_POLICIES[state].drainDeadlineKey === null) return null;
  return state === 'InGraceful'
    ? s.config.gracefulShutdown.timeoutMs
    : s.config.decommission.forceExitTimeoutMs;
}
