import { DEFAULT_RACK, workerKey } from '../domain/index.ts';
import type {
  DiskInfo,
  ShuffleKey,
  WorkerEventType,
  WorkerId,
  WorkerInfo,
  WorkerKey,
  WorkerState,
} from '../domain/index.ts';
import type { DiskAllocations } from '../slots/types.ts';
import { autoExclusionReason } from './auto-exclusion.ts';
import type { AutoExclusionPolicy } from './auto-exclusion.ts';
import { hostRefusal } from './host-policy.ts';
import { LayeredMap } from './layered-map.ts';
import { carryAvailableCount } from './registry-views.ts';
import type { HostPolicy } from './host-policy.ts';
import { eventFinalState, transition } from './worker-states.ts';
import type { ExitKind } from './worker-states.ts';

/**
 * The master's view of the workers, as one immutable value: every function takes a registry and returns a new
 * one with an outcome the caller logs or replies with. All maps iterate in insertion order, so everything
 * derived from the registry (available workers, API lists) is deterministic. registry-snapshot.ts turns it
 * into JSON for the coordination store; registry-views.ts derives availability, API lists and metric counts.
 */
export interface WorkerRegistry {
  /** Registered workers, in registration order. A lost or stopped worker leaves this map. */
  readonly workers: ReadonlyMap<WorkerKey, RegisteredWorker>;
  readonly lost: ReadonlyMap<WorkerKey, LostWorker>;
  /**
   * Workers that reported their own exit (a planned stop: immediately, gracefully, or at the end of a
   * decommission): gone like the lost ones, but neither counted nor alerted on as lost.
   */
  readonly stopped: ReadonlyMap<WorkerKey, StoppedWorker>;
  /**
   * Excluded by the master from heartbeats (unhealthy disks, high workload); released by a healthy heartbeat.
   */
  readonly autoExcluded: ReadonlyMap<WorkerKey, AutoExclusion>;
  /**
   * Excluded by an operator; only an operator's remove clears it (not heartbeats, loss or re-registration).
   */
  readonly manuallyExcluded: ReadonlyMap<WorkerKey, Membership>;
  /** Reported unavailable (ReportWorkerUnavailable: a graceful shutdown has begun). */
  readonly shutdown: ReadonlyMap<WorkerKey, Membership>;
  /** Reported decommissioning (ReportWorkerDecommission). */
  readonly decommissioning: ReadonlyMap<WorkerKey, Membership>;
  /** Operator events not yet completed by the worker. */
  readonly events: ReadonlyMap<WorkerKey, PendingEvent>;
}

export interface RegisteredWorker extends WorkerInfo {
  /** When the master first saw the worker in its current state (ms). */
  readonly stateSince: number;
}

export interface Membership {
  readonly id: WorkerId;
  /** When the worker joined the set (ms). */
  readonly since: number;
}

export interface AutoExclusion extends Membership {
  readonly reason: string;
}

export interface LostWorker {
  /** The worker as last registered or heard from. */
  readonly info: RegisteredWorker;
  readonly lostAt: number;
}

export interface StoppedWorker {
  /** The worker as last heard from, its state Exit. */
  readonly info: RegisteredWorker;
  readonly stoppedAt: number;
  /** How it left, from what it reported before its exit. */
  readonly exitKind: ExitKind;
}

export type PendingEventType = Exclude<WorkerEventType, 'None'>;

export interface PendingEvent {
  readonly id: WorkerId;
  readonly type: PendingEventType;
  /** When the operator sent it (ms). */
  readonly time: number;
}

export function emptyRegistry(): WorkerRegistry {
  return {
    workers: new Map(),
    lost: new Map(),
    stopped: new Map(),
    autoExcluded: new Map(),
    manuallyExcluded: new Map(),
    shutdown: new Map(),
    decommissioning: new Map(),
    events: new Map(),
  };
}

// -----------------------------------------------------------------------------------------------------------
// Registration and heartbeats

export interface Registration {
  readonly id: WorkerId;
  readonly disks: readonly DiskInfo[];
  /** The worker's rack; empty when it has none (DEFAULT_RACK is used). */
  readonly networkLocation: string;
}

export type RegisterOutcome =
  | { readonly accepted: true; readonly reregistered: boolean }
  | { readonly accepted: false; readonly reason: string };

/**
 * Registers a worker (or registers it again after a restart or after it was declared lost). A registration
 * starts clean: the worker leaves lost, auto-excluded, shutdown and decommissioning, and its pending event is
 * dropped, except a Recommission. Manual exclusion stays: it is the operator's decision and only the operator's
 * remove clears it. A pending Recommission stays too: a worker left idle by DecommissionThenIdle and cut off before
 * it heard the event registers again still idle, and only that event brings it back (swarm seed 150727: dropped, it
 * kept the worker out for good although the operator's command was acknowledged); a worker that restarted serving
 * completes it at its first heartbeat.
 */
export function registerWorker(
  registry: WorkerRegistry,
  registration: Registration,
  now: number,
  hosts: HostPolicy,
): { readonly registry: WorkerRegistry; readonly outcome: RegisterOutcome } {
  const refusal = hostRefusal(hosts, registration.id.host);
  if (refusal !== null) return { registry, outcome: { accepted: false, reason: refusal } };
  const key = workerKey(registration.id);
  const worker: RegisteredWorker = {
    id: registration.id,
    disks: registration.disks,
    networkLocation: registration.networkLocation === '' ? DEFAULT_RACK : registration.networkLocation,
    state: 'Normal',
    lastHeartbeat: now,
    highWorkload: false,
    stateSince: now,
  };
  const reregistered = registry.workers.has(key) || registry.lost.has(key) || registry.stopped.has(key);
  return {
    registry: {
      ...registry,
      workers: withEntry(registry.workers, key, worker),
      lost: withoutKeys(registry.lost, [key]),
      stopped: withoutKeys(registry.stopped, [key]),
      autoExcluded: withoutKeys(registry.autoExcluded, [key]),
      shutdown: withoutKeys(registry.shutdown, [key]),
      decommissioning: withoutKeys(registry.decommissioning, [key]),
      events:
        registry.events.get(key)?.type === 'Recommission'
          ? registry.events
          : withoutKeys(registry.events, [key]),
    },
    outcome: { accepted: true, reregistered },
  };
}

export interface WorkerHeartbeat {
  readonly id: WorkerId;
  readonly disks: readonly DiskInfo[];
  readonly state: WorkerState;
  readonly highWorkload: boolean;
  /** Shuffles the worker holds data or slots for. */
  readonly activeShuffleKeys: readonly ShuffleKey[];
}

export interface HeartbeatPolicy extends AutoExclusionPolicy {
  /** Whether the worker must drop a shuffle it holds (see applications.ts `shuffleExpiry`). */
  readonly isShuffleExpired: (key: ShuffleKey) => boolean;
}

export type HeartbeatReply =
  /** The master does not know the worker (never registered, or declared lost): it must register again. */
  | { readonly registered: false }
  | {
      readonly registered: true;
      /** Shuffles the worker holds that the master no longer has: the worker releases and cleans them. */
      readonly expiredShuffleKeys: readonly ShuffleKey[];
      /** The operator's pending event for this worker, or None. */
      readonly event: WorkerEventType;
    };

/** What the heartbeat changed, for the master's log and metrics. */
export interface HeartbeatChanges {
  readonly autoExclusion:
    | { readonly change: 'excluded'; readonly reason: string }
    | { readonly change: 'released'; readonly previousReason: string }
    | null;
  /** The pending event the worker has now completed. */
  readonly completedEvent: PendingEventType | null;
  /**
   * The pending event the worker's reported state refuses (it changed course since the operator sent the
   * event): dropped rather than re-sent with every heartbeat reply, with the transition table's reason.
   */
  readonly droppedEvent: { readonly type: PendingEventType; readonly reason: string } | null;
  /** The worker reports Normal again and so left the shutdown and decommissioning sets. */
  readonly backInService: boolean;
}

const NO_CHANGES: HeartbeatChanges = {
  autoExclusion: null,
  completedEvent: null,
  droppedEvent: null,
  backInService: false,
};

/**
 * Records a worker's heartbeat: its disks, state, workload and time; excludes or releases it automatically;
 * completes its pending event once it reports the event's final state, or drops it when that state refuses
 * it. A worker reporting Normal leaves the shutdown and decommissioning sets: it serves again, and since
 * availability checks those sets (unlike the reference, quirk 8), a recommissioned worker would otherwise
 * stay unusable until it re-registered.
 */
/** Reported states that put a worker in the shutdown set even when its own report to the master was lost. */
const SHUTTING_DOWN_STATES: ReadonlySet<WorkerState> = new Set(['InGraceful', 'InExit']);
const DECOMMISSIONING_STATES: ReadonlySet<WorkerState> = new Set([
  'InDecommission',
  'InDecommissionThenIdle',
]);

export function recordHeartbeat(
  registry: WorkerRegistry,
  heartbeat: WorkerHeartbeat,
  now: number,
  policy: HeartbeatPolicy,
): { readonly registry: WorkerRegistry; readonly reply: HeartbeatReply; readonly changes: HeartbeatChanges } {
  const key = workerKey(heartbeat.id);
  const previous = registry.workers.get(key);
  if (previous === undefined) return { registry, reply: { registered: false }, changes: NO_CHANGES };

  const worker = workerWith(
    previous,
    heartbeat.disks,
    heartbeat.state,
    heartbeat.highWorkload,
    now,
    heartbeat.state === previous.state ? previous.stateSince : now,
  );

  const reason = autoExclusionReason(heartbeat, policy);
  const excludedBefore = registry.autoExcluded.get(key);
  const autoExcluded =
    reason === null
      ? withoutKeys(registry.autoExcluded, [key])
      : withEntry(registry.autoExcluded, key, { id: worker.id, since: excludedBefore?.since ?? now, reason });
  const autoExclusion: HeartbeatChanges['autoExclusion'] =
    reason !== null && excludedBefore === undefined
      ? { change: 'excluded', reason }
      : reason === null && excludedBefore !== undefined
        ? { change: 'released', previousReason: excludedBefore.reason }
        : null;

  const pending = registry.events.get(key);
  const completedEvent =
    pending !== undefined && eventFinalState(pending.type) === heartbeat.state ? pending.type : null;
  const verdict = pending === undefined ? null : transition(heartbeat.state, pending.type);
  const droppedEvent =
    pending !== undefined && verdict?.outcome === 'refuse'
      ? { type: pending.type, reason: `${heartbeat.state}: ${verdict.reason}` }
      : null;
  const events =
    completedEvent === null && droppedEvent === null ? registry.events : withoutKeys(registry.events, [key]);

  const backInService =
    heartbeat.state === 'Normal' && (registry.shutdown.has(key) || registry.decommissioning.has(key));

  // The worker's own report (ReportWorkerUnavailable / ReportWorkerDecommission) is sent once and may be lost;
  // its state, repeated in every heartbeat, says the same, so a leaving worker is listed from either source.
  const membership = { id: worker.id, since: now };
  const shuttingDown = SHUTTING_DOWN_STATES.has(heartbeat.state) && !registry.shutdown.has(key);
  const decommissioning = DECOMMISSIONING_STATES.has(heartbeat.state) && !registry.decommissioning.has(key);
  const shutdown = backInService
    ? withoutKeys(registry.shutdown, [key])
    : shuttingDown
      ? withEntry(registry.shutdown, key, membership)
      : registry.shutdown;
  const decommissioningSet = backInService
    ? withoutKeys(registry.decommissioning, [key])
    : decommissioning
      ? withEntry(registry.decommissioning, key, membership)
      : registry.decommissioning;

  const next: WorkerRegistry = {
    ...registry,
    workers: withEntry(registry.workers, key, worker),
    autoExcluded,
    events,
    shutdown,
    decommissioning: decommissioningSet,
  };
  carryAvailableCount(registry, next, key);
  return {
    registry: next,
    reply: {
      registered: true,
      expiredShuffleKeys: heartbeat.activeShuffleKeys.filter((shuffle) => policy.isShuffleExpired(shuffle)),
      event: events.get(key)?.type ?? 'None',
    },
    changes: { autoExclusion, completedEvent, droppedEvent, backInService },
  };
}

// -----------------------------------------------------------------------------------------------------------
// Lost workers and the expiry of what the master remembers about unavailable workers

/**
 * Declares a worker lost (its heartbeats stopped, or it reported that it is exiting immediately): it leaves
 * the registered workers and the auto-excluded set and is remembered as lost. Its manual exclusion, shutdown,
 * decommissioning and event entries stay until it registers again or its unavailable info expires.
 */
export function markWorkerLost(
  registry: WorkerRegistry,
  key: WorkerKey,
  now: number,
): { readonly registry: WorkerRegistry; readonly outcome: 'lost' | 'alreadyLost' | 'unknown' } {
  const worker = registry.workers.get(key);
  if (worker === undefined) return { registry, outcome: registry.lost.has(key) ? 'alreadyLost' : 'unknown' };
  return {
    registry: {
      ...registry,
      workers: withoutKeys(registry.workers, [key]),
      autoExcluded: withoutKeys(registry.autoExcluded, [key]),
      lost: withEntry(registry.lost, key, { info: worker, lostAt: now }),
    },
    outcome: 'lost',
  };
}

export type StopOutcome =
  | {
      readonly outcome: 'stopped';
      readonly exitKind: ExitKind;
      readonly completedEvent: PendingEventType | null;
    }
  | { readonly outcome: 'alreadyStopped' | 'unknown' };

/**
 * A worker reported its own exit: a heartbeat with state Exit as its last message, or ReportWorkerLost (it exits
 * immediately). A planned stop, not a loss: the worker leaves the registered workers, the auto-excluded,
 * shutdown and decommissioning sets (it is gone, no longer leaving) and its pending event (done), and is
 * remembered as stopped, listed among the shutdown workers, until it registers again or its unavailable info
 * expires. How it left is taken from what it reported before (see `exitKindOf`). A worker already declared lost
 * whose report arrives late moves from lost to stopped: it did not crash.
 */
export function recordWorkerStopped(
  registry: WorkerRegistry,
  key: WorkerKey,
  now: number,
  reported: { readonly immediately: boolean },
): { readonly registry: WorkerRegistry; readonly stop: StopOutcome } {
  if (registry.stopped.has(key)) return { registry, stop: { outcome: 'alreadyStopped' } };
  const known = registry.workers.get(key) ?? registry.lost.get(key)?.info;
  if (known === undefined) return { registry, stop: { outcome: 'unknown' } };
  const exitKind = reported.immediately ? 'IMMEDIATELY' : exitKindOf(registry, key, known.state);
  const pending = registry.events.get(key);
  const completedEvent =
    pending !== undefined && eventFinalState(pending.type) === 'Exit' ? pending.type : null;
  const info: RegisteredWorker = { ...known, state: 'Exit', stateSince: now };
  return {
    registry: {
      ...registry,
      workers: withoutKeys(registry.workers, [key]),
      lost: withoutKeys(registry.lost, [key]),
      stopped: withEntry(registry.stopped, key, { info, stoppedAt: now, exitKind }),
      autoExcluded: withoutKeys(registry.autoExcluded, [key]),
      shutdown: withoutKeys(registry.shutdown, [key]),
      decommissioning: withoutKeys(registry.decommissioning, [key]),
      events: withoutKeys(registry.events, [key]),
    },
    stop: { outcome: 'stopped', exitKind, completedEvent },
  };
}

/**
 * How a worker that reports Exit left: a decommission if it was decommissioning, a graceful shutdown if it was
 * shutting down gracefully (its own report, or its last heartbeat), otherwise immediately.
 */
function exitKindOf(registry: WorkerRegistry, key: WorkerKey, lastState: WorkerState): ExitKind {
  if (lastState === 'InDecommission' || registry.decommissioning.has(key)) return 'DECOMMISSION';
  if (lastState === 'InExit') return 'IMMEDIATELY';
  if (lastState === 'InGraceful' || registry.shutdown.has(key)) return 'GRACEFUL';
  return 'IMMEDIATELY';
}

/**
 * Declares lost every registered worker whose last heartbeat is older than `heartbeatTimeoutMs`
 * (`svc.master.heartbeat.worker.timeout`): lost when now − lastHeartbeat > timeout, so a heartbeat exactly
 * one timeout ago still counts. Returns the newly lost workers in registration order.
 */
export function detectLostWorkers(
  registry: WorkerRegistry,
  now: number,
  heartbeatTimeoutMs: number,
): { readonly registry: WorkerRegistry; readonly lost: readonly WorkerKey[] } {
  const expired = [...registry.workers]
    .filter(([, worker]) => now - worker.lastHeartbeat > heartbeatTimeoutMs)
    .map(([key]) => key);
  const next = expired.reduce((current, key) => markWorkerLost(current, key, now).registry, registry);
  return { registry: next, lost: expired };
}

/**
 * Forgets lost and stopped workers (POST /api/v1/workers/remove_unavailable): their lost, stopped, shutdown,
 * decommissioning and event entries go. Only workers gone (lost or stopped) are affected; the others are
 * reported back.
 */
export function removeUnavailableInfo(
  registry: WorkerRegistry,
  keys: readonly WorkerKey[],
): {
  readonly registry: WorkerRegistry;
  readonly removed: readonly WorkerKey[];
  readonly notLost: readonly WorkerKey[];
} {
  const gone = (key: WorkerKey) => registry.lost.has(key) || registry.stopped.has(key);
  const removed = unique(keys).filter(gone);
  const notLost = unique(keys).filter((key) => !gone(key));
  return {
    registry: {
      ...registry,
      lost: withoutKeys(registry.lost, removed),
      stopped: withoutKeys(registry.stopped, removed),
      shutdown: withoutKeys(registry.shutdown, removed),
      decommissioning: withoutKeys(registry.decommissioning, removed),
      events: withoutKeys(registry.events, removed),
    },
    removed,
    notLost,
  };
}

/**
 * Forgets workers lost or stopped for longer than `expireTimeoutMs`
 * (`svc.master.workerUnavailableInfo.expireTimeout`), as removeUnavailableInfo does. Strict like lost
 * detection: an entry exactly `expireTimeoutMs` old stays.
 */
export function expireUnavailableInfo(
  registry: WorkerRegistry,
  now: number,
  expireTimeoutMs: number,
): { readonly registry: WorkerRegistry; readonly expired: readonly WorkerKey[] } {
  const expired = [
    ...[...registry.lost].filter(([, lost]) => now - lost.lostAt > expireTimeoutMs).map(([key]) => key),
    ...[...registry.stopped]
      .filter(([, stopped]) => now - stopped.stoppedAt > expireTimeoutMs)
      .map(([key]) => key),
  ];
  return { registry: removeUnavailableInfo(registry, expired).registry, expired };
}

// -----------------------------------------------------------------------------------------------------------
// Operator actions and the workers' own reports

export interface ExclusionOutcome {
  readonly registry: WorkerRegistry;
  readonly added: readonly WorkerKey[];
  readonly removed: readonly WorkerKey[];
  readonly alreadyExcluded: readonly WorkerKey[];
  readonly notExcluded: readonly WorkerKey[];
  /** Neither registered nor lost (a typo, or a worker forgotten long ago): not added. */
  readonly unknown: readonly WorkerKey[];
  /** Named in both lists: nothing is done for them, the request contradicts itself. */
  readonly conflicting: readonly WorkerKey[];
}

/** Manual exclusion (POST /api/v1/workers/exclude {add, remove}). */
export function excludeWorkers(
  registry: WorkerRegistry,
  request: { readonly add: readonly WorkerKey[]; readonly remove: readonly WorkerKey[] },
  now: number,
): ExclusionOutcome {
  const removeSet = new Set(request.remove);
  const conflicting = unique(request.add).filter((key) => removeSet.has(key));
  const manual = new Map(registry.manuallyExcluded);
  const added: WorkerKey[] = [];
  const alreadyExcluded: WorkerKey[] = [];
  const unknown: WorkerKey[] = [];
  for (const key of unique(request.add)) {
    if (removeSet.has(key)) continue;
    const id = knownId(registry, key);
    if (manual.has(key)) {
      alreadyExcluded.push(key);
    } else if (id === null) {
      unknown.push(key);
    } else {
      manual.set(key, { id, since: now });
      added.push(key);
    }
  }
  const removed: WorkerKey[] = [];
  const notExcluded: WorkerKey[] = [];
  for (const key of unique(request.remove)) {
    if (conflicting.includes(key)) continue;
    if (manual.delete(key)) removed.push(key);
    else notExcluded.push(key);
  }
  return {
    registry: { ...registry, manuallyExcluded: manual },
    added,
    removed,
    alreadyExcluded,
    notExcluded,
    unknown,
    conflicting,
  };
}

export interface WorkerEventOutcome {
  readonly registry: WorkerRegistry;
  /** Recorded as the worker's pending event (or, for None, the pending event was cleared). */
  readonly applied: readonly WorkerKey[];
  /** Nothing to do: the same event is already pending, or the worker is already where the event leads. */
  readonly unchanged: readonly { readonly worker: WorkerKey; readonly note: string }[];
  /** The worker's state does not allow the event (the transition table's reason). */
  readonly refused: readonly { readonly worker: WorkerKey; readonly reason: string }[];
  /** Neither registered, lost nor stopped: a typo, or a worker forgotten long ago. */
  readonly unknown: readonly WorkerKey[];
}

/**
 * An operator's worker event (POST /api/v1/workers/events). The event waits in the registry until the
 * worker's next heartbeat carries it; a repeat of the pending event changes nothing (its time stays), None
 * clears the pending event, another event replaces it. Unlike the reference, the master checks the event
 * against the worker's last reported state with the worker's own transition table, so the operator learns at
 * once that an event cannot apply.
 *
 * A worker declared lost takes a Recommission (or None): it waits until the worker registers again, which keeps
 * it (see `registerWorker`), and the worker's first heartbeat then carries it. Its last reported state is not
 * checked, being stale: a worker that comes back serving completes it at once, one still leaving refuses it at
 * its heartbeat. Without this, a worker left idle by DecommissionThenIdle whose master lost it during a
 * partition could never be brought back (swarm seed 419161). Other events are refused for a lost worker, since a
 * registration drops them: the operator sends them again once it has registered. A stopped worker (it reported its
 * exit) is refused any event, with the reason, rather than called unknown.
 */
export function sendWorkerEvent(
  registry: WorkerRegistry,
  type: WorkerEventType,
  keys: readonly WorkerKey[],
  now: number,
): WorkerEventOutcome {
  const events = new Map(registry.events);
  const applied: WorkerKey[] = [];
  const unchanged: { worker: WorkerKey; note: string }[] = [];
  const refused: { worker: WorkerKey; reason: string }[] = [];
  const unknown: WorkerKey[] = [];
  for (const key of unique(keys)) {
    const worker = registry.workers.get(key);
    const lost = worker === undefined ? registry.lost.get(key) : undefined;
    const stopped = worker === undefined ? registry.stopped.get(key) : undefined;
    const pending = events.get(key);
    if (stopped !== undefined) {
      // Known, so not "unknown"; its exit ended any pending event, and it registers afresh if it starts again.
      if (type === 'None') unchanged.push({ worker: key, note: 'no pending event' });
      else refused.push({ worker: key, reason: `stopped since ${stopped.stoppedAt}: ${STOPPED_REFUSAL}` });
    } else if (worker === undefined && lost === undefined) {
      unknown.push(key);
    } else if (type === 'None') {
      if (events.delete(key)) applied.push(key);
      else unchanged.push({ worker: key, note: 'no pending event' });
    } else if (pending?.type === type) {
      unchanged.push({ worker: key, note: `${type} already pending since ${pending.time}` });
    } else if (lost !== undefined) {
      if (type === 'Recommission') {
        events.set(key, { id: lost.info.id, type, time: now });
        applied.push(key);
      } else {
        refused.push({ worker: key, reason: `lost since ${lost.lostAt}: ${LOST_REFUSAL}` });
      }
    } else if (worker !== undefined) {
      const verdict = transition(worker.state, type);
      if (verdict.outcome === 'refuse') {
        refused.push({ worker: key, reason: `${worker.state}: ${verdict.reason}` });
      } else if (verdict.outcome === 'stay' && pending === undefined) {
        unchanged.push({ worker: key, note: verdict.note });
      } else {
        events.set(key, { id: worker.id, type, time: now });
        applied.push(key);
      }
    }
  }
  return { registry: { ...registry, events }, applied, unchanged, refused, unknown };
}

const STOPPED_REFUSAL =
  'it reported its exit and is not running; a worker started again registers afresh, serving';
const LOST_REFUSAL =
  'not heartbeating, and only a Recommission outlives its registration; send the event once it has registered';

/** A graceful shutdown has begun on these workers (ReportWorkerUnavailable). */
export function reportWorkersUnavailable(
  registry: WorkerRegistry,
  keys: readonly WorkerKey[],
  now: number,
): {
  readonly registry: WorkerRegistry;
  readonly recorded: readonly WorkerKey[];
  readonly unknown: readonly WorkerKey[];
} {
  const { map, recorded, unknown } = addMembers(registry, registry.shutdown, keys, now);
  return { registry: { ...registry, shutdown: map }, recorded, unknown };
}

/** These workers are decommissioning (ReportWorkerDecommission). */
export function reportWorkersDecommissioning(
  registry: WorkerRegistry,
  keys: readonly WorkerKey[],
  now: number,
): {
  readonly registry: WorkerRegistry;
  readonly recorded: readonly WorkerKey[];
  readonly unknown: readonly WorkerKey[];
} {
  const { map, recorded, unknown } = addMembers(registry, registry.decommissioning, keys, now);
  return { registry: { ...registry, decommissioning: map }, recorded, unknown };
}

/** Adds registered workers to a membership set, keeping the original time of those already in it. */
function addMembers(
  registry: WorkerRegistry,
  set: ReadonlyMap<WorkerKey, Membership>,
  keys: readonly WorkerKey[],
  now: number,
): { map: ReadonlyMap<WorkerKey, Membership>; recorded: WorkerKey[]; unknown: WorkerKey[] } {
  const map = new Map(set);
  const recorded: WorkerKey[] = [];
  const unknown: WorkerKey[] = [];
  for (const key of unique(keys)) {
    const worker = registry.workers.get(key);
    if (worker === undefined) {
      unknown.push(key);
      continue;
    }
    if (!map.has(key)) map.set(key, { id: worker.id, since: now });
    recorded.push(key);
  }
  return { map, recorded, unknown };
}

// -----------------------------------------------------------------------------------------------------------
// Slots offered since the last heartbeat

/**
 * Books the slots an offer placed (its `diskAllocations`) against the workers' disks until their next
 * heartbeat replaces the disks with fresh numbers: each slot adds one active slot and takes
 * `estimatedPartitionSize` bytes off the usable space (never below 0), so the disk's budget (usable /
 * estimate) drops by exactly the slots booked. Without this (reference quirk 5) two offers between heartbeats
 * both see the same free space and can overbook a disk. Allocations for workers or mount points the registry
 * does not know are reported back.
 */
export function bookOfferedSlots(
  registry: WorkerRegistry,
  allocations: DiskAllocations,
  estimatedPartitionSize: number,
): {
  readonly registry: WorkerRegistry;
  readonly unmatched: readonly { readonly worker: WorkerKey; readonly mountPoint: string }[];
} {
  const unmatched: { worker: WorkerKey; mountPoint: string }[] = [];
  const sharedBooked = new Map<string, number>();
  // Built in one pass in the registry's order rather than copied and then set: a replicated shuffle books nearly
  // every worker of the cluster, at every offer.
  const workers = new Map<WorkerKey, RegisteredWorker>();
  for (const [key, worker] of registry.workers) {
    const perDisk = allocations.get(key);
    workers.set(
      key,
      perDisk === undefined ? worker : bookedWorker(worker, perDisk, estimatedPartitionSize, sharedBooked),
    );
  }
  for (const [key, perDisk] of allocations) {
    const worker = registry.workers.get(key);
    for (const mountPoint of perDisk.keys()) {
      if (worker === undefined || !hasMountPoint(worker.disks, mountPoint))
        unmatched.push({ worker: key, mountPoint });
    }
  }
  // A filesystem disks of one host share loses the booked space on each of them, whichever worker was offered it.
  if (sharedBooked.size > 0) {
    for (const [key, worker] of workers) {
      if (!worker.disks.some((disk) => sharedBooked.has(filesystemKey(worker.id.host, disk.filesystem))))
        continue;
      const disks = worker.disks.map((disk): DiskInfo => {
        const slots = sharedBooked.get(filesystemKey(worker.id.host, disk.filesystem)) ?? 0;
        if (slots === 0 || disk.filesystemUsableBytes === undefined) return disk;
        return {
          ...disk,
          filesystemUsableBytes: Math.max(0, disk.filesystemUsableBytes - slots * estimatedPartitionSize),
        };
      });
      workers.set(key, { ...worker, disks });
    }
  }
  const booked: WorkerRegistry = { ...registry, workers: LayeredMap.adopt(workers) };
  carryAvailableCount(registry, booked, null);
  return { registry: booked, unmatched };
}

/**
 * The worker with `perDisk`'s slots booked on its disks (itself when none of its disks is named), each shared
 * filesystem's slots added to `sharedBooked`. Plain loops, no closures: called for nearly every worker at every offer.
 */
function bookedWorker(
  worker: RegisteredWorker,
  perDisk: ReadonlyMap<string, number>,
  estimatedPartitionSize: number,
  sharedBooked: Map<string, number>,
): RegisteredWorker {
  let disks: DiskInfo[] | undefined;
  for (let i = 0; i < worker.disks.length; i += 1) {
    const disk = worker.disks[i]!;
    const slots = perDisk.get(disk.mountPoint) ?? 0;
    if (slots === 0) {
      disks?.push(disk);
      continue;
    }
    if (disk.filesystem !== undefined) {
      const filesystem = filesystemKey(worker.id.host, disk.filesystem);
      sharedBooked.set(filesystem, (sharedBooked.get(filesystem) ?? 0) + slots);
    }
    disks ??= worker.disks.slice(0, i);
    disks.push(
      diskWith(
        disk,
        disk.activeSlots + slots,
        Math.max(0, disk.usableBytes - slots * estimatedPartitionSize),
      ),
    );
  }
  return disks === undefined
    ? worker
    : workerWith(worker, disks, worker.state, worker.highWorkload, worker.lastHeartbeat, worker.stateSince);
}

// The two below build their objects as literals: V8 (Node 20) copies an object spread whose later fields replace
// some of its own about 20 times slower than it builds the literal, and the master makes one of each per worker
// at every heartbeat and for nearly every worker at every offer.

/** The disk with other slot and usable-space numbers. */
function diskWith(disk: DiskInfo, activeSlots: number, usableBytes: number): DiskInfo {
  const next: { -readonly [K in keyof DiskInfo]: DiskInfo[K] } = {
    mountPoint: disk.mountPoint,
    type: disk.type,
    usableBytes,
    totalBytes: disk.totalBytes,
    status: disk.status,
    avgFlushTimeNs: disk.avgFlushTimeNs,
    avgFetchTimeNs: disk.avgFetchTimeNs,
    activeSlots,
  };
  if (disk.filesystem !== undefined) next.filesystem = disk.filesystem;
  if (disk.filesystemUsableBytes !== undefined) next.filesystemUsableBytes = disk.filesystemUsableBytes;
  return next;
}

/** The worker with what a heartbeat or a booking replaces. */
function workerWith(
  worker: RegisteredWorker,
  disks: readonly DiskInfo[],
  state: WorkerState,
  highWorkload: boolean,
  lastHeartbeat: number,
  stateSince: number,
): RegisteredWorker {
  return {
    id: worker.id,
    disks,
    networkLocation: worker.networkLocation,
    state,
    lastHeartbeat,
    highWorkload,
    stateSince,
  };
}

function hasMountPoint(disks: readonly DiskInfo[], mountPoint: string): boolean {
  for (const disk of disks) if (disk.mountPoint === mountPoint) return true;
  return false;
}

/** A filesystem of a host; a disk whose filesystem is not known shares none. */
function filesystemKey(host: string, filesystem: string | undefined): string {
  return filesystem === undefined ? '' : `${host}\u0000${filesystem}`;
}

// -----------------------------------------------------------------------------------------------------------
// Helpers

/** The id of a registered, lost or stopped worker. */
function knownId(registry: WorkerRegistry, key: WorkerKey): WorkerId | null {
  return (
    registry.workers.get(key)?.id ??
    registry.lost.get(key)?.info.id ??
    registry.stopped.get(key)?.info.id ??
    null
  );
}

// Layered rather than copied: a registry is a new value at every heartbeat, and a copy of the map of every worker
// each time cost the heartbeats of one interval O(workers²) (./layered-map.ts).
function withEntry<V>(map: ReadonlyMap<WorkerKey, V>, key: WorkerKey, value: V): ReadonlyMap<WorkerKey, V> {
  return LayeredMap.of(map).with(key, value);
}

function withoutKeys<V>(
  map: ReadonlyMap<WorkerKey, V>,
  keys: readonly WorkerKey[],
): ReadonlyMap<WorkerKey, V> {
  if (!keys.some((key) => map.has(key))) return map;
  return keys.reduce((next, key) => next.without(key), LayeredMap.of(map));
}

function unique(keys: readonly WorkerKey[]): WorkerKey[] {
  return [...new Set(keys)];
}
