import { readdir } from 'node:fs/promises';
import path from 'node:path';
import type { FileRef } from '../../core/machines/effects.ts';
import type { StorageType } from '../../core/domain/storage.ts';

/** A local disk as the worker configured it: its directory, mount point and type. */
export interface ListedDisk {
  readonly dir: string;
  readonly mountPoint: string;
  readonly type: StorageType;
}

/**
 * Every partition file on the worker's local disks and in its DFS directory, `<dir>/<shuffleKey>/<fileName>`, as the
 * core's file refs: what an earlier run of the worker (or, in the shared DFS directory, another worker) left there,
 * for the core to decide about (core/machines/worker/leftovers.ts). A directory that cannot be listed is reported,
 * not fatal: its files are then simply not known.
 */
export async function listDiskFiles(
  disks: readonly ListedDisk[],
): Promise<{ files: FileRef[]; unreadable: { dir: string; reason: string }[] }> {
  const files: FileRef[] = [];
  const unreadable: { dir: string; reason: string }[] = [];
  for (const disk of disks) {
    try {
      for (const shuffle of await readdir(disk.dir, { withFileTypes: true })) {
        if (!shuffle.isDirectory()) continue;
        for (const file of await readdir(path.join(disk.dir, shuffle.name), { withFileTypes: true })) {
          if (!file.isFile()) continue;
          files.push({ id: `${shuffle.name}/${file.name}`, tier: disk.type, mountPoint: disk.mountPoint });
        }
      }
    } catch (error) {
      unreadable.push({ dir: disk.dir, reason: (error as Error).message });
    }
  }
  return { files, unreadable };
}
