import { HA_PLANTED_BUGS, type PlantedBug } from '../../core/planted-bugs.ts';
import { runHaSeed, type HaRunResult } from '../ha/group-run.ts';
import { chance, streamRng } from '../world/random.ts';
import type { InvariantName } from '../world/invariant-catalogue.ts';

/**
 * The share of the cluster swarm's seeds that also run a group of three masters failing over on the coordination
 * store's model (sim/ha/group-run.ts: the leader killed, frozen past its lease, cut from the store), with the
 * group's invariants. Drawn from a stream of its own, so that no other draw of a seed moves.
 *
 * A first step: the group runs beside the seed's cluster, not under it (the cluster's workers and lifecycle
 * managers still address its one master). The seam for the next step is `haGroupCheck`'s caller in
 * sim/cluster/scenario.ts: once the core's follow decision ("not leader" answers naming the leader) is on main,
 * the cluster's master node becomes the group and this check reads the same invariants off the cluster's run.
 */
export const HA_GROUP_SHARE = 0.1;

export function drawsHaGroup(seed: number): boolean {
  return chance(streamRng(seed, 'ha-group'), HA_GROUP_SHARE);
}

export interface HaGroupOutcome {
  readonly result: HaRunResult;
  readonly violation?: { readonly invariant: InvariantName; readonly detail: string };
}

/** Runs the seed's group of masters; a violation names the group run's invariant and how to replay it alone. */
export function haGroupCheck(seed: number, plantedBug: PlantedBug | undefined): HaGroupOutcome {
  const haBug = plantedBug !== undefined && HA_PLANTED_BUGS.includes(plantedBug) ? plantedBug : undefined;
  const result = runHaSeed({ seed, ...(haBug === undefined ? {} : { plantedBug: haBug }) });
  if (result.violation === undefined) return { result };
  const replay = `npm run sim -- --ha --seed ${seed}${haBug === undefined ? '' : ` --bug ${haBug}`} --trace`;
  return {
    result,
    violation: {
      invariant: result.violation.invariant,
      detail: `the seed's group of masters (faults ${result.faults.join(', ')}), at ${result.violation.time} ms: ${result.violation.detail} (replay the group alone: ${replay})`,
    },
  };
}
