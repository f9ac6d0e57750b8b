import { workerKey, type WorkerInfo, type WorkerKey } from '../domain/index.ts';
import type { PlantedBug } from '../planted-bugs.ts';

/** A worker a revived partition may move to, with its rack for replica placement. */
export type ReviveCandidate = Pick<WorkerInfo, 'id' | 'networkLocation'>;

export interface DroppedCandidate {
  readonly worker: ReviveCandidate;
  readonly reason: 'excluded' | 'shutting-down';
}

export interface ReviveCandidates {
  /** Surviving workers in the order given (deterministic). */
  readonly usable: readonly ReviveCandidate[];
  /** Workers passed over, and why; named in the SLOT_NOT_AVAILABLE reason. */
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
 * Where revive candidates come from: the shuffle's own workers first (slot and padding workers, in the order the
 * master gave them), then every other worker the master last reported available. A revive that only looked at the
 * shuffle's workers could not use a worker that joined or came back after the offer, and a small cluster that lost
 * one worker would run out of candidates although healthy workers are registered. `reviveCandidates` drops the
 * duplicates and the workers to avoid.
 */
export function candidatePool(
  shuffleWorkers: readonly ReviveCandidate[],
  clusterWorkers: readonly ReviveCandidate[],
): readonly ReviveCandidate[] {
  if (clusterWorkers.length === 0) return shuffleWorkers;
  return [...shuffleWorkers, ...clusterWorkers];
}

/**
 * The workers a revive may use: every worker of `workers` (usually `candidatePool`'s), each once, minus excluded
 * and shutting-down ones.
 */
export function reviveCandidates(
  workers: readonly ReviveCandidate[],
  filter: CandidateFilter,
): ReviveCandidates {
  const seen = new Set<WorkerKey>();
  const usable: ReviveCandidate[] = [];
  const dropped: DroppedCandidate[] = [];
  const ignoreFilter = filter.plantedBug === 'revive-ignores-excluded';
  for (const worker of workers) {
    const key = workerKey(worker.id);
    if (seen.has(key)) continue;
    seen.add(key);
    if (!ignoreFilter && filter.excluded.has(key)) dropped.push({ worker, reason: 'excluded' });
    else if (!ignoreFilter && filter.shuttingDown.has(key)) dropped.push({ worker, reason: 'shutting-down' });
    else usable.push(worker);
  }
  return { usable, dropped };
}
