import { idList } from '../../domain/index.ts';
/**
 * The message of a registration that could not place every partition. One line per distinct reason, with the
 * partitions it struck, rather than one line per partition: a shuffle of 10,000 partitions that no worker can take
 * would otherwise send and log the same sentence 10,000 times. The reasons keep the order in which they first
 * occurred; a reason lists at most `maxIds` partition ids and says how many more it struck.
 */
export function describeUnplaced(
  failed: ReadonlyMap<number, { readonly reason: string }>,
  numPartitions: number,
  maxIds = 8,
): string {
  const byReason = new Map<string, number[]>();
  for (const [partitionId, { reason }] of failed) {
    const ids = byReason.get(reason);
    if (ids === undefined) byReason.set(reason, [partitionId]);
    else ids.push(partitionId);
  }
  const lines = [...byReason].map(
    ([reason, ids]) => `${ids.length === 1 ? 'partition' : 'partitions'} ${idList(ids, maxIds)}: ${reason}`,
  );
  return `${failed.size} of ${numPartitions} partitions could not be placed: ${lines.join('; ')}`;
}
