import type { AppId, PartitionLocation, ShuffleId } from '../../domain/index.ts';

/**
 * The partition locations one executor's shuffle client holds, by shuffle: what the first of its map tasks of a
 * shuffle was told at registration, and what later tasks learnt by reviving. A later map task of that shuffle in
 * the same executor starts from them (MapTaskConfig.registeredLocations) and asks the lifecycle manager nothing
 * before it pushes. The reference client registers once per shuffle per executor too: with 500 map tasks over 8
 * executors and 2,000 partitions, asking per task had the lifecycle manager send 500 answers of 2,000 locations
 * (twice that with replication) where 8 do.
 *
 * A location that has moved since (its worker lost, its partition split) is as good as any a task held when the
 * move happened: the push fails or is answered with the split, and the task revives, as every task of a shuffle may.
 * Per partition the newest epoch is kept. A shuffle is forgotten when it is unregistered.
 */
export class LocationCache {
  /** By shuffle: each partition's location by partition id, and how many partitions have one. */
  private readonly shuffles = new Map<
    string,
    { locations: (PartitionLocation | undefined)[]; known: number }
  >();

  /**
   * Keeps `locations` (in any order; a map task's are by partition id, undefined where it knows none), each unless a
   * newer epoch of its partition is already held.
   */
  remember(appId: AppId, shuffleId: ShuffleId, locations: readonly (PartitionLocation | undefined)[]): void {
    const id = key(appId, shuffleId);
    let held = this.shuffles.get(id);
    if (held === undefined) {
      held = { locations: [], known: 0 };
      this.shuffles.set(id, held);
    }
    for (const location of locations) {
      if (location === undefined) continue;
      const known = held.locations[location.partitionId];
      if (known === undefined) held.known += 1;
      if (known === undefined || known.epoch < location.epoch)
        held.locations[location.partitionId] = location;
    }
  }

  /** A location for every one of the shuffle's `numPartitions` partitions, or undefined when any is missing. */
  lookup(
    appId: AppId,
    shuffleId: ShuffleId,
    numPartitions: number,
  ): readonly PartitionLocation[] | undefined {
    const held = this.shuffles.get(key(appId, shuffleId));
    if (held === undefined || held.known < numPartitions) return undefined;
    const locations = held.locations.slice(0, numPartitions);
    return locations.includes(undefined) ? undefined : (locations as PartitionLocation[]);
  }

  forget(appId: AppId, shuffleId: ShuffleId): void {
    this.shuffles.delete(key(appId, shuffleId));
  }

  get size(): number {
    return this.shuffles.size;
  }
}

function key(appId: AppId, shuffleId: ShuffleId): string {
  return `${appId}/${shuffleId}`;
}
