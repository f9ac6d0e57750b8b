import type { NodeId } from '../../core/machines/effects.ts';
import type { UpgradeShape } from '../workload/shape.ts';
import type { Observer, World } from '../world/world.ts';

/**
 * A rolling upgrade, one server at a time as an operator does it: the master first (stopped, upgraded, started; its
 * durable state lives in the coordination store), then each worker shut down gracefully, upgraded while it is down
 * and started again by its supervisor. The next server's turn comes `gapMs` after the previous one is back on the
 * new release (a graceful shutdown lasts as long as its drain does), and `onDone` is called once every server runs
 * the new release. A server that is down anyway when its turn comes is upgraded where it lies.
 */
export function rollingUpgrade(
  world: World,
  upgrade: UpgradeShape,
  master: NodeId,
  workers: readonly NodeId[],
  onDone: (world: World) => void,
): Observer {
  /** The worker whose graceful restart is under way, if any. */
  let restarting: NodeId | undefined;
  let awaitingStart = false;
  const install = (w: World, node: NodeId) => w.upgrade(node, upgrade.to);
  const next = (w: World, index: number) => {
    const worker = workers[index];
    if (worker === undefined) {
      w.schedule(w.now, `UPGRADE done: every server runs ${upgrade.to}`, onDone);
      return;
    }
    w.schedule(w.now + upgrade.gapMs, `UPGRADE ${worker} to ${upgrade.to} (graceful restart)`, (at) => {
      if (!at.isUp(worker)) {
        install(at, worker);
        next(at, index + 1);
        return;
      }
      restarting = worker;
      awaitingStart = false;
      at.inject(worker, { kind: 'admin', command: { type: 'exit', exitType: 'GRACEFUL' } });
    });
  };
  const down = (node: NodeId, w: World) => {
    if (node !== restarting || awaitingStart) return;
    install(w, node);
    awaitingStart = true;
  };
  world.schedule(upgrade.at, `UPGRADE ${master} to ${upgrade.to}`, (w) => {
    if (w.isUp(master)) w.crash(master);
    install(w, master);
    w.start(master);
    next(w, 0);
  });
  return {
    // Runs before the supervisor's restart (which is scheduled, not immediate), so the new release starts.
    onExit(node, _code, _reason, w) {
      down(node, w);
    },
    onCrash(node, w) {
      down(node, w);
    },
    onStart(node, w) {
      if (node !== restarting || !awaitingStart) return;
      restarting = undefined;
      awaitingStart = false;
      next(w, workers.indexOf(node) + 1);
    },
  };
}
