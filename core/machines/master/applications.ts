import { DEFAULT_RACK, shuffleKey, workerKey, type WorkerId, type WorkerKey } from '../../domain/index.ts';
import {
  availableWorkers,
  bookOfferedSlots,
  decommissioningWorkers,
  excludedWorkers,
  expireApplications,
  goneWorkers,
  recordApplicationHeartbeat,
  recordApplicationIdentity,
  registerShuffle,
  type ApplicationRecord,
  shutdownWorkers,
  takePartitionSizeSample,
  unregisterApplication,
  workerAvailability,
  unregisterShuffle,
  type WorkerRegistry,
} from '../../lifecycle/index.ts';
import type {
  ApplicationHeartbeat,
  GetApplicationSecret,
  RegisterApplication,
  RequestSlots,
  RequestSlotsResponse,
  UnregisterApplication,
  UnregisterShuffle,
} from '../../protocol/messages.ts';
import {
  offerSlots,
  updateEstimatedPartitionSize,
  type OfferOptions,
  type SlotOffer,
} from '../../slots/index.ts';
import type { Envelope } from '../effects.ts';
import { admitted } from '../admission.ts';
import { applicationOf, authorizationFailure, refuseUnauthenticated } from '../authorization.ts';
import { replyToOf } from '../outbox.ts';
import { count, log, reply } from '../outbox.ts';
import { newBooking } from './bookings.ts';
import { withApplications, withBooking, type MasterOutbox } from './outbox.ts';
import { interruption, quotaRefusal } from './quota.ts';
import { checkLostWorkers } from './workers.ts';
import type { MasterState } from './state.ts';

/** The tenant of an application whose client names none (`svc.identity.user-specific.tenant`'s default). */
const DEFAULT_TENANT = 'default';

/**
 * The master's side of applications: admission by release, heartbeats (which feed the estimated partition size and
 * tell the client which workers to avoid), slot offers through core/slots, shuffle and application release, and the
 * expiry of applications that stopped heartbeating.
 */
export function handleRegisterApplication(
  s: MasterState,
  out: MasterOutbox,
  envelope: Envelope,
  message: RegisterApplication,
): MasterState {
  if (!admitted(out, 'master', s.config.release, envelope, true)) return s;
  const record = s.durable.applications.apps.get(message.appId);
  const authEnabled = s.config.authEnabled === true;
  if (authEnabled) {
    const refusal = registrationRefusal(record, envelope, message);
    if (refusal !== null) {
      refuseUnauthenticated(out, 'master', envelope, refusal);
      return s;
    }
  }
  const registry = recordApplicationIdentity(
    s.durable.applications,
    message.appId,
    {
      // Without authentication a secret means nothing and is not kept.
      ...(authEnabled && message.secret !== undefined && message.secret !== ''
        ? { secret: message.secret }
        : {}),
      ...(message.hostname === undefined || message.hostname === '' ? {} : { hostname: message.hostname }),
      user: { tenant: message.tenant ?? DEFAULT_TENANT, name: message.user },
    },
    out.now,
  );
  log(out, 'info', 'master.application.registered', {
    appId: message.appId,
    user: message.user,
    tenant: message.tenant ?? DEFAULT_TENANT,
    again: record !== undefined,
    ...(message.hostname === undefined ? {} : { hostname: message.hostname }),
  });
  reply(out, replyToOf(envelope), {
    type: 'StatusResponse',
    status: 'SUCCESS',
    message: `application ${message.appId} registered with master release ${s.config.release}`,
  });
  return withApplications(s, out, registry, [message.appId]);
}

/**
 * With authentication on, why a registration is refused (null: accepted). The first registration of an
 * application records its secret, from any connection, since nothing could be proved before the secret is known;
 * from then on only a connection that proved that secret may register the application again, and the secret
 * cannot be replaced (so nobody can take over a running application's identity).
 */
function registrationRefusal(
  record: ApplicationRecord | undefined,
  envelope: Envelope,
  message: RegisterApplication,
): string | null {
  if (record?.secret !== undefined) {
    const failure = authorizationFailure(envelope.principal, applicationOf(message.appId));
    if (failure !== null) {
      return `application ${message.appId} is registered with a secret, and this connection did not prove it: ${failure}`;
    }
    if (message.secret !== undefined && message.secret !== record.secret) {
      return `application ${message.appId} is registered with another secret, which cannot be replaced`;
    }
    return null;
  }
  if (message.secret === undefined || message.secret === '') {
    return (
      `authentication is on (svc.auth.enabled): application ${message.appId} must register a secret; ` +
      'set svc.auth.enabled=true on the client too'
    );
  }
  return null;
}

/**
 * A worker asks for an application's secret, to check a connection that claims the application (only servers may
 * ask: ./machine.ts requires it). Answered not found when the master knows none.
 */
export function handleGetApplicationSecret(
  s: MasterState,
  out: MasterOutbox,
  envelope: Envelope,
  message: GetApplicationSecret,
): MasterState {
  const secret = s.durable.applications.apps.get(message.appId)?.secret;
  reply(out, replyToOf(envelope), {
    type: 'ApplicationSecretResponse',
    appId: message.appId,
    found: secret !== undefined,
    secret: secret ?? '',
  });
  return s;
}

export function handleApplicationHeartbeat(
  s: MasterState,
  out: MasterOutbox,
  envelope: Envelope,
  message: ApplicationHeartbeat,
): MasterState {
  if (!admitted(out, 'master', s.config.release, envelope)) return s;
  // The answer lists the workers a revive may move partitions to: silence is judged now, as before an offer.
  s = checkLostWorkers(s, out);
  const known = s.durable.applications.apps.has(message.appId);
  const { registry, warning, revised } = recordApplicationHeartbeat(s.durable.applications, message, out.now);
  if (warning !== null) log(out, 'warn', 'master.application.badCounts', { appId: message.appId, warning });
  if (revised.length > 0)
    log(out, 'warn', 'master.application.shufflesRevised', {
      appId: message.appId,
      shuffleIds: revised.join(','),
      hint: 'the application named shuffles this master did not have (it started without its state); registered again',
    });
  const workers = s.durable.workers;
  reply(out, replyToOf(envelope), {
    type: 'ApplicationHeartbeatResponse',
    excludedWorkers: excludedWorkers(workers),
    // The reference answers which of the client's workers it does not know; the client sends no list here, so the
    // master names the workers it knows to be gone: the lost and the stopped ones.
    unknownWorkers: goneWorkers(workers),
    shuttingWorkers: [...shutdownWorkers(workers), ...decommissioningWorkers(workers)],
    // svc addition: the workers a revive may move partitions to (docs/core.md, Revive candidates).
    availableWorkers: availableWorkers(workers).map((worker) => ({
      worker: worker.id,
      networkLocation: worker.networkLocation,
    })),
    ...quotaStatusOf(s, message.appId),
  });
  // Only a new application or revised shuffles are worth a write; heartbeat times and byte counts are rebuilt after a restart.
  return known && revised.length === 0
    ? { ...s, durable: { ...s.durable, applications: registry } }
    : withApplications(s, out, registry, [message.appId]);
}

export function handleRequestSlots(
  s: MasterState,
  out: MasterOutbox,
  envelope: Envelope,
  message: RequestSlots,
): MasterState {
  if (!admitted(out, 'master', s.config.release, envelope)) return s;
  // Silence is judged when slots are offered, not only when the check's timer comes: a master that took no input for a
  // while (a pause, a busy loop) may find this request before the timer, and must not offer a worker it has not heard
  // from within the heartbeat timeout (docs/core/machines-master-worker.md, "Lost workers").
  s = checkLostWorkers(s, out);
  const key = shuffleKey(message.appId, message.shuffleId);
  const { config, durable } = s;
  const refusal = isShuffleRegistered(s, message.appId, message.shuffleId)
    ? undefined
    : quotaRefusal(s, message.appId);
  if (refusal !== undefined) {
    log(out, 'warn', 'master.quota.refused', {
      shuffle: key,
      user: refusal.over.subject,
      quota: refusal.over.key,
      usage: refusal.over.usage,
      limit: refusal.over.limit,
    });
    count(out, 'RequestSlotsFailed', 1, { statusCode: 'QUOTA_EXCEEDED' });
    reply(out, replyToOf(envelope), slotsResponse('QUOTA_EXCEEDED', [], [], refusal.message));
    return s;
  }
  const { available, unavailable } = workerAvailability(durable.workers);
  const options: OfferOptions = {
    policy: config.slots.policy,
    budgetMode: config.slots.budgetMode,
    estimatedPartitionSize: durable.estimatedPartitionSize,
    maxWorkers: config.slots.maxWorkers,
    extraSlots: config.slots.extraSlots,
    ...(config.slots.minWorkers === undefined ? {} : { minWorkers: config.slots.minWorkers }),
    unavailable,
    ...(config.plantedBug === undefined ? {} : { plantedBug: config.plantedBug }),
  };
  let offer: SlotOffer;
  try {
    offer = offerSlots(
      {
        partitionIds: message.partitionIds,
        replicate: message.replicate,
        rackAware: message.rackAware,
        availableStorageTypes: message.availableTypes,
        maxWorkers: message.maxWorkers,
        excludedWorkers: new Set(message.excludedWorkers),
      },
      available,
      options,
      out.rng,
    );
  } catch (error) {
    // offerSlots throws only for invalid configuration: say so to the client and the operator alike.
    const text = `the master cannot offer slots: ${error instanceof Error ? error.message : String(error)}`;
    log(out, 'error', 'master.slots.misconfigured', { shuffle: key, message: text });
    count(out, 'RequestSlotsFailed', 1, { statusCode: 'REQUEST_FAILED' });
    reply(out, replyToOf(envelope), slotsResponse('REQUEST_FAILED', [], [], text));
    return s;
  }
  const placed = offer.slots.reduce((sum, slots) => sum + slots.primaries.length, 0);
  const text =
    `offered ${placed} of ${message.partitionIds.length} partition(s) of ${key} on ${offer.slots.length} worker(s)` +
    ` plus ${offer.padding.length} padding worker(s)` +
    (offer.unplaced.length === 0 ? '' : `; ${offer.unplaced.length} could not be placed (see unplaced)`) +
    (offer.overcommitted === 0 ? '' : `; ${offer.overcommitted} copies beyond disk budgets`);
  const rackOf = (worker: WorkerId): string =>
    s.durable.workers.workers.get(workerKey(worker))?.networkLocation ?? DEFAULT_RACK;
  // The offer's slots are already the answer's entries (core/slots WorkerSlots): only the few padding workers are new.
  const workerResource: RequestSlotsResponse['workerResource'] =
    offer.padding.length === 0
      ? offer.slots
      : [
          ...offer.slots,
          ...offer.padding.map((worker) => ({
            worker,
            networkLocation: rackOf(worker),
            primaries: [],
            replicas: [],
          })),
        ];
  reply(out, replyToOf(envelope), slotsResponse(offer.status, workerResource, offer.unplaced, text));
  if (offer.status !== 'SUCCESS') {
    log(out, 'warn', 'master.slots.notAllPlaced', {
      shuffle: key,
      status: offer.status,
      unplaced: offer.unplaced.length,
      firstReason: offer.unplaced[0]?.reason,
      available: available.length,
    });
    count(out, 'RequestSlotsFailed', 1, { statusCode: offer.status });
  }
  if (offer.slots.length === 0) return s;
  const booked = bookOfferedSlots(durable.workers, offer.diskAllocations, durable.estimatedPartitionSize);
  if (booked.unmatched.length > 0)
    log(out, 'warn', 'master.slots.unmatchedAllocation', { unmatched: booked.unmatched });
  const registered = registerShuffle(durable.applications, message.appId, message.shuffleId, out.now);
  // Booked slots are written before the offer goes out, like the shuffle's registration: a master that restarted
  // without them would offer the same budget again before the workers' next heartbeats (swarm seed 268654: an
  // offer for an already registered shuffle, then two master crashes, then the disk offered twice over). They are
  // written as the offer's own keys (./bookings.ts), not as rewrites of the booked workers' entries.
  const booking = newBooking(
    durable.workers,
    booked.registry,
    bookedWorkers(durable.workers, booked.registry, offer),
    out.now,
  );
  const state = withBooking(s, out, booked.registry, booking);
  return registered.alreadyRegistered
    ? state
    : withApplications(state, out, registered.registry, [message.appId]);
}

/**
 * The workers whose entries a booking changed: those offered slots, and those sharing a filesystem with them (their
 * shared space is booked too, lifecycle/registry.ts `bookOfferedSlots`), found by the entries that changed.
 */
function bookedWorkers(before: WorkerRegistry, after: WorkerRegistry, offer: SlotOffer): WorkerKey[] {
  const keys = [...offer.diskAllocations.keys()];
  const sharesFilesystem = keys.some((key) =>
    after.workers.get(key)?.disks.some((disk) => disk.filesystem !== undefined),
  );
  if (!sharesFilesystem) return keys;
  const changed: WorkerKey[] = [];
  for (const [key, worker] of after.workers) if (before.workers.get(key) !== worker) changed.push(key);
  return changed;
}

export function handleUnregisterShuffle(
  s: MasterState,
  out: MasterOutbox,
  envelope: Envelope,
  message: UnregisterShuffle,
): MasterState {
  if (!admitted(out, 'master', s.config.release, envelope)) return s;
  const key = shuffleKey(message.appId, message.shuffleId);
  const { registry, wasRegistered } = unregisterShuffle(
    s.durable.applications,
    message.appId,
    message.shuffleId,
  );
  log(out, 'info', 'master.shuffle.unregistered', { shuffle: key, wasRegistered });
  reply(out, replyToOf(envelope), {
    type: 'StatusResponse',
    status: 'SUCCESS',
    message: wasRegistered
      ? `${key} unregistered; workers release it at their next heartbeat`
      : `${key} was not registered; nothing to do`,
  });
  return wasRegistered ? withApplications(s, out, registry, [message.appId]) : s;
}

export function handleUnregisterApplication(
  s: MasterState,
  out: MasterOutbox,
  envelope: Envelope,
  message: UnregisterApplication,
): MasterState {
  if (!admitted(out, 'master', s.config.release, envelope)) return s;
  const { registry, shuffles } = unregisterApplication(s.durable.applications, message.appId);
  log(out, 'info', 'master.application.unregistered', { appId: message.appId, shuffles });
  reply(out, replyToOf(envelope), {
    type: 'StatusResponse',
    status: 'SUCCESS',
    message:
      shuffles === null
        ? `application ${message.appId} was not registered; nothing to do`
        : `application ${message.appId} unregistered with ${shuffles.length} shuffle(s); workers release them at their next heartbeat`,
  });
  const remembered = isNew(s, out.now) ? { ...s, endedApps: new Set(s.endedApps).add(message.appId) } : s;
  return shuffles === null ? remembered : withApplications(remembered, out, registry, [message.appId]);
}

/** Less than an application timeout since the master began serving (lifecycle/applications.ts `shuffleExpiry`). */
function isNew(s: MasterState, now: number): boolean {
  return now - s.servingSince < s.config.applicationTimeoutMs;
}

/** Every half application timeout: applications silent for longer than the timeout are lost. */
export function checkApplications(s: MasterState, out: MasterOutbox): MasterState {
  const timeout = s.config.applicationTimeoutMs;
  const { registry, expired } = expireApplications(s.durable.applications, out.now, timeout);
  if (s.endedApps.size > 0 && !isNew(s, out.now)) s = { ...s, endedApps: new Set() };
  if (expired.length === 0) return s;
  for (const { appId, shuffles } of expired) {
    log(out, 'warn', 'master.application.lost', {
      appId,
      shuffles,
      cause: `no heartbeat for more than ${timeout} ms`,
    });
  }
  return withApplications(
    s,
    out,
    registry,
    expired.map(({ appId }) => appId),
  );
}

/** Every update interval: the estimate becomes the average file size written since the last update (core/slots). */
export function updatePartitionSize(s: MasterState, out: MasterOutbox): MasterState {
  const { registry, sample } = takePartitionSizeSample(s.durable.applications);
  const previous = s.durable.estimatedPartitionSize;
  const estimate = updateEstimatedPartitionSize(
    previous,
    { bytesWritten: sample.bytes, fileCount: sample.files },
    s.config.partitionSize,
  );
  if (estimate !== previous) log(out, 'info', 'master.partitionSize.updated', { previous, estimate, sample });
  out.touched.meta = true;
  return { ...s, durable: { ...s.durable, applications: registry, estimatedPartitionSize: estimate } };
}

/** A retried RequestSlots of a shuffle already registered is not a new shuffle: the quota let it in. */
function isShuffleRegistered(s: MasterState, appId: string, shuffleId: number): boolean {
  return s.durable.applications.apps.get(appId)?.shuffles.includes(shuffleId) === true;
}

function quotaStatusOf(s: MasterState, appId: string): { quotaExceeded?: string } {
  const message = interruption(s, appId);
  return message === undefined ? {} : { quotaExceeded: message };
}

function slotsResponse(
  status: RequestSlotsResponse['status'],
  workerResource: RequestSlotsResponse['workerResource'],
  unplaced: RequestSlotsResponse['unplaced'],
  message: string,
): RequestSlotsResponse {
  return { type: 'RequestSlotsResponse', status, workerResource, unplaced, message };
}
