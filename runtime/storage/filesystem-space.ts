import { statfsSync, statSync } from 'node:fs';
import { stat, statfs } from 'node:fs/promises';
import type { ObservedDiskSpace } from '../../core/machines/effects.ts';

/** A worker disk: its mount point (the configured `svc.worker.storage.dirs` path) and the directory it writes. */
export interface DiskDirectory {
  readonly mountPoint: string;
  readonly dir: string;
}

/**
 * What the filesystem of a disk's directory says of itself: available bytes for an unprivileged process (statfs
 * bavail × bsize, what `df` shows as available), its size, and the device number that tells which filesystem it is
 * on this host. The core turns these into the disk's usable space (core/storage/disk-space.ts).
 */
export function filesystemSpaceSync(disk: DiskDirectory): ObservedDiskSpace {
  const fs = statfsSync(disk.dir);
  return {
    mountPoint: disk.mountPoint,
    availableBytes: fs.bavail * fs.bsize,
    totalBytes: fs.blocks * fs.bsize,
    filesystem: String(statSync(disk.dir).dev),
  };
}

/**
 * The same for every disk, read again (every heartbeat interval). A directory that cannot be read (a failed or
 * removed disk) is left out: its last observation stands, and the disk's own failure marks it.
 */
export async function observeFilesystems(disks: readonly DiskDirectory[]): Promise<ObservedDiskSpace[]> {
  const read = await Promise.all(
    disks.map(async (disk): Promise<ObservedDiskSpace | undefined> => {
      try {
        const [fs, info] = await Promise.all([statfs(disk.dir), stat(disk.dir)]);
        return {
          mountPoint: disk.mountPoint,
          availableBytes: fs.bavail * fs.bsize,
          totalBytes: fs.blocks * fs.bsize,
          filesystem: String(info.dev),
        };
      } catch {
        return undefined;
      }
    }),
  );
  return read.filter((space): space is ObservedDiskSpace => space !== undefined);
}
