import type { AppId, WorkerKey } from '../../domain/index.ts';
import type { ApplicationRegistry, WorkerRegistry } from '../../lifecycle/index.ts';
import type { Rng } from '../../rng.ts';
import type { Outbox } from '../outbox.ts';
import { sweptBookings, type SlotBooking } from './bookings.ts';
import { nothingTouched, type KeyWrite, type Touched } from './layout.ts';
import type { MasterState } from './state.ts';

/**
 * The master's step outbox: the effects so far, plus what of the durable state the step changed and must persist
 * (./layout.ts): the workers and applications whose keys it rewrites, never a comparison of the whole state.
 */
export interface MasterOutbox extends Outbox {
  readonly touched: Touched;
  /** Writes decided outright, not from what was touched: a start's layout version, or its rewrite of an old store. */
  readonly rewrites: KeyWrite[];
}

export function newMasterOutbox(now: number, rng: Rng): MasterOutbox {
  return { now, rng, effects: [], touched: nothingTouched(), rewrites: [] };
}

/** The state with a new worker registry in which only `changed` differ, marked for persistence. */
export function withWorkers(
  s: MasterState,
  out: MasterOutbox,
  workers: WorkerRegistry,
  changed: Iterable<WorkerKey>,
): MasterState {
  for (const key of changed) out.touched.workers.add(key);
  return { ...s, durable: { ...s.durable, workers } };
}

/** The state with a new application registry in which only `changed` differ, marked for persistence. */
export function withApplications(
  s: MasterState,
  out: MasterOutbox,
  applications: ApplicationRegistry,
  changed: Iterable<AppId>,
): MasterState {
  for (const appId of changed) out.touched.apps.add(appId);
  return { ...s, durable: { ...s.durable, applications } };
}

/**
 * The state with the workers' disks booked by an offer and, when it changed any disk, the booking kept and marked
 * for persistence (./bookings.ts): the booked workers' entries are not rewritten.
 */
export function withBooking(
  s: MasterState,
  out: MasterOutbox,
  workers: WorkerRegistry,
  booking: SlotBooking | null,
): MasterState {
  if (booking === null) return { ...s, durable: { ...s.durable, workers } };
  const id = s.nextBookingId;
  out.touched.bookings.add(id);
  const bookings = new Map(s.durable.bookings).set(id, booking);
  return { ...s, durable: { ...s.durable, workers, bookings }, nextBookingId: id + 1 };
}

/** The state without the bookings every named worker has heartbeated since, their deletion marked. */
export function withoutObsoleteBookings(s: MasterState, out: MasterOutbox): MasterState {
  const { bookings } = s.durable;
  if (bookings.size === 0) return s;
  const swept = sweptBookings(bookings, s.durable.workers.workers, s.bookingsHeard);
  if (swept.obsolete.length === 0)
    return swept.heard === s.bookingsHeard ? s : { ...s, bookingsHeard: swept.heard };
  const kept = new Map(bookings);
  for (const id of swept.obsolete) {
    kept.delete(id);
    out.touched.bookings.add(id);
  }
  return { ...s, durable: { ...s.durable, bookings: kept }, bookingsHeard: swept.heard };
}
