import { workerKey } from '../domain/index.ts';
import type { WorkerInfo, WorkerKey } from '../domain/index.ts';
import type { OfferOptions, SlotRequest } from './types.ts';

export interface Candidate {
  readonly info: WorkerInfo;
  readonly key: WorkerKey;
}

/**
 * The workers an offer may use, in the master's order: the master's available workers minus the request's excluded
 * set and the master's `unavailable` set, minus any worker not in state Normal, each worker once. The master already
 * passes only available workers; checking again here means a stale or mistaken list cannot leak an excluded, lost,
 * shutting-down or decommissioning worker into an offer.
 */
export function candidateWorkers(
  workers: readonly WorkerInfo[],
  excluded: ReadonlySet<WorkerKey>,
  unavailable: ReadonlySet<WorkerKey> | undefined,
): Candidate[] {
  const seen = new Set<WorkerKey>();
  const candidates: Candidate[] = [];
  for (const info of workers) {
    const key = workerKey(info.id);
    if (seen.has(key) || info.state !== 'Normal' || excluded.has(key) || unavailable?.has(key)) continue;
    seen.add(key);
    candidates.push({ info, key });
  }
  return candidates;
}

/**
 * How many workers receive partitions (reference §2.2 step 3): the request's maxWorkers capped by the master's
 * (a request's value of 0 or less, or not a number, means the master's), at least two when replicating, at most
 * what is available.
 */
export function workerCount(request: SlotRequest, options: OfferOptions, available: number): number {
  const asked = Number.isFinite(request.maxWorkers) ? Math.floor(request.maxWorkers) : 0;
  const requested = asked <= 0 ? options.maxWorkers : Math.min(options.maxWorkers, asked);
  return Math.min(Math.max(request.replicate ? 2 : 1, requested), available);
}

/** `count` consecutive items starting at `start`, wrapping around (reference §2.2 step 4 and step 8). */
export function ringSlice<T>(items: readonly T[], start: number, count: number): T[] {
  const slice: T[] = [];
  for (let i = 0; i < count; i += 1) slice.push(items[(start + i) % items.length]!);
  return slice;
}
