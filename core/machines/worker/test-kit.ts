import type { PartitionLocation, PartitionMode, StorageInfo, WorkerId } from '../../domain/index.ts';
import { encodeBatchFrame } from '../../protocol/batch-frame.ts';
import { masterNodeId } from '../../protocol/node-ids.ts';
import type {
  CommitFiles,
  Message,
  MessageOf,
  MessageType,
  PushData,
  PushMergedData,
} from '../../protocol/messages.ts';
import { CURRENT_RELEASE, type Release } from '../../release/version.ts';
import { replayRng } from '../../rng.ts';
import type { BatchableIo, Effect, Input, IoCompletion, IoError, NodeId, Principal } from '../effects.ts';
import type { Machine } from '../machine.ts';
import { isBatchable } from './io-batch.ts';
import type { WorkerConfig } from './config.ts';
import { workerMachine } from './machine.ts';
import { initialWorkerState, type WorkerMachineState } from './state.ts';
import { testWorkerConfig } from './testing.ts';

/**
 * Test support for the master and worker machines: a hand-cranked driver that feeds inputs one at a time and keeps
 * every effect, plus builders for the messages the tests send. Nothing here decides anything; it only saves tests
 * from repeating envelopes and effect filters.
 */
export class Harness<S> {
  now = 0;
  readonly all: Effect[] = [];

  constructor(
    private readonly machine: Machine<S>,
    public state: S,
  ) {}

  /** Feeds one input at the current time; returns the effects of that step. */
  step(input: Input): Effect[] {
    const result = this.machine.step(this.state, input, this.now, replayRng([0.25, 0.5, 0.75]));
    this.state = result.state;
    const effects = [...result.effects];
    this.all.push(...effects);
    return effects;
  }

  start(recovered: ReadonlyMap<string, string> = new Map()): Effect[] {
    return this.step({ kind: 'start', recovered });
  }

  receive(
    from: NodeId,
    message: Message,
    options: { requestId?: number; inReplyTo?: number; fromRelease?: Release; principal?: Principal } = {},
  ): Effect[] {
    return this.step({
      kind: 'receive',
      envelope: {
        from,
        to: 'under-test',
        fromRelease: options.fromRelease ?? CURRENT_RELEASE,
        message,
        ...(options.principal === undefined ? {} : { principal: options.principal }),
        ...(options.requestId === undefined ? {} : { requestId: options.requestId }),
        ...(options.inReplyTo === undefined ? {} : { inReplyTo: options.inReplyTo }),
      },
    });
  }

  timer(name: string, at?: number): Effect[] {
    if (at !== undefined) this.now = at;
    return this.step({ kind: 'timer', name });
  }

  ioDone(op: number, bytes?: Uint8Array): Effect[] {
    return this.step({ kind: 'ioDone', op, ...(bytes === undefined ? {} : { bytes }) });
  }

  ioFailed(op: number, error: IoError = 'IO_ERROR'): Effect[] {
    return this.step({ kind: 'ioFailed', op, error });
  }

  /**
   * Completes every I/O operation in `effects` (and in what their completions cause) successfully, in order: a lone
   * operation with its ioDone, an `ioBatch` with one ioBatchDone, as a driver would.
   */
  completeIo(
    effects: readonly Effect[],
    read: (file: string, offset: number, length: number) => Uint8Array = (_f, _o, l) => new Uint8Array(l),
  ): Effect[] {
    const done = (op: IoEffect): IoCompletion =>
      op.kind === 'read'
        ? { kind: 'ioDone', op: op.op, bytes: read(op.file.id, op.offset, op.length) }
        : { kind: 'ioDone', op: op.op };
    const produced: Effect[] = [];
    let pending = ioUnits(effects);
    while (pending.length > 0) {
      const [next, ...rest] = pending;
      const more =
        next!.kind === 'ioBatch'
          ? this.step({ kind: 'ioBatchDone', completions: next!.ops.map(done) })
          : this.step(done(next!));
      produced.push(...more);
      pending = [...rest, ...ioUnits(more)];
    }
    return produced;
  }
}

/** A started worker, registered with the master. */
export function registeredWorker(
  id: WorkerId,
  overrides: Partial<WorkerConfig> = {},
): Harness<WorkerMachineState> {
  const harness = new Harness(workerMachine, initialWorkerState(testWorkerConfig(id, overrides)));
  const register = onlySent(harness.start(), 'RegisterWorker');
  harness.receive(
    masterNodeId(),
    { type: 'RegisterWorkerResponse', success: true, message: 'ok' },
    // The master's answer on the connection the worker opened: a server, as the driver says.
    { inReplyTo: register.requestId!, principal: { kind: 'server' } },
  );
  return harness;
}

/**
 * `effects` and, when they hold the worker's exit report (its last heartbeat, in state Exit), the effects of the
 * master's answer to it: the worker's exit effect comes with that answer.
 */
export function answeringExitReport(harness: Harness<WorkerMachineState>, effects: Effect[]): Effect[] {
  const report = sentOf(effects, 'WorkerHeartbeat').find((sent) => sent.message.state === 'Exit');
  if (report === undefined) return effects;
  const answer = harness.receive(
    masterNodeId(),
    { type: 'WorkerHeartbeatResponse', registered: false, expiredShuffleKeys: [], workerEvent: 'None' },
    { inReplyTo: report.requestId!, principal: { kind: 'server' } },
  );
  return [...effects, ...answer];
}

/**
 * How many times `effects` end the worker: its exit effect, or (registered) its exit report, after which it exits
 * as soon as the master answers or the report's deadline passes.
 */
export function exitsIn(effects: readonly Effect[]): number {
  const reports = sentOf(effects, 'WorkerHeartbeat').filter((sent) => sent.message.state === 'Exit');
  return ofKind(effects, 'exit').length + reports.length;
}

export type IoEffect = BatchableIo;

/** Every I/O operation the effects issue, alone or inside an `ioBatch`, in order. */
export function ioOps(effects: readonly Effect[]): IoEffect[] {
  return ioUnits(effects).flatMap((unit) => (unit.kind === 'ioBatch' ? unit.ops : [unit]));
}

/** The effects that a driver completes: lone I/O operations and batches. */
function ioUnits(effects: readonly Effect[]): (IoEffect | Extract<Effect, { kind: 'ioBatch' }>)[] {
  return effects.filter(
    (effect): effect is IoEffect | Extract<Effect, { kind: 'ioBatch' }> =>
      effect.kind === 'ioBatch' || isBatchable(effect),
  );
}

export function ofKind<K extends Effect['kind']>(
  effects: readonly Effect[],
  kind: K,
): Extract<Effect, { kind: K }>[] {
  return effects.filter((effect): effect is Extract<Effect, { kind: K }> => effect.kind === kind);
}

/** The recovery store the persist effects leave, applied in order (a null value deletes its key). */
export function recoveryStore(effects: readonly Effect[]): Map<string, string> {
  const store = new Map<string, string>();
  for (const persist of ofKind(effects, 'persist')) {
    if (persist.value === null) store.delete(persist.key);
    else store.set(persist.key, persist.value);
  }
  return store;
}

/** Messages of one type the step sent, with their send effects. */
export function sentOf<T extends MessageType>(
  effects: readonly Effect[],
  type: T,
): { to: NodeId; message: MessageOf<T>; requestId?: number; inReplyTo?: number }[] {
  return ofKind(effects, 'send')
    .filter((effect) => effect.message.type === type)
    .map((effect) => ({
      to: effect.to,
      message: effect.message as MessageOf<T>,
      ...(effect.requestId === undefined ? {} : { requestId: effect.requestId }),
      ...(effect.inReplyTo === undefined ? {} : { inReplyTo: effect.inReplyTo }),
    }));
}

/** The single message of a type the step sent; throws when there is not exactly one. */
export function onlySent<T extends MessageType>(effects: readonly Effect[], type: T) {
  const found = sentOf(effects, type);
  if (found.length !== 1) throw new Error(`expected one ${type}, found ${found.length}`);
  return found[0]!;
}

export function metricNames(effects: readonly Effect[]): string[] {
  return ofKind(effects, 'metric').map((effect) => effect.name);
}

export function workerId(host: string, base = 9000): WorkerId {
  return { host, rpcPort: base + 1, pushPort: base + 2, fetchPort: base + 3, replicatePort: base + 4 };
}

/** The cast of the worker tests: the worker under test, its replica peers, and the application talking to it. */
export const SELF = workerId('w1');
export const PEER = workerId('w2');
export const OTHER_PEER = workerId('w3');
export const CLIENT = 'lm-app';
export const MAPPER = 'map-app-1-0-0';
export const KEY = 'app-1';

export const HDD_MASK_STORAGE: StorageInfo = { type: 'HDD', mountPoint: '', availableTypes: 2 };

export function location(
  partitionId: number,
  epoch: number,
  mode: PartitionMode,
  worker: WorkerId,
  options: { peer?: WorkerId; storage?: StorageInfo } = {},
): PartitionLocation {
  const storage = options.storage ?? HDD_MASK_STORAGE;
  const base = { partitionId, epoch, worker, mode, storage };
  if (options.peer === undefined) return base;
  return {
    ...base,
    peer: { ...base, worker: options.peer, mode: mode === 'PRIMARY' ? 'REPLICA' : 'PRIMARY' },
  };
}

/** A CommitFiles of the test shuffle (KEY: app `app`, shuffle 1) for these primaries, with no replicas. */
export function commitFiles(primaryIds: readonly string[], mapAttempts: readonly number[]): CommitFiles {
  return { type: 'CommitFiles', appId: 'app', shuffleId: 1, primaryIds, replicaIds: [], mapAttempts };
}

/** A PushData whose payload is a correctly framed batch of `size` bytes. */
export function pushData(
  shuffleKey: string,
  partitionId: number,
  epoch: number,
  mode: PartitionMode,
  batch: { mapId?: number; attemptId?: number; batchId?: number; size?: number; fill?: number } = {},
): PushData {
  const mapId = batch.mapId ?? 0;
  const attemptId = batch.attemptId ?? 0;
  const batchId = batch.batchId ?? 0;
  const shuffleId = Number(shuffleKey.slice(shuffleKey.lastIndexOf('-') + 1));
  const payload = encodeBatchFrame(
    { shuffleId, mapId, attemptId, batchId, partitionId, epoch },
    new Uint8Array(batch.size ?? 16).fill(batch.fill ?? 7),
  );
  return { type: 'PushData', shuffleKey, mode, partitionId, epoch, mapId, attemptId, batchId, payload };
}

/** One batch of a merged push for a test: its location, and the frame's batch id, size and fill. */
export interface TestBatch {
  readonly partitionId: number;
  readonly epoch?: number;
  readonly batchId?: number;
  readonly size?: number;
  readonly fill?: number;
}

/** A PushMergedData of one map attempt whose batches are correctly framed (batch ids default to their index). */
export function pushMergedData(
  shuffleKey: string,
  mode: PartitionMode,
  batches: readonly TestBatch[],
  attempt: { mapId?: number; attemptId?: number } = {},
): PushMergedData {
  const mapId = attempt.mapId ?? 0;
  const attemptId = attempt.attemptId ?? 0;
  return {
    type: 'PushMergedData',
    shuffleKey,
    mode,
    mapId,
    attemptId,
    batches: batches.map((batch, index) => {
      const single = pushData(shuffleKey, batch.partitionId, batch.epoch ?? 0, mode, {
        mapId,
        attemptId,
        batchId: batch.batchId ?? index,
        size: batch.size ?? 16,
        fill: batch.fill ?? 7,
      });
      return {
        partitionId: single.partitionId,
        epoch: single.epoch,
        batchId: single.batchId,
        payload: single.payload,
      };
    }),
  };
}

/** The payload with its last byte flipped: the frame's CRC no longer matches. */
export function damaged(payload: Uint8Array): Uint8Array {
  const copy = payload.slice();
  copy[copy.length - 1]! ^= 0xff;
  return copy;
}

/**
 * A value as plain data, with typed arrays as their bytes and maps and sets as their entries in order: equal results
 * mean equal contents and equal iteration order, and a later change to the original does not show in the copy.
 */
export function plainData(value: unknown): unknown {
  if (value instanceof Map) return { map: [...value].map(([k, v]) => [plainData(k), plainData(v)]) };
  if (value instanceof Set) return { set: [...value].map(plainData) };
  if (value instanceof Uint8Array) return { bytes: [...value] };
  if (Array.isArray(value)) return value.map(plainData);
  if (value !== null && typeof value === 'object')
    return Object.fromEntries(Object.entries(value).map(([k, v]) => [k, plainData(v)]));
  return value;
}
