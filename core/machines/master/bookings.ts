import type { DiskInfo, WorkerKey } from '../../domain/index.ts';
import type { RegisteredWorker, WorkerRegistry } from '../../lifecycle/index.ts';
import { parseStoredJson } from './stored-json.ts';

/**
 * The slots an offer booked, persisted as the offer's own keys rather than as rewrites of every booked worker's
 * entry: a replicated shuffle of 1,000 partitions books nearly every worker of a 1,000-worker cluster, and
 * rewriting each entry (disks included) cost a RegisterShuffle about 1,000 keys and 420 KB. A booking holds, for
 * each worker whose disks it changed, its disks' numbers after it (slots, usable bytes, the shared filesystem's
 * usable bytes), and when it was made. A restarted master folds the bookings into the workers it restores, so that
 * it does not offer the same disk budget again before their next heartbeats replace the disks; a booking is
 * deleted once every worker it names has heartbeated since (or left the registered workers).
 */
export interface SlotBooking {
  /** When the offer was made (the step's time), persisted. */
  readonly at: number;
  /** Heartbeats after this time make the booking obsolete for their worker: `at`, or the restart that restored it. */
  readonly heardAfter: number;
  /** Every worker the booking names, over all its parts, in the order the sweep checks them. */
  readonly workers: readonly WorkerKey[];
  /** The persisted values by part; each part is whole on its own, so a store that lost a part still restores. */
  readonly parts: ReadonlyMap<number, string>;
}

/** At most this many workers a part: a part of a cluster of 1,000s of workers stays far below etcd's 1.5 MiB. */
export const BOOKING_WORKERS_PER_PART = 1_000;

/** A booked disk after the booking: [mountPoint, activeSlots, usableBytes, filesystemUsableBytes if shared]. */
type BookedDisk = readonly [string, number, number] | readonly [string, number, number, number];

interface BookingPart {
  readonly at: number;
  readonly workers: readonly (readonly [WorkerKey, readonly BookedDisk[]])[];
}

/**
 * A booked worker's entry of a part, `[key,[[mountPoint,activeSlots,usableBytes(,filesystemUsableBytes)],...]]`,
 * written as the text `JSON.stringify` makes of it: a replicated shuffle books nearly every worker, and building
 * an array per disk and per worker only for the serializer to walk was most of a booking's cost.
 */
function bookedWorkerJson(key: WorkerKey, disks: readonly DiskInfo[]): string {
  let json = `[${JSON.stringify(key)},[`;
  for (let i = 0; i < disks.length; i += 1) {
    const disk = disks[i]!;
    if (i > 0) json += ',';
    json += `[${JSON.stringify(disk.mountPoint)},${jsonNumber(disk.activeSlots)},${jsonNumber(disk.usableBytes)}`;
    if (disk.filesystemUsableBytes !== undefined) json += `,${jsonNumber(disk.filesystemUsableBytes)}`;
    json += ']';
  }
  return `${json}]]`;
}

/** A number as `JSON.stringify` writes it. */
function jsonNumber(n: number): string {
  return Number.isFinite(n) ? String(n) : 'null';
}

/**
 * The booking that took `before` to `after` at `at`: the disks of each worker of `changed` that has a disk that is
 * not the same object any more (lifecycle/registry.ts `bookOfferedSlots` keeps the disks it did not book). Null
 * when it changed no disk.
 */
export function newBooking(
  before: WorkerRegistry,
  after: WorkerRegistry,
  changed: Iterable<WorkerKey>,
  at: number,
): SlotBooking | null {
  const workers: WorkerKey[] = [];
  const entries: string[] = [];
  for (const key of changed) {
    const was = before.workers.get(key);
    const is = after.workers.get(key);
    if (is === undefined || was === is) continue;
    // Every disk of a worker booked, not only those booked: its entry may hold older numbers for the others, and a
    // restart would offer from those.
    if (!disksChanged(was?.disks, is.disks)) continue;
    workers.push(key);
    entries.push(bookedWorkerJson(key, is.disks));
  }
  if (entries.length === 0) return null;
  // A part is the JSON of a BookingPart: {"at":…,"workers":[…]}.
  const parts = new Map<number, string>();
  for (let start = 0; start < entries.length; start += BOOKING_WORKERS_PER_PART) {
    const part = entries.slice(start, start + BOOKING_WORKERS_PER_PART).join(',');
    parts.set(parts.size, `{"at":${jsonNumber(at)},"workers":[${part}]}`);
  }
  return { at, heardAfter: at, workers, parts };
}

function disksChanged(was: readonly DiskInfo[] | undefined, is: readonly DiskInfo[]): boolean {
  for (let i = 0; i < is.length; i += 1) if (was?.[i] !== is[i]) return true;
  return false;
}

function parsePart(key: string, value: string): BookingPart {
  const part = parseStoredJson(key, value) as Partial<BookingPart> | null;
  const wellFormed =
    typeof part === 'object' &&
    part !== null &&
    typeof part.at === 'number' &&
    Array.isArray(part.workers) &&
    part.workers.every(
      (entry) =>
        Array.isArray(entry) &&
        typeof entry[0] === 'string' &&
        Array.isArray(entry[1]) &&
        entry[1].every(
          (disk) =>
            Array.isArray(disk) &&
            typeof disk[0] === 'string' &&
            disk.slice(1).every((n) => typeof n === 'number'),
        ),
    );
  if (!wellFormed) throw new RangeError(`${key} is not a slot booking`);
  return part as BookingPart;
}

/**
 * The bookings read back from their parts (key → value, by booking id and part), and the registered workers with
 * each booking folded in, oldest first: a booked disk takes the numbers the booking left, unless the worker's
 * entry was written after a heartbeat that came after the booking (its disks are then the newer).
 */
export function restoreBookings(
  stored: ReadonlyMap<number, ReadonlyMap<number, { readonly key: string; readonly value: string }>>,
  workers: ReadonlyMap<WorkerKey, RegisteredWorker>,
): {
  readonly bookings: ReadonlyMap<number, SlotBooking>;
  readonly workers: ReadonlyMap<WorkerKey, RegisteredWorker>;
} {
  const bookings = new Map<number, SlotBooking>();
  const folded = new Map(workers);
  for (const id of [...stored.keys()].sort((a, b) => a - b)) {
    const byPart = stored.get(id)!;
    const parts = new Map<number, string>();
    const named: WorkerKey[] = [];
    let at = 0;
    for (const partId of [...byPart.keys()].sort((a, b) => a - b)) {
      const { key, value } = byPart.get(partId)!;
      const part = parsePart(key, value);
      at = part.at;
      parts.set(partId, value);
      for (const [workerKey, disks] of part.workers) {
        named.push(workerKey);
        const worker = folded.get(workerKey);
        if (worker === undefined || worker.lastHeartbeat > part.at) continue;
        folded.set(workerKey, { ...worker, disks: withBooked(worker.disks, disks) });
      }
    }
    bookings.set(id, { at, heardAfter: at, workers: named, parts });
  }
  return { bookings, workers: folded };
}

function withBooked(disks: readonly DiskInfo[], booked: readonly BookedDisk[]): DiskInfo[] {
  const byMount = new Map(booked.map((disk) => [disk[0], disk]));
  return disks.map((disk) => {
    const after = byMount.get(disk.mountPoint);
    if (after === undefined) return disk;
    return {
      ...disk,
      activeSlots: after[1],
      usableBytes: after[2],
      ...(after[3] === undefined ? {} : { filesystemUsableBytes: after[3] }),
    };
  });
}

/**
 * The bookings still needed, oldest first, with `heard` workers of the oldest already known to have heartbeated
 * since it: those before the first booking that names a registered worker not heard from since are obsolete. The
 * sweep stops at that booking (a later one that is obsolete waits for it), so a heartbeat costs O(1) amortized.
 */
export function sweptBookings(
  bookings: ReadonlyMap<number, SlotBooking>,
  workers: ReadonlyMap<WorkerKey, RegisteredWorker>,
  heard: number,
): { readonly obsolete: readonly number[]; readonly heard: number } {
  const obsolete: number[] = [];
  let checked = heard;
  for (const [id, booking] of bookings) {
    while (checked < booking.workers.length) {
      const worker = workers.get(booking.workers[checked]!);
      if (worker !== undefined && worker.lastHeartbeat <= booking.heardAfter) break;
      checked += 1;
    }
    if (checked < booking.workers.length) break;
    obsolete.push(id);
    checked = 0;
  }
  return { obsolete, heard: checked };
}
