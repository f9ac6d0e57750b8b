import { randomInt } from '../rng.ts';
import type { Rng } from '../rng.ts';
import { ringSlice } from './candidates.ts';

/**
 * How many extra workers an offer adds with empty lists (reference §2.2 step 8): min(max(extraSlots, minWorkers −
 * used), unused). Servers before 0.6.0 have no minWorkers; then it is min(extraSlots, unused).
 */
export function paddingCount(
  extraSlots: number,
  minWorkers: number | undefined,
  usedWorkers: number,
  unusedWorkers: number,
): number {
  const wanted = minWorkers === undefined ? extraSlots : Math.max(extraSlots, minWorkers - usedWorkers);
  return Math.max(0, Math.min(wanted, unusedWorkers));
}

/** `count` consecutive items of the pool from a random start, wrapping around. */
export function choosePadding<T>(pool: readonly T[], count: number, rng: Rng): T[] {
  if (count <= 0 || pool.length === 0) return [];
  return ringSlice(pool, randomInt(rng, pool.length), Math.min(count, pool.length));
}
