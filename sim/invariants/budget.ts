import { isLocalType, workerKey, type DiskInfo } from '../../core/domain/index.ts';
import type { Effect, Input, NodeId } from '../../core/machines/effects.ts';
import type { Observer, World } from '../world/world.ts';

/** Usable bytes of one disk as its worker last reported them, minus what offers booked since. */
interface DiskBook {
  usable: number;
}

/**
 * disk-budget (strict budget mode only): between two reports of a worker's disks (registration or heartbeat, as
 * the master received them), no offer places more slots on a local disk than its budget, usable bytes divided by
 * the estimated partition size, and each offer's slots are booked against the next one. The books are kept here,
 * from the messages, independently of the master's own; only the current estimate is read from the master (`now`).
 */
export function diskBudgets(
  isMaster: (node: NodeId) => boolean,
  estimate: (master: NodeId) => number,
): Observer {
  const books = new Map<string, DiskBook>();
  const report = (worker: string, disks: readonly DiskInfo[]) => {
    for (const disk of disks) books.set(`${worker}|${disk.mountPoint}`, { usable: disk.usableBytes });
  };
  return {
    inputs: ['RegisterWorker', 'WorkerHeartbeat'],
    onInput(node: NodeId, input: Input) {
      if (!isMaster(node) || input.kind !== 'receive') return;
      const message = input.envelope.message;
      if (message.type === 'RegisterWorker' || message.type === 'WorkerHeartbeat') {
        report(workerKey(message.worker), message.disks);
      }
    },
    effects: ['RequestSlotsResponse'],
    onEffect(node: NodeId, effect: Effect, world: World) {
      if (!isMaster(node)) return;
      if (effect.kind !== 'send' || effect.message.type !== 'RequestSlotsResponse') return;
      const size = estimate(node);
      const placed = new Map<string, number>();
      for (const resource of effect.message.workerResource) {
        const worker = workerKey(resource.worker);
        for (const location of [...resource.primaries, ...resource.replicas]) {
          if (!isLocalType(location.storage.type) || location.storage.mountPoint === '') continue;
          const disk = `${worker}|${location.storage.mountPoint}`;
          placed.set(disk, (placed.get(disk) ?? 0) + 1);
        }
      }
      for (const [disk, slots] of placed) {
        const book = books.get(disk);
        if (!book) continue;
        const budget = Math.floor(Math.max(0, book.usable) / size);
        if (slots > budget) {
          world.fail({
            invariant: 'disk-budget',
            node,
            detail:
              `offered ${slots} slots on ${disk.replace('|', ' disk ')} to ${effect.to}, but its budget is ${budget} ` +
              `(${book.usable} usable bytes left since its last report / estimated partition size ${size})`,
          });
          return;
        }
        book.usable = Math.max(0, book.usable - slots * size);
      }
    },
  };
}
