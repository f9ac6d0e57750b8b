import {
  isDfsType,
  isLocalType,
  isTypeAvailable,
  MASK,
  type DiskInfo,
  type StorageInfo,
  type StorageType,
} from '../domain/index.ts';
import type { CreateFilePolicy, EvictPolicy } from './policy.ts';

/** A local disk as the worker's storage manager sees it. Only HDD and SSD disks are local. */
export type LocalDisk = Pick<DiskInfo, 'mountPoint' | 'type' | 'status' | 'usableBytes'>;

export type DistributedType = 'HDFS' | 'OSS' | 'S3';

/** What one worker can store on right now. */
export interface WorkerStorage {
  /** The memory tier: a limit of 0 means memory storage is off (the reference's default ratio 0.0). */
  readonly memory: { readonly limitBytes: number; readonly usedBytes: number };
  readonly disks: readonly LocalDisk[];
  /** Distributed tiers this worker has a directory for. */
  readonly distributed: readonly DistributedType[];
}

export interface TierChoiceOptions {
  /**
   * Worker-side guard against contract rule 4: a client before 0.6.0 revives onto MEMORY with mask 0, and mask 0
   * permits every tier, so memory would be used by an application that never enabled it. When on, the memory tier
   * needs the MEMORY bit set explicitly in the location's mask; mask 0 no longer counts, and the walk moves on to the
   * next tier. Off by default so that svc behaves as the contract describes; see docs/core/storage-revive-replication.md.
   */
  readonly memoryNeedsExplicitGrant?: boolean;
}

export interface TierSkip {
  readonly tier: StorageType;
  readonly reason: string;
}

interface Walk {
  /** Where the walk over the order list started (contract rule 5 gives 0 when the type in question is missing). */
  readonly startIndex: number;
  /** True when the type in question had no entry in the list and index 0 was used (contract rule 5). */
  readonly usedIndexZeroRule: boolean;
  /** Every tier tried before the chosen one (or all of them), each with why it was passed over. */
  readonly skipped: readonly TierSkip[];
}

export type TierChoice =
  | (Walk & {
      readonly kind: 'chosen';
      readonly tier: StorageType;
      /** The disk for HDD and SSD; '' for memory and distributed tiers. */
      readonly mountPoint: string;
      /** Memory was chosen only because the mask is 0 (every type), not because the application listed MEMORY. */
      readonly implicitMemory: boolean;
    })
  | (Walk & { readonly kind: 'none'; readonly message: string });

/**
 * Contract rule 5: the index in `order` of the storage type in question, or 0 when the list has no entry for it.
 * The reference throws for a new file (its quirk 7); svc uses 0 for new files and evictions alike.
 */
export function ruleFiveStartIndex(
  order: readonly StorageType[],
  type: StorageType,
): { index: number; usedIndexZeroRule: boolean } {
  const index = order.indexOf(type);
  return index < 0 ? { index: 0, usedIndexZeroRule: true } : { index, usedIndexZeroRule: false };
}

/**
 * The tier (and disk) for a new partition file. The walk starts at MEMORY when the order lists it, because the
 * master never offers memory slots and memory is the tier worth trying first; otherwise at the location's own type;
 * otherwise at index 0 (contract rule 5a). From there each tier is tried in order until one can hold the file.
 */
export function chooseTierForNewFile(
  order: CreateFilePolicy,
  storage: StorageInfo,
  worker: WorkerStorage,
  options: TierChoiceOptions = {},
): TierChoice {
  const typeInQuestion = order.includes('MEMORY') ? 'MEMORY' : storage.type;
  const start = ruleFiveStartIndex(order, typeInQuestion);
  return walk(order, start, storage, worker, options, 'create');
}

/**
 * Where to move a memory file (or any file whose tier has an evict-policy entry) to. The targets come from the evict
 * policy of the file's own tier; the file's own type is never in that list, so the walk starts at index 0
 * (contract rule 5b). The location's mask still applies: a file may only move to a tier its application permits.
 */
export function chooseEvictionTarget(
  policy: EvictPolicy,
  fileTier: StorageType,
  storage: StorageInfo,
  worker: WorkerStorage,
  options: TierChoiceOptions = {},
): TierChoice {
  const targets = policy.get(fileTier);
  if (targets === undefined) {
    return {
      kind: 'none',
      startIndex: 0,
      usedIndexZeroRule: false,
      skipped: [],
      message:
        `svc.worker.storage.storagePolicy.evictPolicy has no entry for ${fileTier}, so a ${fileTier} file is never ` +
        `evicted; add a group such as ${fileTier},SSD,HDD if it should be`,
    };
  }
  return walk(targets, ruleFiveStartIndex(targets, fileTier), storage, worker, options, 'evict');
}

type Purpose = 'create' | 'evict';

function walk(
  order: readonly StorageType[],
  start: { index: number; usedIndexZeroRule: boolean },
  storage: StorageInfo,
  worker: WorkerStorage,
  options: TierChoiceOptions,
  purpose: Purpose,
): TierChoice {
  const skipped: TierSkip[] = [];
  const base = { startIndex: start.index, usedIndexZeroRule: start.usedIndexZeroRule, skipped };
  for (let position = start.index; position < order.length; position += 1) {
    const tier = order[position]!;
    const attempt = tryTier(tier, order.slice(position), storage, worker, options, purpose);
    if (typeof attempt === 'string') {
      skipped.push({ tier, reason: attempt });
      continue;
    }
    return { kind: 'chosen', ...base, ...attempt };
  }
  const tried = skipped.map((skip) => `${skip.tier}: ${skip.reason}`).join('; ');
  const subject = purpose === 'create' ? 'the new partition file' : 'the evicted file';
  return {
    kind: 'none',
    ...base,
    message:
      order.length === 0
        ? `the tier order list is empty, so no tier can hold ${subject}`
        : `no tier can hold ${subject} (order ${order.join(',')}, starting at index ${start.index}): ${tried || 'nothing to try'}. ` +
          'Check disk health and free space, svc.storage.availableTypes, the memory tier limit and the storage policy',
  };
}

type Placement = { tier: StorageType; mountPoint: string; implicitMemory: boolean };

/** A placement on `tier`, or the reason it cannot take the file. `remaining` is the walk from this tier on. */
function tryTier(
  tier: StorageType,
  remaining: readonly StorageType[],
  storage: StorageInfo,
  worker: WorkerStorage,
  options: TierChoiceOptions,
  purpose: Purpose,
): Placement | string {
  if (tier === 'MEMORY') return tryMemory(storage, worker, options, purpose);
  if (!isTypeAvailable(storage.availableTypes, tier)) {
    return `the location's available-types mask ${storage.availableTypes} does not permit ${tier}`;
  }
  if (isLocalType(tier)) return tryLocal(tier, remaining, storage.mountPoint, worker.disks);
  if (isDfsType(tier) && !worker.distributed.includes(tier)) {
    return `this worker has no ${tier} directory configured`;
  }
  return { tier, mountPoint: '', implicitMemory: false };
}

function tryMemory(
  storage: StorageInfo,
  worker: WorkerStorage,
  options: TierChoiceOptions,
  purpose: Purpose,
): Placement | string {
  if (purpose === 'evict') return 'eviction never moves a file into memory';
  const explicit = (storage.availableTypes & MASK.MEMORY) !== 0;
  if (!isTypeAvailable(storage.availableTypes, 'MEMORY')) {
    return `the location's available-types mask ${storage.availableTypes} does not permit MEMORY`;
  }
  if (!explicit && options.memoryNeedsExplicitGrant === true) {
    return 'the application did not list MEMORY in svc.storage.availableTypes (its mask 0 comes from a client before 0.6.0), and this worker refuses memory without an explicit grant';
  }
  const { limitBytes, usedBytes } = worker.memory;
  if (limitBytes <= 0) return 'memory storage is off on this worker (limit 0)';
  if (usedBytes >= limitBytes) return `the memory tier is full (${usedBytes} of ${limitBytes} bytes used)`;
  return { tier: 'MEMORY', mountPoint: '', implicitMemory: !explicit };
}

/**
 * A local disk for an HDD or SSD tier. The disk the master booked (the location's mount point) wins at the first
 * local tier of the walk, as long as it is healthy, has room and its own type is still ahead in the walk: the master
 * counted a slot on that disk, and the SSD/HDD order decides only when no disk was booked (revived locations carry
 * an empty mount point). Otherwise the healthy disk of this tier with the most free space takes the file.
 */
function tryLocal(
  tier: 'HDD' | 'SSD',
  remaining: readonly StorageType[],
  hint: string,
  disks: readonly LocalDisk[],
): Placement | string {
  const usable = disks.filter(
    (disk) => isLocalType(disk.type) && disk.status === 'HEALTHY' && disk.usableBytes > 0,
  );
  const booked = hint === '' ? undefined : usable.find((disk) => disk.mountPoint === hint);
  if (booked !== undefined && remaining.includes(booked.type)) {
    return { tier: booked.type, mountPoint: booked.mountPoint, implicitMemory: false };
  }
  let best: LocalDisk | undefined;
  for (const disk of usable) {
    if (disk.type === tier && (best === undefined || disk.usableBytes > best.usableBytes)) best = disk;
  }
  if (best === undefined) return `no healthy ${tier} disk with free space`;
  return { tier, mountPoint: best.mountPoint, implicitMemory: false };
}
