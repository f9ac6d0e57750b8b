import type { LoadAwareSettings } from './types.ts';

/** A local disk as the load-aware policy sees it. */
export interface LoadAwareDisk {
  /** Slots the disk can take (its budget). */
  readonly capacity: number;
  readonly avgFlushTimeNs: number;
  readonly avgFetchTimeNs: number;
  readonly activeSlots: number;
}

export function checkLoadAwareSettings(settings: LoadAwareSettings): void {
  const { numDiskGroups, diskGroupGradient, flushTimeWeight, fetchTimeWeight, activeSlotsWeight } = settings;
  if (!Number.isInteger(numDiskGroups) || numDiskGroups < 1) {
    throw new RangeError(
      `svc.master.slot.assign.loadAware.numDiskGroups must be a positive integer, got ${numDiskGroups}`,
    );
  }
  if (!Number.isFinite(diskGroupGradient) || diskGroupGradient < 0) {
    throw new RangeError(
      `svc.master.slot.assign.loadAware.diskGroupGradient must be a non-negative number, got ${diskGroupGradient}`,
    );
  }
  for (const [name, weight] of [
    ['flushTimeWeight', flushTimeWeight],
    ['fetchTimeWeight', fetchTimeWeight],
    ['activeSlotsWeight', activeSlotsWeight],
  ] as const) {
    if (!Number.isFinite(weight) || weight < 0) {
      throw new RangeError(
        `svc.master.slot.assign.loadAware.${name} must be a non-negative number, got ${weight}`,
      );
    }
  }
}

/**
 * Shares of the groups, fastest first: group i gets (1 + gradient)^(groups − 1 − i), normalised to sum 1. Computed
 * from the settings of each call, so a configuration change applies to the next offer (the reference computes them
 * once per process).
 */
export function groupRatios(groups: number, gradient: number): number[] {
  const weights = Array.from({ length: groups }, (_, i) => (1 + gradient) ** (groups - 1 - i));
  const sum = weights.reduce((a, b) => a + b, 0);
  return weights.map((weight) => weight / sum);
}

/**
 * How many of `total` copies each disk should take under the load-aware policy (same order as `disks`). Disks with
 * capacity are ranked by score (lower is faster; ties keep input order) and split into groups of ceil(n / groups);
 * each group's target is its share of `total`, spread evenly over its disks without exceeding any disk's capacity.
 * What a group cannot take moves on to the next group (the reference keeps counting an absorbed shortfall again in
 * later groups; here it is carried exactly once). The sum of quotas never exceeds `total` or any capacity; what no
 * group can take is left for the caller's next step.
 */
export function loadAwareQuotas(
  disks: readonly LoadAwareDisk[],
  total: number,
  settings: LoadAwareSettings,
): Float64Array {
  const quotas = new Float64Array(disks.length);
  const score = (disk: LoadAwareDisk): number =>
    disk.avgFlushTimeNs * settings.flushTimeWeight +
    disk.avgFetchTimeNs * settings.fetchTimeWeight +
    disk.activeSlots * settings.activeSlotsWeight;
  const ranked = disks
    .map((disk, index) => ({ index, capacity: disk.capacity, score: score(disk) }))
    .filter((disk) => disk.capacity > 0)
    .sort((a, b) => a.score - b.score || a.index - b.index);
  if (ranked.length === 0 || total <= 0) return quotas;

  const groupSize = Math.ceil(ranked.length / settings.numDiskGroups);
  const groupCount = Math.ceil(ranked.length / groupSize);
  const ratios = groupRatios(groupCount, settings.diskGroupGradient);
  let remaining = total;
  let shortfall = 0;
  for (let group = 0; group < groupCount && remaining > 0; group += 1) {
    const target = Math.ceil(total * ratios[group]!) + shortfall;
    const members = ranked.slice(group * groupSize, (group + 1) * groupSize);
    const given = spreadEvenly(members, Math.min(remaining, target), quotas);
    shortfall = target - given;
    remaining -= given;
  }
  return quotas;
}

/**
 * Gives `amount` to the disks as evenly as their capacities allow (water-filling: the smallest capacities are
 * settled first so that what they cannot take goes to the others). Returns what was given.
 */
function spreadEvenly(
  members: readonly { index: number; capacity: number }[],
  amount: number,
  quotas: Float64Array,
): number {
  const bySize = [...members].sort((a, b) => a.capacity - b.capacity || a.index - b.index);
  let left = amount;
  for (let i = 0; i < bySize.length && left > 0; i += 1) {
    const disk = bySize[i]!;
    const share = Math.min(disk.capacity, Math.ceil(left / (bySize.length - i)));
    quotas[disk.index] = share;
    left -= share;
  }
  return amount - left;
}
