import { isLocalType, type PartitionMode, type StatusCode, type StorageType } from '../domain/index.ts';
import { hasPersistentStorage } from './eviction.ts';
import type { LocalDisk, WorkerStorage } from './tier-choice.ts';

export type SplitDecision = Extract<StatusCode, 'NO_SPLIT' | 'SOFT_SPLIT' | 'HARD_SPLIT'>;

/** The client's split mode (`svc.client.shuffle.partitionSplit.mode`): SOFT lets the push land, HARD refuses it. */
export type PartitionSplitMode = 'SOFT' | 'HARD';

export interface SplitOptions {
  /** `svc.worker.shuffle.partitionSplit.enabled` (default true). */
  readonly enabled: boolean;
  readonly mode: PartitionSplitMode;
  /** The client's `svc.client.shuffle.partitionSplit.threshold` (default 1 GiB), carried with the reserve. */
  readonly thresholdBytes: number;
  /** `svc.worker.shuffle.partitionSplit.min` (default 1 MiB): a file on a full disk smaller than this keeps going. */
  readonly minBytes: number;
  /** `svc.worker.shuffle.partitionSplit.max` (default 2 GiB): a soft split turns hard past this size. */
  readonly maxBytes: number;
  /** `svc.worker.memoryFileStorage.maxFileSize` (default 8 MiB). */
  readonly maxMemoryFileBytes: number;
}

export interface SplitSubject {
  readonly tier: StorageType;
  /** The disk of a local file; '' for memory and distributed tiers. */
  readonly mountPoint: string;
  readonly fileBytes: number;
  readonly mode: PartitionMode;
}

/** A split decision and why; shared between calls when the reason is fixed, so never changed by its reader. */
export type SplitVerdict = Readonly<{ decision: SplitDecision; reason: string }>;

// The fixed verdicts, one object each: every batch pushed asks for one (a worker's hottest path).
const EVICTED_NOT_SPLIT: SplitVerdict = {
  decision: 'NO_SPLIT',
  reason: 'a memory file is evicted, not split',
};
const MEMORY_ROOM_LEFT: SplitVerdict = { decision: 'NO_SPLIT', reason: 'the memory file still has room' };
const SPLIT_DISABLED: SplitVerdict = {
  decision: 'NO_SPLIT',
  reason: 'partition split is disabled on this worker',
};
const BELOW_THRESHOLDS: SplitVerdict = { decision: 'NO_SPLIT', reason: 'below every split threshold' };

/** A disk is full when the disk monitor says so or no usable byte is left. */
export function isDiskFull(disk: LocalDisk): boolean {
  return disk.status === 'HIGH_DISK_USAGE' || disk.usableBytes <= 0;
}

/**
 * Whether a push to this file should ask the client to split the partition (reference §4.4), in order:
 * 1. a memory file that can neither grow (over the memory file limit, or memory full) nor be evicted (no persistent
 *    storage) → HARD_SPLIT; other memory files never split, they are evicted;
 * 2. with splitting enabled, a local file on a full disk past `minBytes` → HARD_SPLIT: the disk cannot take more;
 * 3. a primary past the client's threshold → SOFT_SPLIT in SOFT mode below `maxBytes`, HARD_SPLIT otherwise.
 * The decision never gets milder as the file grows (NO_SPLIT < SOFT_SPLIT < HARD_SPLIT), which the tests check.
 */
export function decideSplit(
  subject: SplitSubject,
  worker: WorkerStorage,
  options: SplitOptions,
): SplitVerdict {
  const { tier, fileBytes } = subject;
  if (tier === 'MEMORY') {
    if (hasPersistentStorage(worker)) return EVICTED_NOT_SPLIT;
    const { limitBytes, usedBytes } = worker.memory;
    if (fileBytes > options.maxMemoryFileBytes) {
      return {
        decision: 'HARD_SPLIT',
        reason: `memory file of ${fileBytes} bytes exceeds ${options.maxMemoryFileBytes} and the worker has no disk or distributed tier to evict to`,
      };
    }
    if (usedBytes >= limitBytes) {
      return {
        decision: 'HARD_SPLIT',
        reason: `the memory tier is full (${usedBytes} of ${limitBytes} bytes) and the worker has no disk or distributed tier to evict to`,
      };
    }
    return MEMORY_ROOM_LEFT;
  }
  if (!options.enabled) return SPLIT_DISABLED;
  if (isLocalType(tier) && fileBytes > options.minBytes) {
    const disk = worker.disks.find((candidate) => candidate.mountPoint === subject.mountPoint);
    if (disk === undefined || isDiskFull(disk)) {
      return {
        decision: 'HARD_SPLIT',
        reason:
          disk === undefined
            ? `the file's disk ${subject.mountPoint} is no longer known to the worker`
            : `disk ${disk.mountPoint} is full (${disk.status}, ${disk.usableBytes} usable bytes)`,
      };
    }
  }
  if (subject.mode === 'PRIMARY' && fileBytes > options.thresholdBytes) {
    if (options.mode === 'SOFT' && fileBytes < options.maxBytes) {
      return {
        decision: 'SOFT_SPLIT',
        reason: `file of ${fileBytes} bytes passed the split threshold ${options.thresholdBytes}`,
      };
    }
    return {
      decision: 'HARD_SPLIT',
      reason:
        options.mode === 'HARD'
          ? `file of ${fileBytes} bytes passed the split threshold ${options.thresholdBytes} (split mode HARD)`
          : `file of ${fileBytes} bytes reached the split maximum ${options.maxBytes}`,
    };
  }
  return BELOW_THRESHOLDS;
}
