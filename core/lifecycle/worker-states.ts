import { WORKER_EVENT_TYPES, EXIT_TYPES } from '../domain/index.ts';
import type { ExitType, StatusCode, WorkerEventType, WorkerState } from '../domain/index.ts';

/**
 * The worker's lifecycle: one transition table (state × trigger → move, stay or refusal) and, per state, what
 * the worker does to new work and what it waits for before it exits (both shown in docs/core/lifecycle.md).
 *
 * Triggers are the operator's worker events (they reach the worker in the master's heartbeat reply; the
 * worker's own exit endpoint maps its exit type to one with `eventForExitType`) and two of the worker's own:
 * `drained` (what the state waits for is now true) and `drainTimedOut` (the state's wait deadline passed).
 */
export const LIFECYCLE_TRIGGERS = [...WORKER_EVENT_TYPES, 'drained', 'drainTimedOut'] as const;
export type LifecycleTrigger = (typeof LIFECYCLE_TRIGGERS)[number];

/** How a worker leaves the cluster; fixed when it enters InGraceful, InDecommission or InExit. */
export type ExitKind = Exclude<ExitType, 'NONE'>;

export type Transition =
  | { readonly outcome: 'move'; readonly to: WorkerState }
  /** Accepted, nothing to do: the trigger asks for what is already happening. */
  | { readonly outcome: 'stay'; readonly note: string }
  /** Not allowed in this state; `reason` is written for the operator who sent the event. */
  | { readonly outcome: 'refuse'; readonly reason: string };

const move = (to: WorkerState): Transition => ({ outcome: 'move', to });
const stay = (note: string): Transition => ({ outcome: 'stay', note });
const refuse = (reason: string): Transition => ({ outcome: 'refuse', reason });

const NO_EVENT = stay('no event');
const NOT_DRAINING = refuse('the worker is not draining in this state');
const NO_DEADLINE = refuse('this state has no drain deadline');
const ONE_WAY =
  'the worker is already leaving the cluster and cannot be turned back; send Immediately to stop it now';
const EXITING_NOW = 'the worker is already exiting immediately';
const EXITED = 'the worker has exited; restart it to bring it back';

/**
 * THE transition table. Differences from the reference (documented in docs/core/lifecycle.md): a disallowed
 * trigger is an explicit refusal with a reason instead of a log line; Immediately is accepted from every
 * state on the way out (the operator can always stop a draining worker now); a repeat of the event being
 * carried out is a `stay`, not a warning.
 */
export const TRANSITIONS: Readonly<Record<WorkerState, Readonly<Record<LifecycleTrigger, Transition>>>> = {
  Normal: {
    None: NO_EVENT,
    Immediately: move('InExit'),
    Decommission: move('InDecommission'),
    DecommissionThenIdle: move('InDecommissionThenIdle'),
    Graceful: move('InGraceful'),
    Recommission: stay('already in service'),
    drained: NOT_DRAINING,
    drainTimedOut: NOT_DRAINING,
  },
  Idle: {
    None: NO_EVENT,
    Immediately: move('InExit'),
    Decommission: move('InDecommission'),
    DecommissionThenIdle: stay('already idle'),
    Graceful: move('InGraceful'),
    Recommission: move('Normal'),
    drained: NOT_DRAINING,
    drainTimedOut: NOT_DRAINING,
  },
  InDecommissionThenIdle: {
    None: NO_EVENT,
    Immediately: move('InExit'),
    Decommission: move('InDecommission'),
    DecommissionThenIdle: stay('already decommissioning to idle'),
    Graceful: move('InGraceful'),
    Recommission: move('Normal'),
    drained: move('Idle'),
    drainTimedOut: NO_DEADLINE,
  },
  InDecommission: {
    None: NO_EVENT,
    Immediately: move('InExit'),
    Decommission: stay('already decommissioning'),
    DecommissionThenIdle: refuse(`decommission in progress: ${ONE_WAY}`),
    Graceful: refuse(`decommission in progress: ${ONE_WAY}`),
    Recommission: refuse(`decommission in progress: ${ONE_WAY}`),
    drained: move('Exit'),
    drainTimedOut: move('Exit'),
  },
  InGraceful: {
    None: NO_EVENT,
    Immediately: move('InExit'),
    Decommission: refuse(`graceful shutdown in progress: ${ONE_WAY}`),
    DecommissionThenIdle: refuse(`graceful shutdown in progress: ${ONE_WAY}`),
    Graceful: stay('already shutting down gracefully'),
    Recommission: refuse(`graceful shutdown in progress: ${ONE_WAY}`),
    drained: move('Exit'),
    drainTimedOut: move('Exit'),
  },
  InExit: {
    None: NO_EVENT,
    Immediately: stay(EXITING_NOW),
    Decommission: refuse(EXITING_NOW),
    DecommissionThenIdle: refuse(EXITING_NOW),
    Graceful: refuse(EXITING_NOW),
    Recommission: refuse(EXITING_NOW),
    drained: move('Exit'),
    drainTimedOut: NO_DEADLINE,
  },
  Exit: {
    None: NO_EVENT,
    Immediately: refuse(EXITED),
    Decommission: refuse(EXITED),
    DecommissionThenIdle: refuse(EXITED),
    Graceful: refuse(EXITED),
    Recommission: refuse(EXITED),
    drained: refuse(EXITED),
    drainTimedOut: refuse(EXITED),
  },
};

export function transition(state: WorkerState, trigger: LifecycleTrigger): Transition {
  return TRANSITIONS[state][trigger];
}

/** What a state does to new work, what it tells the master on entry, and what it waits for to move on. */
export interface StatePolicy {
  /** Status a ReserveSlots request gets; null: the lifecycle does not stand in the way. */
  readonly reserveRefusal: Extract<StatusCode, 'WORKER_SHUTDOWN'> | null;
  /** Status a push gets; HARD_SPLIT makes the client revive the partition elsewhere. null: accepted. */
  readonly pushRedirect: Extract<StatusCode, 'HARD_SPLIT'> | null;
  /** Commit and fetch requests are still served, so that data already pushed reaches its readers. */
  readonly servesCommitsAndFetches: boolean;
  /** The message the worker sends the master when it enters the state. */
  readonly announce: 'ReportWorkerDecommission' | 'ReportWorkerUnavailable' | 'WorkerLost' | null;
  /**
   * What must be true before `drained` fires: `noPartitions` (every partition location committed or
   * destroyed), `noShuffleKeys` (the worker holds no shuffle at all), `immediately`; null: no drain.
   */
  readonly drainUntil: 'noPartitions' | 'noShuffleKeys' | 'immediately' | null;
  /** The configuration key bounding the wait; `drainTimedOut` fires when it passes. null: no deadline. */
  readonly drainDeadlineKey: string | null;
  /** Set by the states that end in Exit: how the process will leave. */
  readonly exitKind: ExitKind | null;
  /** The worker's `isShutdown` and `isDecommissioning` (GET /api/v1/workers on the worker). */
  readonly isShutdown: boolean;
  readonly isDecommissioning: boolean;
}

const SERVING: StatePolicy = {
  reserveRefusal: null,
  pushRedirect: null,
  servesCommitsAndFetches: true,
  announce: null,
  drainUntil: null,
  drainDeadlineKey: null,
  exitKind: null,
  isShutdown: false,
  isDecommissioning: false,
};

const NOT_SERVING: StatePolicy = {
  ...SERVING,
  reserveRefusal: 'WORKER_SHUTDOWN',
  pushRedirect: 'HARD_SPLIT',
  isShutdown: true,
};

export const STATE_POLICIES: Readonly<Record<WorkerState, StatePolicy>> = {
  Normal: SERVING,
  Idle: NOT_SERVING,
  InDecommissionThenIdle: {
    ...NOT_SERVING,
    announce: 'ReportWorkerDecommission',
    drainUntil: 'noShuffleKeys',
    isDecommissioning: true,
  },
  InDecommission: {
    ...NOT_SERVING,
    announce: 'ReportWorkerDecommission',
    drainUntil: 'noShuffleKeys',
    drainDeadlineKey: 'svc.worker.decommission.forceExitTimeout',
    exitKind: 'DECOMMISSION',
    isDecommissioning: true,
  },
  InGraceful: {
    ...NOT_SERVING,
    announce: 'ReportWorkerUnavailable',
    drainUntil: 'noPartitions',
    drainDeadlineKey: 'svc.worker.graceful.shutdown.checkSlotsFinished.timeout',
    exitKind: 'GRACEFUL',
  },
  // Exiting now: nothing it holds will be committed, so it serves nothing and the master drops it at once.
  InExit: {
    ...NOT_SERVING,
    servesCommitsAndFetches: false,
    announce: 'WorkerLost',
    drainUntil: 'immediately',
    exitKind: 'IMMEDIATELY',
  },
  Exit: { ...NOT_SERVING, servesCommitsAndFetches: false },
};

/** What the worker does to its storage as the process stops, per exit kind. */
export interface ExitPlan {
  /** Move memory-tier files to disk first, so that they survive the restart. */
  readonly evictMemoryToDisk: boolean;
  /** Write every committed file's info to the recovery store, so the restarted worker serves it again. */
  readonly persistCommittedFileInfos: boolean;
  /** Delete the recovery store and all shuffle data (nothing is coming back for them). */
  readonly deleteShuffleData: boolean;
}

export const EXIT_PLANS: Readonly<Record<ExitKind, ExitPlan>> = {
  GRACEFUL: { evictMemoryToDisk: true, persistCommittedFileInfos: true, deleteShuffleData: false },
  // A decommissioned worker has drained (or was forced out at its deadline): nothing it held is wanted back.
  DECOMMISSION: { evictMemoryToDisk: false, persistCommittedFileInfos: false, deleteShuffleData: true },
  IMMEDIATELY: { evictMemoryToDisk: false, persistCommittedFileInfos: false, deleteShuffleData: true },
};

/** A worker's own view of its lifecycle. */
export interface WorkerLifecycle {
  readonly state: WorkerState;
  /** When the worker entered `state` (ms); reported as workerStateStartTime. */
  readonly since: number;
  /** How the worker will exit (or exited); null until it starts leaving. */
  readonly exitKind: ExitKind | null;
}

export function initialLifecycle(now: number): WorkerLifecycle {
  return { state: 'Normal', since: now, exitKind: null };
}

/** Applies one trigger; the lifecycle changes only on a `move`. */
export function applyTrigger(
  lifecycle: WorkerLifecycle,
  trigger: LifecycleTrigger,
  now: number,
): { readonly lifecycle: WorkerLifecycle; readonly transition: Transition } {
  const result = transition(lifecycle.state, trigger);
  if (result.outcome !== 'move') return { lifecycle, transition: result };
  const exitKind = STATE_POLICIES[result.to].exitKind ?? lifecycle.exitKind;
  return { lifecycle: { state: result.to, since: now, exitKind }, transition: result };
}

/** What a worker holds, as far as draining is concerned. */
export interface WorkerHoldings {
  /** Partition locations not yet committed or destroyed. */
  readonly partitions: number;
  readonly shuffleKeys: number;
}

/** Whether the state's wait is over, i.e. whether `drained` may fire now. */
export function isDrained(state: WorkerState, holdings: WorkerHoldings): boolean {
  switch (STATE_POLICIES[state].drainUntil) {
    case null:
      return false;
    case 'immediately':
      return true;
    case 'noPartitions':
      return holdings.partitions === 0;
    case 'noShuffleKeys':
      return holdings.shuffleKeys === 0;
  }
}

/**
 * The worker event an exit request stands for. NONE is the configured default: Graceful when
 * `svc.worker.graceful.shutdown.enabled`, else Immediately.
 */
export function eventForExitType(
  exitType: ExitType,
  options: { readonly gracefulShutdownEnabled: boolean },
): Extract<WorkerEventType, 'Decommission' | 'Graceful' | 'Immediately'> {
  switch (exitType) {
    case 'DECOMMISSION':
      return 'Decommission';
    case 'GRACEFUL':
      return 'Graceful';
    case 'IMMEDIATELY':
      return 'Immediately';
    case 'NONE':
      return options.gracefulShutdownEnabled ? 'Graceful' : 'Immediately';
  }
}

/**
 * The state that completes an event: the master clears a pending event when the worker's heartbeat reports
 * it. Exit is reported by the worker's last heartbeat (its exit report); the master then records a planned
 * stop (registry.ts recordWorkerStopped), which completes the event. A worker whose report never arrived ends
 * its event with re-registration or the expiry of its unavailable info.
 */
export function eventFinalState(event: Exclude<WorkerEventType, 'None'>): WorkerState {
  switch (event) {
    case 'Recommission':
      return 'Normal';
    case 'DecommissionThenIdle':
      return 'Idle';
    case 'Decommission':
    case 'Graceful':
    case 'Immediately':
      return 'Exit';
  }
}

/**
 * Parses an event type as operators write it: the enum name in any case (`Decommission`, the REST API's
 * `DECOMMISSIONTHENIDLE`). Throws naming the bad value and the valid ones.
 */
export function parseWorkerEventType(text: string): WorkerEventType {
  return parseName(text, WORKER_EVENT_TYPES, 'worker event type');
}

/** Parses an exit type (DECOMMISSION, GRACEFUL, IMMEDIATELY, NONE) in any case; empty means NONE. */
export function parseExitType(text: string): ExitType {
  return text.trim() === '' ? 'NONE' : parseName(text, EXIT_TYPES, 'exit type');
}

function parseName<T extends string>(text: string, names: readonly T[], what: string): T {
  const wanted = text.trim().toUpperCase();
  const found = names.find((name) => name.toUpperCase() === wanted);
  if (found === undefined) {
    throw new RangeError(`'${text}' is not a ${what}; expected one of ${names.join(', ')}`);
  }
  return found;
}
