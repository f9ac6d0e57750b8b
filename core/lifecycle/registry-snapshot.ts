import { workerKey } from '../domain/index.ts';
import type { WorkerId, WorkerKey } from '../domain/index.ts';
import type {
  AutoExclusion,
  LostWorker,
  Membership,
  PendingEvent,
  RegisteredWorker,
  StoppedWorker,
  WorkerRegistry,
} from './registry.ts';

/**
 * The worker registry as plain JSON-ready data, for the masters' coordination store: a master that restarts
 * or takes over leadership restores exactly the registry that was persisted. Arrays keep the maps' insertion
 * order, and every entry carries its worker id, so keys are recomputed rather than stored twice.
 */
export interface WorkerRegistrySnapshot {
  readonly version: 1;
  readonly workers: readonly RegisteredWorker[];
  readonly lost: readonly LostWorker[];
  /** Absent in snapshots written before planned stops were told apart from losses: none. */
  readonly stopped?: readonly StoppedWorker[];
  readonly autoExcluded: readonly AutoExclusion[];
  readonly manuallyExcluded: readonly Membership[];
  readonly shutdown: readonly Membership[];
  readonly decommissioning: readonly Membership[];
  readonly events: readonly PendingEvent[];
}

export function snapshotRegistry(registry: WorkerRegistry): WorkerRegistrySnapshot {
  return {
    version: 1,
    workers: [...registry.workers.values()],
    lost: [...registry.lost.values()],
    stopped: [...registry.stopped.values()],
    autoExcluded: [...registry.autoExcluded.values()],
    manuallyExcluded: [...registry.manuallyExcluded.values()],
    shutdown: [...registry.shutdown.values()],
    decommissioning: [...registry.decommissioning.values()],
    events: [...registry.events.values()],
  };
}

/**
 * Rebuilds a registry; throws on a snapshot of another version, or one that lists a worker twice in a section
 * or as both registered and lost.
 */
export function restoreRegistry(snapshot: WorkerRegistrySnapshot): WorkerRegistry {
  if (snapshot.version !== 1) {
    throw new RangeError(
      `worker registry snapshot version ${String(snapshot.version)} is not supported (expected 1); ` +
        'restore it with the release that wrote it',
    );
  }
  const workers = byKey('workers', snapshot.workers, (worker) => worker.id);
  const lost = byKey('lost', snapshot.lost, (entry) => entry.info.id);
  const both = [...lost.keys()].find((key) => workers.has(key));
  if (both !== undefined)
    throw new RangeError(`worker registry snapshot lists ${both} as both registered and lost`);
  const stopped = byKey('stopped', snapshot.stopped ?? [], (entry) => entry.info.id);
  const twice = [...stopped.keys()].find((key) => workers.has(key) || lost.has(key));
  if (twice !== undefined)
    throw new RangeError(`worker registry snapshot lists ${twice} as stopped and as registered or lost`);
  return {
    workers,
    lost,
    stopped,
    autoExcluded: byKey('autoExcluded', snapshot.autoExcluded, (member) => member.id),
    manuallyExcluded: byKey('manuallyExcluded', snapshot.manuallyExcluded, (member) => member.id),
    shutdown: byKey('shutdown', snapshot.shutdown, (member) => member.id),
    decommissioning: byKey('decommissioning', snapshot.decommissioning, (member) => member.id),
    events: byKey('events', snapshot.events, (event) => event.id),
  };
}

function byKey<V>(
  section: string,
  entries: readonly V[],
  idOf: (entry: V) => WorkerId,
): ReadonlyMap<WorkerKey, V> {
  const map = new Map<WorkerKey, V>();
  for (const entry of entries) {
    const key = workerKey(idOf(entry));
    if (map.has(key)) throw new RangeError(`worker registry snapshot lists ${key} twice in '${section}'`);
    map.set(key, entry);
  }
  return map;
}
