import type { PartitionLocation, PartitionMode, StorageInfo, WorkerId } from '../../domain/index.ts';
import { encodeBatchFrame } from '../../protocol/batch-frame.ts';
import type { Message, MessageOf, MessageType, PushData } from '../../protocol/messages.ts';
import { CURRENT_RELEASE, type Release } from '../../release/version.ts';
import { replayRng } from '../../rng.ts';
import type { Effect, Input, IoError, NodeId } from '../effects.ts';
import type { Machine } from '../machine.ts';

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
    options: { requestId?: number; inReplyTo?: number; fromRelease?: Release } = {},
  ): Effect[] {
    return this.step({
      kind: 'receive',
      envelope: {
        from,
        to: 'under-test',
        fromRelease: options.fromRelease ?? CURRENT_RELEASE,
        message,
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

  /** Completes every I/O effect in `effects` (and in what their completions cause) successfully, in order. */
  completeIo(
    effects: readonly Effect[],
    read: (file: string, offset: number, length: number) => Uint8Array = (_f, _o, l) => new Uint8Array(l),
  ): Effect[] {
    const produced: Effect[] = [];
    let pending = ioOps(effects);
    while (pending.length > 0) {
      const [next, ...rest] = pending;
      const more =
        next!.kind === 'read'
          ? this.ioDone(next!.op, read(next!.file.id, next!.offset, next!.length))
          : this.ioDone(next!.op);
      produced.push(...more);
      pending = [...rest, ...ioOps(more)];
    }
    return produced;
  }
}

export type IoEffect = Extract<Effect, { kind: 'createFile' | 'write' | 'flush' | 'read' | 'moveFile' }>;

export function ioOps(effects: readonly Effect[]): IoEffect[] {
  return effects.filter(
    (effect): effect is IoEffect =>
      effect.kind === 'createFile' ||
      effect.kind === 'write' ||
      effect.kind === 'flush' ||
      effect.kind === 'read' ||
      effect.kind === 'moveFile',
  );
}

export function ofKind<K extends Effect['kind']>(
  effects: readonly Effect[],
  kind: K,
): Extract<Effect, { kind: K }>[] {
  return effects.filter((effect): effect is Extract<Effect, { kind: K }> => effect.kind === kind);
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
