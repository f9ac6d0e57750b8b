import type { Rng } from '../../rng.ts';
import type { Message } from '../../protocol/messages.ts';
import { applicationOf, authorized, SERVER, type Requirement } from '../authorization.ts';
import type { Envelope, Input } from '../effects.ts';
import type { Machine, Step } from '../machine.ts';
import { inputBeforeStart, log, refuseRecords, setTimer } from '../outbox.ts';
import { handleMasterAdmin } from './admin.ts';
import {
  checkApplications,
  handleApplicationHeartbeat,
  handleGetApplicationSecret,
  handleRegisterApplication,
  handleRequestSlots,
  handleUnregisterApplication,
  handleUnregisterShuffle,
  updatePartitionSize,
} from './applications.ts';
import { emitGauges } from './gauges.ts';
import { updateQuotaStatus } from './quota.ts';
import { newMasterOutbox, type MasterOutbox } from './outbox.ts';
import {
  decodeDurableState,
  encodeDurableState,
  MASTER_STATE_KEY,
  type MasterDurableState,
  type MasterState,
} from './state.ts';
import {
  checkLostWorkers,
  expireUnavailableWorkers,
  handleRegisterWorker,
  handleWorkerHeartbeat,
  handleWorkerReport,
} from './workers.ts';

/** The master's periodic checks: timer name → what runs and how often. */
export const MASTER_TIMERS = {
  lostWorkers: 'check:lostWorkers',
  applications: 'check:applications',
  unavailableInfo: 'check:unavailableInfo',
  partitionSize: 'update:partitionSize',
  quota: 'update:userResourceConsumption',
} as const;

/** `svc.master.userResourceConsumption.update.interval`'s default, for a master configured without quotas. */
const DEFAULT_QUOTA_UPDATE_MS = 30_000;

/**
 * The master as a pure state machine. A step that changes the durable state ends with one `persist` of the whole
 * durable value to the coordination store, placed before the step's replies so that nothing is acknowledged before
 * it is durable; it also emits the gauges that moved. docs/core/machines-master-worker.md lists every message,
 * timer, persisted key and effect.
 */
export const masterMachine: Machine<MasterState> = {
  step(state: MasterState, input: Input, now: number, rng: Rng): Step<MasterState> {
    const out = newMasterOutbox(now, rng);
    let next = dispatch(state, input, out);
    if (out.durableChanged) {
      const persist = {
        kind: 'persist',
        store: 'coordination',
        key: MASTER_STATE_KEY,
        value: encodeDurableState(next.durable),
      } as const;
      if (next.config.plantedBug === 'ack-before-persist') out.effects.push(persist);
      else out.effects.unshift(persist);
      next = emitGauges(next, out);
    }
    return { state: next, effects: out.effects };
  },
};

function dispatch(s: MasterState, input: Input, out: MasterOutbox): MasterState {
  if (input.kind === 'start') return onStart(s, out, input.recovered);
  if (!s.started) {
    inputBeforeStart(out, 'master', input);
    return s;
  }
  switch (input.kind) {
    case 'receive':
      return onReceive(s, out, input.envelope);
    case 'timer':
      return onTimer(s, out, input.name);
    case 'admin':
      return handleMasterAdmin(s, out, input.command, input.commandId);
    case 'consumed': // a reduce task's input only
    case 'diskSpace': // a worker's input only
      return s;
    case 'records':
    case 'recordsEnd':
      refuseRecords(out, 'master', input);
      return s;
    case 'sendFailed':
      log(out, 'debug', 'master.sendFailed', { to: input.to, message: input.message.type });
      return s;
    case 'ioDone':
    case 'ioFailed':
    case 'ioBatchDone':
      log(out, 'warn', 'master.io.unexpected', {
        input: input.kind,
        ...(input.kind === 'ioBatchDone' ? { ops: input.completions.length } : { op: input.op }),
        hint: 'the master issues no file I/O',
      });
      return s;
  }
}

/**
 * (Re)start: restore the durable state, if any, and arm the periodic checks. Restored workers and applications get
 * a full timeout from now before they can be declared lost (the reference does the same after a leader change),
 * since no heartbeat could reach a master that was down.
 */
function onStart(s: MasterState, out: MasterOutbox, recovered: ReadonlyMap<string, string>): MasterState {
  if (s.started) {
    log(out, 'error', 'master.startedTwice', { hint: 'a restarted master begins from its initial state' });
    return s;
  }
  let durable = s.durable;
  const persisted = recovered.get(MASTER_STATE_KEY);
  if (persisted !== undefined) {
    try {
      durable = withFreshHeartbeats(decodeDurableState(persisted), out.now);
    } catch (error) {
      const reason =
        `the master cannot restore its state from the coordination store: ${error instanceof Error ? error.message : String(error)}. ` +
        `Fix or delete the key ${MASTER_STATE_KEY} (deleting it starts an empty master: workers register again, ` +
        'and the shuffles of running applications are lost)';
      log(out, 'error', 'master.restore.failed', { reason });
      out.effects.push({ kind: 'exit', code: 1, reason });
      return s;
    }
    log(out, 'info', 'master.restored', {
      workers: durable.workers.workers.size,
      applications: durable.applications.apps.size,
      estimatedPartitionSize: durable.estimatedPartitionSize,
    });
  }
  const { config } = s;
  setTimer(out, MASTER_TIMERS.lostWorkers, out.now + config.workerHeartbeatTimeoutMs);
  setTimer(out, MASTER_TIMERS.applications, out.now + config.applicationTimeoutMs / 2);
  setTimer(out, MASTER_TIMERS.unavailableInfo, out.now + config.workerUnavailableInfo.checkIntervalMs);
  setTimer(out, MASTER_TIMERS.partitionSize, out.now + config.partitionSize.updateInitialDelayMs);
  setTimer(out, MASTER_TIMERS.quota, out.now + quotaIntervalMs(config));
  // Emit the gauges once at start, so that dashboards show the (restored) cluster before anything changes.
  return emitGauges({ ...s, started: true, servingSince: out.now, durable }, out);
}

function quotaIntervalMs(config: MasterState['config']): number {
  return config.quota?.updateIntervalMs ?? DEFAULT_QUOTA_UPDATE_MS;
}

function withFreshHeartbeats(durable: MasterDurableState, now: number): MasterDurableState {
  const workers = new Map(
    [...durable.workers.workers].map(([key, worker]) => [key, { ...worker, lastHeartbeat: now }]),
  );
  const apps = new Map(
    [...durable.applications.apps].map(([appId, app]) => [appId, { ...app, lastHeartbeat: now }]),
  );
  return {
    ...durable,
    workers: { ...durable.workers, workers },
    applications: { ...durable.applications, apps },
  };
}

/** What an arrived message needs its connection to have proved (../authorization.ts); undefined: nothing. */
function requirementOf(message: Message): Requirement | undefined {
  switch (message.type) {
    case 'RegisterWorker':
    case 'WorkerHeartbeat':
    case 'ReportWorkerUnavailable':
    case 'ReportWorkerDecommission':
    case 'ReportWorkerLost':
    case 'GetApplicationSecret':
      return SERVER;
    case 'ApplicationHeartbeat':
    case 'RequestSlots':
    case 'UnregisterShuffle':
    case 'UnregisterApplication':
      return applicationOf(message.appId);
    case 'RegisterWorkerResponse':
    case 'WorkerHeartbeatResponse':
    case 'RegisterApplication':
    case 'StatusResponse':
    case 'NotLeader':
    case 'ApplicationHeartbeatResponse':
    case 'RequestSlotsResponse':
    case 'ApplicationSecretResponse':
    case 'ReserveSlots':
    case 'CommitFiles':
    case 'CommitFilesResponse':
    case 'DestroySlots':
    case 'RegisterShuffle':
    case 'RegisterShuffleResponse':
    case 'Revive':
    case 'ReviveResponse':
    case 'MapperEnd':
    case 'GetReducerFileGroup':
    case 'GetReducerFileGroupResponse':
    case 'PushData':
    case 'PushDataResponse':
    case 'PushMergedData':
    case 'PushMergedDataResponse':
    case 'OpenStream':
    case 'OpenStreamResponse':
    case 'FetchChunk':
    case 'ChunkData':
    case 'CloseStream':
      // RegisterApplication decides for itself (applications.ts); the others are misrouted and ignored.
      return undefined;
  }
}

function onReceive(s: MasterState, out: MasterOutbox, envelope: Envelope): MasterState {
  const message = envelope.message;
  if (!authorized(out, 'master', s.config.authEnabled === true, envelope, requirementOf(message))) return s;
  switch (message.type) {
    case 'RegisterWorker':
      return handleRegisterWorker(s, out, envelope, message);
    case 'WorkerHeartbeat':
      return handleWorkerHeartbeat(s, out, envelope, message);
    case 'ReportWorkerUnavailable':
    case 'ReportWorkerDecommission':
    case 'ReportWorkerLost':
      return handleWorkerReport(s, out, message);
    case 'RegisterApplication':
      return handleRegisterApplication(s, out, envelope, message);
    case 'ApplicationHeartbeat':
      return handleApplicationHeartbeat(s, out, envelope, message);
    case 'RequestSlots':
      return handleRequestSlots(s, out, envelope, message);
    case 'UnregisterShuffle':
      return handleUnregisterShuffle(s, out, envelope, message);
    case 'UnregisterApplication':
      return handleUnregisterApplication(s, out, envelope, message);
    case 'GetApplicationSecret':
      return handleGetApplicationSecret(s, out, envelope, message);
    case 'ApplicationSecretResponse':
    case 'RegisterWorkerResponse':
    case 'WorkerHeartbeatResponse':
    case 'StatusResponse':
    case 'NotLeader':
    case 'ApplicationHeartbeatResponse':
    case 'RequestSlotsResponse':
    case 'ReserveSlots':
    case 'CommitFiles':
    case 'CommitFilesResponse':
    case 'DestroySlots':
    case 'RegisterShuffle':
    case 'RegisterShuffleResponse':
    case 'Revive':
    case 'ReviveResponse':
    case 'MapperEnd':
    case 'GetReducerFileGroup':
    case 'GetReducerFileGroupResponse':
    case 'PushData':
    case 'PushDataResponse':
    case 'PushMergedData':
    case 'PushMergedDataResponse':
    case 'OpenStream':
    case 'OpenStreamResponse':
    case 'FetchChunk':
    case 'ChunkData':
    case 'CloseStream':
      log(out, 'warn', 'master.unexpectedMessage', { type: message.type, from: envelope.from });
      return s;
  }
}

function onTimer(s: MasterState, out: MasterOutbox, name: string): MasterState {
  const { config } = s;
  switch (name) {
    case MASTER_TIMERS.lostWorkers:
      setTimer(out, name, out.now + config.workerHeartbeatTimeoutMs);
      return checkLostWorkers(s, out);
    case MASTER_TIMERS.applications:
      setTimer(out, name, out.now + config.applicationTimeoutMs / 2);
      return checkApplications(s, out);
    case MASTER_TIMERS.unavailableInfo:
      setTimer(out, name, out.now + config.workerUnavailableInfo.checkIntervalMs);
      return expireUnavailableWorkers(s, out);
    case MASTER_TIMERS.partitionSize:
      setTimer(out, name, out.now + config.partitionSize.updateIntervalMs);
      return updatePartitionSize(s, out);
    case MASTER_TIMERS.quota:
      setTimer(out, name, out.now + quotaIntervalMs(config));
      return updateQuotaStatus(s, out);
    default:
      log(out, 'warn', 'master.unknownTimer', { name });
      return s;
  }
}
