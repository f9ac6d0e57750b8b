import type { PartitionLocation, StatusCode, WorkerId, WorkerKey } from '../domain/index.ts';
import type { PlantedBug } from '../planted-bugs.ts';

/** What a lifecycle manager asks the master for when it registers a shuffle (the reference's RequestSlots). */
export interface SlotRequest {
  /** Reduce partitions to place. Treated as a set: naming an id twice asks for it once. */
  readonly partitionIds: readonly number[];
  /** Place a replica of every partition on a second worker. */
  readonly replicate: boolean;
  /** Put each replica on another rack than its primary whenever a worker there has capacity. */
  readonly rackAware: boolean;
  /** Tiers the application may use (`svc.storage.availableTypes` as a mask; 0 permits every tier). */
  readonly availableStorageTypes: number;
  /** The client's `svc.client.slot.assign.maxWorkers`; 0 or less means "the master's limit". */
  readonly maxWorkers: number;
  /** Workers the client itself has excluded; never offered. */
  readonly excludedWorkers: ReadonlySet<WorkerKey>;
}

/** How partitions are spread over disks before every disk is treated alike (`svc.master.slot.assign.policy`). */
export type SlotPolicy =
  { readonly name: 'ROUNDROBIN' } | ({ readonly name: 'LOADAWARE' } & LoadAwareSettings);

/** `svc.master.slot.assign.loadAware.*`: disks are ranked by score and split into groups; faster groups get more. */
export interface LoadAwareSettings {
  /** Number of groups the ranked disks are split into (reference default 5). */
  readonly numDiskGroups: number;
  /** Each group gets (1 + gradient) times the share of the next slower one (reference default 0.1). */
  readonly diskGroupGradient: number;
  /** Score = flush × flushTimeWeight + fetch × fetchTimeWeight + activeSlots × activeSlotsWeight; lower ranks first. */
  readonly flushTimeWeight: number;
  readonly fetchTimeWeight: number;
  readonly activeSlotsWeight: number;
}

/**
 * What happens when every disk budget is used up.
 * - `strict`: never place beyond a budget; what does not fit is reported as unplaced with reason `no-capacity`.
 * - `overcommit`: keep placing on healthy permitted local disks beyond their budgets (the reference's unrestricted
 *   pass). Budgets come from an estimate; the worker still splits files when a disk really fills up. The offer counts
 *   the copies placed this way in `overcommitted`.
 */
export type BudgetMode = 'strict' | 'overcommit';

/** The master's side of the decision: configuration and what it knows beyond the request. */
export interface OfferOptions {
  readonly policy: SlotPolicy;
  readonly budgetMode: BudgetMode;
  /** Current estimated partition size in bytes (see partition-size.ts); a disk's budget is usable / estimate. */
  readonly estimatedPartitionSize: number;
  /** `svc.master.slot.assign.maxWorkers`: at most this many workers receive partitions. */
  readonly maxWorkers: number;
  /** `svc.master.slot.assign.extraSlots`: workers added with empty lists as revive candidates. */
  readonly extraSlots: number;
  /** `svc.master.slot.assign.minWorkers` (since 0.6.0); absent for servers of earlier releases. */
  readonly minWorkers?: number;
  /** Workers the master knows must not be offered (excluded, lost, shutting down, decommissioning, in an event). */
  readonly unavailable?: ReadonlySet<WorkerKey>;
  /** Test-only: 'replica-on-primary' lets a replica land on its primary's worker. Production never sets it. */
  readonly plantedBug?: PlantedBug;
}

/** Why a partition could not be placed. */
export type UnplacedReason =
  /** Not a non-negative integer that fits the wire's int32. */
  | 'invalid-partition-id'
  /** No candidate worker at all: every worker is excluded or unavailable. */
  | 'no-candidate-workers'
  /** No candidate worker has a healthy disk of a tier the request permits (the master never offers memory). */
  | 'no-permitted-storage'
  /** Every budget is used up (strict budget mode). */
  | 'no-capacity'
  /** A primary fits but no second worker has capacity for its replica. */
  | 'no-replica-candidate';

export interface UnplacedPartition {
  readonly partitionId: number;
  readonly reason: UnplacedReason;
}

/**
 * The locations one worker is asked to reserve, and its rack: the shape of the answer's WorkerResource, so that the
 * master sends the offer's objects as they are rather than copying one per worker at every RequestSlots.
 */
export interface WorkerSlots {
  readonly worker: WorkerId;
  /** The worker's `networkLocation`, as the registry holds it. */
  readonly networkLocation: string;
  readonly primaries: readonly PartitionLocation[];
  readonly replicas: readonly PartitionLocation[];
}

/** Slots offered on each local disk of one worker, by mount point; what the master deducts until the next heartbeat. */
export type DiskAllocations = ReadonlyMap<WorkerKey, ReadonlyMap<string, number>>;

export type OfferStatus = Extract<
  StatusCode,
  'SUCCESS' | 'PARTIALLY_PLACED' | 'SLOT_NOT_AVAILABLE' | 'WORKER_EXCLUDED'
>;

export interface SlotOffer {
  /**
   * SUCCESS: every requested partition is placed. PARTIALLY_PLACED: some are, `unplaced` lists the rest.
   * SLOT_NOT_AVAILABLE: partitions were requested and none could be placed. WORKER_EXCLUDED: there is no candidate
   * worker at all.
   */
  readonly status: OfferStatus;
  /** Workers that received at least one location, in the order the offer walked them. */
  readonly slots: readonly WorkerSlots[];
  /** Extra workers with empty lists, for the client to use as revive candidates (none unless something is placed). */
  readonly padding: readonly WorkerId[];
  /** Local-disk slot counts per worker (distributed tiers have no budget and are not listed). */
  readonly diskAllocations: DiskAllocations;
  /** Every requested partition that was not placed, ascending by id, with the reason. */
  readonly unplaced: readonly UnplacedPartition[];
  /** Copies placed beyond a disk budget (only in `overcommit` budget mode). */
  readonly overcommitted: number;
}
