/**
 * A local disk's usable space, as the reference computes it (StorageManager.updateDiskInfos): the least of what the
 * worker may still write under its configured capacity and what the filesystem has available less the reserve.
 * The driver observes the filesystem (statfs); the arithmetic is decided here, once, for every driver.
 */

/** What a disk's filesystem says about itself (statfs of the disk's directory), as the driver last observed it. */
export interface FilesystemSpace {
  /** Bytes an unprivileged process may still use (statfs bavail × bsize). */
  readonly availableBytes: number;
  /** The filesystem's size (statfs blocks × bsize). */
  readonly totalBytes: number;
  /**
   * Which filesystem it is, unique on the worker's host (the device number): two disks, or two workers of one host,
   * with the same id share the space, which the master then counts once.
   */
  readonly filesystem?: string;
}

/** `svc.worker.storage.disk.reserve.size` and `.ratio`: space kept free on every disk's filesystem. */
export interface DiskReserve {
  readonly bytes: number;
  /** A share of the filesystem's size; the reserve is the larger of the two. Absent: only `bytes` applies. */
  readonly ratio?: number;
}

/** The bytes kept free on a filesystem of `totalBytes`: max(size, total × ratio) (reference: getMinimumUsableSize). */
export function reservedBytes(reserve: DiskReserve, totalBytes: number): number {
  const share = reserve.ratio === undefined ? 0 : Math.floor(totalBytes * reserve.ratio);
  return Math.max(reserve.bytes, share);
}

/**
 * Bytes a new partition file may still use on a disk: `capacity − used` (what the worker wrote there, under the
 * capacity configured or taken from the filesystem's size), and, once the filesystem was observed, at most its
 * available space less the reserve; never below 0. Without an observation (the simulator's disks have no
 * filesystem) the capacity alone bounds it.
 */
export function usableDiskBytes(options: {
  readonly capacityBytes: number;
  readonly usedBytes: number;
  readonly space: FilesystemSpace | undefined;
  readonly reserve: DiskReserve | undefined;
}): number {
  const { capacityBytes, usedBytes, space, reserve } = options;
  const underCapacity = capacityBytes - usedBytes;
  if (space === undefined) return Math.max(0, underCapacity);
  return Math.max(0, Math.min(underCapacity, filesystemUsableBytes(space, reserve)));
}

/**
 * Bytes new partition files may still use on the filesystem, whatever any one disk's capacity leaves: its available
 * space less the reserve, never below 0. Every disk (of every worker of the host) on that filesystem shares it.
 */
export function filesystemUsableBytes(space: FilesystemSpace, reserve: DiskReserve | undefined): number {
  const kept = reserve === undefined ? 0 : reservedBytes(reserve, space.totalBytes);
  return Math.max(0, space.availableBytes - kept);
}

/** A disk as the master knows it, with the host of the worker that reported it. */
export interface HostedDisk {
  readonly host: string;
  readonly disk: {
    readonly mountPoint: string;
    readonly usableBytes: number;
    readonly totalBytes: number;
    readonly filesystem?: string;
  };
}

/**
 * Size and usable space of a set of disks with each filesystem counted once: disks of one host reporting the same
 * filesystem (two workers, or two directories, on one filesystem) share its space, so it counts at the largest
 * figure any of them reports, not at their sum. A disk that reports no filesystem counts on its own.
 */
export function filesystemTotals(disks: readonly HostedDisk[]): {
  readonly totalBytes: number;
  readonly usableBytes: number;
  readonly sharedDisks: number;
} {
  const byFilesystem = new Map<string, { totalBytes: number; usableBytes: number }>();
  let totalBytes = 0;
  let usableBytes = 0;
  let sharedDisks = 0;
  for (const { host, disk } of disks) {
    if (disk.filesystem === undefined) {
      totalBytes += disk.totalBytes;
      usableBytes += disk.usableBytes;
      continue;
    }
    const key = `${host}\u0000${disk.filesystem}`;
    const seen = byFilesystem.get(key);
    if (seen === undefined) {
      byFilesystem.set(key, { totalBytes: disk.totalBytes, usableBytes: disk.usableBytes });
      continue;
    }
    sharedDisks += 1;
    seen.totalBytes = Math.max(seen.totalBytes, disk.totalBytes);
    seen.usableBytes = Math.max(seen.usableBytes, disk.usableBytes);
  }
  for (const seen of byFilesystem.values()) {
    totalBytes += seen.totalBytes;
    usableBytes += seen.usableBytes;
  }
  return { totalBytes, usableBytes, sharedDisks };
}
