import type { PartitionLocation, StorageInfo, WorkerId } from '../domain/index.ts';

/** The location of an unreplicated partition. */
export function soleLocation(
  partitionId: number,
  epoch: number,
  worker: WorkerId,
  storage: StorageInfo,
): PartitionLocation {
  return { partitionId, epoch, worker, mode: 'PRIMARY', storage };
}

/**
 * Appends a primary to `primaries` and its replica to `replicas`, linked both ways without a cycle: each one's `peer`
 * is the other copy without its own peer (as on the wire). Appending, rather than returning the pair, spares the
 * hot loop a tuple and its iterator. The offer and its benchmark's baseline both build locations here, so that the
 * baseline measures exactly the construction an offer cannot avoid.
 */
export function appendLocationPair(
  primaries: PartitionLocation[],
  replicas: PartitionLocation[],
  partitionId: number,
  epoch: number,
  primaryWorker: WorkerId,
  primaryStorage: StorageInfo,
  replicaWorker: WorkerId,
  replicaStorage: StorageInfo,
): void {
  const primaryPeer = {
    partitionId,
    epoch,
    worker: primaryWorker,
    mode: 'PRIMARY',
    storage: primaryStorage,
  } as const;
  const replicaPeer = {
    partitionId,
    epoch,
    worker: replicaWorker,
    mode: 'REPLICA',
    storage: replicaStorage,
  } as const;
  primaries.push({
    partitionId,
    epoch,
    worker: primaryWorker,
    mode: 'PRIMARY',
    storage: primaryStorage,
    peer: replicaPeer,
  });
  replicas.push({
    partitionId,
    epoch,
    worker: replicaWorker,
    mode: 'REPLICA',
    storage: replicaStorage,
    peer: primaryPeer,
  });
}
