import type { NodeId } from '../../core/machines/effects.ts';
import type { UpgradeShape } from '../workload/shape.ts';
import type { Observer, World } from '../world/world.ts';

/**
 * A rolling upgrade, one server at a time as an operator does it: the master first (stopped, upgraded, started; its
 * durable state lives in the coordination store), then each worker shut down gracefully, upgraded while it is down
 * and started again by its supervisor. A server that is down anyway when its turn comes is upgraded where it lies.
 */
export function rollingUpgrade(
  world: World,
  upgrade: UpgradeShape,
  master: NodeId,
  workers: readonly NodeId[],
): Observer {
  const waiting = new Set<NodeId>();
  const install = (w: World, node: NodeId) => {
    w.upgrade(node, upgrade.to);
    waiting.delete(node);
  };
  world.schedule(upgrade.at, `UPGRADE ${master} to ${upgrade.to}`, (w) => {
    if (w.isUp(master)) w.crash(master);
    install(w, master);
    w.start(master);
  });
  workers.forEach((worker, index) => {
    world.schedule(
      upgrade.at + upgrade.gapMs * (index + 1),
      `UPGRADE ${worker} to ${upgrade.to} (graceful restart)`,
      (w) => {
        if (!w.isUp(worker)) {
          install(w, worker);
          return;
        }
        waiting.add(worker);
        w.inject(worker, { kind: 'admin', command: { type: 'exit', exitType: 'GRACEFUL' } });
      },
    );
  });
  return {
    // Runs before the supervisor's restart (which is scheduled, not immediate), so the new release starts.
    onExit(node, _code, _reason, w) {
      if (waiting.has(node)) install(w, node);
    },
    onCrash(node, w) {
      if (waiting.has(node)) install(w, node);
    },
  };
}
