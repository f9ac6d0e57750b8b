import { expireExclusions } from '../../client/index.ts';
import { admitted } from '../admission.ts';
import { applicationOf, authorized, SERVER } from '../authorization.ts';
import type { Envelope, Input } from '../effects.ts';
import type { Machine, Step } from '../machine.ts';
import { log, refuseAdmin, refuseRecords } from '../outbox.ts';
import { expire, settle } from '../client/requests.ts';
import {
  isHeartbeatTimer,
  isRegisterRetryTimer,
  onApplicationAnswer,
  onApplicationUnanswered,
  onRegisterRetryTimer,
  onRegistrationUnreachable,
  onHeartbeatAnswer,
  registerApplication,
  sendHeartbeat,
} from './application.ts';
import { closeDraft, openDraft, type Draft } from './draft.ts';
import {
  completeRegistration,
  failAwaitingShuffles,
  onRegisterShuffle,
  onSlotsAnswer,
  onSlotsUnanswered,
  requestAwaitingSlots,
} from './register-shuffle.ts';
import { onReserveAnswer, type CompletedReservation } from './reservation.ts';
import {
  completeRevives,
  failRevivesAwaitingReport,
  isReviveTimer,
  onRevive,
  onReviveTimer,
  retryRevivesAfterReport,
} from './revive.ts';
import {
  onCommitAnswer,
  onCommitUnanswered,
  onFileGroupWaitOver,
  onGetReducerFileGroup,
  onMapperEnd,
  parkIdOfTimer,
} from './stage-end.ts';
import type { LifecycleManagerState, LmRequest } from './state.ts';
import {
  onUnregisterAnswer,
  onUnregisterApplication,
  onUnregisterShuffle,
  onUnregisterUnanswered,
  interruptForQuota,
} from './unregister.ts';

/**
 * The lifecycle manager: the client-side coordinator of one application (node `lm-<appId>`). It registers the
 * application with the master, registers shuffles (slots from the master, reserved on workers), handles revives,
 * mapper ends and the commit, and answers reducers with file groups. It keeps no durable store: an application
 * whose driver restarts is a new application. docs/core/machines-client.md.
 */
export const lifecycleManagerMachine: Machine<LifecycleManagerState> = {
  step(state, input, now, rng): Step<LifecycleManagerState> {
    const d = openDraft(state, now, rng);
    expireOwnExclusions(d);
    handle(d, input);
    return { state: closeDraft(d), effects: d.out.effects };
  },
};

function handle(d: Draft, input: Input): void {
  switch (input.kind) {
    case 'start':
      registerApplication(d, 1);
      return;
    case 'receive': {
      const envelope = input.envelope;
      const fromTask = envelope.inReplyTo === undefined;
      // Only the application's own tasks (and driver) may ask; answers come from the servers it asked.
      const required = fromTask ? applicationOf(d.config.appId) : SERVER;
      if (!authorized(d.out, 'lifecycle-manager', d.config.authEnabled === true, envelope, required)) return;
      // Its executors are admitted by release as the master and workers admit clients: one rule, the core's.
      if (fromTask && !admitted(d.out, 'lifecycle-manager', d.config.release, envelope)) return;
      if (fromTask) onTaskMessage(d, envelope);
      else onReply(d, envelope);
      return;
    }
    case 'timer':
      onTimer(d, input.name);
      return;
    case 'sendFailed': {
      const open = input.requestId === undefined ? undefined : d.requests.open.get(input.requestId);
      if (open === undefined) return; // a one-way message (DestroySlots) to a worker that is gone
      if (
        open.to === d.config.master &&
        open.purpose.kind === 'registerApp' &&
        (d.app.status === 'registering' || d.app.status === 'unreachable')
      ) {
        const closed = settle(d.requests, d.out, input.requestId);
        d.requests = closed.table;
        onRegistrationUnreachable(d, `${input.to} is unreachable`);
        failAwaitingShuffles(d);
        return;
      }
      if (open.to === d.config.master) {
        // The master may be restarting: its request's timeout retries, instead of a burst of immediate retries.
        log(d.out, 'warn', 'master unreachable; waiting for the request timeout', {
          request: open.message.type,
        });
        return;
      }
      const closed = settle(d.requests, d.out, input.requestId);
      d.requests = closed.table;
      onUnanswered(d, open.purpose, open.attempt, `${input.to} is unreachable`);
      return;
    }
    case 'ioDone':
    case 'ioFailed':
    case 'ioBatchDone':
    case 'diskSpace':
    case 'consumed': // a reduce task's input only
      return;
    case 'admin':
      refuseAdmin(d.out, 'lifecycle manager', input);
      return;
    case 'records':
    case 'recordsEnd':
      refuseRecords(d.out, 'lifecycle manager', input);
      return;
  }
}

/** Lasting exclusions end after `excludedWorkerExpireMs` whatever the step, not only at a heartbeat answer. */
function expireOwnExclusions(d: Draft): void {
  const { view, expired } = expireExclusions(d.workers, d.out.now, d.config.excludedWorkerExpireMs);
  if (expired.length === 0) return;
  d.workers = view;
  log(d.out, 'info', 'worker exclusion expired; the worker is a candidate again', {
    workers: expired,
    expireTimeoutMs: d.config.excludedWorkerExpireMs,
  });
}

function onTaskMessage(d: Draft, envelope: Envelope): void {
  const replyTo = { node: envelope.from, requestId: envelope.requestId };
  const message = envelope.message;
  if (message.type === 'RegisterShuffle') onRegisterShuffle(d, message, replyTo);
  else if (message.type === 'Revive') onRevive(d, message, replyTo);
  else if (message.type === 'MapperEnd') onMapperEnd(d, message, replyTo);
  else if (message.type === 'GetReducerFileGroup') onGetReducerFileGroup(d, message.shuffleId, replyTo);
  // From the driver: a shuffle's readers are all done (or its stage was abandoned), or the application ends.
  else if (message.type === 'UnregisterShuffle') onUnregisterShuffle(d, message, replyTo);
  else if (message.type === 'UnregisterApplication') onUnregisterApplication(d, message, replyTo);
  else {
    log(d.out, 'warn', 'message not meant for a lifecycle manager ignored', {
      type: message.type,
      from: envelope.from,
    });
  }
}

function onReply(d: Draft, envelope: Envelope): void {
  const closed = settle(d.requests, d.out, envelope.inReplyTo);
  d.requests = closed.table;
  const request = closed.request;
  if (request === undefined) return; // late: the request already timed out and was retried or given up
  const message = envelope.message;
  const purpose = request.purpose;
  switch (purpose.kind) {
    case 'registerApp':
      if (message.type !== 'StatusResponse') break;
      if (onApplicationAnswer(d, message)) requestAwaitingSlots(d);
      else failAwaitingShuffles(d);
      return;
    case 'heartbeat':
      if (message.type === 'ApplicationHeartbeatResponse') {
        // Over quota first: the report that follows must not revive what the interruption stops.
        if (message.quotaExceeded !== undefined) interruptForQuota(d, message.quotaExceeded);
        onHeartbeatAnswer(d, message);
        for (const done of retryRevivesAfterReport(d)) completed(d, done);
      } else if (message.type === 'StatusResponse') {
        log(d.out, 'error', 'the master refused the application heartbeat', {
          status: message.status,
          message: message.message,
        });
        if (purpose.refresh === true) failRevivesAwaitingReport(d, `${message.status}: ${message.message}`);
      } else break;
      return;
    case 'requestSlots':
      if (message.type !== 'RequestSlotsResponse' && message.type !== 'StatusResponse') break;
      completed(d, onSlotsAnswer(d, purpose.shuffleId, message));
      return;
    case 'reserve':
      if (message.type !== 'StatusResponse') break;
      completed(
        d,
        onReserveAnswer(
          d,
          purpose.reservationId,
          purpose.worker,
          message.status === 'SUCCESS'
            ? undefined
            : { reason: `${message.status}: ${message.message}`, answered: true, status: message.status },
        ),
      );
      return;
    case 'commit':
      if (message.type !== 'CommitFilesResponse' && message.type !== 'StatusResponse') break;
      onCommitAnswer(d, purpose.shuffleId, purpose.worker, message);
      return;
    case 'destroy':
      if (message.type !== 'StatusResponse') break;
      if (message.status !== 'SUCCESS')
        onUnanswered(d, purpose, request.attempt, `${message.status}: ${message.message}`);
      return;
    case 'unregisterShuffle':
    case 'unregisterApp':
      if (message.type !== 'StatusResponse') break;
      onUnregisterAnswer(d, purpose, message);
      return;
  }
  log(d.out, 'error', 'protocol error: unexpected reply', {
    request: request.message.type,
    reply: message.type,
  });
  onUnanswered(
    d,
    purpose,
    d.config.maxRequestAttempts,
    `protocol error: ${message.type} in reply to ${request.message.type}`,
  );
}

function onTimer(d: Draft, name: string): void {
  if (isHeartbeatTimer(name)) {
    sendHeartbeat(d);
    return;
  }
  if (isRegisterRetryTimer(name)) {
    onRegisterRetryTimer(d);
    return;
  }
  if (isReviveTimer(name)) {
    for (const done of onReviveTimer(d)) completed(d, done);
    return;
  }
  const parkId = parkIdOfTimer(name);
  if (parkId !== undefined) {
    onFileGroupWaitOver(d, parkId);
    return;
  }
  const expired = expire(d.requests, name);
  d.requests = expired.table;
  if (expired.request !== undefined)
    onUnanswered(d, expired.request.purpose, expired.request.attempt, 'timeout');
}

/** A request got no usable answer: timed out, unreachable, or answered with nonsense (counted as the last attempt). */
function onUnanswered(d: Draft, purpose: LmRequest, attempt: number, why: string): void {
  switch (purpose.kind) {
    case 'registerApp':
      onApplicationUnanswered(d, attempt);
      failAwaitingShuffles(d);
      return;
    case 'heartbeat':
      log(d.out, 'warn', 'application heartbeat unanswered', { why });
      if (purpose.refresh === true) failRevivesAwaitingReport(d, why);
      return;
    case 'requestSlots':
      onSlotsUnanswered(d, purpose.shuffleId, attempt);
      return;
    case 'reserve':
      completed(
        d,
        onReserveAnswer(d, purpose.reservationId, purpose.worker, { reason: why, answered: false }),
      );
      return;
    case 'commit':
      onCommitUnanswered(d, purpose.shuffleId, purpose.worker, attempt, why);
      return;
    case 'destroy':
      log(d.out, 'warn', 'releasing reserved copies failed; the worker drops them when the shuffle expires', {
        shuffleId: purpose.shuffleId,
        worker: purpose.worker,
        why,
      });
      return;
    case 'unregisterShuffle':
    case 'unregisterApp':
      onUnregisterUnanswered(d, purpose, attempt, why);
      return;
  }
}

function completed(d: Draft, done: CompletedReservation | undefined): void {
  if (done === undefined) return;
  if (done.reservation.purpose === 'register') completeRegistration(d, done.reservation);
  else completeRevives(d, done.reservation);
}
