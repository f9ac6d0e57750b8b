import type { PartitionLocation, StorageInfo, WorkerId } from '../domain/index.ts';
import { randomInt } from '../rng.ts';
import type { Rng } from '../rng.ts';
import type { EligibleDisk } from './eligible-disks.ts';
import { isLive, liveRing, nextLive, removeLive } from './live-ring.ts';
import { appendLocationPair, soleLocation } from './locations.ts';
import type { LiveRing } from './live-ring.ts';
import type { UnplacedReason } from './types.ts';

/** A worker on the placement ring, with the disks it may use. */
export interface RingWorker {
  readonly id: WorkerId;
  readonly rack: string;
  readonly disks: readonly EligibleDisk[];
}

/**
 * Kinds of room on a disk, in the order an offer uses them.
 * - quota: the load-aware policy's per-disk quota (fast disks first).
 * - local: a local disk up to its budget.
 * - dfs: a distributed tier, which has no budget.
 * - overcommit: a local disk beyond its budget (only in `overcommit` budget mode).
 */
export type Tier = 'quota' | 'local' | 'dfs' | 'overcommit';

/**
 * One step of an offer: the tiers it may use, in order of preference on each worker. Steps run in order, each over
 * the partitions the previous ones could not place. Every step but the last insists on another rack for a rack-aware
 * replica; the last one (normally all tiers at once) also accepts the primary's rack when no other rack has room.
 */
export type Phase = readonly Tier[];

export interface PlacementPlan {
  /** Workers in ring order (rack-interleaved when placing rack-aware replicas). */
  readonly workers: readonly RingWorker[];
  /** Valid partition ids, ascending, each once. */
  readonly partitions: readonly number[];
  readonly replicate: boolean;
  readonly rackAware: boolean;
  readonly phases: readonly Phase[];
  /** Per-disk quotas for the quota tier, indexed like the flattened disks (workers in ring order). */
  readonly quotas?: Float64Array;
  /** The planted bug 'replica-on-primary' is on. */
  readonly replicaOnPrimary: boolean;
}

export interface Placement {
  /** Primary and replica locations per ring position (undefined where a worker got none). */
  readonly primaries: readonly (PartitionLocation[] | undefined)[];
  readonly replicas: readonly (PartitionLocation[] | undefined)[];
  /** Copies placed on each disk, flattened in ring order; `diskStart[w]` is worker w's first disk. */
  readonly used: Float64Array;
  readonly diskStart: Int32Array;
  /** Partitions that no phase could place, with the reason the last phase gave. */
  readonly unplaced: readonly number[];
  readonly unplacedReason: UnplacedReason;
  readonly overcommitted: number;
}

/** How far the replica search walks the ring before it asks each rack directly (only skewed racks get this far). */
const RACK_SCAN_LIMIT = 8;

/**
 * Places every partition of the plan (primary, and replica when replicating) on the ring's workers, round-robin:
 * the primary goes to the first worker with room at or after the primary cursor, the replica to the first worker
 * at or after the replica cursor that is not the primary's (and on another rack when rack-aware and such a worker
 * has room), and each worker rotates over its disks. Both cursors start at random positions and move past the
 * worker they just used.
 */
export function placePartitions(plan: PlacementPlan, rng: Rng): Placement {
  const state = newState(plan, rng);
  let pending = plan.partitions;
  let reason: UnplacedReason = 'no-permitted-storage';
  if (pending.length > 0 && state.n > 0) {
    state.primaryCursor = randomInt(rng, state.n);
    if (plan.replicate) state.replicaCursor = randomInt(rng, state.n);
  }
  for (let i = 0; i < plan.phases.length && pending.length > 0; i += 1) {
    const outcome = runPhase(state, plan.phases[i]!, pending, i === plan.phases.length - 1);
    pending = pending.slice(outcome.placed);
    reason = outcome.reason;
  }
  return {
    primaries: state.primaries,
    replicas: state.replicas,
    used: state.used,
    diskStart: state.diskStart,
    unplaced: pending,
    unplacedReason: reason,
    overcommitted: state.overcommitted,
  };
}

/**
 * Everything one placement reads and updates. Mutable, but it never leaves placePartitions. A record built by one
 * object literal, with module functions, rather than a class: see live-ring.ts for why.
 */
interface State {
  readonly rng: Rng;
  readonly replicate: boolean;
  readonly rackAware: boolean;
  readonly replicaOnPrimary: boolean;
  /** Workers on the ring. */
  readonly n: number;
  readonly workerIds: readonly WorkerId[];
  /** Rack index of each ring position, and how many racks there are. */
  readonly rackOf: Int32Array;
  readonly rackCount: number;
  /** Disks flattened in ring order: worker w owns disks diskStart[w] .. diskStart[w + 1] - 1. */
  readonly diskStart: Int32Array;
  readonly storage: readonly StorageInfo[];
  readonly capacity: Float64Array;
  /** Room per disk under each tier (copies it may hold in total, counting those already placed). */
  readonly limits: Readonly<Record<Tier, Float64Array>>;
  readonly used: Float64Array;
  /** Next disk (offset within the worker) each worker starts looking at; -1 until first used. */
  readonly diskCursor: Int32Array;
  readonly primaries: (PartitionLocation[] | undefined)[];
  readonly replicas: (PartitionLocation[] | undefined)[];
  primaryCursor: number;
  replicaCursor: number;
  overcommitted: number;
  // Per phase, rebuilt by startPhase.
  tiers: readonly Float64Array[];
  /** Copies each worker can still take in this phase; a worker leaves the ring when it reaches 0. */
  left: Float64Array;
  ring: LiveRing;
  liveInRack: Int32Array;
  /** Ring positions of each rack's workers, ascending, with a ring per rack and each worker's index in its rack. */
  rackMembers: readonly Int32Array[];
  rackRings: readonly LiveRing[];
  indexInRack: Int32Array;
}

function newState(plan: PlacementPlan, rng: Rng): State {
  const workers = plan.workers;
  const n = workers.length;
  const diskStart = new Int32Array(n + 1);
  for (let w = 0; w < n; w += 1) diskStart[w + 1] = diskStart[w]! + workers[w]!.disks.length;
  const diskCount = diskStart[n]!;
  const storage: StorageInfo[] = [];
  const capacity = new Float64Array(diskCount);
  const quota = new Float64Array(diskCount);
  const local = new Float64Array(diskCount);
  const dfs = new Float64Array(diskCount);
  const overcommit = new Float64Array(diskCount);
  let d = 0;
  for (const worker of workers) {
    for (const disk of worker.disks) {
      storage.push(disk.storage);
      capacity[d] = disk.capacity;
      if (disk.dfs) {
        dfs[d] = Number.POSITIVE_INFINITY;
      } else {
        quota[d] = plan.quotas?.[d] ?? 0;
        local[d] = disk.capacity;
        overcommit[d] = Number.POSITIVE_INFINITY;
      }
      d += 1;
    }
  }
  const rackIndex = new Map<string, number>();
  const rackOf = new Int32Array(n);
  const workerIds: WorkerId[] = [];
  for (let w = 0; w < n; w += 1) {
    const { id, rack } = workers[w]!;
    if (!rackIndex.has(rack)) rackIndex.set(rack, rackIndex.size);
    rackOf[w] = rackIndex.get(rack)!;
    workerIds.push(id);
  }
  return {
    rng,
    replicate: plan.replicate,
    rackAware: plan.rackAware,
    replicaOnPrimary: plan.replicaOnPrimary,
    n,
    workerIds,
    rackOf,
    rackCount: rackIndex.size,
    diskStart,
    storage,
    capacity,
    limits: { quota, local, dfs, overcommit },
    used: new Float64Array(diskCount),
    diskCursor: new Int32Array(n).fill(-1),
    primaries: new Array<PartitionLocation[] | undefined>(n),
    replicas: new Array<PartitionLocation[] | undefined>(n),
    primaryCursor: 0,
    replicaCursor: 0,
    overcommitted: 0,
    tiers: [],
    left: new Float64Array(n),
    ring: liveRing(0),
    liveInRack: new Int32Array(0),
    rackMembers: [],
    rackRings: [],
    indexInRack: new Int32Array(0),
  };
}

/**
 * Places partitions in order until one cannot be placed. Liveness only shrinks within a phase, so whatever stops
 * one partition (no worker with room, no second worker, only one rack left) stops all that follow: they move on to
 * the next phase together.
 */
function runPhase(
  state: State,
  phase: Phase,
  pending: readonly number[],
  final: boolean,
): { placed: number; reason: UnplacedReason } {
  startPhase(state, phase);
  for (let i = 0; i < pending.length; i += 1) {
    const primary = nextLive(state.ring, state.primaryCursor);
    if (primary < 0) return { placed: i, reason: 'no-capacity' };
    if (!state.replicate) {
      placeSingle(state, pending[i]!, primary);
      state.primaryCursor = primary + 1;
      continue;
    }
    const replica = findReplica(state, primary, final);
    if (replica < 0) return { placed: i, reason: 'no-replica-candidate' };
    placePair(state, pending[i]!, primary, replica);
    state.primaryCursor = primary + 1;
    state.replicaCursor = replica + 1;
  }
  return { placed: pending.length, reason: 'no-capacity' };
}

function startPhase(state: State, phase: Phase): void {
  const { n, diskStart, used } = state;
  const tiers = phase.map((tier) => state.limits[tier]);
  const left = new Float64Array(n);
  const ring = liveRing(n);
  for (let w = 0; w < n; w += 1) {
    for (let d = diskStart[w]!; d < diskStart[w + 1]!; d += 1) {
      let limit = 0;
      for (const tier of tiers) limit = Math.max(limit, tier[d]!);
      left[w]! += Math.max(0, limit - used[d]!);
    }
    if (left[w] === 0) removeLive(ring, w);
  }
  state.tiers = tiers;
  state.left = left;
  state.ring = ring;
  if (state.replicate && state.rackAware) indexRacks(state);
}

/** Per-rack live rings, used when walking the main ring would pass many workers of the primary's rack. */
function indexRacks(state: State): void {
  const { n, rackOf, rackCount, ring } = state;
  const members: number[][] = Array.from({ length: rackCount }, () => []);
  const indexInRack = new Int32Array(n);
  const liveInRack = new Int32Array(rackCount);
  for (let w = 0; w < n; w += 1) {
    const rack = rackOf[w]!;
    indexInRack[w] = members[rack]!.length;
    members[rack]!.push(w);
    if (isLive(ring, w)) liveInRack[rack]! += 1;
  }
  state.rackMembers = members.map((list) => Int32Array.from(list));
  state.rackRings = state.rackMembers.map((list) => {
    const rackRing = liveRing(list.length);
    list.forEach((w, i) => {
      if (!isLive(ring, w)) removeLive(rackRing, i);
    });
    return rackRing;
  });
  state.liveInRack = liveInRack;
  state.indexInRack = indexInRack;
}

function findReplica(state: State, primary: number, final: boolean): number {
  if (state.replicaOnPrimary && state.left[primary]! >= 2) return primary;
  if (state.rackAware) {
    const rack = state.rackOf[primary]!;
    if (state.ring.live - state.liveInRack[rack]! > 0) return nextOnOtherRack(state, rack);
    // Only one rack has room left: a later phase may still have another rack, so defer unless this is the last.
    if (!final) return -1;
  }
  const next = nextLive(state.ring, state.replicaCursor);
  if (next !== primary) return next;
  const after = nextLive(state.ring, primary + 1);
  return after === primary ? -1 : after;
}

/** The first live worker at or after the replica cursor whose rack is not `rack` (one exists). */
function nextOnOtherRack(state: State, rack: number): number {
  const { ring, rackOf, n } = state;
  let position = nextLive(ring, state.replicaCursor);
  for (let step = 0; step < RACK_SCAN_LIMIT; step += 1) {
    if (rackOf[position] !== rack) return position;
    position = nextLive(ring, position + 1);
  }
  // Skewed racks: ask every other rack for its first live worker at or after the cursor and take the nearest.
  const from = state.replicaCursor % n;
  let best = -1;
  let bestDistance = Number.POSITIVE_INFINITY;
  for (let other = 0; other < state.rackCount; other += 1) {
    if (other === rack || state.liveInRack[other] === 0) continue;
    const members = state.rackMembers[other]!;
    const candidate = members[nextLive(state.rackRings[other]!, lowerBound(members, from))]!;
    const distance = (candidate - from + n) % n;
    if (distance < bestDistance) {
      best = candidate;
      bestDistance = distance;
    }
  }
  return best;
}

/**
 * Takes one slot on the worker: the first tier of the phase with room on any of its disks, and within it the next
 * disk with room, rotating from where the worker left off (so a worker's disks differ by at most one).
 */
function takeDisk(state: State, worker: number): number {
  const { diskStart, used, capacity, tiers } = state;
  const start = diskStart[worker]!;
  const count = diskStart[worker + 1]! - start;
  let cursor = state.diskCursor[worker]!;
  if (cursor < 0) cursor = randomInt(state.rng, count);
  for (let t = 0; t < tiers.length; t += 1) {
    const limit = tiers[t]!;
    for (let k = 0; k < count; k += 1) {
      const offset = cursor + k < count ? cursor + k : cursor + k - count;
      const disk = start + offset;
      if (limit[disk]! - used[disk]! <= 0) continue;
      if (used[disk]! >= capacity[disk]!) state.overcommitted += 1;
      used[disk]! += 1;
      state.diskCursor[worker] = offset + 1 < count ? offset + 1 : 0;
      state.left[worker]! -= 1;
      if (state.left[worker]! <= 0) retire(state, worker);
      return disk;
    }
  }
  throw new Error(`slot placement chose worker ${worker} without room; this is a bug in core/slots`);
}

function retire(state: State, worker: number): void {
  removeLive(state.ring, worker);
  if (state.replicate && state.rackAware) {
    const rack = state.rackOf[worker]!;
    state.liveInRack[rack]! -= 1;
    removeLive(state.rackRings[rack]!, state.indexInRack[worker]!);
  }
}

function placeSingle(state: State, partitionId: number, worker: number): void {
  const storage = state.storage[takeDisk(state, worker)]!;
  (state.primaries[worker] ??= []).push(soleLocation(partitionId, 0, state.workerIds[worker]!, storage));
}

function placePair(state: State, partitionId: number, primary: number, replica: number): void {
  const primaryStorage = state.storage[takeDisk(state, primary)]!;
  const replicaStorage = state.storage[takeDisk(state, replica)]!;
  appendLocationPair(
    (state.primaries[primary] ??= []),
    (state.replicas[replica] ??= []),
    partitionId,
    0,
    state.workerIds[primary]!,
    primaryStorage,
    state.workerIds[replica]!,
    replicaStorage,
  );
}

/** Index of the first element ≥ value in an ascending array, or 0 when there is none (the ring wraps). */
function lowerBound(sorted: Int32Array, value: number): number {
  let lo = 0;
  let hi = sorted.length;
  while (lo < hi) {
    const mid = (lo + hi) >>> 1;
    if (sorted[mid]! < value) lo = mid + 1;
    else hi = mid;
  }
  return lo === sorted.length ? 0 : lo;
}
