import { parseWorkerKey, type DiskInfo, type WorkerId, type WorkerInfo } from '../../../core/domain/index.ts';
import type { WorkerData, WorkerIdData } from './types.ts';

/** Worker pieces shared by the master's and the worker's projections. */

export function workerIdData(id: WorkerId): WorkerIdData {
  return {
    host: id.host,
    rpcPort: id.rpcPort,
    pushPort: id.pushPort,
    fetchPort: id.fetchPort,
    replicatePort: id.replicatePort,
  };
}

/**
 * A worker id from its key. Keys come from the machine (registry and peer maps), so they always parse; a key that
 * did not would still be shown (as the host), never fail the whole response.
 */
export function workerIdFromKey(key: string): WorkerIdData {
  try {
    return workerIdData(parseWorkerKey(key));
  } catch {
    return { host: key, rpcPort: 0, pushPort: 0, fetchPort: 0, replicatePort: 0 };
  }
}

const BINARY_UNITS = ['B', 'KiB', 'MiB', 'GiB', 'TiB', 'PiB'] as const;

/** 1536 → `1.5 KiB`; sizes a distributed tier reports as unknown (MAX_SAFE_INTEGER) → `unlimited`. */
export function formatSize(bytes: number): string {
  if (!Number.isFinite(bytes) || bytes >= Number.MAX_SAFE_INTEGER) return 'unlimited';
  let value = bytes;
  let unit = 0;
  while (Math.abs(value) >= 1024 && unit < BINARY_UNITS.length - 1) {
    value /= 1024;
    unit += 1;
  }
  return unit === 0 ? `${value} B` : `${value.toFixed(1)} ${BINARY_UNITS[unit]}`;
}

/** One disk as the `diskInfos` map shows it (mount point → this text). */
export function diskText(disk: DiskInfo): string {
  return (
    `DiskInfo(type: ${disk.type}, status: ${disk.status}, usableSpace: ${formatSize(disk.usableBytes)}, ` +
    `totalSpace: ${formatSize(disk.totalBytes)}, activeSlots: ${disk.activeSlots}, ` +
    `avgFlushTime: ${Math.round(disk.avgFlushTimeNs)} ns, avgFetchTime: ${Math.round(disk.avgFetchTimeNs)} ns)`
  );
}

export function diskInfosData(disks: readonly DiskInfo[]): Record<string, string> {
  return Object.fromEntries(disks.map((disk) => [disk.mountPoint, diskText(disk)]));
}

/** Slots in use on a worker: the sum of its disks' active slots. */
export function slotsUsed(disks: readonly DiskInfo[]): number {
  return disks.reduce((sum, disk) => sum + disk.activeSlots, 0);
}

/**
 * A worker as the master knows it, at time `now` (ms, the driver's clock); `now` undefined: a state read from the
 * store (a follower), whose heartbeat times are not live, so no elapsed time is shown.
 */
export function workerData(
  worker: WorkerInfo & { readonly stateSince?: number },
  now: number | undefined,
): WorkerData {
  return {
    ...workerIdData(worker.id),
    slotUsed: slotsUsed(worker.disks),
    lastHeartbeatTimestamp: worker.lastHeartbeat,
    ...(now === undefined
      ? {}
      : { heartbeatElapsedSeconds: Math.max(0, Math.floor((now - worker.lastHeartbeat) / 1000)) }),
    diskInfos: diskInfosData(worker.disks),
    workerState: worker.state,
    ...(worker.stateSince === undefined ? {} : { workerStateStartTime: worker.stateSince }),
    networkLocation: worker.networkLocation,
  };
}
