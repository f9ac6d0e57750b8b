import type { WorkerId, WorkerInfo, WorkerKey } from '../domain/index.ts';
import { randomInt } from '../rng.ts';
import type { Rng } from '../rng.ts';
import { candidateWorkers, ringSlice, workerCount } from './candidates.ts';
import type { Candidate } from './candidates.ts';
import { eligibleDisks, hasEligibleStorage } from './eligible-disks.ts';
import { checkLoadAwareSettings, loadAwareQuotas } from './load-aware.ts';
import { choosePadding, paddingCount } from './padding.ts';
import { placePartitions } from './placement.ts';
import { sharedFilesystemCapacities } from './shared-filesystems.ts';
import type { Phase, Placement, RingWorker, Tier } from './placement.ts';
import { interleaveRacks } from './racks.ts';
import type {
  LoadAwareSettings,
  OfferOptions,
  OfferStatus,
  SlotOffer,
  SlotRequest,
  UnplacedPartition,
  UnplacedReason,
  WorkerSlots,
} from './types.ts';

/** The largest partition id the wire's int32 can carry. */
const MAX_PARTITION_ID = 2 ** 31 - 1;

interface OfferWorker extends RingWorker {
  readonly key: WorkerKey;
}

/**
 * Offers slots for a shuffle (the master's handling of RequestSlots): which worker holds the primary and the replica
 * of each requested partition, on which disk, plus padding workers the client may use for revives. Pure and
 * deterministic: the same request, workers, options and random draws give the same offer. docs/core/slots.md
 * describes the algorithm and every deliberate difference from the reference.
 *
 * `workers` are the master's available workers, in its registry order. Throws RangeError only for invalid options
 * (a configuration error); anything wrong with the request is answered in the offer.
 */
export function offerSlots(
  request: SlotRequest,
  workers: readonly WorkerInfo[],
  options: OfferOptions,
  rng: Rng,
): SlotOffer {
  checkOfferOptions(options);
  const { valid, invalid } = partitionSet(request.partitionIds);
  const available = candidateWorkers(workers, request.excludedWorkers, options.unavailable);
  if (available.length === 0) {
    return {
      status: 'WORKER_EXCLUDED',
      slots: [],
      padding: [],
      diskAllocations: new Map(),
      unplaced: unplacedList(invalid, valid, 'no-candidate-workers'),
      overcommitted: 0,
    };
  }

  const mask = request.availableStorageTypes;
  const chosen = withSharedFilesystems(
    ringSlice(
      available,
      randomInt(rng, available.length),
      workerCount(request, options, available.length),
    ).map((candidate): OfferWorker => ({
      id: candidate.info.id,
      key: candidate.key,
      rack: candidate.info.networkLocation,
      disks: eligibleDisks(candidate.info, mask, options.estimatedPartitionSize),
    })),
    options.estimatedPartitionSize,
  );
  const ring = request.replicate && request.rackAware ? interleaveRacks(chosen) : chosen;
  const phases = phasesFor(ring, options);
  const copies = valid.length * (request.replicate ? 2 : 1);
  const placement = placePartitions(
    {
      workers: ring,
      partitions: valid,
      replicate: request.replicate,
      rackAware: request.rackAware,
      phases,
      quotas: options.policy.name === 'LOADAWARE' ? quotasFor(ring, copies, options.policy) : undefined,
      replicaOnPrimary: options.plantedBug === 'replica-on-primary',
    },
    rng,
  );

  const { slots, usedKeys } = workerSlots(ring, placement);
  const unplaced = unplacedList(invalid, placement.unplaced, placement.unplacedReason);
  const status = offerStatus(valid.length + invalid.length, unplaced.length);
  const padding =
    status === 'SUCCESS' || status === 'PARTIALLY_PLACED'
      ? paddingWorkers(available, usedKeys, request, options, rng)
      : [];
  return {
    status,
    slots,
    padding,
    diskAllocations: diskAllocations(ring, placement),
    unplaced,
    overcommitted: placement.overcommitted,
  };
}

/** The ring's disks with a filesystem two of them share counted once (shared-filesystems.ts). */
function withSharedFilesystems(ring: readonly OfferWorker[], estimatedPartitionSize: number): OfferWorker[] {
  const hosted = ring.flatMap((worker) => worker.disks.map((disk) => ({ host: worker.id.host, disk })));
  const capacities = sharedFilesystemCapacities(hosted, estimatedPartitionSize);
  // Most rings share no filesystem: their workers are kept as they are rather than copied, at every offer.
  const shared: OfferWorker[] = [];
  let next = 0;
  for (const worker of ring) {
    const first = next;
    next += worker.disks.length;
    let same = true;
    for (let i = 0; i < worker.disks.length && same; i += 1)
      same = capacities[first + i] === worker.disks[i]!.capacity;
    if (same) {
      shared.push(worker);
      continue;
    }
    const disks = worker.disks.map((disk, i) => {
      const capacity = capacities[first + i]!;
      return capacity === disk.capacity ? disk : { ...disk, capacity };
    });
    shared.push({ ...worker, disks });
  }
  return shared;
}

function checkOfferOptions(options: OfferOptions): void {
  const { estimatedPartitionSize, maxWorkers, extraSlots, minWorkers } = options;
  if (!Number.isFinite(estimatedPartitionSize) || estimatedPartitionSize <= 0) {
    throw new RangeError(
      `the estimated partition size must be a positive number of bytes, got ${estimatedPartitionSize}`,
    );
  }
  if (!Number.isInteger(maxWorkers) || maxWorkers < 1) {
    throw new RangeError(`svc.master.slot.assign.maxWorkers must be a positive integer, got ${maxWorkers}`);
  }
  if (!Number.isInteger(extraSlots) || extraSlots < 0) {
    throw new RangeError(
      `svc.master.slot.assign.extraSlots must be a non-negative integer, got ${extraSlots}`,
    );
  }
  if (minWorkers !== undefined && (!Number.isInteger(minWorkers) || minWorkers < 0)) {
    throw new RangeError(
      `svc.master.slot.assign.minWorkers must be a non-negative integer, got ${minWorkers}`,
    );
  }
  if (options.policy.name === 'LOADAWARE') checkLoadAwareSettings(options.policy);
}

/**
 * The requested ids as an ascending set. Ascending order makes the offer independent of how the client happened to
 * order its list, keeps partition i next to i + 1 on the ring (readable traces and reports), and leaves the highest
 * ids unplaced when capacity runs out, so the unplaced list is one short range rather than scattered ids (the
 * reference walks its list backwards, for no stated reason).
 */
function partitionSet(ids: readonly number[]): { valid: readonly number[]; invalid: readonly number[] } {
  let ascending = true;
  for (let i = 0; i < ids.length && ascending; i += 1) {
    ascending = isValidPartitionId(ids[i]!) && (i === 0 || ids[i]! > ids[i - 1]!);
  }
  if (ascending) return { valid: ids, invalid: [] };
  const sorted = Float64Array.from(ids.filter(isValidPartitionId)).sort();
  const valid: number[] = [];
  for (const id of sorted) if (valid.length === 0 || valid[valid.length - 1] !== id) valid.push(id);
  return { valid, invalid: ids.filter((id) => !isValidPartitionId(id)) };
}

function isValidPartitionId(id: number): boolean {
  return Number.isInteger(id) && id >= 0 && id <= MAX_PARTITION_ID;
}

/**
 * Local disks first (by load-aware quota, then up to their budgets), then distributed tiers, then local disks beyond
 * their budgets if allowed; finally every tier at once, where a rack-aware replica may share its primary's rack and a
 * pair may mix tiers (say, the only worker with disk room and the only one with a distributed tier).
 */
function phasesFor(ring: readonly RingWorker[], options: OfferOptions): Phase[] {
  const hasLocal = ring.some((worker) => worker.disks.some((disk) => !disk.dfs));
  const hasDfs = ring.some((worker) => worker.disks.some((disk) => disk.dfs));
  const overcommit = hasLocal && options.budgetMode === 'overcommit';
  const phases: Phase[] = [];
  if (hasLocal && options.policy.name === 'LOADAWARE') phases.push(['quota']);
  if (hasLocal) phases.push(['local']);
  if (hasDfs) phases.push(['dfs']);
  if (overcommit) phases.push(['overcommit']);
  const everything: Tier[] = [];
  if (hasLocal) everything.push('local');
  if (hasDfs) everything.push('dfs');
  if (overcommit) everything.push('overcommit');
  if (everything.length > 0) phases.push(everything);
  return phases;
}

function quotasFor(ring: readonly RingWorker[], copies: number, settings: LoadAwareSettings): Float64Array {
  const disks = ring.flatMap((worker) =>
    worker.disks.map((disk) => ({
      capacity: disk.dfs ? 0 : disk.capacity,
      avgFlushTimeNs: disk.info.avgFlushTimeNs,
      avgFetchTimeNs: disk.info.avgFetchTimeNs,
      activeSlots: disk.info.activeSlots,
    })),
  );
  return loadAwareQuotas(disks, copies, settings);
}

/** The workers that received locations, in ring order, and their keys. */
function workerSlots(
  ring: readonly OfferWorker[],
  placement: Placement,
): { slots: WorkerSlots[]; usedKeys: Set<WorkerKey> } {
  const slots: WorkerSlots[] = [];
  const usedKeys = new Set<WorkerKey>();
  for (let w = 0; w < ring.length; w += 1) {
    const primaries = placement.primaries[w];
    const replicas = placement.replicas[w];
    if (!primaries && !replicas) continue;
    const { id, rack } = ring[w]!;
    slots.push({ worker: id, networkLocation: rack, primaries: primaries ?? [], replicas: replicas ?? [] });
    usedKeys.add(ring[w]!.key);
  }
  return { slots, usedKeys };
}

function diskAllocations(
  ring: readonly OfferWorker[],
  placement: Placement,
): Map<WorkerKey, Map<string, number>> {
  const allocations = new Map<WorkerKey, Map<string, number>>();
  for (let w = 0; w < ring.length; w += 1) {
    const { key, disks } = ring[w]!;
    const start = placement.diskStart[w]!;
    let perDisk: Map<string, number> | undefined;
    for (let i = 0; i < disks.length; i += 1) {
      const count = placement.used[start + i]!;
      if (count === 0 || disks[i]!.dfs) continue;
      perDisk ??= new Map<string, number>();
      perDisk.set(disks[i]!.info.mountPoint, count);
    }
    if (perDisk) allocations.set(key, perDisk);
  }
  return allocations;
}

/** Invalid ids first, as given; then the valid ones no phase could place, ascending. */
function unplacedList(
  invalid: readonly number[],
  unplaced: readonly number[],
  reason: UnplacedReason,
): UnplacedPartition[] {
  return [
    ...invalid.map((partitionId) => ({ partitionId, reason: 'invalid-partition-id' as const })),
    ...unplaced.map((partitionId) => ({ partitionId, reason })),
  ];
}

function offerStatus(requested: number, unplaced: number): OfferStatus {
  if (unplaced === 0) return 'SUCCESS';
  return unplaced === requested ? 'SLOT_NOT_AVAILABLE' : 'PARTIALLY_PLACED';
}

/**
 * Padding comes from every candidate (not only the workers the offer spread over) that received nothing and has a
 * disk the request may use: a padding worker is a revive candidate, and one without usable storage could only fail
 * the revive's reserve.
 */
function paddingWorkers(
  available: readonly Candidate[],
  usedKeys: ReadonlySet<WorkerKey>,
  request: SlotRequest,
  options: OfferOptions,
  rng: Rng,
): WorkerId[] {
  const pool = available.filter(
    (candidate) =>
      !usedKeys.has(candidate.key) && hasEligibleStorage(candidate.info, request.availableStorageTypes),
  );
  const count = paddingCount(options.extraSlots, options.minWorkers, usedKeys.size, pool.length);
  return choosePadding(pool, count, rng).map((candidate) => candidate.info.id);
}
