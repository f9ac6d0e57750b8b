import { workerKey } from '../../domain/index.ts';
import type { RegisterWorkerResponse, WorkerHeartbeatResponse } from '../../protocol/messages.ts';
import type { AppConsumption } from '../../quota/index.ts';
import { purgeUnavailablePeers } from '../../replication/index.ts';
import { isWorkerCongested } from '../../storage/index.ts';
import { appConsumption } from './consumption.ts';
import { dropShuffle } from './commit.ts';
import { applyWorkerTrigger, checkDrain, completeExit } from './leaving.ts';
import { cancelTimer, count, log, send, setTimer, setEntry, type Outbox } from '../outbox.ts';
import { heartbeatShuffleKeys, removeExpiredLeftovers } from './leftovers.ts';
import { requestTimer } from './push.ts';
import { takeId, type OutstandingRequest, type WorkerMachineState } from './state.ts';
import { diskInfos } from './storage-view.ts';

/**
 * The worker's membership at the master: registration (retried every retry interval until the register timeout,
 * then the worker exits with the reason), heartbeats every interval (disks, shuffles held, state), and what the
 * heartbeat reply asks for: register again, release expired shuffles, carry out the operator's event.
 */
export const HEARTBEAT_TIMER = 'heartbeat'; // also named in leaving.ts (reportExit)
export const REGISTER_TIMER = 'register';

/** Begins a round of registration attempts; the register timeout counts from now. */
export function startRegistration(s: WorkerMachineState, out: Outbox): WorkerMachineState {
  cancelTimer(out, HEARTBEAT_TIMER);
  return attemptRegister({ ...s, registration: { status: 'registering', since: out.now, attempts: 0 } }, out);
}

export function attemptRegister(s: WorkerMachineState, out: Outbox): WorkerMachineState {
  if (s.registration.status !== 'registering') return s;
  const requestId = takeId(s);
  send(
    out,
    s.config.master,
    {
      type: 'RegisterWorker',
      worker: s.config.id,
      disks: diskInfos(s),
      networkLocation: s.config.networkLocation,
    },
    requestId,
  );
  setTimer(out, requestTimer(requestId), out.now + s.config.masterRequestTimeoutMs);
  return {
    ...s,
    requests: setEntry(s.requests, requestId, { kind: 'register' }),
    registration: { ...s.registration, attempts: s.registration.attempts + 1 },
  };
}

/** A registration attempt failed: retry after the interval, or give up (exit) once the register timeout is spent. */
export function registerFailed(s: WorkerMachineState, out: Outbox, reason: string): WorkerMachineState {
  if (s.registration.status !== 'registering') return s;
  count(out, 'RegisterWithMasterFailCount');
  const { since, attempts } = s.registration;
  const elapsed = out.now - since;
  if (elapsed >= s.config.register.timeoutMs) {
    const text =
      `worker ${workerKey(s.config.id)} could not register with ${s.config.master} in ${elapsed} ms ` +
      `(${attempts} attempt(s), svc.worker.register.timeout ${s.config.register.timeoutMs} ms); last failure: ${reason}. ` +
      'Check that the master is running and reachable and that this host is allowed to join';
    log(out, 'error', 'worker.register.gaveUp', { attempts, elapsed, reason });
    out.effects.push({ kind: 'exit', code: 1, reason: text });
    return { ...s, registration: { status: 'unregistered' } };
  }
  log(out, 'warn', 'worker.register.failed', { attempt: attempts, reason });
  setTimer(out, REGISTER_TIMER, out.now + s.config.register.retryIntervalMs);
  return s;
}

export function onRegisterAnswer(
  s: WorkerMachineState,
  out: Outbox,
  requestId: number,
  response: RegisterWorkerResponse,
): WorkerMachineState {
  const state = settleRequest(s, out, requestId, 'register');
  if (state === undefined) return s;
  if (!response.success) return registerFailed(state, out, `the master refused: ${response.message}`);
  log(out, 'info', 'worker.registered', { master: s.config.master, message: response.message });
  setTimer(out, HEARTBEAT_TIMER, out.now + s.config.heartbeatIntervalMs);
  return { ...state, registration: { status: 'registered' } };
}

/** The heartbeat interval passed: heartbeat (when registered), forget stale unavailable peers, check draining. */
export function onHeartbeatTimer(s: WorkerMachineState, out: Outbox): WorkerMachineState {
  if (s.registration.status !== 'registered') return s;
  setTimer(out, HEARTBEAT_TIMER, out.now + s.config.heartbeatIntervalMs);
  const requestId = takeId(s);
  send(
    out,
    s.config.master,
    {
      type: 'WorkerHeartbeat',
      worker: s.config.id,
      disks: diskInfos(s),
      activeShuffleKeys: heartbeatShuffleKeys(s),
      highWorkload: isWorkerCongested(s.congestion),
      state: s.lifecycle.state,
      ...heartbeatConsumption(s),
    },
    requestId,
  );
  setTimer(out, requestTimer(requestId), out.now + s.config.masterRequestTimeoutMs);
  const state: WorkerMachineState = {
    ...s,
    requests: setEntry(s.requests, requestId, { kind: 'heartbeat' }),
    unavailablePeers: purgeUnavailablePeers(
      s.unavailablePeers,
      out.now,
      s.config.replicate.fastFailDurationMs,
    ),
  };
  return checkDrain(state, out);
}

export function onHeartbeatAnswer(
  s: WorkerMachineState,
  out: Outbox,
  requestId: number,
  response: WorkerHeartbeatResponse,
): WorkerMachineState {
  if (s.requests.get(requestId)?.kind === 'exitReport')
    return completeExit(s, out, requestId, 'the master took the report');
  let state = settleRequest(s, out, requestId, 'heartbeat');
  if (state === undefined) return s;
  if (!response.registered) {
    log(out, 'warn', 'worker.heartbeat.unknownToMaster', {
      hint: 'the master restarted or declared this worker lost; registering again',
    });
    return startRegistration(state, out);
  }
  for (const key of response.expiredShuffleKeys) {
    state = dropShuffle(state, out, key, 'the master no longer has the shuffle');
  }
  state = removeExpiredLeftovers(state, out, response.expiredShuffleKeys);
  if (response.workerEvent !== 'None')
    state = applyWorkerTrigger(state, out, response.workerEvent, 'master worker event');
  return checkDrain(state, out);
}

/** A request to the master that was not answered in time, or could not be sent. */
export function masterRequestFailed(
  s: WorkerMachineState,
  out: Outbox,
  requestId: number,
  request: OutstandingRequest,
  reason: string,
): WorkerMachineState {
  if (request.kind === 'exitReport') return completeExit(s, out, requestId, reason);
  setEntry(s.requests, requestId, undefined);
  cancelTimer(out, requestTimer(requestId));
  if (request.kind === 'register') return registerFailed(s, out, reason);
  log(out, 'warn', 'worker.heartbeat.failed', { reason });
  return s;
}

/** Removes an answered request; undefined when the answer is stale (timed out already, or not ours). */
function settleRequest(
  s: WorkerMachineState,
  out: Outbox,
  requestId: number,
  kind: 'register' | 'heartbeat',
): WorkerMachineState | undefined {
  if (s.requests.get(requestId)?.kind !== kind) {
    log(out, 'debug', 'worker.staleAnswer', { requestId, kind });
    return undefined;
  }
  cancelTimer(out, requestTimer(requestId));
  setEntry(s.requests, requestId, undefined);
  return s;
}

function heartbeatConsumption(s: WorkerMachineState): { resourceConsumption?: AppConsumption[] } {
  const consumption = appConsumption(s);
  return consumption.length === 0 ? {} : { resourceConsumption: consumption };
}
