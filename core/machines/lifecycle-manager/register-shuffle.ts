import { maskOf, type PartitionLocation, type ShuffleId, type StatusCode } from '../../domain/index.ts';
import type { MessageOf, RegisterShuffle } from '../../protocol/messages.ts';
import { emptyReviveBook, recordLocations } from '../../revive/index.ts';
import { count, log, reply, type ReplyTo } from '../outbox.ts';
import { request, updateShuffle, type Draft } from './draft.ts';
import {
  allocate,
  candidatesOf,
  copiesByWorker,
  destroy,
  pairOf,
  startReservation,
  type CompletedReservation,
} from './reservation.ts';
import type { LmShuffle, Pair, Reservation } from './state.ts';
import { describeUnplaced } from './unplaced-message.ts';

/**
 * Registering a shuffle: however many tasks ask at once, one RequestSlots goes to the master; the offer is reserved
 * on the workers (./reservation.ts); every waiting task gets the locations, or the one clear reason why not.
 * Partitions the master could not place (PARTIALLY_PLACED) are placed on the offer's workers, padding included,
 * before giving up on them.
 */
export function onRegisterShuffle(d: Draft, message: RegisterShuffle, replyTo: ReplyTo): void {
  if (d.app.status === 'refused' || d.app.status === 'unreachable') {
    answer(d, replyTo, d.app.code, [], d.app.message);
    return;
  }
  if (d.app.status === 'unregistered') {
    answer(
      d,
      replyTo,
      'SHUFFLE_UNREGISTERED',
      [],
      `application ${d.config.appId} was unregistered by its driver and registers no more shuffles; ` +
        'a new run of the application starts a new lifecycle manager',
    );
    return;
  }
  const interrupted = d.interruptedShuffles.get(message.shuffleId);
  if (interrupted !== undefined) {
    answer(d, replyTo, 'QUOTA_EXCEEDED', [], interrupted);
    return;
  }
  if (d.unregisteredShuffles.has(message.shuffleId)) {
    // A task of a finished or abandoned stage, late: registering again would book slots nobody will read.
    answer(
      d,
      replyTo,
      'SHUFFLE_UNREGISTERED',
      [],
      `shuffle ${message.shuffleId} of ${d.config.appId} was unregistered by the driver (its stage finished or ` +
        'was abandoned); a shuffle id is never registered again, a rerun stage writes a new shuffle',
    );
    return;
  }
  if (message.numMappers <= 0) {
    answer(
      d,
      replyTo,
      'NUM_MAPPER_ZERO',
      [],
      `shuffle ${message.shuffleId} has no map tasks (numMappers ${message.numMappers})`,
    );
    return;
  }
  const known = d.shuffles.get(message.shuffleId);
  if (known !== undefined) {
    if (known.numMappers !== message.numMappers || known.numPartitions !== message.numPartitions) {
      // Keeping the registered numbers would let this task write maps or partitions the shuffle does not have, or
      // read a shuffle of another shape as its own: a mistake of the application, refused where it is made.
      answer(
        d,
        replyTo,
        'SHUFFLE_ALREADY_REGISTERED',
        [],
        `shuffle ${message.shuffleId} of ${d.config.appId} is registered with ${known.numMappers} maps and ` +
          `${known.numPartitions} partitions; this task declares ${message.numMappers} maps and ` +
          `${message.numPartitions} partitions. A shuffle id names one shuffle: declare it with one shape everywhere`,
      );
      return;
    }
    if (isPlaced(known)) answer(d, replyTo, 'SUCCESS', latestLocations(known), '');
    else updateShuffle(d, known.shuffleId, { registerWaiters: [...known.registerWaiters, replyTo] });
    return;
  }
  const shuffle: LmShuffle = {
    shuffleId: message.shuffleId,
    numMappers: message.numMappers,
    numPartitions: message.numPartitions,
    phase: 'awaiting-app',
    registerWaiters: [replyTo],
    slotRequests: 0,
    workers: [],
    reserved: [],
    book: emptyReviveBook(),
    blamedCopies: new Set(),
    mapAttempts: new Array<number>(message.numMappers).fill(-1),
    written: new Map(),
    endedMaps: 0,
  };
  d.shuffles.set(shuffle.shuffleId, shuffle);
  if (d.app.status === 'registered') requestSlots(d, shuffle.shuffleId);
}

function isPlaced(shuffle: LmShuffle): boolean {
  return (
    shuffle.phase === 'ready' ||
    shuffle.phase === 'committing' ||
    shuffle.phase === 'committed' ||
    shuffle.phase === 'data-lost'
  );
}

/** The application is registered now: shuffles registered before it ask for slots. */
export function requestAwaitingSlots(d: Draft): void {
  for (const shuffle of d.shuffles.values()) {
    if (shuffle.phase === 'awaiting-app') requestSlots(d, shuffle.shuffleId);
  }
}

/** The application was refused or is out of reach: shuffles registered before it fail with the same reason. */
export function failAwaitingShuffles(d: Draft): void {
  if (d.app.status !== 'refused' && d.app.status !== 'unreachable') return;
  for (const shuffle of [...d.shuffles.values()]) {
    if (shuffle.phase === 'awaiting-app') failRegistration(d, shuffle.shuffleId, d.app.code, d.app.message);
  }
}

export function requestSlots(d: Draft, shuffleId: ShuffleId, attempt = 1): void {
  const shuffle = d.shuffles.get(shuffleId)!;
  const { appId, replicate, rackAware, availableTypes, maxWorkers, master } = d.config;
  request(
    d,
    master,
    {
      type: 'RequestSlots',
      appId,
      shuffleId,
      partitionIds: Array.from({ length: shuffle.numPartitions }, (_, i) => i),
      replicate,
      rackAware,
      availableTypes: maskOf(availableTypes),
      // Off by default, as in the reference: the master's own exclusions already apply, and a client exclusion
      // (one failed push) must not starve a small cluster of every worker.
      excludedWorkers: d.config.filterExcludedWorkers ? [...d.workers.excluded.keys()] : [],
      maxWorkers,
    },
    { kind: 'requestSlots', shuffleId },
    attempt,
  );
  updateShuffle(d, shuffleId, {
    phase: 'requesting-slots',
    slotRequests: shuffle.slotRequests + (attempt === 1 ? 1 : 0),
  });
}

export function onSlotsUnanswered(d: Draft, shuffleId: ShuffleId, attempt: number): void {
  if (attempt < d.config.maxRequestAttempts) requestSlots(d, shuffleId, attempt + 1);
  else {
    failRegistration(
      d,
      shuffleId,
      'REQUEST_FAILED',
      `the master ${d.config.master} did not answer RequestSlots after ${attempt} tries`,
    );
  }
}

export function onSlotsAnswer(
  d: Draft,
  shuffleId: ShuffleId,
  message: MessageOf<'RequestSlotsResponse'> | MessageOf<'StatusResponse'>,
): CompletedReservation | undefined {
  const shuffle = d.shuffles.get(shuffleId);
  if (shuffle?.phase !== 'requesting-slots') return undefined;
  if (message.type === 'StatusResponse') {
    failRegistration(d, shuffleId, message.status, `the master refused RequestSlots: ${message.message}`);
    return undefined;
  }
  if (message.status === 'QUOTA_EXCEEDED') {
    // Asking again cannot help before usage falls or the quota is raised: the caller decides (fall back, or fail).
    failRegistration(d, shuffleId, message.status, message.message);
    return undefined;
  }
  if (message.status !== 'SUCCESS' && message.status !== 'PARTIALLY_PLACED') {
    if (shuffle.slotRequests <= d.config.requestSlotsMaxRetries) {
      log(d.out, 'warn', 'the master placed nothing; asking again', { shuffleId, status: message.status });
      requestSlots(d, shuffleId);
    } else {
      failRegistration(d, shuffleId, message.status, `the master could not offer slots: ${message.message}`);
    }
    return undefined;
  }
  const pairs = new Map<number, Pair>();
  const replicas = new Map<number, PartitionLocation>();
  for (const resource of message.workerResource) {
    for (const replica of resource.replicas) replicas.set(replica.partitionId, replica);
  }
  for (const resource of message.workerResource) {
    for (const primary of resource.primaries) {
      const replica = replicas.get(primary.partitionId);
      pairs.set(primary.partitionId, replica === undefined ? { primary } : { primary, replica });
    }
  }
  updateShuffle(d, shuffleId, { phase: 'reserving', workers: candidatesOf(message.workerResource) });

  const failed = new Map<number, { status: StatusCode; reason: string }>();
  if (message.unplaced.length > 0) {
    log(
      d.out,
      'warn',
      'the master could not place every partition; placing the rest on the offered workers',
      {
        shuffleId,
        unplaced: message.unplaced,
      },
    );
    const reasons = new Map(message.unplaced.map((u) => [u.partitionId, u.reason]));
    const targets = message.unplaced.map((u) => ({ partitionId: u.partitionId, epoch: 0 }));
    for (const allocation of allocate(d, shuffleId, targets)) {
      if (allocation.kind === 'placed') pairs.set(allocation.partitionId, pairOf(allocation));
      else {
        failed.set(allocation.partitionId, {
          status: 'PARTIALLY_PLACED',
          reason: `the master could not place it (${reasons.get(allocation.partitionId)}) and ${allocation.reason}`,
        });
      }
    }
  }
  return startReservation(d, shuffleId, 'register', pairs, failed);
}

/** The first reservation of a shuffle ended: all placed → every waiting task gets the locations; else all fail. */
export function completeRegistration(d: Draft, reservation: Reservation): void {
  const shuffle = d.shuffles.get(reservation.shuffleId);
  if (shuffle === undefined) return;
  if (reservation.failed.size > 0) {
    for (const [worker, copies] of copiesByWorker(reservation.confirmed))
      destroy(d, shuffle.shuffleId, worker, copies);
    if (askAgain(d, shuffle, reservation)) return;
    const [first] = reservation.failed.values();
    failRegistration(
      d,
      shuffle.shuffleId,
      first!.status,
      describeUnplaced(reservation.failed, shuffle.numPartitions),
    );
    return;
  }
  // One pass, no array per pair (a shuffle of 10,000 partitions made 10,000 for flatMap to join).
  const primaries: PartitionLocation[] = [];
  const reserved: PartitionLocation[] = [];
  for (const pair of reservation.confirmed.values()) {
    primaries.push(pair.primary);
    reserved.push(pair.primary);
    if (pair.replica !== undefined) reserved.push(pair.replica);
  }
  const placed = updateShuffle(d, shuffle.shuffleId, {
    phase: 'ready',
    reserved,
    book: recordLocations(shuffle.book, primaries),
    registerWaiters: [],
  });
  log(d.out, 'info', 'shuffle registered', {
    shuffleId: shuffle.shuffleId,
    partitions: shuffle.numPartitions,
    workers: placed.workers.length,
  });
  const locations = latestLocations(placed);
  for (const waiter of shuffle.registerWaiters) answer(d, waiter, 'SUCCESS', locations, '');
}

/**
 * Reserves failed and the offer's other workers could not take their copies (SLOT_NOT_AVAILABLE): the shuffle asks
 * the master for a new offer, within svc.client.reserveSlots.maxRetries, as the reference's reserve retry does,
 * instead of failing on its own view of the workers. That view is what the offer and the manager's last report
 * said, and a rolling upgrade makes it stale in the way that matters: the worker that just went away was in the
 * offer, and the one before it, back and registered, was still shutting down in the last report. The master's new
 * offer comes from its current view. Returns whether it asked.
 */
function askAgain(d: Draft, shuffle: LmShuffle, reservation: Reservation): boolean {
  if (d.app.status !== 'registered' || shuffle.slotRequests > d.config.requestSlotsMaxRetries) return false;
  if (![...reservation.failed.values()].some((failure) => failure.status === 'SLOT_NOT_AVAILABLE'))
    return false;
  log(
    d.out,
    'warn',
    'reserves failed and no other offered worker could take their copies; asking the master again',
    {
      shuffleId: shuffle.shuffleId,
      unplaced: reservation.failed.size,
    },
  );
  requestSlots(d, shuffle.shuffleId);
  return true;
}

function failRegistration(d: Draft, shuffleId: ShuffleId, status: StatusCode, message: string): void {
  const shuffle = d.shuffles.get(shuffleId)!;
  // Forgotten, so that a task retried by the engine starts a fresh registration.
  d.shuffles.delete(shuffleId);
  log(d.out, 'error', 'shuffle registration failed', { shuffleId, status, message });
  count(d.out, 'RegisterShuffleFailCount', 1, { status });
  for (const waiter of shuffle.registerWaiters) answer(d, waiter, status, [], message);
}

function latestLocations(shuffle: LmShuffle): PartitionLocation[] {
  return [...shuffle.book.latest.values()].sort((a, b) => a.partitionId - b.partitionId);
}

function answer(
  d: Draft,
  to: ReplyTo,
  status: StatusCode,
  locations: readonly PartitionLocation[],
  message: string,
): void {
  reply(d.out, to, { type: 'RegisterShuffleResponse', status, locations, message });
}
