import type { WorkerKey } from '../../domain/index.ts';
import { LayeredMap } from '../../lifecycle/index.ts';
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
  LAYOUT_VERSION,
  assembleDurable,
  durableLayout,
  durableWrites,
  isLayoutKey,
  MASTER_STATE_PREFIX,
  metaKey,
  metaValue,
  nothingTouched,
  touchedAnything,
  type KeyWrite,
} from './layout.ts';
import { decodeDurableState, MASTER_STATE_KEY, type MasterDurableState, type MasterState } from './state.ts';
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
 * The master as a pure state machine. A step that changes the durable state ends with a `persist` of each key it
 * changed in the coordination store (./layout.ts: only the entries of the workers and applications it touched, never
 * the whole state), placed before the step's replies so that nothing is acknowledged before it is durable; it also
 * emits the gauges that moved. docs/core/machines-master-worker.md lists every message, timer, persisted key and
 * effect.
 */
export const masterMachine: Machine<MasterState> = {
  step(state: MasterState, input: Input, now: number, rng: Rng): Step<MasterState> {
    const out = newMasterOutbox(now, rng);
    let next = dispatch(state, input, out);
    const touched = touchedAnything(out.touched);
    const writes = [
      ...out.rewrites,
      ...(touched ? durableWrites(MASTER_STATE_PREFIX, state.durable, next.durable, out.touched) : []),
    ];
    if (writes.length > 0) {
      const persists = writes.map(
        ({ key, value }) => ({ kind: 'persist', store: 'coordination', key, value }) as const,
      );
      if (next.config.plantedBug === 'ack-before-persist') out.effects.push(...persists);
      else out.effects.unshift(...persists);
    }
    if (out.touched.workers.size > 0) next = withWrittenDisks(next, out.touched.workers);
    if (touched) next = emitGauges(next, out);
    return { state: next, effects: out.effects };
  },
};

/** The disks of the workers whose entries the step wrote, as written (./written-disks.ts). */
function withWrittenDisks(s: MasterState, keys: ReadonlySet<WorkerKey>): MasterState {
  let written = LayeredMap.of(s.writtenDisks);
  for (const key of keys) {
    const disks = s.durable.workers.workers.get(key)?.disks;
    written = disks === undefined ? written.without(key) : written.with(key, disks);
  }
  return { ...s, writtenDisks: written };
}

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
  let restored: Restored;
  try {
    restored = restore(recovered, s.durable);
  } catch (error) {
    const reason =
      `the master cannot restore its state from the coordination store: ${error instanceof Error ? error.message : String(error)}. ` +
      `Fix or delete the keys under ${MASTER_STATE_PREFIX} and ${MASTER_STATE_KEY} (deleting them starts an empty master: ` +
      'workers register again, and the shuffles of running applications are lost)';
    log(out, 'error', 'master.restore.failed', { reason });
    out.effects.push({ kind: 'exit', code: 1, reason });
    return s;
  }
  if (restored.kind === 'new') {
    // The layout's version goes down before anything else, so that every store holding keys says which layout.
    out.rewrites.push(
      ...durableWrites(MASTER_STATE_PREFIX, s.durable, s.durable, { ...nothingTouched(), meta: true }),
    );
  } else {
    durable = withFreshHeartbeats(restored.durable, out.now);
    const meta = metaValue(restored.durable);
    if (restored.kind === 'layout' && recovered.get(metaKey(MASTER_STATE_PREFIX)) !== meta) {
      // A store of an earlier layout version: it now holds this one's keys, so it says this version first.
      out.rewrites.push({ key: metaKey(MASTER_STATE_PREFIX), value: meta });
      log(out, 'info', 'master.state.layoutUpgraded', { to: LAYOUT_VERSION });
    }
    if (restored.kind === 'legacy') {
      out.rewrites.push(...migrationWrites(recovered, restored.durable));
      log(out, 'warn', 'master.state.migrated', {
        from: MASTER_STATE_KEY,
        to: MASTER_STATE_PREFIX,
        keys: out.rewrites.length,
        hint: 'the state of an earlier release, one value, is rewritten as one key per entry; an earlier release cannot read it',
      });
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
  let nextBookingId = 0;
  for (const id of durable.bookings.keys()) nextBookingId = Math.max(nextBookingId, id + 1);
  // Emit the gauges once at start, so that dashboards show the (restored) cluster before anything changes.
  return emitGauges(
    {
      ...s,
      started: true,
      servingSince: out.now,
      durable,
      nextBookingId,
      bookingsHeard: 0,
      writtenDisks: new Map(),
    },
    out,
  );
}

type Restored =
  { readonly kind: 'new' } | { readonly kind: 'layout' | 'legacy'; readonly durable: MasterDurableState };

/**
 * What the store holds: the layout's keys, or the one value an earlier release wrote under MASTER_STATE_KEY. When
 * both are there the one value is the newer: this release deletes it in the batch that writes the layout, so only
 * an earlier release started on the store since (a downgrade) can have written it again.
 */
function restore(recovered: ReadonlyMap<string, string>, empty: MasterDurableState): Restored {
  const legacy = recovered.get(MASTER_STATE_KEY);
  if (legacy !== undefined) return { kind: 'legacy', durable: decodeDurableState(legacy) };
  const entries: { key: string; value: string }[] = [];
  for (const [key, value] of recovered)
    if (isLayoutKey(MASTER_STATE_PREFIX, key)) entries.push({ key, value });
  if (entries.length === 0) return { kind: 'new' };
  return { kind: 'layout', durable: assembleDurable(MASTER_STATE_PREFIX, entries, empty) };
}

/** The one value of an earlier release rewritten as the layout, in one write: its keys, the value gone, and any key left from before. */
function migrationWrites(recovered: ReadonlyMap<string, string>, durable: MasterDurableState): KeyWrite[] {
  const layout = durableLayout(MASTER_STATE_PREFIX, durable);
  const writes: KeyWrite[] = [...layout].map(([key, value]) => ({ key, value }));
  for (const key of recovered.keys()) {
    if (isLayoutKey(MASTER_STATE_PREFIX, key) && !layout.has(key)) writes.push({ key, value: null });
  }
  writes.push({ key: MASTER_STATE_KEY, value: null });
  return writes;
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
  // The fresh times are no heartbeats: a restored booking waits for each worker's first real one.
  const bookings = new Map(
    [...durable.bookings].map(([id, booking]) => [id, { ...booking, heardAfter: now }]),
  );
  return {
    ...durable,
    workers: { ...durable.workers, workers },
    applications: { ...durable.applications, apps },
    bookings,
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
