import type { AppId } from '../../core/domain/index.ts';
import {
  availableWorkers,
  registeredShuffleKeys,
  STATE_POLICIES,
  workerCounts,
} from '../../core/lifecycle/index.ts';
import type { MasterState } from '../../core/machines/master/state.ts';
import { uncommittedCount } from '../../core/machines/worker/files.ts';
import type { WorkerMachineState } from '../../core/machines/worker/state.ts';
import { diskInfos } from '../../core/machines/worker/storage-view.ts';
import { bufferedBytes } from '../../core/machines/worker/congestion.ts';
import { isWorkerCongested } from '../../core/storage/index.ts';
import { filesystemTotals } from '../../core/storage/disk-space.ts';
import { QUOTA_METRICS } from '../../core/quota/index.ts';

/**
 * The gauges computed at scrape time from a machine's state: pure functions of the state (no prom-client, no
 * clock), each value read or counted from what the machine holds, under the metric's current name.
 */

/** One gauge value, with the labels of its own (the static labels are added when rendering). */
export interface GaugeSample {
  readonly name: string;
  readonly value: number;
  readonly labels?: Readonly<Record<string, string>>;
}

/** What one filesystem says about itself (statfs of a worker disk's directory). */
export interface DeviceSpace {
  /** The disk as configured (`svc.worker.storage.dirs` path): the worker's mount point. */
  readonly mountPoint: string;
  readonly totalBytes: number;
  /** Free bytes an unprivileged process may use. */
  readonly freeBytes: number;
}

const LOCAL_DISK = new Set(['HDD', 'SSD']);
const DISTRIBUTED = new Set(['HDFS', 'OSS', 'S3']);

/** The master's gauges: the worker registry by state, the applications and shuffles, the partition estimate. */
export function masterGauges(
  s: MasterState,
  options: { readonly userResources?: boolean } = {},
): GaugeSample[] {
  const { workers, applications, estimatedPartitionSize } = s.durable;
  const counts = workerCounts(workers);
  // A filesystem several workers of one host share counts once (core/storage/disk-space.ts).
  const { totalBytes } = filesystemTotals(
    [...workers.workers.values()].flatMap((worker) =>
      worker.disks
        .filter((disk) => LOCAL_DISK.has(disk.type))
        .map((disk) => ({ host: worker.id.host, disk })),
    ),
  );
  const { usableBytes: freeBytes } = filesystemTotals(
    availableWorkers(workers).flatMap((worker) =>
      worker.disks
        .filter((disk) => LOCAL_DISK.has(disk.type) && disk.status === 'HEALTHY')
        .map((disk) => ({ host: worker.id.host, disk })),
    ),
  );
  return [
    ...(Object.entries(counts) as [string, number][]).map(([name, value]) => ({ name, value })),
    { name: 'RegisteredShuffleCount', value: registeredShuffleKeys(applications).length },
    { name: 'RunningApplicationCount', value: applications.apps.size },
    { name: 'PartitionSize', value: estimatedPartitionSize },
    // One master serves the cluster; there is no standby to report 0.
    { name: 'IsActiveMaster', value: 1 },
    { name: 'DeviceSvcTotalBytes', value: totalBytes },
    { name: 'DeviceSvcFreeBytes', value: freeBytes },
    ...usageGauges(s, options.userResources === true),
  ];
}

/** What one application holds on one worker, by kind of tier. */
export interface ApplicationUsage {
  readonly diskBytes: number;
  readonly diskFiles: number;
  readonly dfsBytes: number;
  readonly dfsFiles: number;
}

/**
 * Per application, the bytes and files of its partition files on this worker: on local disks (HDD, SSD) and on a
 * distributed filesystem (HDFS, OSS, S3); memory-tier files count in neither. Every file the worker holds counts,
 * whatever its status, since its bytes occupy the disk until the file is deleted. In the order the worker first
 * reserved a file of each application.
 */
export function applicationUsage(s: WorkerMachineState): Map<AppId, ApplicationUsage> {
  const usage = new Map<
    AppId,
    { diskBytes: number; diskFiles: number; dfsBytes: number; dfsFiles: number }
  >();
  for (const shuffle of s.shuffles.values()) {
    let app = usage.get(shuffle.appId);
    if (app === undefined) {
      app = { diskBytes: 0, diskFiles: 0, dfsBytes: 0, dfsFiles: 0 };
      usage.set(shuffle.appId, app);
    }
    for (const file of shuffle.files.values()) {
      if (LOCAL_DISK.has(file.file.tier)) {
        app.diskBytes += file.bytes;
        app.diskFiles += 1;
      } else if (DISTRIBUTED.has(file.file.tier)) {
        app.dfsBytes += file.bytes;
        app.dfsFiles += 1;
      }
    }
  }
  return usage;
}

/** The worker's gauges: what it holds, its memory tier, its lifecycle, its disks as svc accounts them. */
export function workerGauges(s: WorkerMachineState): GaugeSample[] {
  const applications = new Set<AppId>();
  let files = 0;
  let bytes = 0;
  let memoryFiles = 0;
  for (const shuffle of s.shuffles.values()) {
    applications.add(shuffle.appId);
    for (const file of shuffle.files.values()) {
      files += 1;
      bytes += file.bytes;
      if (file.file.tier === 'MEMORY') memoryFiles += 1;
    }
  }
  const gauges: GaugeSample[] = [
    { name: 'RegisteredShuffleCount', value: s.shuffles.size },
    { name: 'RunningApplicationCount', value: applications.size },
    { name: 'ActiveSlotsCount', value: uncommittedCount(s) },
    { name: 'ActiveChunkStreamCount', value: s.streams.size },
    { name: 'ActiveShuffleSize', value: bytes },
    { name: 'ActiveShuffleFileCount', value: files },
    { name: 'MemoryFileStorageSize', value: s.memoryUsedBytes },
    { name: 'MemoryStorageFileCount', value: memoryFiles },
    {
      name: 'IsDecommissioningWorker',
      value: STATE_POLICIES[s.lifecycle.state].isDecommissioning ? 1 : 0,
    },
    { name: 'IsHighWorkload', value: isWorkerCongested(s.congestion) ? 1 : 0 },
    { name: 'DiskBuffer', value: bufferedBytes(s) },
  ];
  // Speeds as the last congestion check measured them (the machine has no clock between checks).
  const { measure } = s.congestion;
  // Both stay 0 while congestion control is off (nothing is measured).
  gauges.push({ name: 'WorkerConsumeSpeed', value: Math.round(measure.consumeSpeed) });
  const users = Math.max(1, measure.userProduceSpeed.size);
  gauges.push({ name: 'PotentialConsumeSpeed', value: Math.round(measure.consumeSpeed / users) });
  for (const [applicationId, speed] of measure.userProduceSpeed)
    gauges.push({ name: 'UserProduceSpeed', value: Math.round(speed), labels: { applicationId } });
  const capacity = new Map(s.config.disks.map((disk) => [disk.mountPoint, disk.capacityBytes]));
  for (const disk of diskInfos(s)) {
    if (!LOCAL_DISK.has(disk.type)) continue;
    const labels = { mountpoint: disk.mountPoint };
    // What svc may use of the disk: its configured capacity, at most the filesystem's size.
    const total = Math.min(capacity.get(disk.mountPoint) ?? disk.totalBytes, disk.totalBytes);
    gauges.push({ name: 'DeviceSvcTotalBytes', value: total, labels });
    gauges.push({ name: 'DeviceSvcFreeBytes', value: disk.usableBytes, labels });
  }
  for (const [applicationId, usage] of applicationUsage(s)) {
    const labels = { applicationId };
    gauges.push({ name: 'diskBytesWritten', value: usage.diskBytes, labels });
    gauges.push({ name: 'diskFileCount', value: usage.diskFiles, labels });
    gauges.push({ name: 'hdfsBytesWritten', value: usage.dfsBytes, labels });
    gauges.push({ name: 'hdfsFileCount', value: usage.dfsFiles, labels });
  }
  return gauges;
}

/** DeviceOSTotalBytes and DeviceOSFreeBytes of each disk's filesystem. */
export function deviceGauges(devices: readonly DeviceSpace[]): GaugeSample[] {
  return devices.flatMap((device) => {
    const labels = { mountpoint: device.mountPoint };
    return [
      { name: 'DeviceOSTotalBytes', value: device.totalBytes, labels },
      { name: 'DeviceOSFreeBytes', value: device.freeBytes, labels },
    ];
  });
}

/**
 * What the workers last reported (the usage quotas are decided from, core/quota): the cluster's live partition
 * files as ActiveShuffleSize and ActiveShuffleFileCount, and with `svc.master.userResourceConsumption.metrics.enabled`
 * each user's four measures (labels tenantId and name, as the reference's ResourceConsumption source).
 */
function usageGauges(s: MasterState, perUser: boolean): GaugeSample[] {
  const { cluster, byUser } = s.quota.usage;
  const gauges: GaugeSample[] = [
    { name: 'ActiveShuffleSize', value: cluster.diskBytesWritten + cluster.hdfsBytesWritten },
    { name: 'ActiveShuffleFileCount', value: cluster.diskFileCount + cluster.hdfsFileCount },
  ];
  if (!perUser) return gauges;
  for (const [user, used] of byUser) {
    const slash = user.indexOf('/');
    const labels = { tenantId: user.slice(0, slash), name: user.slice(slash + 1) };
    for (const metric of QUOTA_METRICS) gauges.push({ name: metric, value: used[metric], labels });
  }
  return gauges;
}
