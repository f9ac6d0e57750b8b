import {
  lengthOfWrite,
  type AdminCommand,
  type BatchableIo,
  type Effect,
  type Envelope,
  type Input,
  type NodeId,
} from '../../core/machines/effects.ts';
import type { Machine } from '../../core/machines/machine.ts';
import type { Release } from '../../core/release/version.ts';
import type { Rng } from '../../core/rng.ts';
import { backlogFull } from '../../core/storage/back-pressure.ts';
import type { Logger } from '../log.ts';
import type { DurableStore } from '../storage/durable-store.ts';
import type { TierStorage } from '../storage/tier-storage.ts';
import type { WireEnvelope } from '../wire/index.ts';
import { useNativeChecksum } from './native-checksum.ts';

/** What a node's effects act on. Only workers have storage; only masters and workers have a durable store. */
export interface DriverServices {
  readonly send: (envelope: WireEnvelope) => void;
  readonly logger: Logger;
  readonly storage?: TierStorage;
  readonly durable?: DurableStore;
  /** Which store `persist` effects of this node write (`recovery` for a worker, `coordination` for a master). */
  readonly durableStoreKind?: 'recovery' | 'coordination';
  /** The machine asked to stop the process (after its earlier effects ran). */
  readonly onExit?: (code: number, reason: string) => void;
  readonly onMetric?: (effect: Extract<Effect, { kind: 'metric' }>) => void;
  /** Every envelope the node receives and sends (the worker's push metrics). */
  readonly onReceive?: (envelope: Envelope) => void;
  readonly onSend?: (envelope: WireEnvelope) => void;
  /** Bytes handed to the disks and not yet written (back-pressure, ./back-pressure.ts). */
  readonly onWriteBytes?: (delta: number) => void;
  readonly clock?: () => number;
  readonly rng?: Rng;
  /** The bound of the node's backlog (see NodeDriver.backlog); default DEFAULT_INPUT_LIMIT. */
  readonly inputLimit?: number;
  /**
   * Called with true when the backlog reaches `inputLimit`, with false when it falls back to half of it: the
   * process stops reading the connections that feed the node meanwhile. Inputs past the bound are still accepted
   * (a completion or a reply dropped would wedge the machine); only the peers are held back.
   */
  readonly onInputsFull?: (full: boolean, backlog: number) => void;
}

/**
 * The default bound of a driver's backlog. Inputs are stepped as they arrive, so a backlog only builds while the
 * durable store is slower than the peers (a write in flight holds every later step's effects) or while a step runs.
 */
export const DEFAULT_INPUT_LIMIT = 4096;

/** An operator command sent to, or left unanswered by, a node that has stopped. */
export class NodeStoppedError extends Error {
  override readonly name = 'NodeStoppedError';
}

export interface AdminAnswer {
  readonly success: boolean;
  readonly message: string;
}

/** The runtime's clock: wall-clock milliseconds that never go backwards while the process lives. */
export function monotonicNow(): number {
  return Math.floor(performance.timeOrigin + performance.now());
}

const MATH_RANDOM: Rng = { next: () => Math.random() };

/**
 * Runs one state machine on real I/O: inputs are processed one at a time in arrival order, each step's effects are
 * executed in order, asynchronous completions come back as inputs, and an effect after a `persist` is executed only
 * once the store confirmed the write (effects.ts: durable before acknowledged). The driver takes no decision of its own; everything it does is an effect's
 * literal meaning, exactly as the simulator executes it.
 */
export class NodeDriver<S> {
  private current: S;
  private readonly queue: Input[] = [];
  private readonly timers = new Map<string, NodeJS.Timeout>();
  private readonly pendingAdmin = new Map<
    number,
    { resolve: (answer: AdminAnswer) => void; reject: (error: Error) => void }
  >();
  private nextCommandId = 1;
  private draining = false;
  /** A write to the durable store is in flight: every effect from here on waits in `held`. */
  private writing = false;
  /** Effects that wait for a write, in the order the machine asked for them (persists included), by step. */
  private held: HeldEffect[] = [];
  /** The persists of the write in flight, by step. */
  private inFlight: HeldEffect[] = [];
  /** For each step with effects still waiting (held or in flight), how many; its size is the steps waiting. */
  private readonly waiting = new Map<number, number>();
  private nextStep = 0;
  private full = false;
  private readonly inputLimit: number;
  private stopped = false;
  private stopReason: Error | undefined;
  private readonly watchers = new Set<() => void>();
  private readonly clock: () => number;
  private readonly rng: Rng;

  constructor(
    readonly id: NodeId,
    private readonly machine: Machine<S>,
    initial: S,
    readonly release: Release,
    private readonly services: DriverServices,
  ) {
    this.current = initial;
    // Every machine of this process checks batches with the native CRC-32 (same values, several times faster).
    useNativeChecksum(services.logger);
    this.clock = services.clock ?? monotonicNow;
    this.rng = services.rng ?? MATH_RANDOM;
    this.inputLimit = services.inputLimit ?? DEFAULT_INPUT_LIMIT;
  }

  /**
   * Inputs received and not yet acted on: waiting to be stepped, or stepped with effects that wait for a write of
   * the durable store. Bounded by `inputLimit` through `onInputsFull` (back-pressure on the connections).
   */
  get backlog(): number {
    return this.queue.length + this.waiting.size;
  }

  /**
   * The machine's current state: read it, never change it. While a write of the durable store is in flight it may
   * be ahead of what the store holds and of what the node has said (its effects wait); reads for display only.
   */
  get state(): S {
    return this.current;
  }

  get isStopped(): boolean {
    return this.stopped;
  }

  start(recovered: ReadonlyMap<string, string>): void {
    this.input({ kind: 'start', recovered });
  }

  input(input: Input): void {
    if (this.stopped) return;
    if (input.kind === 'receive') this.services.onReceive?.(input.envelope);
    this.queue.push(input);
    this.drain();
  }

  /**
   * An operator command; resolves with the machine's `adminReply`, or rejects with NodeStoppedError when the node
   * has stopped, or stops, before answering.
   */
  admin(command: AdminCommand): Promise<AdminAnswer> {
    if (this.stopped) return Promise.reject(new NodeStoppedError(`${this.id} has stopped`));
    const commandId = this.nextCommandId++;
    return new Promise((resolve, reject) => {
      this.pendingAdmin.set(commandId, { resolve, reject });
      this.input({ kind: 'admin', command, commandId });
    });
  }

  /** Calls `watcher` after every step (client handles follow their task's phase so). Returns the unsubscribe. */
  watch(watcher: () => void): () => void {
    this.watchers.add(watcher);
    return () => this.watchers.delete(watcher);
  }

  /**
   * Resolves with the first result `check` gives (not undefined) after a step, or at once if it already does;
   * resolves undefined after `timeoutMs` or when the node stops, or rejects with the reason it was stopped with
   * (`stop(reason)`: a closed client's waits fail with the client's error instead of looking like a task failure).
   */
  until<T>(check: (state: S) => T | undefined, timeoutMs?: number): Promise<T | undefined> {
    const now = check(this.current);
    if (now !== undefined) return Promise.resolve(now);
    if (this.stopped) {
      return this.stopReason === undefined ? Promise.resolve(undefined) : Promise.reject(this.stopReason);
    }
    return new Promise((resolve, reject) => {
      let timer: NodeJS.Timeout | undefined;
      const unwatch = this.watch(() => {
        const result = this.stopped ? undefined : check(this.current);
        if (result === undefined && !this.stopped) return;
        unwatch();
        if (timer !== undefined) clearTimeout(timer);
        if (result === undefined && this.stopReason !== undefined) reject(this.stopReason);
        else resolve(result);
      });
      if (timeoutMs !== undefined) {
        timer = setTimeout(() => {
          unwatch();
          resolve(undefined);
        }, timeoutMs);
      }
    });
  }

  /**
   * Stops processing: timers are cancelled and later inputs ignored (the process is going away). With a `reason`,
   * every wait on this node (`until`, `admin`) rejects with it; the first reason given is kept.
   */
  stop(reason?: Error): void {
    if (reason !== undefined && !this.stopped) this.stopReason = reason;
    if (this.stopped) return;
    this.stopped = true;
    for (const pending of this.pendingAdmin.values()) {
      pending.reject(this.stopReason ?? new NodeStoppedError(`${this.id} stopped before answering`));
    }
    this.pendingAdmin.clear();
    for (const watcher of [...this.watchers]) watcher();
    for (const timer of this.timers.values()) clearTimeout(timer);
    this.timers.clear();
    this.queue.length = 0;
    this.held = [];
    this.inFlight = [];
    this.waiting.clear();
  }

  /** Reports the backlog crossing its limit (full) and falling back to half of it (not full). */
  private updateBacklog(): void {
    const backlog = this.backlog;
    const full = backlogFull(backlog, this.inputLimit, this.full);
    if (full === this.full) return;
    this.full = full;
    this.services.onInputsFull?.(full, backlog);
  }

  private drain(): void {
    if (this.draining) return;
    this.draining = true;
    try {
      while (!this.stopped && this.queue.length > 0) this.step(this.queue.shift()!);
    } finally {
      this.draining = false;
    }
    this.updateBacklog();
  }

  /**
   * Steps the machine and carries out its effects in order. With no write in flight and none of the step's effects
   * a `persist` (the data plane's every push), everything runs here and now. From a step's first `persist` on, the
   * rest of its effects, and every effect of the steps after it, wait in `held` until the store confirmed the write:
   * the machine goes on stepping (its state is memory; only effects reach the world), and the persists of those
   * later steps go to the store together in the next write (group commit).
   */
  private step(input: Input): void {
    const result = this.machine.step(this.current, input, this.clock(), this.rng);
    this.current = result.state;
    const effects = result.effects;
    if (this.writing || this.held.length > 0) {
      this.hold(effects, 0);
    } else {
      for (let i = 0; i < effects.length; i += 1) {
        if (this.stopped) break;
        const effect = effects[i]!;
        if (effect.kind !== 'persist') {
          this.execute(effect);
          continue;
        }
        this.hold(effects, i);
        this.releaseHeld();
        break;
      }
    }
    for (const watcher of this.watchers) watcher();
  }

  /** Holds a step's effects from `from` on. */
  private hold(effects: readonly Effect[], from: number): void {
    if (from >= effects.length) return;
    const step = this.nextStep++;
    for (let i = from; i < effects.length; i += 1) this.held.push({ effect: effects[i]!, step });
    this.waiting.set(step, effects.length - from);
  }

  /** One of a step's held effects was carried out (or written). */
  private done(step: number): void {
    const left = this.waiting.get(step)! - 1;
    if (left === 0) this.waiting.delete(step);
    else this.waiting.set(step, left);
  }

  /**
   * Executes held effects in order up to the next `persist`, then writes that persist together with every other
   * persist held (a later persist written early acknowledges nothing: only what follows it waits for it); whatever
   * is left waits for that write.
   */
  private releaseHeld(): void {
    while (!this.writing && !this.stopped && this.held.length > 0) {
      const first = this.held.findIndex((held) => held.effect.kind === 'persist');
      const ready = first === -1 ? this.held.splice(0) : this.held.splice(0, first);
      for (const { effect, step } of ready) {
        if (this.stopped) return;
        this.done(step);
        this.execute(effect);
      }
      if (first === -1) break;
      const rest: HeldEffect[] = [];
      this.inFlight = [];
      for (const held of this.held) (held.effect.kind === 'persist' ? this.inFlight : rest).push(held);
      this.held = rest;
      this.write();
    }
    this.updateBacklog();
  }

  /** Writes the persists in flight; the held effects are released when the store confirmed them. */
  private write(): void {
    const changes: { key: string; value: string | null }[] = [];
    for (const { effect } of this.inFlight) {
      if (effect.kind === 'persist') changes.push({ key: effect.key, value: effect.value });
    }
    const written = (): void => {
      for (const { step } of this.inFlight) this.done(step);
      this.inFlight = [];
    };
    const durable = this.services.durable;
    if (durable === undefined) {
      this.services.logger.error(
        { event: 'driver.persist.noStore', node: this.id, keys: changes.map((c) => c.key) },
        `${this.id} asked to persist but has no durable store`,
      );
      written();
      return;
    }
    this.writing = true;
    durable.write(changes).then(
      () => {
        this.writing = false;
        if (this.stopped) return;
        written();
        // As in drain(): an input that arrives while held effects run (a send failing at once) waits its turn
        // instead of stepping, and running, ahead of the effects of earlier steps.
        this.draining = true;
        try {
          this.releaseHeld();
        } finally {
          this.draining = false;
        }
        this.drain();
      },
      (error: unknown) => {
        this.writing = false;
        if (this.stopped) return;
        // A store that cannot write is a process that cannot keep its promises: stop rather than go on forgetting.
        // What waited for the write is dropped: acknowledging it now would promise what the store does not hold.
        this.services.logger.fatal(
          { event: 'driver.persist.failed', node: this.id, error: String(error) },
          `${this.id}: the durable store failed; stopping`,
        );
        this.stop();
        this.services.onExit?.(1, `durable store failed: ${String(error)}`);
      },
    );
  }

  private execute(effect: Effect): void {
    switch (effect.kind) {
      case 'send': {
        const envelope: WireEnvelope = {
          from: this.id,
          to: effect.to,
          message: effect.message,
          ...(effect.requestId === undefined ? {} : { requestId: effect.requestId }),
          ...(effect.inReplyTo === undefined ? {} : { inReplyTo: effect.inReplyTo }),
        };
        this.services.send(envelope);
        this.services.onSend?.(envelope);
        return;
      }
      case 'setTimer': {
        const previous = this.timers.get(effect.name);
        if (previous !== undefined) clearTimeout(previous);
        const name = effect.name;
        const timer = setTimeout(
          () => {
            this.timers.delete(name);
            this.input({ kind: 'timer', name });
          },
          Math.max(0, effect.at - this.clock()),
        );
        this.timers.set(name, timer);
        return;
      }
      case 'cancelTimer': {
        const timer = this.timers.get(effect.name);
        if (timer !== undefined) clearTimeout(timer);
        this.timers.delete(effect.name);
        return;
      }
      case 'createFile':
      case 'write':
      case 'flush':
      case 'read':
      case 'moveFile': {
        const storage = this.requireStorage(effect.kind);
        const bytes = writeBytes([effect]);
        if (bytes > 0) this.services.onWriteBytes?.(bytes);
        void storage.run(effect).then((completion) => {
          if (bytes > 0) this.services.onWriteBytes?.(-bytes);
          this.input(completion);
        });
        return;
      }
      case 'ioBatch': {
        const storage = this.requireStorage(effect.kind);
        const bytes = writeBytes(effect.ops);
        if (bytes > 0) this.services.onWriteBytes?.(bytes);
        void storage.runBatch(effect.ops).then((completions) => {
          if (bytes > 0) this.services.onWriteBytes?.(-bytes);
          this.input({ kind: 'ioBatchDone', completions });
        });
        return;
      }
      case 'deleteFile':
        void this.requireStorage(effect.kind).delete(effect.file);
        return;
      case 'persist':
        return; // written by releaseHeld(), never executed alone
      case 'log': {
        const fields = { node: this.id, event: effect.event, ...effect.fields };
        this.services.logger[effect.level](fields, effect.event);
        return;
      }
      case 'metric':
        this.services.onMetric?.(effect);
        return;
      case 'adminReply': {
        if (effect.commandId === undefined) return;
        const pending = this.pendingAdmin.get(effect.commandId);
        this.pendingAdmin.delete(effect.commandId);
        pending?.resolve({ success: effect.success, message: effect.message });
        return;
      }
      case 'exit':
        this.services.logger.info(
          { event: 'driver.exit', node: this.id, code: effect.code, reason: effect.reason },
          `${this.id} exits: ${effect.reason}`,
        );
        this.stop();
        this.services.onExit?.(effect.code, effect.reason);
        return;
    }
  }

  private requireStorage(kind: string): TierStorage {
    const storage = this.services.storage;
    if (storage === undefined) throw new Error(`${this.id} issued a ${kind} effect but has no storage`);
    return storage;
  }
}

/** An effect waiting for a write of the durable store, with the step it came from (the backlog counts steps). */
interface HeldEffect {
  readonly effect: Effect;
  readonly step: number;
}

function writeBytes(ops: readonly BatchableIo[]): number {
  let bytes = 0;
  for (const op of ops) if (op.kind === 'write') bytes += lengthOfWrite(op);
  return bytes;
}
