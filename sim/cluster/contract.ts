// What a scenario gives the runner (sim/run.ts): the seam between the generic run of one seed and the cluster
// scenario that builds the nodes, so that this folder need not import the runner that imports it.
import type { PlantedBug } from '../../core/planted-bugs.ts';
import type { FaultTopology } from '../faults/inject.ts';
import type { FaultTargets, Schedule } from '../faults/plan.ts';
import type { Observer, Violation, World } from '../world/world.ts';

/** What one seed builds: the nodes, the workload, the checkers, and what the fault plan may aim at. */
export interface ScenarioRun {
  readonly targets: FaultTargets;
  readonly topology: FaultTopology;
  /** Invariant checkers and workload models; registered before the run starts. */
  readonly observers: readonly Observer[];
  /** Told the fault schedule before the run starts (when faults end, whether any can lose data). */
  useSchedule(schedule: Schedule): void;
  /** Whether every job has reached its end (success, or an expected failure); the run stops then. */
  finished(): boolean;
  /** Checks that only make sense once the run is over (e.g. every committed record was read). */
  finalCheck(world: World): Omit<Violation, 'time'> | undefined;
  /** What happened, for the summary (jobs, expected failures, memory used by apps that never enabled it, ...). */
  report(): ScenarioReport;
  /** How long after the last fault every job must have finished (liveness). */
  readonly livenessBoundMs: number;
}

export interface ScenarioReport {
  /** One line per finding worth a human's attention that is not a violation. */
  readonly notes: readonly string[];
  readonly counts: Readonly<Record<string, number>>;
  /**
   * Each application whose data went to memory although it never enabled memory (contract rule 4), one line each
   * (also among the notes): a run of many seeds lists them by seed.
   */
  readonly memoryWithoutEnabling?: readonly string[];
}

export interface Scenario {
  readonly name: string;
  build(world: World, context: { readonly seed: number; readonly plantedBug?: PlantedBug }): ScenarioRun;
}
