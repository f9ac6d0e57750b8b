import { lifecycleExclusion, excludeWorker } from '../../client/index.ts';
import { workerKey, type PartitionLocation, type ShuffleId, type StatusCode } from '../../domain/index.ts';
import type { Revive, ReviveResult } from '../../protocol/messages.ts';
import {
  finishRevives,
  startRevives,
  submitRevives,
  type ReviveAnswer,
  type ReviveResult as BookResult,
} from '../../revive/index.ts';
import { count, log, reply, setTimer, type ReplyTo } from '../outbox.ts';
import { updateShuffle, type Draft } from './draft.ts';
import {
  allocate,
  copiesByWorker,
  destroy,
  pairOf,
  startReservation,
  type CompletedReservation,
} from './reservation.ts';
import { sendHeartbeat } from './application.ts';
import type { LmShuffle, Pair, Reservation, ReviveWaiter } from './state.ts';

/**
 * Revives (reference §3.3): the failed location's worker is excluded by cause (core/client), requests join the
 * shuffle's revive book (core/revive: concurrent revives of a partition collapse into one, a request about an old
 * epoch gets the newer location at once), and every `reviveBatchIntervalMs` the pending ones are allocated at
 * epoch + 1 on surviving candidates and reserved (./reservation.ts). Each Revive message is answered once all of
 * its partitions have a result.
 */
const REVIVE_TIMER = 'revive-batch';

export function isReviveTimer(name: string): boolean {
  return name === REVIVE_TIMER;
}

export function onRevive(d: Draft, message: Revive, replyTo: ReplyTo): void {
  const shuffle = d.shuffles.get(message.shuffleId);
  const callId = d.nextCallId;
  d.nextCallId += 1;
  d.reviveCalls.set(callId, {
    replyTo,
    shuffleId: message.shuffleId,
    mapId: message.mapId,
    requests: message.requests,
    results: new Map(),
  });

  if (d.interruptedShuffles.has(message.shuffleId)) {
    answerAll(d, callId, 'QUOTA_EXCEEDED');
    return;
  }
  if (shuffle === undefined || !['ready', 'committing', 'committed', 'data-lost'].includes(shuffle.phase)) {
    answerAll(d, callId, 'SHUFFLE_UNREGISTERED');
    return;
  }
  if (shuffle.phase !== 'ready') {
    answerAll(d, callId, 'STAGE_ENDED');
    return;
  }
  if ((shuffle.mapAttempts[message.mapId] ?? -1) !== -1) {
    answerAll(d, callId, 'MAP_ENDED');
    return;
  }
  const unknown = message.requests.filter(
    (r) => !Number.isInteger(r.partitionId) || r.partitionId < 0 || r.partitionId >= shuffle.numPartitions,
  );
  if (unknown.length > 0) {
    log(d.out, 'warn', 'revive of partitions the shuffle does not have', {
      shuffleId: shuffle.shuffleId,
      partitionIds: unknown.map((r) => r.partitionId),
      numPartitions: shuffle.numPartitions,
    });
    deliver(
      d,
      unknown.map((r) => ({ waiter: { callId }, partitionId: r.partitionId, status: 'PARTITION_NOT_FOUND' })),
    );
  }
  const requests = message.requests.filter((r) => !unknown.includes(r));
  for (const revive of requests) {
    if (revive.oldLocation === undefined) continue;
    const exclusion = lifecycleExclusion(revive.cause, revive.oldLocation, {
      excludePeerWorkerOnFailure: d.config.excludePeerWorkerOnFailure,
      ...(d.config.plantedBug === undefined ? {} : { plantedBug: d.config.plantedBug }),
    });
    if (exclusion === undefined) continue;
    const blamed = shuffle.blamedCopies as Set<string>;
    const copy = `${workerKey(exclusion.worker)}|${revive.partitionId}-${revive.oldLocation.epoch}|${exclusion.role}`;
    if (blamed.has(copy)) continue;
    blamed.add(copy);
    d.workers = excludeWorker(d.workers, workerKey(exclusion.worker), exclusion.cause, d.out.now);
    log(d.out, 'warn', 'worker excluded after a push failure', {
      worker: workerKey(exclusion.worker),
      role: exclusion.role,
      cause: exclusion.cause,
      partitionId: revive.partitionId,
    });
  }
  const submitted = submitRevives<ReviveWaiter>(
    shuffle.book,
    requests.map((r) => ({
      partitionId: r.partitionId,
      epoch: r.epoch,
      cause: r.cause,
      waiter: { callId },
    })),
  );
  updateShuffle(d, shuffle.shuffleId, { book: submitted.book });
  deliver(d, submitted.answers);
  if (submitted.book.pending.size > 0 && !d.reviveTimerArmed) {
    d.reviveTimerArmed = true;
    setTimer(d.out, REVIVE_TIMER, d.out.now + d.config.reviveBatchIntervalMs);
  }
}

/** The batch timer: every shuffle's pending revives are allocated and reserved. */
export function onReviveTimer(d: Draft): CompletedReservation[] {
  d.reviveTimerArmed = false;
  const completed: CompletedReservation[] = [];
  for (const shuffle of [...d.shuffles.values()]) {
    if (shuffle.phase !== 'ready') continue;
    const started = startRevives(
      shuffle.book,
      d.config.plantedBug === undefined ? {} : { plantedBug: d.config.plantedBug },
    );
    if (started.started.length === 0) continue;
    updateShuffle(d, shuffle.shuffleId, { book: started.book });
    count(d.out, 'ReviveCount', started.started.length);
    const pairs = new Map<number, Pair>();
    const failed: BookResult[] = [];
    const targets = started.started.map((s) => ({ partitionId: s.partitionId, epoch: s.newEpoch }));
    for (const allocation of allocate(d, shuffle.shuffleId, targets)) {
      if (allocation.kind === 'placed') pairs.set(allocation.partitionId, pairOf(allocation));
      else
        failed.push({
          partitionId: allocation.partitionId,
          status: allocation.status,
          reason: allocation.reason,
        });
    }
    if (failed.length > 0) finish(d, shuffle.shuffleId, failed);
    const done = startReservation(d, shuffle.shuffleId, 'revive', pairs);
    if (done !== undefined) completed.push(done);
  }
  return completed;
}

/** A revive reservation ended: its locations become the latest; every waiter is answered. */
export function completeRevives(d: Draft, reservation: Reservation): void {
  const shuffle = d.shuffles.get(reservation.shuffleId);
  if (shuffle?.phase !== 'ready') {
    // The stage ended while the copies were being reserved; every waiter already has STAGE_ENDED.
    if (shuffle !== undefined) {
      for (const [worker, copies] of copiesByWorker(reservation.confirmed))
        destroy(d, shuffle.shuffleId, worker, copies);
    }
    return;
  }
  const copies = [...reservation.confirmed.values()].flatMap((pair) =>
    pair.replica === undefined ? [pair.primary] : [pair.primary, pair.replica],
  );
  updateShuffle(d, shuffle.shuffleId, { reserved: [...shuffle.reserved, ...copies] });
  finish(d, shuffle.shuffleId, [
    ...[...reservation.confirmed].map(([partitionId, pair]) => ({ partitionId, location: pair.primary })),
    ...[...reservation.failed].map(([partitionId, { status, reason }]) => ({ partitionId, status, reason })),
  ]);
}

function finish(d: Draft, shuffleId: ShuffleId, allResults: readonly BookResult[]): void {
  const results = allResults.filter((result) => !awaitReport(d, shuffleId, result));
  if (results.length === 0) return;
  const shuffle = d.shuffles.get(shuffleId)!;
  for (const { partitionId } of results)
    d.revivesReported = without(d.revivesReported, reportKey(shuffleId, partitionId, shuffle));
  const finished = finishRevives(shuffle.book, results);
  updateShuffle(d, shuffleId, { book: finished.book });
  for (const result of results) {
    if ('status' in result) {
      log(d.out, 'error', 'revive failed', {
        shuffleId,
        partitionId: result.partitionId,
        status: result.status,
        reason: result.reason,
      });
      count(d.out, 'ReviveFailCount', 1, { status: result.status });
    }
  }
  deliver(d, finished.answers);
}

/**
 * A revive short of workers (SLOT_NOT_AVAILABLE) waits, once, for the master's answer to a heartbeat sent at once,
 * instead of failing on the view it was decided on. That view changes only with the master's reports, and between
 * two of them it can be stale in the way that matters most during a rolling upgrade: a worker that restarted and
 * registered again is still in the shutting-down set (or excluded for a push its restart refused) while the next
 * worker begins its own graceful shutdown, and a replicated revive then sees one usable worker of three. Returns
 * whether the result is held; a revive that already waited, or an application not registered, fails as before.
 */
function awaitReport(d: Draft, shuffleId: ShuffleId, result: BookResult): boolean {
  if (!('status' in result) || result.status !== 'SLOT_NOT_AVAILABLE') return false;
  if (d.app.status !== 'registered' || d.config.plantedBug === 'revive-fails-on-stale-view') return false;
  const shuffle = d.shuffles.get(shuffleId);
  if (shuffle === undefined) return false;
  const key = reportKey(shuffleId, result.partitionId, shuffle);
  if (d.revivesReported.has(key)) return false;
  d.revivesReported = new Set([...d.revivesReported, key]);
  const held = new Map(d.revivesAwaitingReport.get(shuffleId) ?? []);
  held.set(result.partitionId, {
    epoch: shuffle.book.spent.get(result.partitionId) ?? 0,
    status: result.status,
    reason: result.reason,
  });
  const refreshing = [...d.requests.open.values()].some(
    (open) => open.purpose.kind === 'heartbeat' && open.purpose.refresh === true,
  );
  d.revivesAwaitingReport = new Map([...d.revivesAwaitingReport, [shuffleId, held]]);
  log(d.out, 'info', 'revive short of workers; asking the master for a fresh report before failing', {
    shuffleId,
    partitionId: result.partitionId,
    reason: result.reason,
  });
  if (!refreshing) sendHeartbeat(d, { refresh: true });
  return true;
}

/** The revive a partition has in flight, by its new epoch (one key per revive, never reused: epochs only grow). */
function reportKey(shuffleId: ShuffleId, partitionId: number, shuffle: LmShuffle): string {
  return `${shuffleId}/${partitionId}/${shuffle.book.spent.get(partitionId) ?? 0}`;
}

function without(set: ReadonlySet<string>, key: string): ReadonlySet<string> {
  if (!set.has(key)) return set;
  const copy = new Set(set);
  copy.delete(key);
  return copy;
}

/**
 * The master answered the heartbeat sent for held revives: each is allocated again on the refreshed view, with the
 * epoch it was given, and reserved; one short again fails now. Revives whose stage ended or whose shuffle went away
 * meanwhile were answered then and are dropped.
 */
export function retryRevivesAfterReport(d: Draft): CompletedReservation[] {
  const held = d.revivesAwaitingReport;
  if (held.size === 0) return [];
  d.revivesAwaitingReport = new Map();
  const completed: CompletedReservation[] = [];
  for (const [shuffleId, revives] of held) {
    const shuffle = d.shuffles.get(shuffleId);
    const live = [...revives].filter(
      ([partitionId]) =>
        shuffle?.phase === 'ready' && shuffle.book.pending.get(partitionId)?.inFlight === true,
    );
    for (const [partitionId, { epoch }] of revives) {
      if (!live.some(([id]) => id === partitionId))
        d.revivesReported = without(d.revivesReported, `${shuffleId}/${partitionId}/${epoch}`);
    }
    if (shuffle === undefined || live.length === 0) continue;
    const targets = live.map(([partitionId, { epoch }]) => ({ partitionId, epoch }));
    const pairs = new Map<number, Pair>();
    const failed: BookResult[] = [];
    for (const allocation of allocateAfterReport(d, shuffleId, targets)) {
      if (allocation.kind === 'placed') pairs.set(allocation.partitionId, pairOf(allocation));
      else
        failed.push({
          partitionId: allocation.partitionId,
          status: allocation.status,
          reason: allocation.reason,
        });
    }
    if (failed.length > 0) finish(d, shuffleId, failed);
    const done = startReservation(d, shuffleId, 'revive', pairs);
    if (done !== undefined) completed.push(done);
  }
  return completed;
}

/**
 * Allocates held revives on the refreshed view; those still short of workers get a second pass in which the workers
 * this lifecycle manager excluded itself (a lasting cause: a push or a reserve to it failed) but the master's fresh
 * report lists available count as usable. The exclusion is right about the moment it was recorded and can outlive
 * its cause by minutes: a worker refuses pushes while it restarts for an upgrade, registers again a second later,
 * and a replicated revive during the next worker's restart then finds one usable worker of three (upgrade seed
 * 382781). Only a revive that would otherwise fail takes this pass, so a worker the master vouches for is never
 * preferred to one nobody doubts; if it is still unreachable, its reserve fails and the revive fails as it would
 * have. The exclusion itself stays until it expires.
 */
function allocateAfterReport(
  d: Draft,
  shuffleId: ShuffleId,
  targets: readonly { readonly partitionId: number; readonly epoch: number }[],
): ReturnType<typeof allocate> {
  const strict = allocate(d, shuffleId, targets);
  const short = new Set(
    strict.filter((a) => a.kind === 'failed' && a.status === 'SLOT_NOT_AVAILABLE').map((a) => a.partitionId),
  );
  const vouched = new Set(
    d.clusterWorkers.map((worker) => workerKey(worker.id)).filter((worker) => d.workers.excluded.has(worker)),
  );
  if (short.size === 0 || vouched.size === 0) return strict;
  log(d.out, 'info', 'revive still short of workers; trying workers the master reports available again', {
    shuffleId,
    partitionIds: [...short],
    workers: [...vouched],
  });
  const second = allocate(
    d,
    shuffleId,
    targets.filter((target) => short.has(target.partitionId)),
    new Map(),
    vouched,
  );
  return [...strict.filter((a) => !short.has(a.partitionId)), ...second];
}

/** The heartbeat sent for held revives got no answer: they fail as they would have without waiting. */
export function failRevivesAwaitingReport(d: Draft, why: string): void {
  const held = d.revivesAwaitingReport;
  if (held.size === 0) return;
  d.revivesAwaitingReport = new Map();
  for (const [shuffleId, revives] of held) {
    const shuffle = d.shuffles.get(shuffleId);
    if (shuffle?.phase !== 'ready') continue;
    finish(
      d,
      shuffleId,
      [...revives]
        .filter(([partitionId]) => shuffle.book.pending.get(partitionId)?.inFlight === true)
        .map(([partitionId, { status, reason }]) => ({
          partitionId,
          status,
          reason: `${reason} (the master's fresh report did not come: ${why})`,
        })),
    );
  }
}

/** The stage ended: pending revives will not be needed; their waiters learn so now. */
export function endPendingRevives(d: Draft, shuffleId: ShuffleId): void {
  const shuffle = d.shuffles.get(shuffleId)!;
  const answers: ReviveAnswer<ReviveWaiter>[] = [];
  for (const pending of shuffle.book.pending.values()) {
    for (const waiter of pending.waiters)
      answers.push({ waiter, partitionId: pending.partitionId, status: 'STAGE_ENDED' });
  }
  updateShuffle(d, shuffleId, { book: { ...shuffle.book, pending: new Map() } });
  deliver(d, answers);
}

/** The shuffle is being unregistered: every revive still waiting for one of its partitions is answered so. */
export function abandonRevives(d: Draft, shuffleId: ShuffleId): void {
  const answers: ReviveAnswer<ReviveWaiter>[] = [];
  for (const [callId, call] of d.reviveCalls) {
    if (call.shuffleId !== shuffleId) continue;
    for (const { partitionId } of call.requests) {
      if (!call.results.has(partitionId))
        answers.push({ waiter: { callId }, partitionId, status: 'SHUFFLE_UNREGISTERED' });
    }
  }
  deliver(d, answers);
}

function deliver(d: Draft, answers: readonly ReviveAnswer<ReviveWaiter>[]): void {
  for (const answer of answers) {
    const call = d.reviveCalls.get(answer.waiter.callId);
    if (call === undefined) continue;
    const old = call.requests.find((r) => r.partitionId === answer.partitionId)?.oldLocation;
    const result: ReviveResult = {
      partitionId: answer.partitionId,
      status: answer.status,
      ...(answer.location === undefined ? {} : { newLocation: answer.location }),
      oldAvailable: old !== undefined && isAvailable(d, old),
    };
    const results = new Map(call.results);
    results.set(answer.partitionId, result);
    d.reviveCalls.set(answer.waiter.callId, { ...call, results });
    replyIfComplete(d, answer.waiter.callId);
  }
}

function answerAll(d: Draft, callId: number, status: StatusCode): void {
  const call = d.reviveCalls.get(callId)!;
  deliver(
    d,
    call.requests.map((r) => ({ waiter: { callId }, partitionId: r.partitionId, status })),
  );
  replyIfComplete(d, callId);
}

function replyIfComplete(d: Draft, callId: number): void {
  const call = d.reviveCalls.get(callId);
  if (call === undefined) return;
  const partitionIds = [...new Set(call.requests.map((r) => r.partitionId))];
  if (!partitionIds.every((id) => call.results.has(id))) return;
  d.reviveCalls.delete(callId);
  const mapEnded = (d.shuffles.get(call.shuffleId)?.mapAttempts[call.mapId] ?? -1) !== -1;
  reply(d.out, call.replyTo, {
    type: 'ReviveResponse',
    results: partitionIds.map((id) => call.results.get(id)!),
    endedMapIds: mapEnded ? [call.mapId] : [],
  });
}

function isAvailable(d: Draft, location: PartitionLocation): boolean {
  const key = workerKey(location.worker);
  return !d.workers.excluded.has(key) && !d.workers.shuttingDown.has(key);
}
