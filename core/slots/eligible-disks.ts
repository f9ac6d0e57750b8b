import { isDfsType, isLocalType, isTypeAvailable } from '../domain/index.ts';
import type { DiskInfo, StorageInfo, WorkerInfo } from '../domain/index.ts';

/** A disk an offer may place copies on, with the StorageInfo every location on it carries. */
export interface EligibleDisk {
  readonly info: DiskInfo;
  readonly storage: StorageInfo;
  /** A distributed tier (HDFS, OSS, S3): no mount point, no budget. */
  readonly dfs: boolean;
  /** Slots the disk can take: floor(usable bytes / estimated partition size); unlimited for distributed tiers. */
  readonly capacity: number;
}

/** floor(usable / estimate), never negative (reference §2.3). */
export function diskBudget(usableBytes: number, estimatedPartitionSize: number): number {
  return Math.floor(Math.max(0, usableBytes) / estimatedPartitionSize);
}

function eligible(disk: DiskInfo, mask: number): boolean {
  return (
    disk.status === 'HEALTHY' &&
    (isLocalType(disk.type) || isDfsType(disk.type)) &&
    isTypeAvailable(mask, disk.type)
  );
}

/**
 * The disks of a worker an offer may use: healthy, of a tier the request's mask permits, local disks first (in the
 * worker's order) and then its distributed pseudo-disks. Memory is never offered by the master: a worker decides to
 * keep a file in memory itself, from its create-file policy. A distributed tier is offered only on a worker that
 * reports its pseudo-disk (the reference also offers it to workers that never configured it).
 */
export function eligibleDisks(
  worker: WorkerInfo,
  mask: number,
  estimatedPartitionSize: number,
): EligibleDisk[] {
  const disks: EligibleDisk[] = [];
  let distributed: EligibleDisk[] | undefined;
  for (const info of worker.disks) {
    if (!eligible(info, mask)) continue;
    if (isDfsType(info.type)) {
      const storage = { type: info.type, mountPoint: '', availableTypes: mask };
      (distributed ??= []).push({ info, storage, dfs: true, capacity: Number.POSITIVE_INFINITY });
    } else {
      const storage = { type: info.type, mountPoint: info.mountPoint, availableTypes: mask };
      disks.push({
        info,
        storage,
        dfs: false,
        capacity: diskBudget(info.usableBytes, estimatedPartitionSize),
      });
    }
  }
  return distributed ? disks.concat(distributed) : disks;
}

/** Whether the worker has any disk an offer with this mask could use (a padding worker must have one). */
export function hasEligibleStorage(worker: WorkerInfo, mask: number): boolean {
  return worker.disks.some((disk) => eligible(disk, mask));
}
