import type { DiskInfo, DiskStatus } from '../../domain/index.ts';
import {
  filesystemUsableBytes,
  usableDiskBytes,
  type FilesystemSpace,
  type LocalDisk,
  type WorkerStorage,
} from '../../storage/index.ts';
import type { FileRef, IoError } from '../effects.ts';
import { log, setEntry, type Outbox } from '../outbox.ts';
import type { DiskTimings, WorkerMachineState } from './state.ts';

/** What core/storage needs to know about this worker's tiers right now. */
export function storageView(s: WorkerMachineState): WorkerStorage {
  return {
    memory: { limitBytes: s.config.memory.capacityBytes, usedBytes: s.memoryUsedBytes },
    disks: s.config.disks.map((disk): LocalDisk => ({
      mountPoint: disk.mountPoint,
      type: disk.type,
      status: diskStatus(s, disk.mountPoint),
      usableBytes: usableBytes(s, disk.mountPoint, disk.capacityBytes),
    })),
    distributed: s.config.distributed,
  };
}

/**
 * The disks as the master sees them (registration and heartbeats): local disks with their usable space, slots held
 * and timings, then one pseudo-disk per distributed tier (mount point = the tier's name; no capacity limit known).
 */
export function diskInfos(s: WorkerMachineState): DiskInfo[] {
  const openFiles = openFilesPerMount(s);
  const local = s.config.disks.map((disk): DiskInfo => {
    const space = s.diskSpace.get(disk.mountPoint);
    return {
      mountPoint: disk.mountPoint,
      type: disk.type,
      usableBytes: usableBytes(s, disk.mountPoint, disk.capacityBytes),
      // The filesystem's size once observed (the reference's totalSpace), else the configured capacity.
      totalBytes: space?.totalBytes ?? disk.capacityBytes,
      status: diskStatus(s, disk.mountPoint),
      ...timingsOf(s, disk.mountPoint),
      activeSlots: openFiles.get(disk.mountPoint) ?? 0,
      ...(space?.filesystem === undefined
        ? {}
        : {
            filesystem: space.filesystem,
            filesystemUsableBytes: filesystemUsableBytes(space, s.config.diskReserve),
          }),
    };
  });
  const distributed = s.config.distributed.map((type): DiskInfo => ({
    mountPoint: type,
    type,
    usableBytes: Number.MAX_SAFE_INTEGER,
    totalBytes: Number.MAX_SAFE_INTEGER,
    status: 'HEALTHY',
    ...timingsOf(s, type),
    activeSlots: openFiles.get(type) ?? 0,
  }));
  return [...local, ...distributed];
}

/** Whether the worker has any tier at all that can take a new file. */
export function hasAnyStorage(s: WorkerMachineState): boolean {
  const view = storageView(s);
  return (
    view.distributed.length > 0 ||
    view.memory.limitBytes > 0 ||
    view.disks.some((disk) => disk.status === 'HEALTHY' && disk.usableBytes > 0)
  );
}

/**
 * Adds `delta` bytes to the tier the file lives on (memory, a local disk; distributed tiers are not counted), in
 * place: the machine owns its state record (see takeId in state.ts), and copying the whole record for every write
 * to a memory file cost more than the rest of the write's bookkeeping.
 */
export function accountBytes(s: WorkerMachineState, file: FileRef, delta: number): WorkerMachineState {
  if (delta === 0) return s;
  if (file.tier === 'MEMORY') {
    (s as { memoryUsedBytes: number }).memoryUsedBytes = Math.max(0, s.memoryUsedBytes + delta);
    return s;
  }
  if (file.tier === 'HDD' || file.tier === 'SSD') {
    const used = s.diskUsedBytes.get(file.mountPoint) ?? 0;
    setEntry(s.diskUsedBytes, file.mountPoint, Math.max(0, used + delta));
    return s;
  }
  return s;
}

/**
 * Records what an I/O failure says about a local disk: out of space → HIGH_DISK_USAGE, any other error →
 * READ_OR_WRITE_FAILURE. The disk is then skipped for new files and reported to the master (which may exclude the
 * worker) until the disk check's probe succeeds (./disk-health.ts; with the monitor off, until a restart). Marking it logs `worker.disk.failed` once per
 * change of its problem: this is the one place a disk is marked failed, whatever the fault (an I/O error, a full
 * disk, a directory removed or made unwritable), so the operator's line comes from here.
 * A process out of file descriptors (NO_DESCRIPTORS) says nothing of the disk.
 */
export function noteDiskFailure(
  s: WorkerMachineState,
  out: Outbox,
  file: FileRef,
  error: IoError,
): WorkerMachineState {
  if (file.tier !== 'HDD' && file.tier !== 'SSD') return s;
  if (error === 'EXISTS' || error === 'NOT_FOUND') return s;
  if (error === 'NO_DESCRIPTORS' && s.config.plantedBug !== 'descriptors-charged-to-disk') return s;
  const problem = error === 'NO_SPACE' ? 'HIGH_DISK_USAGE' : 'READ_OR_WRITE_FAILURE';
  if (s.diskProblems.get(file.mountPoint) === problem) return s;
  setEntry(s.diskProblems, file.mountPoint, problem);
  const healthy = s.config.disks.filter((disk) => !s.diskProblems.has(disk.mountPoint)).length;
  log(out, 'error', 'worker.disk.failed', {
    disk: file.mountPoint,
    problem,
    error,
    file: file.id,
    healthyDisks: healthy,
    disks: s.config.disks.length,
    note:
      s.config.diskCheckIntervalMs === undefined
        ? `no new files on ${file.mountPoint} until the worker restarts (svc.worker.monitor.disk.enabled is off)`
        : `no new files on ${file.mountPoint}; it is probed every ${s.config.diskCheckIntervalMs} ms and used ` +
          'again once a probe succeeds',
  });
  return s;
}

/**
 * Folds one latency sample (ms of virtual or real time) into the file's disk timings, as an exponentially weighted
 * moving average (the reference keeps a sliding window; a weight of 1/8 is as smooth and needs no buffer). Memory
 * files have no disk and are not timed.
 *
 * The entry is updated in place (one sample per write, flush and read): the machine created it and owns it, and its
 * only reader, diskInfos, copies the numbers out rather than keeping the entry.
 */
export function recordLatency(
  s: WorkerMachineState,
  file: FileRef,
  kind: 'flush' | 'fetch',
  elapsedMs: number,
): WorkerMachineState {
  if (file.tier === 'MEMORY') return s;
  const disk = diskOf(file);
  let timings: OwnedTimings | undefined = s.timings.get(disk);
  if (timings === undefined) {
    timings = { avgFlushTimeNs: 0, avgFetchTimeNs: 0 };
    setEntry(s.timings, disk, timings);
  }
  const sampleNs = elapsedMs * 1e6;
  if (kind === 'flush') timings.avgFlushTimeNs = movingAverage(timings.avgFlushTimeNs, sampleNs);
  else timings.avgFetchTimeNs = movingAverage(timings.avgFetchTimeNs, sampleNs);
  return s;
}

/** A disk's timings as recordLatency updates them: writable, because only the machine's own step changes them. */
type OwnedTimings = { -readonly [K in keyof DiskTimings]: DiskTimings[K] };

/** The average after one more sample, weighting it 1/8; the first sample is the average. */
function movingAverage(average: number, sampleNs: number): number {
  return average === 0 ? sampleNs : average + (sampleNs - average) / 8;
}

/** The disk a file is on: its mount point, or for a distributed tier the tier's pseudo-disk. */
function diskOf(file: FileRef): string {
  return file.tier === 'HDD' || file.tier === 'SSD' ? file.mountPoint : file.tier;
}

function timingsOf(s: WorkerMachineState, disk: string): DiskTimings {
  return s.timings.get(disk) ?? { avgFlushTimeNs: 0, avgFetchTimeNs: 0 };
}

function diskStatus(s: WorkerMachineState, mountPoint: string): DiskStatus {
  return s.diskProblems.get(mountPoint) ?? 'HEALTHY';
}

function usableBytes(s: WorkerMachineState, mountPoint: string, capacityBytes: number): number {
  return usableDiskBytes({
    capacityBytes,
    usedBytes: s.diskUsedBytes.get(mountPoint) ?? 0,
    space: s.diskSpace.get(mountPoint),
    reserve: s.config.diskReserve,
  });
}

/**
 * The driver observed the local disks' filesystems again (statfs, every heartbeat interval): the next registration or
 * heartbeat reports the usable space they leave. Mount points the worker does not have are ignored.
 */
export function noteDiskSpace(
  s: WorkerMachineState,
  observed: readonly ({ readonly mountPoint: string } & FilesystemSpace)[],
): WorkerMachineState {
  for (const { mountPoint, ...space } of observed) {
    if (!s.diskUsedBytes.has(mountPoint)) continue;
    setEntry(s.diskSpace, mountPoint, space);
  }
  return s;
}

/** Files still being written, per mount point (memory files are not on a disk and are not counted). */
function openFilesPerMount(s: WorkerMachineState): Map<string, number> {
  const counts = new Map<string, number>();
  for (const shuffle of s.shuffles.values()) {
    for (const file of shuffle.files.values()) {
      if (file.status !== 'open' && file.status !== 'committing') continue;
      const mount =
        file.file.tier === 'HDD' || file.file.tier === 'SSD' ? file.file.mountPoint : file.file.tier;
      counts.set(mount, (counts.get(mount) ?? 0) + 1);
    }
  }
  return counts;
}
