import {
  type AdminCommand,
  type Effect,
  type Envelope,
  type Input,
  type NodeId,
} from '../../core/machines/effects.ts';
import type { Machine } from '../../core/machines/machine.ts';
import type { Release } from '../../core/release/version.ts';
import type { Rng } from '../../core/rng.ts';
import { Interpreter, type PersistEffect } from '../../core/interpreter/interpreter.ts';
import type { PlantedBug } from '../../core/planted-bugs.ts';
import type { Logger } from '../log.ts';
import type { DurableStore } from '../storage/durable-store-interface.ts';
import type { TierStorage } from '../storage/tier-storage.ts';
import type { WireEnvelope } from '../wire/index.ts';
import { useNativeChecksum } from './native-checksum.ts';
import type { PushBodyHolds } from './push-body-holds.ts';

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
  /**
   * A worker's pooled receive bodies: what each push reaches is held through it, so that its body is lent again
   * only once nothing reads it (./push-body-holds.ts). Absent: bodies are never reused.
   */
  readonly pushBodies?: PushBodyHolds;
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
  /** Test-only (core/planted-bugs.ts, through runtime/testing/test-server.ts): a bug planted in the interpreter. */
  readonly plantedBug?: PlantedBug;
}

export { DEFAULT_INPUT_LIMIT } from '../../core/interpreter/interpreter.ts';

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
 * Runs one state machine on real I/O. The sequencing (inputs one at a time in arrival order, effects in order, every
 * effect after a `persist` held until the store confirmed the write, the bounded backlog) is the core's
 * `Interpreter`, the very code the simulator runs; this class supplies the I/O only: it carries out each effect's
 * literal meaning on sockets, timers, the tiers and the durable store, and hands completions back as inputs.
 */
export class NodeDriver<S> {
  private readonly interpreter: Interpreter<S>;
  private readonly timers = new Map<string, NodeJS.Timeout>();
  /** Timers due when they were set (armTimer): run in the check phase rather than after a timeout. */
  private readonly dueTimers = new Map<string, NodeJS.Immediate>();
  private readonly pendingAdmin = new Map<
    number,
    { resolve: (answer: AdminAnswer) => void; reject: (error: Error) => void }
  >();
  private nextCommandId = 1;
  private stopped = false;
  private stopReason: Error | undefined;
  private readonly watchers = new Set<() => void>();
  private readonly clock: () => number;

  constructor(
    readonly id: NodeId,
    machine: Machine<S>,
    initial: S,
    readonly release: Release,
    private readonly services: DriverServices,
  ) {
    // Every machine of this process checks batches with the native CRC-32 (same values, several times faster).
    useNativeChecksum(services.logger);
    const clock = services.clock ?? monotonicNow;
    this.clock = clock;
    this.interpreter = new Interpreter(
      machine,
      initial,
      services.rng ?? MATH_RANDOM,
      {
        now: clock,
        execute: (effect) => this.execute(effect),
        write: (persists) => this.write(persists),
        settled: () => {
          for (const watcher of this.watchers) watcher();
        },
        ...(services.onInputsFull === undefined ? {} : { backlogFull: services.onInputsFull }),
        ...(services.onWriteBytes === undefined ? {} : { diskBytes: services.onWriteBytes }),
      },
      {
        ...(services.inputLimit === undefined ? {} : { inputLimit: services.inputLimit }),
        ...(services.plantedBug === undefined ? {} : { plantedBug: services.plantedBug }),
      },
    );
  }

  /**
   * Inputs received and not yet acted on: waiting to be stepped, or stepped with effects that wait for a write of
   * the durable store. Bounded by `inputLimit` through `onInputsFull` (back-pressure on the connections).
   */
  get backlog(): number {
    return this.interpreter.backlog;
  }

  /**
   * The machine's current state: read it, never change it. While a write of the durable store is in flight it may
   * be ahead of what the store holds and of what the node has said (its effects wait); reads for display only.
   */
  get state(): S {
    return this.interpreter.state;
  }

  get isStopped(): boolean {
    return this.stopped;
  }

  start(recovered: ReadonlyMap<string, string>): void {
    this.input({ kind: 'start', recovered });
  }

  input(input: Input): void {
    if (this.stopped) return;
    if (input.kind === 'receive') {
      this.services.onReceive?.(input.envelope);
      this.services.pushBodies?.received(input.envelope);
    }
    this.interpreter.input(input);
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
    const now = check(this.state);
    if (now !== undefined) return Promise.resolve(now);
    if (this.stopped) {
      return this.stopReason === undefined ? Promise.resolve(undefined) : Promise.reject(this.stopReason);
    }
    return new Promise((resolve, reject) => {
      let timer: NodeJS.Timeout | undefined;
      const unwatch = this.watch(() => {
        const result = this.stopped ? undefined : check(this.state);
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
    this.interpreter.stop();
    for (const pending of this.pendingAdmin.values()) {
      pending.reject(this.stopReason ?? new NodeStoppedError(`${this.id} stopped before answering`));
    }
    this.pendingAdmin.clear();
    for (const watcher of [...this.watchers]) watcher();
    for (const name of [...this.timers.keys(), ...this.dueTimers.keys()]) this.clearTimer(name);
  }

  /** Writes the persists of one step or group of steps; the interpreter releases what waited once confirmed. */
  private write(persists: readonly PersistEffect[]): void {
    const changes = persists.map((effect) => ({ key: effect.key, value: effect.value }));
    const durable = this.services.durable;
    if (durable === undefined) {
      this.services.logger.error(
        { event: 'driver.persist.noStore', node: this.id, keys: changes.map((c) => c.key) },
        `${this.id} asked to persist but has no durable store`,
      );
      queueMicrotask(() => this.interpreter.written());
      return;
    }
    durable.write(changes).then(
      () => this.interpreter.written(),
      (error: unknown) => {
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
        this.services.pushBodies?.sending(envelope);
        this.services.send(envelope);
        this.services.onSend?.(envelope);
        return;
      }
      case 'setTimer': {
        this.clearTimer(effect.name);
        this.armTimer(effect.name, effect.at);
        return;
      }
      case 'cancelTimer': {
        this.clearTimer(effect.name);
        return;
      }
      case 'createFile':
      case 'flush':
      case 'read':
      case 'moveFile': {
        void this.requireStorage(effect.kind)
          .run(effect)
          .then((completion) => this.input(completion));
        return;
      }
      case 'write': {
        const written = this.services.pushBodies?.writing(effect);
        void this.requireStorage(effect.kind)
          .run(effect)
          .then((completion) => {
            written?.();
            this.input(completion);
          });
        return;
      }
      case 'ioBatch': {
        const written = this.services.pushBodies?.writing(effect);
        void this.requireStorage(effect.kind)
          .runBatch(effect.ops)
          .then((completions) => {
            written?.();
            this.input({ kind: 'ioBatchDone', completions });
          });
        return;
      }
      case 'deleteFile':
        void this.requireStorage(effect.kind).delete(effect.file);
        return;
      case 'persist':
        return; // written through the interpreter's write(), never executed alone
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

  /** Cancels timer `name`, whether armed as a timeout or due at once. */
  private clearTimer(name: string): void {
    const timer = this.timers.get(name);
    if (timer !== undefined) clearTimeout(timer);
    this.timers.delete(name);
    const due = this.dueTimers.get(name);
    if (due !== undefined) clearImmediate(due);
    this.dueTimers.delete(name);
  }

  /**
   * Delivers timer `name` once the clock reads `at` or later, never before: the core may rely on it (a pause that
   * ends early looks like one another pause replaced, and nothing would end it). Node measures a timeout from the
   * event loop's cached time, which lags the clock by as long as the current turn has run, so a timer can fire
   * early by that much on a busy process; it is then armed again for the rest.
   */
  private armTimer(name: string, at: number): void {
    if (at <= this.clock()) {
      // Due now: a machine going on with bounded work in its next step (a reserve or commit of 10,000 files, 256
      // a step). The check phase runs it right after the pending I/O, where a timeout of 0 waits at least a
      // millisecond and the timers phase: forty steps were forty idle milliseconds or more.
      const due = setImmediate(() => {
        this.dueTimers.delete(name);
        this.input({ kind: 'timer', name });
      });
      this.dueTimers.set(name, due);
      return;
    }
    const timer = setTimeout(
      () => {
        if (this.clock() < at) {
          this.armTimer(name, at);
          return;
        }
        this.timers.delete(name);
        this.input({ kind: 'timer', name });
      },
      Math.max(0, Math.ceil(at - this.clock())),
    );
    this.timers.set(name, timer);
  }
}
