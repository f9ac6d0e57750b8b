import { workerKey, type WorkerInfo, type WorkerKey } from '../domain/index.ts';
import type { PlantedBug } from '../planted-bugs.ts';

/** A worker a revived partition may move to, with its rack for replica placement. */
export type ReviveCandidate = Pick<WorkerInfo, 'id' | 'networkLocation'>;

export interface DroppedCandidate {
  readonly worker: ReviveCandidate;
  readonly reason: 'excluded' | 'shutting-down';
}

export interface ReviveCandidates {
  /** Surviving workers in the order the shuffle first used them (deterministic). */
  readonly usable: readonly ReviveCandidate[];
  /** Workers of the shuffle passed over, and why; named in the SLOT_NOT_AVAILABLE reason. */
  readonly dropped: readonly DroppedCandidate[];
}

export interface CandidateFilter {
  /** The lifecycle manager's excluded workers (its own exclusions and the master's). */
  readonly excluded: ReadonlySet<WorkerKey>;
  /** Workers the master reports as shutting down or decommissioning. */
  readonly shuttingDown: ReadonlySet<WorkerKey>;
  /** 'revive-ignores-excluded' keeps excluded and shutting-down workers as candidates (simulator proof only). */
  readonly plantedBug?: PlantedBug;
}

/**
 * The workers a revive may use: every worker the shuffle was given (its slot workers and the padding workers the
 * master added for exactly this purpose), each once, minus excluded and shutting-down ones.
 */
export function reviveCandidates(
  shuffleWorkers: readonly ReviveCandidate[],
  filter: CandidateFilter,
): ReviveCandidates {
  const seen = new Set<WorkerKey>();
  const usable: ReviveCandidate[] = [];
  const dropped: DroppedCandidate[] = [];
  const ignoreFilter = filter.plantedBug === 'revive-ignores-excluded';
  for (const worker of shuffleWorkers) {
    const key = workerKey(worker.id);
    if (seen.has(key)) continue;
    seen.add(key);
    if (!ignoreFilter && filter.excluded.has(key)) dropped.push({ worker, reason: 'excluded' });
    else if (!ignoreFilter && filter.shuttingDown.has(key)) dropped.push({ worker, reason: 'shutting-down' });
    else usable.push(worker);
  }
  return { usable, dropped };
}
