import { workerKey, type WorkerKey } from '../../domain/index.ts';
import {
  detectLostWorkers,
  expireUnavailableInfo,
  recordHeartbeat,
  recordWorkerStopped,
  registerWorker,
  reportWorkersDecommissioning,
  reportWorkersUnavailable,
  shuffleExpiry,
  type WorkerRegistry,
} from '../../lifecycle/index.ts';
import type {
  RegisterWorker,
  ReportWorkerDecommission,
  ReportWorkerLost,
  ReportWorkerUnavailable,
  WorkerHeartbeat,
} from '../../protocol/messages.ts';
import type { Envelope } from '../effects.ts';
import { log, reply } from '../outbox.ts';
import { replyToOf } from '../outbox.ts';
import { WORKER_SECTIONS } from './layout.ts';
import { withoutObsoleteBookings, withWorkers, type MasterOutbox } from './outbox.ts';
import { recordConsumption } from './quota.ts';
import type { MasterState } from './state.ts';
import { disksNeedWriting } from './written-disks.ts';

/**
 * The master's side of worker membership, over core/lifecycle's registry: registration, heartbeats (with the
 * expired shuffles and the pending operator event in the reply), the workers' own reports, lost-worker detection
 * and the expiry of what the master remembers about unavailable workers.
 */
export function handleRegisterWorker(
  s: MasterState,
  out: MasterOutbox,
  envelope: Envelope,
  message: RegisterWorker,
): MasterState {
  const key = workerKey(message.worker);
  const { registry, outcome } = registerWorker(
    s.durable.workers,
    { id: message.worker, disks: message.disks, networkLocation: message.networkLocation },
    out.now,
    s.config.hosts,
  );
  if (!outcome.accepted) {
    log(out, 'warn', 'master.worker.registerRefused', { worker: key, reason: outcome.reason });
    reply(out, replyToOf(envelope), {
      type: 'RegisterWorkerResponse',
      success: false,
      message: outcome.reason,
    });
    return s;
  }
  log(out, 'info', outcome.reregistered ? 'master.worker.reregistered' : 'master.worker.registered', {
    worker: key,
    rack: message.networkLocation,
    disks: message.disks.length,
  });
  reply(out, replyToOf(envelope), {
    type: 'RegisterWorkerResponse',
    success: true,
    message: outcome.reregistered
      ? `${key} registered again; its earlier exclusions and reports are cleared`
      : `${key} registered`,
  });
  return withWorkers(s, out, registry, [key]);
}

export function handleWorkerHeartbeat(
  s: MasterState,
  out: MasterOutbox,
  envelope: Envelope,
  message: WorkerHeartbeat,
): MasterState {
  const key = workerKey(message.worker);
  // A heartbeat in state Exit is the worker's last message: its report that it has exited.
  if (message.state === 'Exit') {
    reply(out, replyToOf(envelope), {
      type: 'WorkerHeartbeatResponse',
      registered: false,
      expiredShuffleKeys: [],
      workerEvent: 'None',
    });
    return workerStopped(s, out, key, { immediately: false });
  }
  const {
    registry,
    reply: answer,
    changes,
  } = recordHeartbeat(
    s.durable.workers,
    {
      id: message.worker,
      disks: message.disks,
      state: message.state,
      highWorkload: message.highWorkload,
      activeShuffleKeys: message.activeShuffleKeys,
    },
    out.now,
    {
      ...s.config.exclusion,
      isShuffleExpired: shuffleExpiry(s.durable.applications, {
        now: out.now,
        servingSince: s.servingSince,
        applicationTimeoutMs: s.config.applicationTimeoutMs,
        ended: s.endedApps,
      }),
    },
  );
  if (!answer.registered) {
    log(out, 'warn', 'master.worker.unknownHeartbeat', { worker: key, hint: 'told to register again' });
    reply(out, replyToOf(envelope), {
      type: 'WorkerHeartbeatResponse',
      registered: false,
      expiredShuffleKeys: [],
      workerEvent: 'None',
    });
    return s;
  }
  recordConsumption(s, key, message.resourceConsumption);
  reply(out, replyToOf(envelope), {
    type: 'WorkerHeartbeatResponse',
    registered: true,
    expiredShuffleKeys: answer.expiredShuffleKeys,
    workerEvent: answer.event,
  });
  if (changes.autoExclusion?.change === 'excluded') {
    log(out, 'warn', 'master.worker.excluded', { worker: key, reason: changes.autoExclusion.reason });
  } else if (changes.autoExclusion?.change === 'released') {
    log(out, 'info', 'master.worker.released', {
      worker: key,
      previousReason: changes.autoExclusion.previousReason,
    });
  }
  if (changes.completedEvent !== null)
    log(out, 'info', 'master.worker.eventCompleted', { worker: key, event: changes.completedEvent });
  if (changes.backInService) log(out, 'info', 'master.worker.backInService', { worker: key });
  const membershipChanged =
    changes.autoExclusion !== null ||
    changes.completedEvent !== null ||
    changes.backInService ||
    sectionsChanged(s.durable.workers, registry, key);
  const reported = registry.workers.get(key)?.disks;
  // A heartbeat alone (its time, disk numbers within the same budgets) is not persisted: after a restart every
  // worker gets a full timeout to report. Any change of the sections the worker is in is (./layout.ts writes only
  // the entries a step touched), and so is a change of a disk's budget or status (./written-disks.ts), which a
  // restored master would otherwise offer from the entry's older disks once the bookings were swept.
  const disksChanged =
    reported !== undefined &&
    disksNeedWriting(s.writtenDisks.get(key), reported, s.durable.estimatedPartitionSize);
  return withoutObsoleteBookings(
    membershipChanged || disksChanged
      ? withWorkers(s, out, registry, [key])
      : { ...s, durable: { ...s.durable, workers: registry } },
    out,
  );
}

/** Whether the worker joined or left a section of the registry other than the registered workers. */
function sectionsChanged(before: WorkerRegistry, after: WorkerRegistry, key: WorkerKey): boolean {
  return WORKER_SECTIONS.some(
    (section) => section !== 'workers' && before[section].has(key) !== after[section].has(key),
  );
}

export function handleWorkerReport(
  s: MasterState,
  out: MasterOutbox,
  message: ReportWorkerUnavailable | ReportWorkerDecommission | ReportWorkerLost,
): MasterState {
  const key = workerKey(message.worker);
  switch (message.type) {
    case 'ReportWorkerUnavailable': {
      const result = reportWorkersUnavailable(s.durable.workers, [key], out.now);
      if (result.unknown.length > 0) return unknownReporter(s, out, key, message.type);
      log(out, 'info', 'master.worker.shuttingDown', { worker: key });
      return withWorkers(s, out, result.registry, [key]);
    }
    case 'ReportWorkerDecommission': {
      const result = reportWorkersDecommissioning(s.durable.workers, [key], out.now);
      if (result.unknown.length > 0) return unknownReporter(s, out, key, message.type);
      log(out, 'info', 'master.worker.decommissioning', { worker: key });
      return withWorkers(s, out, result.registry, [key]);
    }
    case 'ReportWorkerLost':
      // The worker's own word that it exits immediately: a planned stop, not a loss.
      return workerStopped(s, out, key, { immediately: true });
  }
}

/**
 * A worker reported its own exit: stopped, not lost (no `master.worker.lost`, no LostWorkerCount), and out of the
 * decommissioning list. Its exit heartbeat after a ReportWorkerLost is the same news again and changes nothing.
 */
function workerStopped(
  s: MasterState,
  out: MasterOutbox,
  key: WorkerKey,
  reported: { readonly immediately: boolean },
): MasterState {
  const { registry, stop } = recordWorkerStopped(s.durable.workers, key, out.now, reported);
  switch (stop.outcome) {
    case 'unknown':
      log(out, 'debug', 'master.worker.unknownExit', {
        worker: key,
        note: 'a worker the master does not know (never registered, or forgotten) reported its exit',
      });
      return s;
    case 'alreadyStopped':
      return s;
    case 'stopped':
      log(out, 'info', 'master.worker.stopped', { worker: key, exit: stop.exitKind });
      if (stop.completedEvent !== null)
        log(out, 'info', 'master.worker.eventCompleted', { worker: key, event: stop.completedEvent });
      return withWorkers(s, out, registry, [key]);
  }
}

/** Every heartbeat timeout: workers silent for longer than the timeout are lost. */
export function checkLostWorkers(s: MasterState, out: MasterOutbox): MasterState {
  const timeout = s.config.workerHeartbeatTimeoutMs;
  const { registry, lost } = detectLostWorkers(s.durable.workers, out.now, timeout);
  if (lost.length === 0) return s;
  for (const key of lost)
    log(out, 'warn', 'master.worker.lost', {
      worker: key,
      cause: `no heartbeat for more than ${timeout} ms`,
    });
  return withoutObsoleteBookings(withWorkers(s, out, registry, lost), out);
}

/** Forgets lost workers after `svc.master.workerUnavailableInfo.expireTimeout`. */
export function expireUnavailableWorkers(s: MasterState, out: MasterOutbox): MasterState {
  const { registry, expired } = expireUnavailableInfo(
    s.durable.workers,
    out.now,
    s.config.workerUnavailableInfo.expireTimeoutMs,
  );
  if (expired.length === 0) return s;
  log(out, 'info', 'master.worker.unavailableInfoExpired', { workers: expired });
  return withWorkers(s, out, registry, expired);
}

function unknownReporter(s: MasterState, out: MasterOutbox, key: string, report: string): MasterState {
  log(out, 'warn', 'master.worker.unknownReport', {
    worker: key,
    report,
    hint: 'the worker is not registered (or already lost)',
  });
  return s;
}
