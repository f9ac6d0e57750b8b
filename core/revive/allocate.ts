import { workerKey, type PartitionLocation, type StorageInfo, type StorageType } from '../domain/index.ts';
import type { PlantedBug } from '../planted-bugs.ts';
import { reviveStorageInfo } from '../release/revive-storage.ts';
import type { Release } from '../release/version.ts';
import { randomInt, type Rng } from '../rng.ts';
import type { ReviveCandidate, ReviveCandidates } from './candidates.ts';

/** A partition to place again, with the epoch its new location gets (decided by the revive book). */
export interface ReviveTarget {
  readonly partitionId: number;
  readonly epoch: number;
}

export interface ReviveAllocationOptions {
  /** `svc.client.push.replicate.enabled` of the application. */
  readonly replicate: boolean;
  /** The release of the application's client: it decides the storage of the revived location (rules 3 and 4). */
  readonly clientRelease: Release;
  /** The application's `svc.storage.availableTypes` (honoured from 0.6.0 on). */
  readonly availableTypes: readonly StorageType[];
  /** 'replica-on-primary' lets the replica land on its primary's worker (simulator proof only). */
  readonly plantedBug?: PlantedBug;
}

export type ReviveAllocation =
  | {
      readonly kind: 'placed';
      readonly partitionId: number;
      /** The new primary, carrying its replica as `peer` when replication is on. */
      readonly primary: PartitionLocation;
      readonly replica?: PartitionLocation;
    }
  | {
      readonly kind: 'failed';
      readonly partitionId: number;
      readonly status: 'SLOT_NOT_AVAILABLE';
      readonly reason: string;
    };

/**
 * New locations for revived partitions, on surviving candidates: the primary on a uniformly drawn candidate, the
 * replica (when replication is on) on another worker, on another rack whenever a candidate on another rack exists.
 * The mount point is empty, so the worker picks the disk; the storage follows the client's release
 * (`reviveStorageInfo`, contract rules 3 and 4). When too few candidates survive, every target fails with
 * SLOT_NOT_AVAILABLE and a reason naming the dropped workers. A reserve that fails on a worker is retried by calling
 * this again with that worker dropped from the candidates and the same epochs.
 */
export function allocateRevives(
  targets: readonly ReviveTarget[],
  candidates: ReviveCandidates,
  options: ReviveAllocationOptions,
  rng: Rng,
): readonly ReviveAllocation[] {
  const replicaMayShare = options.plantedBug === 'replica-on-primary';
  const needed = options.replicate && !replicaMayShare ? 2 : 1;
  if (candidates.usable.length < needed) {
    const reason = shortageReason(candidates, options.replicate);
    return targets.map(({ partitionId }) => ({
      kind: 'failed',
      partitionId,
      status: 'SLOT_NOT_AVAILABLE',
      reason,
    }));
  }
  const storage = reviveStorageInfo(options.clientRelease, options.availableTypes);
  const racks = new RackLayout(candidates.usable);
  return targets.map((target) => {
    const primaryIndex = randomInt(rng, racks.size);
    const primary = locationOn(racks.at(primaryIndex), 'PRIMARY', target, storage);
    if (!options.replicate) return { kind: 'placed', partitionId: target.partitionId, primary };
    const replicaIndex = replicaMayShare ? randomInt(rng, racks.size) : racks.replicaFor(primaryIndex, rng);
    const replica = locationOn(racks.at(replicaIndex), 'REPLICA', target, storage);
    return {
      kind: 'placed',
      partitionId: target.partitionId,
      primary: { ...primary, peer: replica },
      replica: { ...replica, peer: primary },
    };
  });
}

function locationOn(
  worker: ReviveCandidate,
  mode: PartitionLocation['mode'],
  target: ReviveTarget,
  storage: StorageInfo,
): PartitionLocation {
  return { partitionId: target.partitionId, epoch: target.epoch, worker: worker.id, mode, storage };
}

function shortageReason(candidates: ReviveCandidates, replicate: boolean): string {
  const dropped = candidates.dropped.map(({ worker, reason }) => `${workerKey(worker.id)} (${reason})`);
  const need = replicate ? 'two workers (replication is on)' : 'one worker';
  return (
    `revive needs ${need} but ${candidates.usable.length} of the known workers (the shuffle's and those the master ` +
    `reports available) ${candidates.usable.length === 1 ? 'is' : 'are'} usable` +
    (dropped.length > 0 ? `; passed over: ${dropped.join(', ')}` : '') +
    '; check why those workers were excluded or are shutting down'
  );
}

/**
 * Candidates grouped by rack, each rack a contiguous range, so that "a worker on another rack" and "another worker"
 * are drawn in constant time however many candidates there are.
 */
class RackLayout {
  private readonly ordered: readonly ReviveCandidate[];
  private readonly rangeOf: readonly { start: number; size: number }[];

  constructor(usable: readonly ReviveCandidate[]) {
    const byRack = new Map<string, ReviveCandidate[]>();
    for (const worker of usable) {
      const rack = byRack.get(worker.networkLocation);
      if (rack === undefined) byRack.set(worker.networkLocation, [worker]);
      else rack.push(worker);
    }
    const ordered: ReviveCandidate[] = [];
    const rangeOf: { start: number; size: number }[] = [];
    for (const rack of byRack.values()) {
      const range = { start: ordered.length, size: rack.length };
      for (const worker of rack) {
        ordered.push(worker);
        rangeOf.push(range);
      }
    }
    this.ordered = ordered;
    this.rangeOf = rangeOf;
  }

  get size(): number {
    return this.ordered.length;
  }

  at(index: number): ReviveCandidate {
    return this.ordered[index]!;
  }

  /** A uniformly drawn index on another rack than `primary`'s, or on its rack but another worker if none exists. */
  replicaFor(primary: number, rng: Rng): number {
    const { start, size } = this.rangeOf[primary]!;
    const elsewhere = this.ordered.length - size;
    if (elsewhere > 0) {
      const draw = randomInt(rng, elsewhere);
      return draw < start ? draw : draw + size;
    }
    const draw = randomInt(rng, this.ordered.length - 1);
    return draw < primary ? draw : draw + 1;
  }
}
