import {
  emptyApplications,
  emptyRegistry,
  restoreApplications,
  restoreRegistry,
  snapshotApplications,
  snapshotRegistry,
  type ApplicationRegistry,
  type ApplicationRegistrySnapshot,
  type WorkerRegistry,
  type WorkerRegistrySnapshot,
} from '../../lifecycle/index.ts';
import type { DiskInfo, WorkerKey } from '../../domain/index.ts';
import { initialPartitionSize } from '../../slots/index.ts';
import type { MasterConfig } from './config.ts';
import type { SlotBooking } from './bookings.ts';
import { initialMasterQuota, type MasterQuota } from './quota.ts';
import { parseStoredJson } from './stored-json.ts';

/**
 * What the master must not forget across a restart (and what the masters of a high-availability group share): the
 * worker registry, the applications with their shuffles, the estimated partition size, and the slots booked since
 * the workers' last heartbeats. Persisted in the `coordination` store as one key per entry (./layout.ts), each step
 * writing only the entries it changed.
 */
export interface MasterDurableState {
  readonly workers: WorkerRegistry;
  readonly applications: ApplicationRegistry;
  readonly estimatedPartitionSize: number;
  /** By id, oldest first (./bookings.ts): the offers whose booked disks some worker has not replaced yet. */
  readonly bookings: ReadonlyMap<number, SlotBooking>;
}

/** The master machine's whole state: the durable part plus what is rebuilt after a restart. */
export interface MasterState {
  readonly config: MasterConfig;
  readonly started: boolean;
  /**
   * When this master began serving (its start): applications it has not heard from since are not taken for ended
   * until an application timeout later (lifecycle/applications.ts `shuffleExpiry`).
   */
  readonly servingSince: number;
  /**
   * Applications that unregistered while this master was new (less than an application timeout since
   * `servingSince`): their shuffles expire at once, unlike those of applications it never heard of.
   */
  readonly endedApps: ReadonlySet<string>;
  readonly durable: MasterDurableState;
  /** The gauge values last emitted, so that a step emits only the gauges that changed. */
  readonly gauges: ReadonlyMap<string, number>;
  /** Usage and quota status (./quota.ts); rebuilt from the workers' heartbeats after a restart. */
  readonly quota: MasterQuota;
  /** The id the next slot booking takes: one past the highest restored or made. */
  readonly nextBookingId: number;
  /** How many workers of the oldest booking are known to have heartbeated since it (./bookings.ts `sweptBookings`). */
  readonly bookingsHeard: number;
  /**
   * Each worker's disks as this master last wrote its entry (./written-disks.ts): a heartbeat whose disks' budgets
   * differ from these is written. Empty after a start, so that each worker's first heartbeat writes its entry.
   */
  readonly writtenDisks: ReadonlyMap<WorkerKey, readonly DiskInfo[]>;
}

/**
 * Where svc builds before 29 November 2026 kept the whole durable state as one JSON value, rewritten at every change.
 * A master that finds it reads it once and rewrites it in the layout (./machine.ts); nothing writes it any more.
 */
export const MASTER_STATE_KEY = 'master/state';
export const MASTER_SNAPSHOT_VERSION = 1;

export function initialMasterState(config: MasterConfig): MasterState {
  return {
    config,
    started: false,
    servingSince: 0,
    endedApps: new Set(),
    durable: {
      workers: emptyRegistry(),
      applications: emptyApplications(),
      estimatedPartitionSize: initialPartitionSize(config.partitionSize),
      bookings: new Map(),
    },
    gauges: new Map(),
    quota: initialMasterQuota(config.quota?.settings),
    nextBookingId: 0,
    bookingsHeard: 0,
    writtenDisks: new Map(),
  };
}

interface MasterSnapshot {
  readonly version: number;
  readonly workers: WorkerRegistrySnapshot;
  readonly applications: ApplicationRegistrySnapshot;
  readonly estimatedPartitionSize: number;
}

/** The value an earlier release stored under MASTER_STATE_KEY (for tests of the migration). */
export function encodeDurableState(durable: MasterDurableState): string {
  const snapshot: MasterSnapshot = {
    version: MASTER_SNAPSHOT_VERSION,
    workers: snapshotRegistry(durable.workers),
    applications: snapshotApplications(durable.applications),
    estimatedPartitionSize: durable.estimatedPartitionSize,
  };
  return JSON.stringify(snapshot);
}

/**
 * Reads the value an earlier release stored under MASTER_STATE_KEY. Throws with what is wrong; the master then refuses to start rather than
 * start empty, because an empty master would tell every worker that its shuffles expired.
 */
export function decodeDurableState(text: string): MasterDurableState {
  const snapshot = parseStoredJson(MASTER_STATE_KEY, text) as Partial<MasterSnapshot> | null;
  if (typeof snapshot !== 'object' || snapshot === null || snapshot.version !== MASTER_SNAPSHOT_VERSION) {
    throw new RangeError(
      `${MASTER_STATE_KEY} has version ${String(snapshot?.version)}, this release reads version ${MASTER_SNAPSHOT_VERSION}`,
    );
  }
  if (
    snapshot.workers === undefined ||
    snapshot.applications === undefined ||
    typeof snapshot.estimatedPartitionSize !== 'number'
  ) {
    throw new RangeError(`${MASTER_STATE_KEY} lacks its workers, applications or estimatedPartitionSize`);
  }
  return {
    workers: restoreRegistry(snapshot.workers),
    applications: restoreApplications(snapshot.applications),
    estimatedPartitionSize: snapshot.estimatedPartitionSize,
    bookings: new Map(),
  };
}
