import { diskBudget, type EligibleDisk } from './eligible-disks.ts';

/** A disk an offer may use, with the host of the worker that has it. */
export interface HostedEligibleDisk {
  readonly host: string;
  readonly disk: EligibleDisk;
}

/**
 * Each disk's slot capacity for one offer, with a filesystem several disks of one host share counted once. Workers
 * of one host on one filesystem (a shared mount, the local cluster's workers under one directory) each report its
 * whole usable space; budgeting each disk on its own would offer that space once per disk. So the disks of a shared
 * filesystem split its budget (floor(its usable space / estimate), the usable space the least any of them reports,
 * since a report is booked against until its worker's next heartbeat), each at most its own budget (what its
 * worker's `capacity=` leaves), the rest water-filled evenly, ties to the earlier disk. A disk whose filesystem is
 * not known, or is its own alone, keeps its own budget; distributed tiers have none.
 */
export function sharedFilesystemCapacities(
  disks: readonly HostedEligibleDisk[],
  estimatedPartitionSize: number,
): number[] {
  const capacities = disks.map(({ disk }) => disk.capacity);
  const groups = new Map<string, number[]>();
  disks.forEach(({ host, disk }, index) => {
    const filesystem = disk.info.filesystem;
    if (disk.dfs || filesystem === undefined || disk.info.filesystemUsableBytes === undefined) return;
    const key = `${host}\u0000${filesystem}`;
    const members = groups.get(key);
    if (members === undefined) groups.set(key, [index]);
    else members.push(index);
  });
  for (const members of groups.values()) {
    if (members.length < 2) continue;
    let usable = Number.POSITIVE_INFINITY;
    for (const index of members) usable = Math.min(usable, disks[index]!.disk.info.filesystemUsableBytes!);
    const shares = waterFill(
      members.map((index) => capacities[index]!),
      diskBudget(usable, estimatedPartitionSize),
    );
    members.forEach((index, i) => (capacities[index] = shares[i]!));
  }
  return capacities;
}

/**
 * Splits `total` slots over claims capped at `caps`: every claim gets min(cap, level) for the highest level the total
 * allows, and what floors leave over goes to the earliest claims still under their caps. The shares
 * sum to min(total, sum of caps).
 */
export function waterFill(caps: readonly number[], total: number): number[] {
  const shares = caps.map(() => 0);
  const order = caps.map((_, i) => i).sort((a, b) => caps[a]! - caps[b]! || a - b);
  let left = total;
  order.forEach((index, position) => {
    const share = Math.min(caps[index]!, Math.floor(left / (order.length - position)));
    shares[index] = share;
    left -= share;
  });
  for (let index = 0; index < caps.length && left > 0; index += 1) {
    const more = Math.min(left, caps[index]! - shares[index]!);
    shares[index]! += more;
    left -= more;
  }
  return shares;
}
