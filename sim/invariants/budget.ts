import { isLocalType, workerKey, type DiskInfo } from '../../core/domain/index.ts';
import type { Effect, Input, NodeId } from '../../core/machines/effects.ts';
import type { Observer, World } from '../world/world.ts';

/** Usable bytes of one disk as its worker last reported them, minus what offers that left the masters booked since. */
interface DiskBook {
  usable: number;
  /** Which report the book started from (a count over the run): an offer decided before a later report books nothing. */
  report: number;
}

/** The bytes one offer books on each disk it places slots on, and the report each disk's book was at when decided. */
interface Offer {
  readonly master: NodeId;
  readonly disks: readonly { readonly disk: string; readonly bytes: number; readonly report: number }[];
}

/**
 * disk-budget (strict budget mode only): between two reports of a worker's disks (registration or heartbeat, as
 * the master received them), no offer places more slots on a local disk than its budget, usable bytes divided by
 * the estimated partition size, and each offer's slots are booked against the next one. The books are kept here,
 * from the messages, independently of the master's own; only the current estimate is read from the master (`now`).
 *
 * An offer is checked when a master decides it, and booked for every master once its answer leaves (the master
 * holds it behind the write of its booking, so an answer that left is durable and any later leader restores it).
 * Until then only the master that decided it counts it: an answer that never left (its master crashed, was cut
 * off from the store or lost the lead first) reserved nothing, and no other master could know of it.
 */
export function diskBudgets(
  isMaster: (node: NodeId) => boolean,
  estimate: (master: NodeId) => number,
): Observer {
  const books = new Map<string, DiskBook>();
  const pending = new Map<Effect, Offer>();
  let reports = 0;
  const report = (worker: string, disks: readonly DiskInfo[]) => {
    reports += 1;
    for (const disk of disks)
      books.set(`${worker}|${disk.mountPoint}`, { usable: disk.usableBytes, report: reports });
  };
  /** Bytes `master` booked on `disk` in offers that have not left yet, since the disk's last report. */
  const unsent = (master: NodeId, disk: string, book: DiskBook): number => {
    let bytes = 0;
    for (const offer of pending.values()) {
      if (offer.master !== master) continue;
      for (const booked of offer.disks)
        if (booked.disk === disk && booked.report === book.report) bytes += booked.bytes;
    }
    return bytes;
  };
  /** The master ended or starts afresh: the answers it held never leave. */
  const forget = (master: NodeId) => {
    for (const [effect, offer] of pending) if (offer.master === master) pending.delete(effect);
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
      const booked: Offer['disks'][number][] = [];
      for (const [disk, slots] of placed) {
        const book = books.get(disk);
        if (!book) continue;
        const usable = Math.max(0, book.usable - unsent(node, disk, book));
        const budget = Math.floor(usable / size);
        if (slots > budget) {
          world.fail({
            invariant: 'disk-budget',
            node,
            detail:
              `offered ${slots} slots on ${disk.replace('|', ' disk ')} to ${effect.to}, but its budget is ${budget} ` +
              `(${usable} usable bytes left since its last report / estimated partition size ${size})`,
          });
          return;
        }
        booked.push({ disk, bytes: slots * size, report: book.report });
      }
      if (booked.length > 0) pending.set(effect, { master: node, disks: booked });
    },
    onDeparture(_node: NodeId, effect: Effect) {
      const offer = pending.get(effect);
      if (offer === undefined) return;
      pending.delete(effect);
      for (const { disk, bytes, report: at } of offer.disks) {
        const book = books.get(disk);
        if (book !== undefined && book.report === at) book.usable = Math.max(0, book.usable - bytes);
      }
    },
    onCrash: forget,
    onExit: forget,
    onStart: forget,
  };
}
