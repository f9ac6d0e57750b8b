import {
  applyTrigger,
  EXIT_PLANS,
  eventForExitType,
  isDrained,
  parseExitType,
  STATE_POLICIES,
  type LifecycleTrigger,
} from '../../lifecycle/worker-states.ts';
import type { WorkerState } from '../../domain/index.ts';
import type { AdminCommand } from '../effects.ts';
import { dropShuffle, persistShuffle } from './commit.ts';
import { enqueueTask } from './file-queue.ts';
import { uncommittedCount } from './files.ts';
import { cancelTimer, gauge, log, send, setTimer, type Outbox } from '../outbox.ts';
import type { WorkerMachineState } from './state.ts';

/**
 * The worker's way out of the cluster, driven by core/lifecycle's transition table: operator events (from the
 * master's heartbeat reply) and the worker's own exit endpoint (admin `exit`) become triggers; entering a state
 * announces it to the master, then the worker waits for what the state drains (partitions committed or destroyed,
 * or no shuffle held), bounded by the state's deadline, and finally exits as its exit kind's plan says.
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

/** The worker's exit endpoint (admin `exit {type}`); the other admin commands belong to the master. */
export function handleAdmin(s: WorkerMachineState, out: Outbox, command: AdminCommand): WorkerMachineState {
  if (command.type !== 'exit') {
    log(out, 'warn', 'worker.admin.unsupported', {
      command: command.type,
      hint: 'send this command to the master',
    });
    return s;
  }
  let exitType;
  try {
    exitType = parseExitType(command.exitType);
  } catch (error) {
    log(out, 'error', 'worker.admin.badExitType', {
      message: error instanceof Error ? error.message : String(error),
    });
    return s;
  }
  const event = eventForExitType(exitType, { gracefulShutdownEnabled: s.config.gracefulShutdown.enabled });
  return applyWorkerTrigger(s, out, event, `admin exit ${exitType}`);
}

/** Whether what the current state waits for has happened; fires `drained` if so, else checks again later. */
export function checkDrain(s: WorkerMachineState, out: Outbox): WorkerMachineState {
  const state = s.lifecycle.state;
  if (STATE_POLICIES[state].drainUntil === null) return s;
  if (isDrained(state, { partitions: uncommittedCount(s), shuffleKeys: s.shuffles.size })) {
    cancelTimer(out, DRAIN_CHECK_TIMER);
    return applyWorkerTrigger(s, out, 'drained', 'drain check');
  }
  setTimer(out, DRAIN_CHECK_TIMER, out.now + drainCheckInterval(s, state));
  return s;
}

export function onDrainDeadline(s: WorkerMachineState, out: Outbox): WorkerMachineState {
  log(out, 'warn', 'worker.lifecycle.drainTimedOut', {
    state: s.lifecycle.state,
    uncommittedPartitions: uncommittedCount(s),
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

function beginExit(s: WorkerMachineState, out: Outbox): WorkerMachineState {
  const plan = EXIT_PLANS[s.lifecycle.exitKind ?? 'IMMEDIATELY'];
  if (!plan.evictMemoryToDisk) return finishExit(s, out);
  let state: WorkerMachineState = { ...s, exitPending: true };
  for (const [key, shuffle] of s.shuffles) {
    for (const file of shuffle.files.values()) {
      if (file.file.tier === 'MEMORY' && file.status === 'committed') {
        state = enqueueTask(state, out, key, file.name, { kind: 'evict', reason: 'shutdown' });
      }
    }
  }
  return state;
}

function finishExit(s: WorkerMachineState, out: Outbox): WorkerMachineState {
  const kind = s.lifecycle.exitKind ?? 'IMMEDIATELY';
  const plan = EXIT_PLANS[kind];
  let state: WorkerMachineState = { ...s, exitPending: false };
  if (plan.persistCommittedFileInfos) {
    for (const key of state.shuffles.keys()) persistShuffle(state, out, key);
  }
  if (plan.deleteShuffleData) {
    for (const key of [...state.shuffles.keys()]) {
      state = dropShuffle(state, out, key, `the worker exits (${kind})`);
    }
  }
  log(out, 'info', 'worker.exit', { kind, shufflesKept: state.shuffles.size });
  out.effects.push({ kind: 'exit', code: 0, reason: `worker exit (${kind})` });
  return state;
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
