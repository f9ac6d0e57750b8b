import { mkdirSync } from 'node:fs';
import path from 'node:path';
import type { ResolvedConfig } from '../../conf/index.ts';
import { workerMemoryLimitsFrom, type WorkerMemoryLimits } from '../../conf/machine-configs.ts';
import { parseStorageDirs } from '../../conf/storage-dirs.ts';
import type { FileRef } from '../../core/machines/effects.ts';
import type { WorkerDiskConfig } from '../../core/machines/worker/config.ts';
import type { Logger } from '../log.ts';
import { ioObserver, type WorkerMetrics } from '../metrics/index.ts';
import {
  openDurableStore,
  volatileDurableStore,
  type DbBackend,
  type DurableStore,
} from '../storage/durable-store.ts';
import { filesystemSpaceSync } from '../storage/filesystem-space.ts';
import { listDiskFiles } from '../storage/leftover-files.ts';
import { MAX_BLOCK, MemoryPool } from '../storage/memory-pool.ts';
import { ReadBuffers } from '../storage/read-buffers.ts';
import { TierStorage } from '../storage/tier-storage.ts';
import { ServerConfigError } from './server-config.ts';

// A worker's storage parts, built from its configuration: its tiers (local disks, a DFS directory, the memory
// tier and the memory budget they share), the files an earlier run left on them, the partition files' storage, and
// the recovery store.

const DIRS_KEY = 'svc.worker.storage.dirs';

export interface LocalDisk {
  readonly config: WorkerDiskConfig;
  readonly dir: string;
}

/**
 * The memory tier's pool (runtime/storage/memory-pool.ts), allocated (and with `preTouch` written page by page) now,
 * or none when the memory tier is off or smaller than one block (its files then keep the buffers they are given).
 */
function memoryTierPool(options: {
  readonly capacityBytes: number;
  readonly preTouch: boolean;
  readonly logger: Logger;
}): MemoryPool | undefined {
  const { capacityBytes, preTouch, logger } = options;
  if (capacityBytes < MAX_BLOCK) return undefined;
  const started = performance.now();
  const pool = new MemoryPool({ capacityBytes, preTouch });
  logger.info(
    {
      event: 'worker.memoryTier.allocated',
      bytes: pool.capacityBytes,
      preTouch,
      ms: Math.round(performance.now() - started),
    },
    `memory tier: ${(pool.capacityBytes / 2 ** 20).toFixed(0)} MiB allocated${preTouch ? ' and pre-touched' : ''}`,
  );
  return pool;
}

/**
 * The worker's local disks from `svc.worker.storage.dirs`, each with its filesystem as observed now; a disk without a
 * capacity gets its filesystem's size.
 */
function localDisks(conf: ResolvedConfig): LocalDisk[] {
  const workingDir = conf.optional('svc.worker.storage.workingDir', 'getString');
  return parseStorageDirs(conf.optional(DIRS_KEY, 'getList') ?? []).map((entry) => {
    const dir = workingDir === undefined ? entry.path : path.join(entry.path, workingDir);
    try {
      mkdirSync(dir, { recursive: true });
    } catch (error) {
      throw new ServerConfigError(`${DIRS_KEY}: cannot use ${dir}: ${(error as Error).message}`);
    }
    const { mountPoint: _, ...filesystem } = filesystemSpaceSync({ mountPoint: entry.path, dir });
    return {
      dir,
      config: {
        mountPoint: entry.path,
        type: entry.diskType,
        capacityBytes: entry.capacityBytes ?? filesystem.totalBytes,
        filesystem,
      },
    };
  });
}

/** The worker's tiers and the memory they take, validated: at least one tier must be able to hold a file. */
export interface WorkerTiers {
  readonly disks: readonly LocalDisk[];
  readonly dfsDir: string | undefined;
  readonly memoryBudget: number;
  /** Back-pressure thresholds and the partly-received-frame limit, shares of `memoryBudget`. */
  readonly memoryLimits: WorkerMemoryLimits;
  readonly memoryCapacity: number;
  readonly memoryPool: MemoryPool | undefined;
  readonly readBuffers: ReadBuffers;
}

export function workerTiers(conf: ResolvedConfig, logger: Logger): WorkerTiers {
  const disks = localDisks(conf);
  const dfsDir = conf.optional('svc.storage.hdfs.dir', 'getString');
  if (dfsDir !== undefined) {
    try {
      mkdirSync(dfsDir, { recursive: true });
    } catch (error) {
      throw new ServerConfigError(`svc.storage.hdfs.dir: cannot use ${dfsDir}: ${(error as Error).message}`);
    }
  }
  const memoryBudget = conf.getBytes('svc.worker.memory.size');
  const memoryCapacity = Math.floor(
    memoryBudget * conf.getDouble('svc.worker.directMemoryRatioForMemoryFileStorage'),
  );
  if (disks.length === 0 && dfsDir === undefined && memoryCapacity === 0) {
    throw new ServerConfigError(
      `the worker has no tier that can hold a partition file: set ${DIRS_KEY} (local disks), ` +
        'svc.storage.hdfs.dir (a distributed-filesystem directory) or ' +
        'svc.worker.directMemoryRatioForMemoryFileStorage above 0 (the memory tier)',
    );
  }
  return {
    disks,
    dfsDir,
    memoryBudget,
    memoryLimits: workerMemoryLimitsFrom(conf, memoryBudget),
    memoryCapacity,
    // The memory tier's bytes live in memory allocated now, once, and used again as files come and go: fresh memory
    // for every byte kept cost page faults and garbage collections (docs/performance.md).
    memoryPool: memoryTierPool({
      capacityBytes: memoryCapacity,
      preTouch: conf.getBoolean('svc.worker.memoryFileStorage.preTouch'),
      logger,
    }),
    // Chunks are served from buffers used again once written (docs/performance.md, item 4).
    readBuffers: new ReadBuffers(
      Math.floor(memoryBudget * conf.getDouble('svc.worker.directMemoryRatioForReadBuffer')),
    ),
  };
}

export const GRACEFUL_KEY = 'svc.worker.graceful.shutdown.enabled';
export const RECOVER_PATH_KEY = 'svc.worker.graceful.shutdown.recoverPath';
export const RECOVER_BACKEND_KEY = 'svc.worker.graceful.shutdown.recoverDbBackend';

/**
 * The recovery store, opened before any port listens: on disk only when graceful shutdown is on (as the reference's
 * recovery DB), so that workers without it share no path; a store that cannot be opened is a configuration error
 * naming its path, its key and the way out for the cause (recoveryStoreAdvice).
 */
export async function openRecoveryStore(conf: ResolvedConfig): Promise<DurableStore> {
  if (!conf.getBoolean(GRACEFUL_KEY)) return volatileDurableStore();
  const recoverPath = conf.getString(RECOVER_PATH_KEY);
  const backend = conf.getString(RECOVER_BACKEND_KEY) as DbBackend;
  try {
    return await openDurableStore(backend, recoverPath);
  } catch (error) {
    const reason = (error as Error).message;
    throw new ServerConfigError(
      `${RECOVER_PATH_KEY}: the recovery store in ${recoverPath} (${RECOVER_BACKEND_KEY} ${backend}) cannot be ` +
        `opened: ${reason}. ${recoveryStoreAdvice(reason, recoverPath)}`,
    );
  }
}

/**
 * What the operator can do about a recovery store that does not open, by cause: held by another process, not
 * accessible, or unreadable (damaged, or written by the other backend: RocksDB reads a LevelDB store, LevelDB cannot
 * read a RocksDB one). Moving an unreadable store aside is safe: the worker then claims none of its earlier files,
 * which become leftovers (removed once their applications end), and applications recompute what they read there.
 */
function recoveryStoreAdvice(reason: string, recoverPath: string): string {
  if (/\block\b/i.test(reason)) {
    return (
      `Each worker with ${GRACEFUL_KEY} on needs a ${RECOVER_PATH_KEY} of its own (another worker on this host may ` +
      'hold this one)'
    );
  }
  if (/permission denied|EACCES|EPERM|read-only/i.test(reason)) {
    return `Make ${recoverPath} readable and writable by the worker's user, or set ${RECOVER_PATH_KEY} elsewhere`;
  }
  return (
    `The store is damaged or was written by another ${RECOVER_BACKEND_KEY} (LEVELDB cannot read a ROCKSDB store). ` +
    `Start the worker with the backend that wrote it, or move the store aside (mv ${recoverPath} ` +
    `${recoverPath}.unreadable) and start again: the worker then serves none of the partitions it held before ` +
    'and removes their files once their applications end (docs/operations.md, "Recovery store troubles")'
  );
}

/**
 * Every partition file on the local disks and in the DFS directory, for the core to tell its own from an earlier
 * run's leftovers. The DFS directory is shared by the workers: a file another worker holds is named as a leftover too,
 * and is kept, like any, while the master knows its shuffle; once the shuffle ends its holder and this worker both
 * delete it (a delete of a missing file succeeds). That is what removes the DFS files of a worker killed mid-write.
 */
export async function filesOnTiers(tiers: WorkerTiers, logger: Logger): Promise<FileRef[]> {
  const listed = await listDiskFiles([
    ...tiers.disks.map((disk) => ({
      dir: disk.dir,
      mountPoint: disk.config.mountPoint,
      type: disk.config.type,
    })),
    // Memory and DFS files have mount point '' (core/machines/effects.ts); HDFS, OSS and S3 share the directory.
    ...(tiers.dfsDir === undefined ? [] : [{ dir: tiers.dfsDir, mountPoint: '', type: 'HDFS' as const }]),
  ]);
  for (const { dir, reason } of listed.unreadable) {
    logger.warn(
      { event: 'worker.leftovers.unreadable', dir, reason },
      `cannot list ${dir} for files an earlier run left: ${reason}`,
    );
  }
  return listed.files;
}

/** The partition files on the worker's tiers, with the warnings and metrics of their failures. */
export function workerStorage(options: {
  readonly conf: ResolvedConfig;
  readonly tiers: WorkerTiers;
  readonly nodeId: string;
  readonly metrics: WorkerMetrics | undefined;
  readonly logger: Logger;
}): TierStorage {
  const { conf, tiers, nodeId, metrics, logger } = options;
  const { disks, dfsDir, memoryPool, readBuffers } = tiers;
  return new TierStorage({
    disks: disks.map((disk) => ({ mountPoint: disk.config.mountPoint, dir: disk.dir })),
    maxOpenFiles: conf.getInt('svc.worker.storage.maxOpenFiles'),
    ...(dfsDir === undefined ? {} : { dfsDir }),
    // The storage noticed the directory go: every operation on the disk fails from now, and the first one the core
    // sees fail marks the disk (its `worker.disk.failed` line, core/machines/worker/storage-view.ts).
    onDiskFailed: (mountPoint, reason) =>
      logger.warn(
        { event: 'worker.disk.directoryLost', node: nodeId, mountPoint, reason },
        `disk ${mountPoint}: ${reason}; its next operation fails and marks it failed`,
      ),
    ...(metrics === undefined ? {} : { onIoDone: ioObserver(metrics) }),
    onDeleteFailed: deleteFailureReporter({ logger, nodeId, metrics }),
    readBuffers,
    ...(memoryPool === undefined ? {} : { memoryPool }),
    onMemoryOverflow: (blockBytes) =>
      logger.warn(
        {
          event: 'worker.memoryTier.overflow',
          node: nodeId,
          blockBytes,
          poolBytes: memoryPool?.capacityBytes,
        },
        'the memory tier’s pool could not lend a block (fragmentation): memory files now also use heap memory ' +
          'beyond svc.worker.memory.size; logged once',
      ),
  });
}

/** A failed delete (runtime/storage): one warning line and DeleteFileFailCount, instead of nothing. */
function deleteFailureReporter(options: {
  readonly logger: Logger;
  readonly nodeId: string;
  readonly metrics: WorkerMetrics | undefined;
}): (file: string, reason: string) => void {
  const { logger, nodeId, metrics } = options;
  return (file, reason) => {
    logger.warn(
      { event: 'worker.deleteFile.failed', node: nodeId, file, reason },
      `could not delete ${file}: ${reason}`,
    );
    metrics?.onMetric({ kind: 'metric', name: 'DeleteFileFailCount', op: 'inc', value: 1 });
  };
}
