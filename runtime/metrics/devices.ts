import { statfs } from 'node:fs/promises';
import type { DeviceSpace } from './projections.ts';

/** A worker disk: its mount point (the configured `svc.worker.storage.dirs` path) and the directory it writes. */
export interface DiskDirectory {
  readonly mountPoint: string;
  readonly dir: string;
}

/**
 * Reads each disk directory's filesystem size and free space (statfs), for DeviceOSTotalBytes and
 * DeviceOSFreeBytes. A directory statfs cannot read (a failed or removed disk) is left out of that scrape rather
 * than reported as empty.
 */
export function statfsDevices(disks: readonly DiskDirectory[]): () => Promise<DeviceSpace[]> {
  return async () => {
    const read = await Promise.all(
      disks.map(async (disk): Promise<DeviceSpace | undefined> => {
        try {
          const fs = await statfs(disk.dir);
          return {
            mountPoint: disk.mountPoint,
            totalBytes: fs.blocks * fs.bsize,
            freeBytes: fs.bavail * fs.bsize,
          };
        } catch {
          return undefined;
        }
      }),
    );
    return read.filter((device): device is DeviceSpace => device !== undefined);
  };
}
