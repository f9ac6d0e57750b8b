import { isLocalType } from '../domain/index.ts';
import type { DiskInfo } from '../domain/index.ts';

export interface AutoExclusionPolicy {
  /** `svc.master.excludeWorker.unhealthyDiskRatioThreshold`: exclude when unhealthy/local disks ≥ this. */
  readonly unhealthyDiskRatioThreshold: number;
  /** A distributed tier (HDFS, OSS, S3) is configured: workers write there, so local disks don't count. */
  readonly dfsConfigured: boolean;
}

/**
 * Why the master should exclude a worker right now, judged from its latest heartbeat alone, or null when it
 * should not. Unlike the reference there is no hysteresis: a worker is released as soon as a heartbeat shows
 * none of these reasons (the reference additionally wants free slots before it releases; a worker with full
 * disks gets no slots from the offer anyway, so keeping it excluded only hides it).
 *
 * Unlike the reference, high workload (a worker's congestion control past its watermarks) excludes nothing: the
 * worker already slows the heavy users on it, and excluding every busy worker of a busy cluster at once refused its
 * new shuffles with SLOT_NOT_AVAILABLE (swarm seed 4468). The heartbeat's flag stays in the registry.
 */
export function autoExclusionReason(
  heartbeat: { readonly disks: readonly DiskInfo[]; readonly highWorkload: boolean },
  policy: AutoExclusionPolicy,
): string | null {
  if (policy.dfsConfigured) return null;
  const local = heartbeat.disks.filter((disk) => isLocalType(disk.type));
  if (local.length === 0) return 'no local disks and no distributed storage configured';
  const unhealthy = local.filter((disk) => disk.status !== 'HEALTHY').length;
  const ratio = unhealthy / local.length;
  if (ratio >= policy.unhealthyDiskRatioThreshold) {
    return (
      `${unhealthy} of ${local.length} local disks unhealthy, at or above ` +
      `svc.master.excludeWorker.unhealthyDiskRatioThreshold ${policy.unhealthyDiskRatioThreshold}`
    );
  }
  return null;
}
