import { readdir, rm } from 'node:fs/promises';
import path from 'node:path';
import type { ApplicationRegistry } from '../../core/lifecycle/applications.ts';
import { expiredDfsDirs } from '../../core/lifecycle/dfs-dirs.ts';
import type { Logger } from '../log.ts';

/**
 * The master's sweep of the distributed tier (reference: the DFS remnant-directories check), every
 * `svc.master.dfs.expireDirs.timeout`: lists the DFS directory, asks the core which directories belong to
 * applications the master no longer has (core/lifecycle/dfs-dirs.ts), and removes them. One sweep at a time; a
 * directory that cannot be removed is named in a warning and tried again at the next sweep.
 */
export function sweepExpiredDfsDirs(options: {
  readonly dfsDir: string;
  readonly intervalMs: number;
  readonly applications: () => ApplicationRegistry;
  readonly logger: Logger;
}): { close(): void } {
  const { dfsDir, intervalMs, applications, logger } = options;
  let closed = false;
  let sweeping = false;
  const sweep = async (): Promise<void> => {
    let names: string[];
    try {
      names = await readdir(dfsDir);
    } catch (error) {
      logger.warn(
        { event: 'master.dfs.listFailed', dir: dfsDir, reason: (error as Error).message },
        `cannot list ${dfsDir} for directories of expired applications: ${(error as Error).message}`,
      );
      return;
    }
    // Listed before the registry is read (core/lifecycle/dfs-dirs.ts says why).
    const expired = expiredDfsDirs(names, applications());
    const removed: string[] = [];
    for (const name of expired) {
      if (closed) return;
      try {
        await rm(path.join(dfsDir, name), { recursive: true, force: true });
        removed.push(name);
      } catch (error) {
        logger.warn(
          {
            event: 'master.dfs.removeFailed',
            dir: path.join(dfsDir, name),
            reason: (error as Error).message,
          },
          `could not remove ${path.join(dfsDir, name)}: ${(error as Error).message}; tried again at the next sweep`,
        );
      }
    }
    if (removed.length > 0)
      logger.info(
        {
          event: 'master.dfs.expiredDirsRemoved',
          dir: dfsDir,
          removed: removed.length,
          examples: removed.slice(0, 5),
        },
        `removed ${removed.length} director${removed.length === 1 ? 'y' : 'ies'} of expired applications from ${dfsDir}`,
      );
  };
  const timer = setInterval(() => {
    if (sweeping || closed) return;
    sweeping = true;
    void sweep().finally(() => {
      sweeping = false;
    });
  }, intervalMs);
  timer.unref();
  return {
    close() {
      closed = true;
      clearInterval(timer);
    },
  };
}
