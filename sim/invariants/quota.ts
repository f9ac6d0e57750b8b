import type { NodeId } from '../../core/machines/effects.ts';
import type { MasterState } from '../../core/machines/master/index.ts';
import { checkQuota, describeExceeded } from '../../core/quota/index.ts';
import type { Observer } from '../world/world.ts';

/**
 * quota: after every master step that answered a RequestSlots, each shuffle registered for the first time must
 * belong to a user (and a cluster) within quota by the status the master held when it decided. The status changes
 * only at its recomputation and when the limits change, never in a RequestSlots step, so the state after the step
 * is the state of the decision.
 */
export function quotaRespected(isMaster: (node: NodeId) => boolean): Observer {
  const seen = new Set<string>();
  return {
    onStep(node, effects, world) {
      if (!isMaster(node)) return;
      if (!effects.some((e) => e.kind === 'send' && e.message.type === 'RequestSlotsResponse')) return;
      const s = world.stateOf(node) as MasterState;
      for (const [appId, app] of s.durable.applications.apps) {
        for (const shuffleId of app.shuffles) {
          const key = `${appId}-${shuffleId}`;
          if (seen.has(key)) continue;
          seen.add(key);
          const over = checkQuota(s.quota.settings, s.quota.status, app.user);
          if (over === undefined) continue;
          world.fail({
            invariant: 'quota',
            node,
            detail: `registered shuffle ${key} although ${describeExceeded(over, app.user)}`,
          });
        }
      }
    },
  };
}
