import type { WorkerId, WorkerKey } from '../domain/index.ts';
import type { PendingEventType, RegisteredWorker, WorkerRegistry } from './registry.ts';
import type { ExitKind } from './worker-states.ts';

/**
 * Everything derived from the registry: availability, the lists behind GET /api/v1/workers and GET
 * /api/v1/workers/events, and the master's worker gauges. Derived on demand rather than stored, so that no
 * derived set can drift from the sets it comes from.
 */

/**
 * Why a worker may not be offered slots; empty when it is available. Available ⇔ registered, state Normal, no
 * pending event, not excluded (automatically or manually), not shutting down, not decommissioning, not lost.
 * The reference leaves decommissioning out of this check (quirk 8); svc keeps it in, and clears the
 * membership when a recommissioned worker reports Normal (registry.ts recordHeartbeat).
 */
export function unavailabilityReasons(registry: WorkerRegistry, key: WorkerKey): string[] {
  const worker = registry.workers.get(key);
  if (worker === undefined)
    return [registry.lost.has(key) ? 'lost' : registry.stopped.has(key) ? 'stopped' : 'not registered'];
  const reasons: string[] = [];
  if (worker.state !== 'Normal') reasons.push(`state ${worker.state}`);
  const event = registry.events.get(key);
  if (event !== undefined) reasons.push(`pending event ${event.type}`);
  const auto = registry.autoExcluded.get(key);
  if (auto !== undefined) reasons.push(`excluded: ${auto.reason}`);
  if (registry.manuallyExcluded.has(key)) reasons.push('excluded by an operator');
  if (registry.shutdown.has(key)) reasons.push('shutting down');
  if (registry.decommissioning.has(key)) reasons.push('decommissioning');
  return reasons;
}

/** Whether `unavailabilityReasons` is empty, without building it: asked for every worker at every offer. */
export function isAvailable(registry: WorkerRegistry, key: WorkerKey): boolean {
  const worker = registry.workers.get(key);
  return (
    worker !== undefined &&
    worker.state === 'Normal' &&
    !hasKey(registry.events, key) &&
    !hasKey(registry.autoExcluded, key) &&
    !hasKey(registry.manuallyExcluded, key) &&
    !hasKey(registry.shutdown, key) &&
    !hasKey(registry.decommissioning, key)
  );
}

/** `map.has(key)`, answered without hashing when the map is empty: these sets usually are. */
function hasKey(map: ReadonlyMap<WorkerKey, unknown>, key: WorkerKey): boolean {
  return map.size > 0 && map.has(key);
}

/** The workers the master may offer slots on, in registration order. */
export function availableWorkers(registry: WorkerRegistry): RegisteredWorker[] {
  return [...registry.workers].filter(([key]) => isAvailable(registry, key)).map(([, worker]) => worker);
}

/**
 * Every worker the master must not offer slots on: registered but unavailable, lost, stopped, or manually
 * excluded.
 */
export function unavailableWorkerKeys(registry: WorkerRegistry): Set<WorkerKey> {
  return workerAvailability(registry).unavailable;
}

/**
 * `availableWorkers` and `unavailableWorkerKeys` in one pass over the workers: an offer asks both, over every
 * worker of the cluster.
 */
export function workerAvailability(registry: WorkerRegistry): {
  readonly available: RegisteredWorker[];
  readonly unavailable: Set<WorkerKey>;
} {
  const available: RegisteredWorker[] = [];
  const unavailable = new Set<WorkerKey>();
  for (const [key, worker] of registry.workers) {
    if (isAvailable(registry, key)) available.push(worker);
    else unavailable.add(key);
  }
  for (const key of registry.lost.keys()) unavailable.add(key);
  for (const key of registry.stopped.keys()) unavailable.add(key);
  for (const key of registry.manuallyExcluded.keys()) unavailable.add(key);
  return { available, unavailable };
}

export function registeredWorkers(registry: WorkerRegistry): RegisteredWorker[] {
  return [...registry.workers.values()];
}

/** The worker as last registered or heard from, whether registered now, lost or stopped; undefined if none. */
export function lastKnownWorker(registry: WorkerRegistry, key: WorkerKey): RegisteredWorker | undefined {
  return registry.workers.get(key) ?? registry.lost.get(key)?.info ?? registry.stopped.get(key)?.info;
}

/** Workers gone from the cluster, lost or stopped: an application's pushes to them can only fail. */
export function goneWorkers(registry: WorkerRegistry): WorkerId[] {
  return [
    ...lostWorkers(registry).map((lost) => lost.worker.id),
    ...stoppedWorkers(registry).map((stopped) => stopped.worker.id),
  ];
}

/** Workers that reported their own exit, with when and how, oldest first. */
export function stoppedWorkers(
  registry: WorkerRegistry,
): { readonly worker: RegisteredWorker; readonly stoppedAt: number; readonly exitKind: ExitKind }[] {
  return [...registry.stopped.values()]
    .map((stopped) => ({ worker: stopped.info, stoppedAt: stopped.stoppedAt, exitKind: stopped.exitKind }))
    .sort((a, b) => a.stoppedAt - b.stoppedAt);
}

/**
 * Lost workers with the time they were declared lost, oldest first (ties keep the order they were lost in).
 */
export function lostWorkers(
  registry: WorkerRegistry,
): { readonly worker: RegisteredWorker; readonly lostAt: number }[] {
  return [...registry.lost.values()]
    .map((lost) => ({ worker: lost.info, lostAt: lost.lostAt }))
    .sort((a, b) => a.lostAt - b.lostAt);
}

/** Excluded workers, automatic ∪ manual: the automatic ones first, then manual-only ones. */
export function excludedWorkers(registry: WorkerRegistry): WorkerId[] {
  const union = new Map<WorkerKey, WorkerId>();
  for (const [key, member] of registry.autoExcluded) union.set(key, member.id);
  for (const [key, member] of registry.manuallyExcluded) union.set(key, member.id);
  return [...union.values()];
}

export function manuallyExcludedWorkers(registry: WorkerRegistry): WorkerId[] {
  return [...registry.manuallyExcluded.values()].map((member) => member.id);
}

/**
 * The shutdown workers: those shutting down (a graceful shutdown or an immediate exit under way) and those that
 * stopped after reporting their exit (the contract's `shutdownWorkers`: a planned stop is a shutdown, not a loss).
 */
export function shutdownWorkers(registry: WorkerRegistry): WorkerId[] {
  return [
    ...[...registry.shutdown.values()].map((member) => member.id),
    ...[...registry.stopped.values()].map((stopped) => stopped.info.id),
  ];
}

export function decommissioningWorkers(registry: WorkerRegistry): WorkerId[] {
  return [...registry.decommissioning.values()].map((member) => member.id);
}

/** Pending worker events with the time the operator sent them (GET /api/v1/workers/events). */
export function workerEvents(
  registry: WorkerRegistry,
): { readonly worker: WorkerId; readonly eventType: PendingEventType; readonly eventTime: number }[] {
  return [...registry.events.values()].map((event) => ({
    worker: event.id,
    eventType: event.type,
    eventTime: event.time,
  }));
}

/**
 * Available counts already taken, by registry (a registry is an immutable value): the gauges ask after every step
 * that changed the state, and recounting 1,000 workers at every heartbeat cost it O(workers), besides flattening
 * the registry's layered map each time. A heartbeat or a booking carries its registry's count to the next.
 */
const availableCounts = new WeakMap<WorkerRegistry, number>();

/** How many workers are available, without listing them. */
function availableCount(registry: WorkerRegistry): number {
  const counted = availableCounts.get(registry);
  if (counted !== undefined) return counted;
  let count = 0;
  for (const key of registry.workers.keys()) if (isAvailable(registry, key)) count += 1;
  availableCounts.set(registry, count);
  return count;
}

/**
 * Gives `after` the available count of `before`, if that was taken, moved by `key`'s availability: for an `after`
 * that differs from `before` in `key`'s entries only, or only in what availability does not read (disks), when
 * `key` is null.
 */
export function carryAvailableCount(
  before: WorkerRegistry,
  after: WorkerRegistry,
  key: WorkerKey | null,
): void {
  const counted = availableCounts.get(before);
  if (counted === undefined) return;
  const moved = key === null ? 0 : Number(isAvailable(after, key)) - Number(isAvailable(before, key));
  availableCounts.set(after, counted + moved);
}

/** The master's worker gauges, under their contract metric names. */
export interface WorkerCounts {
  readonly WorkerCount: number;
  readonly LostWorkerCount: number;
  /** Automatic ∪ manual: a worker in both counts once. */
  readonly ExcludedWorkerCount: number;
  readonly AvailableWorkerCount: number;
  readonly ShutdownWorkerCount: number;
  readonly DecommissionWorkerCount: number;
}

export function workerCounts(registry: WorkerRegistry): WorkerCounts {
  return {
    WorkerCount: registry.workers.size,
    LostWorkerCount: registry.lost.size,
    ExcludedWorkerCount: excludedWorkers(registry).length,
    AvailableWorkerCount: availableCount(registry),
    ShutdownWorkerCount: registry.shutdown.size + registry.stopped.size,
    DecommissionWorkerCount: registry.decommissioning.size,
  };
}
