import type { DiskStatus, StorageType } from './storage.ts';

/**
 * A worker's identity: host and its four service ports. Equality is by all five (the reference excludes the internal
 * port, and so do we). `workerKey` is the canonical text form used in APIs, legacy form parameters and maps.
 */
export interface WorkerId {
  readonly host: string;
  readonly rpcPort: number;
  readonly pushPort: number;
  readonly fetchPort: number;
  readonly replicatePort: number;
}

export type WorkerKey = string;

/**
 * Keys are needed on every push, forward and reply, and a worker id travels by reference inside locations, so each
 * id object is keyed once. Ids are immutable (readonly), which is what makes remembering the key safe.
 */
const KEYS = new WeakMap<WorkerId, WorkerKey>();

export function workerKey(id: WorkerId): WorkerKey {
  let key = KEYS.get(id);
  if (key === undefined) {
    key = `${id.host}:${id.rpcPort}:${id.pushPort}:${id.fetchPort}:${id.replicatePort}`;
    KEYS.set(id, key);
  }
  return key;
}

export function parseWorkerKey(key: string): WorkerId {
  const parts = key.trim().split(':');
  const ports = parts.slice(1).map(Number);
  if (parts.length !== 5 || !parts[0] || ports.some((p) => !Number.isInteger(p) || p < 0 || p > 65535)) {
    throw new RangeError(
      `'${key}' is not a worker id; expected host:rpcPort:pushPort:fetchPort:replicatePort`,
    );
  }
  const [rpcPort, pushPort, fetchPort, replicatePort] = ports as [number, number, number, number];
  return { host: parts[0], rpcPort, pushPort, fetchPort, replicatePort };
}

export function sameWorker(a: WorkerId, b: WorkerId): boolean {
  return workerKey(a) === workerKey(b);
}

/** One storage device of a worker as the master sees it (from registration and heartbeats). */
export interface DiskInfo {
  readonly mountPoint: string;
  /** HDD or SSD for local disks; HDFS, OSS or S3 for the distributed pseudo-disks. */
  readonly type: StorageType;
  /** Bytes a new partition may still use on this disk (after reserve and open writers). */
  readonly usableBytes: number;
  readonly totalBytes: number;
  readonly status: DiskStatus;
  /** Moving averages in nanoseconds, used by the load-aware policy. */
  readonly avgFlushTimeNs: number;
  readonly avgFetchTimeNs: number;
  /** Slots currently allocated on this disk. */
  readonly activeSlots: number;
  /**
   * The disk's filesystem, unique on the worker's host (../storage/disk-space.ts): disks of one host with the same
   * id share their space, and the master counts it once. Absent: not known (the disk counts on its own).
   */
  readonly filesystem?: string;
  /**
   * The filesystem's available space less the reserve, whatever this disk's own capacity leaves (`usableBytes` is at
   * most this): what all disks of the host on `filesystem` share, which slot offers count once
   * (../slots/shared-filesystems.ts). Reported with `filesystem`; absent with it.
   */
  readonly filesystemUsableBytes?: number;
}

/** Rack of a worker when none is known. */
export const DEFAULT_RACK = '/default-rack';

/** Worker states (reference ordinals: Normal 0, Idle 1, Exit 2, InDecommissionThenIdle 3, InDecommission 4, InGraceful 5, InExit 6). */
export const WORKER_STATES = [
  'Normal',
  'Idle',
  'Exit',
  'InDecommissionThenIdle',
  'InDecommission',
  'InGraceful',
  'InExit',
] as const;
export type WorkerState = (typeof WORKER_STATES)[number];

/** Events an operator sends to workers through the master (None 0 … Recommission 5). */
export const WORKER_EVENT_TYPES = [
  'None',
  'Immediately',
  'Decommission',
  'DecommissionThenIdle',
  'Graceful',
  'Recommission',
] as const;
export type WorkerEventType = (typeof WORKER_EVENT_TYPES)[number];

/** How a worker is asked to exit through its own management endpoint. NONE = the configured default. */
export const EXIT_TYPES = ['DECOMMISSION', 'GRACEFUL', 'IMMEDIATELY', 'NONE'] as const;
export type ExitType = (typeof EXIT_TYPES)[number];

/** Everything the master knows about one worker. */
export interface WorkerInfo {
  readonly id: WorkerId;
  readonly disks: readonly DiskInfo[];
  /** Rack; DEFAULT_RACK when unknown. */
  readonly networkLocation: string;
  readonly state: WorkerState;
  /** Last heartbeat time (ms, from the driver's clock). */
  readonly lastHeartbeat: number;
  /** The worker reported congestion, memory pressure or too many connections. */
  readonly highWorkload: boolean;
}
