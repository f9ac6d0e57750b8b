import type { ShuffleId } from '../../domain/index.ts';
import type { MessageOf, UnregisterApplication, UnregisterShuffle } from '../../protocol/messages.ts';
import { lifecycleManagerNodeId } from '../../protocol/node-ids.ts';
import { settle } from '../client/requests.ts';
import { count, log, reply, type ReplyTo } from '../outbox.ts';
import { stopHeartbeat } from './application.ts';
import { request, type Draft } from './draft.ts';
import { abandonRevives } from './revive.ts';
import { abandonParkedFileGroups } from './stage-end.ts';
import type { LmRequest } from './state.ts';

/**
 * The end of a shuffle and of the application, as the driver announces them (docs/core/machines-client.md,
 * "Unregistering"). The lifecycle manager forgets at once (every task still waiting is told SHUFFLE_UNREGISTERED),
 * answers the driver, and forwards the request to the master, retried on timeout a bounded number of times. The
 * master stops listing the shuffle, and each worker deletes its files when its next heartbeat reply names the
 * shuffle expired. Nothing here waits for the master: a master that never answers only delays the release until
 * the application is unregistered or expires there.
 */

type UnregisterRequest = Extract<LmRequest, { kind: 'unregisterShuffle' | 'unregisterApp' }>;

export function onUnregisterShuffle(d: Draft, message: UnregisterShuffle, replyTo: ReplyTo): void {
  if (!isOwnApp(d, message.appId, replyTo)) return;
  const { shuffleId } = message;
  const known = d.shuffles.has(shuffleId);
  if (known) forgetShuffle(d, shuffleId, `the driver unregistered shuffle ${shuffleId}`);
  d.unregisteredShuffles = new Set([...d.unregisteredShuffles, shuffleId]);
  // Forwarded even for a shuffle this manager no longer knows: a registration that failed after RequestSlots left
  // the shuffle registered at the master, and a repeat costs the master nothing.
  const forwarded = masterKnowsApp(d);
  if (forwarded) unregisterShuffleAtMaster(d, shuffleId, 1);
  log(d.out, 'info', 'shuffle unregistered', { shuffleId, known, forwardedToMaster: forwarded });
  count(d.out, 'UnregisterShuffleCount');
  reply(d.out, replyTo, {
    type: 'StatusResponse',
    status: 'SUCCESS',
    message: forwarded
      ? `shuffle ${shuffleId} of ${d.config.appId} unregistered; workers release its files once the master confirms`
      : `shuffle ${shuffleId} of ${d.config.appId} unregistered; the master never registered the application`,
  });
}

/**
 * The master's heartbeat reply says the application's user is over its quota and its shuffles are to be stopped
 * (svc.quota.interruptShuffle.enabled; the reference cancels the application's active stages): every shuffle not yet
 * committing is forgotten and released at the master (its files go, and with them the usage), and its tasks are
 * answered QUOTA_EXCEEDED with the master's reason from now on. Committing and committed shuffles stay readable.
 */
export function interruptForQuota(d: Draft, reason: string): void {
  // Shuffles whose maps still run; one committing or committed is left to finish and be read.
  const running = [...d.shuffles.values()].filter((shuffle) =>
    ['awaiting-app', 'requesting-slots', 'reserving', 'ready'].includes(shuffle.phase),
  );
  if (running.length === 0) return;
  const interrupted = new Map(d.interruptedShuffles);
  for (const { shuffleId } of running) {
    forgetShuffle(d, shuffleId, reason, 'QUOTA_EXCEEDED');
    interrupted.set(shuffleId, reason);
    if (masterKnowsApp(d)) unregisterShuffleAtMaster(d, shuffleId, 1);
  }
  d.interruptedShuffles = interrupted;
  log(d.out, 'error', 'shuffles interrupted: over quota', {
    shuffles: running.map((shuffle) => shuffle.shuffleId),
    reason,
  });
  count(d.out, 'QuotaInterruptedShuffleCount', running.length);
}

export function onUnregisterApplication(d: Draft, message: UnregisterApplication, replyTo: ReplyTo): void {
  if (!isOwnApp(d, message.appId, replyTo)) return;
  if (d.app.status === 'unregistered') {
    // A repeat (the driver's first answer may have been lost): the master was already told.
    reply(d.out, replyTo, {
      type: 'StatusResponse',
      status: 'SUCCESS',
      message: `application ${d.config.appId} was already unregistered`,
    });
    return;
  }
  const forwarded = masterKnowsApp(d);
  const shuffles = [...d.shuffles.keys()];
  for (const shuffleId of shuffles)
    forgetShuffle(d, shuffleId, `the driver unregistered application ${d.config.appId}`);
  d.unregisteredShuffles = new Set([...d.unregisteredShuffles, ...shuffles]);
  // Every open request is moot now (registration, heartbeat, slots, reserves, commits, shuffle unregisters, which
  // the application's unregister covers), except releases of reserved copies, which are worth finishing.
  closeRequests(d, (purpose) => purpose.kind !== 'destroy');
  stopHeartbeat(d);
  d.app = { status: 'unregistered' };
  if (forwarded)
    request(
      d,
      d.config.master,
      { type: 'UnregisterApplication', appId: d.config.appId },
      {
        kind: 'unregisterApp',
      },
    );
  log(d.out, 'info', 'application unregistered', {
    appId: d.config.appId,
    shuffles,
    forwardedToMaster: forwarded,
  });
  reply(d.out, replyTo, {
    type: 'StatusResponse',
    status: 'SUCCESS',
    message:
      `application ${d.config.appId} unregistered with ${shuffles.length} shuffle(s); ` +
      (forwarded
        ? 'workers release their files once the master confirms'
        : 'the master never registered it, so nothing is left there'),
  });
}

/** The master's answer to an UnregisterShuffle or UnregisterApplication. */
export function onUnregisterAnswer(
  d: Draft,
  purpose: UnregisterRequest,
  message: MessageOf<'StatusResponse'>,
): void {
  if (message.status === 'SUCCESS') {
    log(d.out, 'debug', 'the master confirmed the unregister', {
      ...subject(d, purpose),
      message: message.message,
    });
    return;
  }
  // Not retried: a refusal (e.g. CLIENT_RELEASE_REFUSED) would be the same the next time.
  log(d.out, 'error', 'the master refused the unregister', {
    ...subject(d, purpose),
    status: message.status,
    message: message.message,
    consequence: consequenceOfFailure(purpose),
  });
  count(d.out, 'UnregisterFailCount', 1, { status: message.status });
}

/** An unregister request timed out (a master that is unreachable is waited for by the timeout): retry, bounded. */
export function onUnregisterUnanswered(
  d: Draft,
  purpose: UnregisterRequest,
  attempt: number,
  why: string,
): void {
  if (attempt < d.config.maxRequestAttempts) {
    if (purpose.kind === 'unregisterShuffle') unregisterShuffleAtMaster(d, purpose.shuffleId, attempt + 1);
    else
      request(
        d,
        d.config.master,
        { type: 'UnregisterApplication', appId: d.config.appId },
        purpose,
        attempt + 1,
      );
    return;
  }
  log(d.out, 'warn', 'the master did not confirm the unregister', {
    ...subject(d, purpose),
    why,
    tries: attempt,
    consequence: consequenceOfFailure(purpose),
  });
  count(d.out, 'UnregisterFailCount', 1, { status: 'REQUEST_FAILED' });
}

/**
 * Forgets a shuffle: tasks waiting for its registration, a revive or its file group are answered
 * SHUFFLE_UNREGISTERED; its reservations and its open requests (slots, reserves, commits) are dropped, so their late
 * answers are ignored. Its reserved copies are not destroyed one by one: the master's expiry releases them all.
 */
function forgetShuffle(
  d: Draft,
  shuffleId: ShuffleId,
  why: string,
  status: 'SHUFFLE_UNREGISTERED' | 'QUOTA_EXCEEDED' = 'SHUFFLE_UNREGISTERED',
): void {
  const shuffle = d.shuffles.get(shuffleId);
  if (shuffle === undefined) return;
  for (const waiter of shuffle.registerWaiters) {
    reply(d.out, waiter, {
      type: 'RegisterShuffleResponse',
      status,
      locations: [],
      message: why,
    });
  }
  abandonRevives(d, shuffleId);
  abandonParkedFileGroups(d, shuffleId, why);
  const reservations = new Set<number>();
  for (const [id, reservation] of [...d.reservations]) {
    if (reservation.shuffleId !== shuffleId) continue;
    reservations.add(id);
    d.reservations.delete(id);
  }
  closeRequests(
    d,
    (purpose) =>
      ((purpose.kind === 'requestSlots' || purpose.kind === 'commit') && purpose.shuffleId === shuffleId) ||
      (purpose.kind === 'reserve' && reservations.has(purpose.reservationId)),
  );
  d.shuffles.delete(shuffleId);
}

/** Closes the open requests whose purpose matches (their timers are cancelled; late answers become stale). */
function closeRequests(d: Draft, matches: (purpose: LmRequest) => boolean): void {
  for (const open of [...d.requests.open.values()]) {
    if (matches(open.purpose)) d.requests = settle(d.requests, d.out, open.id).table;
  }
}

function unregisterShuffleAtMaster(d: Draft, shuffleId: ShuffleId, attempt: number): void {
  request(
    d,
    d.config.master,
    { type: 'UnregisterShuffle', appId: d.config.appId, shuffleId },
    { kind: 'unregisterShuffle', shuffleId },
    attempt,
  );
}

/**
 * Whether the master may hold the application: registered, on its way, or given up on after unanswered tries (the
 * master may have registered it all the same). An application the master refused has nothing there, and a server
 * must not be asked again by a client it refuses.
 */
function masterKnowsApp(d: Draft): boolean {
  if (d.app.status === 'refused') return false;
  return d.app.status !== 'unregistered';
}

/** A message for another application is refused: a lifecycle manager serves exactly one. */
function isOwnApp(d: Draft, appId: string, replyTo: ReplyTo): boolean {
  if (appId === d.config.appId) return true;
  log(d.out, 'warn', 'unregister for another application refused', { appId, serves: d.config.appId });
  reply(d.out, replyTo, {
    type: 'StatusResponse',
    status: 'REQUEST_FAILED',
    message: `this lifecycle manager serves application ${d.config.appId}, not ${appId}; send it to ${lifecycleManagerNodeId(appId)}`,
  });
  return false;
}

function subject(d: Draft, purpose: UnregisterRequest): Record<string, unknown> {
  return purpose.kind === 'unregisterShuffle'
    ? { appId: d.config.appId, shuffleId: purpose.shuffleId }
    : { appId: d.config.appId };
}

function consequenceOfFailure(purpose: UnregisterRequest): string {
  return purpose.kind === 'unregisterShuffle'
    ? 'the master keeps the shuffle, and workers its files, until the application is unregistered or expires'
    : 'the master releases the application when it expires (no heartbeat for svc.master.heartbeat.application.timeout)';
}
