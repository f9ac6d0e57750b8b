import {
  partitionFileName,
  shuffleKey as shuffleKeyOf,
  workerKey,
  type PartitionLocation,
  type StorageInfo,
} from '../../domain/index.ts';
import { STATE_POLICIES } from '../../lifecycle/worker-states.ts';
import { liftForReserve } from '../../replication/index.ts';
import type { ReserveSlots } from '../../protocol/messages.ts';
import { chooseTierForNewFile, type TierChoice } from '../../storage/index.ts';
import type { Envelope, IoError } from '../effects.ts';
import { admitted } from '../admission.ts';
import { replyToOf } from '../outbox.ts';
import {
  fileDraft,
  fileId,
  filesPerStep,
  getFile,
  putFile,
  putShuffle,
  shuffleRecord,
  shuffleUser,
} from './files.ts';
import { count, log, reply, setEntry, setTimer, type Outbox } from '../outbox.ts';
import {
  owned,
  takeId,
  type OpPurpose,
  type PartitionFile,
  type PendingReserve,
  type WorkerMachineState,
} from './state.ts';
import { hasAnyStorage, noteDiskFailure, storageView } from './storage-view.ts';

/**
 * ReserveSlots: create one file per location on the tier core/storage chooses, and answer SUCCESS once every file
 * exists, or RESERVE_SLOTS_FAILED (after deleting what this request created) when any location could not get one.
 */
export function handleReserveSlots(
  s: WorkerMachineState,
  out: Outbox,
  envelope: Envelope,
  message: ReserveSlots,
): WorkerMachineState {
  const replyTo = replyToOf(envelope);
  if (!admitted(out, 'worker', s.config.release, envelope, true)) return s;
  const key = shuffleKeyOf(message.appId, message.shuffleId);
  const refuse = (
    status: 'WORKER_SHUTDOWN' | 'NO_AVAILABLE_WORKING_DIR' | 'RESERVE_SLOTS_FAILED',
    text: string,
  ) => {
    log(out, 'warn', 'worker.reserve.refused', { shuffle: key, status, message: text });
    reply(out, replyTo, { type: 'StatusResponse', status, message: text });
    return s;
  };
  const refusal = STATE_POLICIES[s.lifecycle.state].reserveRefusal;
  if (refusal !== null) {
    return refuse(
      refusal,
      `worker ${workerKey(s.config.id)} is ${s.lifecycle.state} and takes no new slots; reserve on another worker`,
    );
  }
  if (!hasAnyStorage(s)) {
    return refuse(
      'NO_AVAILABLE_WORKING_DIR',
      `worker ${workerKey(s.config.id)} has no healthy disk with free space, no distributed tier and no memory tier`,
    );
  }
  const self = workerKey(s.config.id);
  const locations: PartitionLocation[] = [...message.primaries, ...message.replicas];
  const foreign = locations.filter((location) => workerKey(location.worker) !== self);
  if (foreign.length > 0) {
    return refuse(
      'RESERVE_SLOTS_FAILED',
      `${foreign.length} location(s) name another worker (first: ${workerKey(foreign[0]!.worker)}), not ${self}; the reserve was sent to the wrong worker`,
    );
  }

  const reserveId = takeId(s);
  const state = withPeersPlacedAgain(s, out, key, message.primaries);
  const pending: PendingReserve = {
    replyTo,
    shuffleKey: key,
    shuffle: {
      appId: message.appId,
      shuffleId: message.shuffleId,
      splitThreshold: message.splitThreshold,
      splitMode: message.splitMode,
      memoryEnabled: message.memoryEnabled,
      user: shuffleUser(message.user, message.tenant),
    },
    creating: new Set(),
    created: [],
    failures: [],
    locations,
    next: 0,
  };
  return startLocations(state, out, reserveId, pending);
}

/** The timer that goes on with a reserve's locations in the next step (followed by the reserve's id). */
export const RESERVE_STEP_TIMER = 'reserve:';

/**
 * Goes on with a reserve whose locations did not all fit one step (RESERVE_STEP_TIMER): creating 10,000 files in
 * one step held the worker's event loop for hundreds of milliseconds (docs/performance.md).
 */
export function continueReserve(s: WorkerMachineState, out: Outbox, reserveId: number): WorkerMachineState {
  const pending = s.reserves.get(reserveId);
  if (pending === undefined || pending.next >= pending.locations.length) return s;
  return startLocations(s, out, reserveId, pending);
}

/** Starts the creation of the request's next locations, at most filesPerStep of them; the rest go on next step. */
function startLocations(
  s: WorkerMachineState,
  out: Outbox,
  reserveId: number,
  from: PendingReserve,
): WorkerMachineState {
  const key = from.shuffleKey;
  let state = s;
  let pending = from;
  const end = Math.min(from.locations.length, from.next + filesPerStep(s));
  const choose = tierChooser(s);
  for (let k = from.next; k < end; k += 1) {
    const location = from.locations[k]!;
    const name = partitionFileName(location);
    const existing = getFile(state, key, name);
    if (existing !== undefined) {
      // A retried reserve finds its file open and is fine with it; any other state means the name is used up.
      if (existing.status !== 'open')
        pending = withFailure(pending, `${name}: the file exists already (${existing.status})`);
      continue;
    }
    const choice = choose(location.storage);
    // Drafted on the chosen tier at once (the master offers disks; a memory tier takes most files).
    const chosen = choice.kind === 'chosen';
    const file = fileDraft({
      name,
      location,
      file: {
        id: fileId(key, name),
        tier: chosen ? choice.tier : location.storage.type,
        mountPoint: chosen ? choice.mountPoint : location.storage.mountPoint,
      },
      status: 'open',
      bytes: 0,
      chunkStarts: [0],
      queue: [],
    });
    const started = startCreate(state, out, reserveId, pending, file, 1, choice);
    state = started.state;
    pending = started.pending;
  }
  pending = { ...pending, next: end };
  if (end < from.locations.length) setTimer(out, `${RESERVE_STEP_TIMER}${reserveId}`, out.now);
  return settle(state, out, reserveId, pending);
}

/** A reserve naming a marked peer for one of its primaries gives that peer another chance (core/replication). */
function withPeersPlacedAgain(
  s: WorkerMachineState,
  out: Outbox,
  shuffle: string,
  primaries: readonly PartitionLocation[],
): WorkerMachineState {
  const placed: string[] = [];
  for (const location of primaries)
    if (location.peer !== undefined) placed.push(workerKey(location.peer.worker));
  const { peers, lifted } = liftForReserve(s.unavailablePeers, placed);
  if (lifted.length === 0) return s;
  log(out, 'info', 'worker.replicate.peerRetried', {
    shuffle,
    peers: lifted,
    reason: 'the master placed a replica there since the connect failed; the next push connects again',
  });
  return { ...s, unavailablePeers: peers };
}

/** Completion of a createFile: the file joins the request, or another tier or disk is tried, or the location fails. */
export function completeCreate(
  s: WorkerMachineState,
  out: Outbox,
  purpose: Extract<OpPurpose, { kind: 'create' }>,
  result: { readonly ok: true } | { readonly ok: false; readonly error: IoError },
): WorkerMachineState {
  const pending = s.reserves.get(purpose.reserveId);
  const { file } = purpose;
  if (pending === undefined) {
    if (result.ok) out.effects.push({ kind: 'deleteFile', file: file.file });
    return s;
  }
  owned(pending.creating).delete(file.name);
  let next = pending;
  let state = s;
  if (result.ok) {
    owned(pending.created).push(file);
  } else {
    state = noteDiskFailure(state, out, file.file, result.error);
    log(out, 'warn', 'worker.reserve.createFailed', {
      file: file.file.id,
      tier: file.file.tier,
      mountPoint: file.file.mountPoint,
      error: result.error,
      attempt: purpose.attempt,
    });
    if (result.error === 'EXISTS' && isLeftover(state, pending, purpose)) {
      // A file this worker has no record of, that no reservation is creating: left on the disk by an incarnation
      // before a crash or a restart, which never committed it (a committed file is restored, and known). Nobody
      // can read it; keeping it would make this name fail forever, since the lifecycle manager asks again for the
      // same location (swarm seed 637959).
      log(out, 'warn', 'worker.reserve.leftoverDeleted', {
        file: file.file.id,
        mountPoint: file.file.mountPoint,
      });
      out.effects.push({ kind: 'deleteFile', file: file.file });
      const op = takeId(state);
      out.effects.push({ kind: 'createFile', op, file: file.file });
      setEntry(state.ops, op, { ...purpose, leftoverDeleted: true });
      owned(next.creating).add(file.name);
      return settle(state, out, purpose.reserveId, next);
    }
    if (result.error !== 'EXISTS' && purpose.attempt < s.config.createFileMaxAttempts) {
      const choice = tierChooser(state)(file.location.storage);
      const retried = startCreate(state, out, purpose.reserveId, next, file, purpose.attempt + 1, choice);
      return settle(retried.state, out, purpose.reserveId, retried.pending);
    }
    next = withFailure(
      next,
      `${file.name}: creating it on ${describeTier(file.file.tier, file.file.mountPoint)} failed with ${result.error} (attempt ${purpose.attempt})`,
    );
  }
  return settle(state, out, purpose.reserveId, next);
}

/**
 * Whether a file that exists on the disk is a leftover: this worker has no record of it and no other reservation
 * is creating it or has created it (a duplicated ReserveSlots may be working on the same name at this moment; that
 * file is not garbage). Tried once per create, so a file that keeps coming back fails the location instead of
 * looping.
 */
function isLeftover(
  s: WorkerMachineState,
  pending: PendingReserve,
  purpose: Extract<OpPurpose, { kind: 'create' }>,
): boolean {
  const name = purpose.file.name;
  if (purpose.leftoverDeleted === true || getFile(s, pending.shuffleKey, name) !== undefined) return false;
  for (const [id, other] of s.reserves) {
    if (id === purpose.reserveId || other.shuffleKey !== pending.shuffleKey) continue;
    if (other.creating.has(name) || other.created.some((created) => created.name === name)) return false;
  }
  return true;
}

/**
 * The tier choice for new files in one step. The worker's storage does not change within a step, and the locations
 * of a request name the same storage thousands of times over, so a run of locations offered the same storage shares
 * one choice: one walk of the create policy per run rather than per file.
 */
function tierChooser(s: WorkerMachineState): (storage: StorageInfo) => TierChoice {
  const view = storageView(s);
  const options = { memoryNeedsExplicitGrant: s.config.memory.refuseImplicitMemory };
  let last: { readonly storage: StorageInfo; readonly choice: TierChoice } | undefined;
  return (storage) => {
    if (last !== undefined && sameStorage(last.storage, storage)) return last.choice;
    const choice = chooseTierForNewFile(s.config.createFilePolicy, storage, view, options);
    last = { storage, choice };
    return choice;
  };
}

function sameStorage(a: StorageInfo, b: StorageInfo): boolean {
  return (
    a === b || (a.type === b.type && a.mountPoint === b.mountPoint && a.availableTypes === b.availableTypes)
  );
}

/** Issues one location's createFile on the chosen tier; a location no tier can take fails at once. */
function startCreate(
  s: WorkerMachineState,
  out: Outbox,
  reserveId: number,
  pending: PendingReserve,
  file: PartitionFile,
  attempt: number,
  choice: TierChoice,
): { state: WorkerMachineState; pending: PendingReserve } {
  if (choice.kind === 'none') {
    return { state: s, pending: withFailure(pending, `${file.name}: ${choice.message}`) };
  }
  if (choice.implicitMemory && !pending.shuffle.memoryEnabled) {
    // Contract rule 4 in action: an old client's mask 0 lets its data into memory it never asked for.
    log(out, 'warn', 'worker.reserve.implicitMemory', {
      shuffle: pending.shuffleKey,
      file: file.name,
      hint: 'the application did not enable MEMORY; turn on the worker memory guard to refuse this',
    });
    count(out, 'ImplicitMemoryFileCount', 1, { applicationId: pending.shuffle.appId });
  }
  // A file drafted on the chosen tier keeps its record; a retry may choose another tier or disk.
  const placed: PartitionFile =
    file.file.tier === choice.tier && file.file.mountPoint === choice.mountPoint
      ? file
      : fileDraft(file, { file: { ...file.file, tier: choice.tier, mountPoint: choice.mountPoint } });
  const op = takeId(s);
  out.effects.push({ kind: 'createFile', op, file: placed.file });
  setEntry(s.ops, op, { kind: 'create', reserveId, file: placed, attempt });
  owned(pending.creating).add(file.name);
  return { state: s, pending };
}

/** Stores the request while files are still being created; otherwise answers it. */
function settle(
  s: WorkerMachineState,
  out: Outbox,
  reserveId: number,
  pending: PendingReserve,
): WorkerMachineState {
  if (pending.creating.size > 0 || pending.next < pending.locations.length) {
    setEntry(s.reserves, reserveId, pending);
    return s;
  }
  setEntry(s.reserves, reserveId, undefined);
  const key = pending.shuffleKey;
  if (pending.failures.length > 0) {
    for (const file of pending.created) out.effects.push({ kind: 'deleteFile', file: file.file });
    const text = `worker ${workerKey(s.config.id)} could not reserve ${pending.failures.length} location(s) of ${key}: ${pending.failures.join('; ')}`;
    log(out, 'warn', 'worker.reserve.failed', { shuffle: key, failures: pending.failures });
    reply(out, pending.replyTo, { type: 'StatusResponse', status: 'RESERVE_SLOTS_FAILED', message: text });
    return s;
  }
  const shuffle =
    s.shuffles.get(key) ?? shuffleRecord({ ...pending.shuffle, files: new Map(), mapAttempts: undefined });
  let next = putShuffle(s, key, shuffle);
  for (const file of pending.created) next = putFile(next, key, file);
  count(out, 'SlotsAllocated', pending.created.length);
  log(out, 'debug', 'worker.reserve.done', { shuffle: key, files: pending.created.length });
  reply(out, pending.replyTo, {
    type: 'StatusResponse',
    status: 'SUCCESS',
    message: `reserved ${pending.created.length} new location(s) of ${key}`,
  });
  return next;
}

function withFailure(pending: PendingReserve, failure: string): PendingReserve {
  return { ...pending, failures: [...pending.failures, failure] };
}

function describeTier(tier: string, mountPoint: string): string {
  return mountPoint === '' ? tier : `${tier} ${mountPoint}`;
}
