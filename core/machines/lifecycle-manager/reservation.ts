import { excludeWorker } from '../../client/index.ts';
import {
  uniqueId,
  workerKey,
  type PartitionLocation,
  type ShuffleId,
  type StatusCode,
  type WorkerKey,
} from '../../domain/index.ts';
import {
  allocateRevives,
  candidatePool,
  reviveCandidates,
  type ReviveCandidate,
} from '../../revive/index.ts';
import { count, log } from '../outbox.ts';
import { request, type Draft } from './draft.ts';
import type { Pair, Reservation } from './state.ts';

/**
 * Reserving copies on workers (reference §3.3 reserveSlotsWithRetry, done as rounds of messages). The pairs of a
 * round go out as one ReserveSlots per worker. When every worker has answered, pairs whose workers all succeeded are
 * confirmed; pairs that touched a failed worker have their surviving copy released (DestroySlots) and are placed
 * again, at the same epoch, on the shuffle's remaining candidates (core/revive's allocation), for at most
 * `reserveMaxRetries` further rounds. A failed worker is excluded (RESERVE_SLOTS_FAILED) and kept out of later rounds.
 */

export interface CompletedReservation {
  readonly reservation: Reservation;
}

export function startReservation(
  d: Draft,
  shuffleId: ShuffleId,
  purpose: Reservation['purpose'],
  pairs: ReadonlyMap<number, Pair>,
  failed: Reservation['failed'] = new Map(),
): CompletedReservation | undefined {
  const reservation: Reservation = {
    id: d.nextReservationId,
    shuffleId,
    purpose,
    round: 0,
    pairs,
    awaiting: new Set(),
    failedWorkers: new Map(),
    confirmed: new Map(),
    failed,
  };
  d.nextReservationId += 1;
  return sendRound(d, reservation);
}

/** Sends the round's ReserveSlots, or completes the reservation when nothing is left to reserve. */
function sendRound(d: Draft, reservation: Reservation): CompletedReservation | undefined {
  if (reservation.pairs.size === 0) {
    d.reservations.delete(reservation.id);
    return { reservation };
  }
  const byWorker = copiesByWorker(reservation.pairs);
  const { appId, split, availableTypes, user, tenant } = d.config;
  for (const [worker, copies] of byWorker) {
    request(
      d,
      worker,
      {
        type: 'ReserveSlots',
        appId,
        shuffleId: reservation.shuffleId,
        primaries: copies.filter((c) => c.mode === 'PRIMARY'),
        replicas: copies.filter((c) => c.mode === 'REPLICA'),
        splitThreshold: split.thresholdBytes,
        splitMode: split.mode,
        memoryEnabled: availableTypes.includes('MEMORY'),
        user,
        ...(tenant === undefined ? {} : { tenant }),
      },
      { kind: 'reserve', reservationId: reservation.id, worker },
    );
  }
  d.reservations.set(reservation.id, {
    ...reservation,
    round: reservation.round + 1,
    awaiting: new Set(byWorker.keys()),
  });
  return undefined;
}

/** Why a worker's reserve failed; `status` is the worker's answer, absent when it never answered. */
export interface ReserveFailure {
  readonly reason: string;
  readonly answered: boolean;
  readonly status?: StatusCode;
}

/**
 * A worker's answer to a ReserveSlots (`failure` undefined on success). Returns the reservation when this answer
 * completed it; the caller then acts on its `confirmed` and `failed` pairs.
 */
export function onReserveAnswer(
  d: Draft,
  reservationId: number,
  worker: WorkerKey,
  failure: ReserveFailure | undefined,
): CompletedReservation | undefined {
  const reservation = d.reservations.get(reservationId);
  if (reservation === undefined || !reservation.awaiting.has(worker)) return undefined;
  const awaiting = new Set(reservation.awaiting);
  awaiting.delete(worker);
  let failedWorkers = reservation.failedWorkers;
  if (failure !== undefined) {
    failedWorkers = new Map([...failedWorkers, [worker, failure.reason]]);
    // A worker that says it is shutting down is not faulty: it joins the shutting-down set, which the master's
    // next report replaces, so it is a candidate again as soon as it is back (a lasting exclusion would keep a
    // restarted worker out for the whole expiry timeout).
    const cause = failure.status === 'WORKER_SHUTDOWN' ? 'WORKER_SHUTDOWN' : 'RESERVE_SLOTS_FAILED';
    d.workers = excludeWorker(d.workers, worker, cause, d.out.now);
    log(d.out, 'warn', 'reserve failed; moving its copies to other workers', {
      shuffleId: reservation.shuffleId,
      worker,
      reason: failure.reason,
    });
    count(d.out, 'ReserveSlotsFailCount');
    // A worker that never answered may have created the files after all: release them, best effort.
    if (!failure.answered) {
      destroy(d, reservation.shuffleId, worker, copiesByWorker(reservation.pairs).get(worker) ?? []);
    }
  }
  const updated = { ...reservation, awaiting, failedWorkers };
  d.reservations.set(reservationId, updated);
  return awaiting.size === 0 ? closeRound(d, updated) : undefined;
}

function closeRound(d: Draft, reservation: Reservation): CompletedReservation | undefined {
  const confirmed = new Map(reservation.confirmed);
  const retry: { partitionId: number; epoch: number }[] = [];
  const released = new Map<WorkerKey, PartitionLocation[]>();
  for (const [partitionId, pair] of reservation.pairs) {
    const copies = pair.replica === undefined ? [pair.primary] : [pair.primary, pair.replica];
    const broken = copies.filter((c) => reservation.failedWorkers.has(workerKey(c.worker)));
    if (broken.length === 0) {
      confirmed.set(partitionId, pair);
      continue;
    }
    retry.push({ partitionId, epoch: pair.primary.epoch });
    for (const copy of copies) {
      const key = workerKey(copy.worker);
      if (!reservation.failedWorkers.has(key)) released.set(key, [...(released.get(key) ?? []), copy]);
    }
  }
  for (const [worker, copies] of released) destroy(d, reservation.shuffleId, worker, copies);

  const failed = new Map(reservation.failed);
  const pairs = new Map<number, Pair>();
  if (retry.length > 0) {
    if (reservation.round > d.config.reserveMaxRetries) {
      const reason =
        `reserve failed on ${[...reservation.failedWorkers.keys()].join(', ')} and no retry is left ` +
        `(svc.client.reserveSlots.maxRetries = ${d.config.reserveMaxRetries})`;
      for (const { partitionId } of retry)
        failed.set(partitionId, { status: 'RESERVE_SLOTS_FAILED', reason });
    } else {
      for (const allocation of allocate(d, reservation.shuffleId, retry, reservation.failedWorkers)) {
        if (allocation.kind === 'placed') pairs.set(allocation.partitionId, pairOf(allocation));
        else failed.set(allocation.partitionId, { status: allocation.status, reason: allocation.reason });
      }
    }
  }
  return sendRound(d, { ...reservation, pairs, confirmed, failed, awaiting: new Set() });
}

/**
 * Places partitions on the surviving candidates (the shuffle's workers, then the others the master reports
 * available: core/revive's `candidatePool`) with core/revive's allocation (new epochs are the caller's
 * decision; a reserve retry keeps the epoch). `alsoAvoid` adds workers beyond the excluded and shutting-down ones;
 * `pardoned` takes workers out of the excluded ones (see revive.ts, `allocateAfterReport`).
 */
export function allocate(
  d: Draft,
  shuffleId: ShuffleId,
  targets: readonly { readonly partitionId: number; readonly epoch: number }[],
  alsoAvoid: ReadonlyMap<WorkerKey, unknown> = new Map(),
  pardoned: ReadonlySet<WorkerKey> = new Set(),
): ReturnType<typeof allocateRevives> {
  const shuffle = d.shuffles.get(shuffleId)!;
  const pool = candidatePool(shuffle.workers, d.clusterWorkers);
  const excluded = [...d.workers.excluded.keys()].filter((worker) => !pardoned.has(worker));
  const candidates = reviveCandidates(pool, {
    excluded: new Set([...excluded, ...alsoAvoid.keys()]),
    shuttingDown: d.workers.shuttingDown,
    ...(d.config.plantedBug === undefined ? {} : { plantedBug: d.config.plantedBug }),
  });
  return allocateRevives(
    targets,
    candidates,
    {
      replicate: d.config.replicate,
      clientRelease: d.config.release,
      availableTypes: d.config.availableTypes,
      ...(d.config.plantedBug === undefined ? {} : { plantedBug: d.config.plantedBug }),
    },
    d.rng,
  );
}

export function pairOf(allocation: {
  readonly primary: PartitionLocation;
  readonly replica?: PartitionLocation;
}): Pair {
  return allocation.replica === undefined
    ? { primary: allocation.primary }
    : { primary: allocation.primary, replica: allocation.replica };
}

/** The workers a shuffle's slot offer named, as revive candidates. */
export function candidatesOf(
  workers: readonly { readonly worker: ReviveCandidate['id']; readonly networkLocation: string }[],
): ReviveCandidate[] {
  return workers.map(({ worker, networkLocation }) => ({ id: worker, networkLocation }));
}

/**
 * Releases copies on a worker. Best effort: a failure is logged, not retried, because a worker that keeps the files
 * drops them when the master expires the shuffle.
 */
export function destroy(
  d: Draft,
  shuffleId: ShuffleId,
  worker: WorkerKey,
  copies: readonly PartitionLocation[],
): void {
  if (copies.length === 0) return;
  request(
    d,
    worker,
    {
      type: 'DestroySlots',
      appId: d.config.appId,
      shuffleId,
      primaryIds: copies.filter((c) => c.mode === 'PRIMARY').map(uniqueId),
      replicaIds: copies.filter((c) => c.mode === 'REPLICA').map(uniqueId),
    },
    { kind: 'destroy', shuffleId, worker },
  );
}

/** Every copy of the pairs, grouped by worker in first-seen order. */
export function copiesByWorker(pairs: ReadonlyMap<number, Pair>): Map<WorkerKey, PartitionLocation[]> {
  const byWorker = new Map<WorkerKey, PartitionLocation[]>();
  for (const pair of pairs.values()) {
    for (const copy of pair.replica === undefined ? [pair.primary] : [pair.primary, pair.replica]) {
      const key = workerKey(copy.worker);
      const copies = byWorker.get(key);
      if (copies === undefined) byWorker.set(key, [copy]);
      else copies.push(copy);
    }
  }
  return byWorker;
}
