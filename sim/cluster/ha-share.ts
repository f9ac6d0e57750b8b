import type { NodeId } from '../../core/machines/effects.ts';
import type { MasterDurableState } from '../../core/machines/master/state.ts';
import type { PlantedBug } from '../../core/planted-bugs.ts';
import { masterNodeId } from '../../core/protocol/node-ids.ts';
import { ClusterGroup } from '../ha/cluster-group.ts';
import { chance, streamRng } from '../world/random.ts';

/**
 * The share of the cluster swarm's seeds whose master is a group of three masters on the coordination store's
 * model (sim/ha/cluster-group.ts): the workers and lifecycle managers follow its leader through the core's
 * following while the group fails over (the leader killed, frozen past its lease, cut from the store and the
 * cluster, its lease run out at the store), with the group's invariants. Drawn from a stream of its own, so that
 * no other draw of a seed moves; the other seeds run one master, as before.
 */
export const HA_GROUP_SHARE = 0.1;

/** The group's failovers strike between these times (ms), while the first jobs run. */
const GROUP_FAULTS_FROM_MS = 2_000;
const GROUP_FAULTS_UNTIL_MS = 25_000;

export function drawsHaGroup(seed: number): boolean {
  return chance(streamRng(seed, 'ha-group'), HA_GROUP_SHARE);
}

/** The seed's group of masters, addressed by the other processes as `masterId`; members `master-1`..`master-3`. */
export function clusterGroup(
  seed: number,
  masterId: NodeId,
  emptyState: MasterDurableState,
  plantedBug: PlantedBug | undefined,
): ClusterGroup {
  return new ClusterGroup({
    seed,
    masterId,
    members: [1, 2, 3].map((i) => masterNodeId(i)),
    emptyState,
    faultsFrom: GROUP_FAULTS_FROM_MS,
    faultsUntil: GROUP_FAULTS_UNTIL_MS,
    ...(plantedBug === undefined ? {} : { plantedBug }),
  });
}
