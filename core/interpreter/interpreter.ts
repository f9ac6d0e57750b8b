import { lengthOfWrite, type Effect, type Input } from '../machines/effects.ts';
import type { Machine } from '../machines/machine.ts';
import type { PlantedBug } from '../planted-bugs.ts';
import type { Rng } from '../rng.ts';
import { backlogFull } from '../storage/back-pressure.ts';

export type PersistEffect = Extract<Effect, { kind: 'persist' }>;

/**
 * The I/O a driver supplies to run one node: the runtime's sockets, disks and RocksDB, or the simulator's network,
 * memfs disks and modelled store. Every method returns at once; what completes later comes back through the
 * interpreter's `input` (I/O completions, messages, timers) and `written` (the durable store's confirmation).
 */
export interface InterpreterIo {
  /** The time of the next step (the runtime's clock, the simulator's virtual one). */
  now(): number;
  /** Carries out one effect other than `persist`, now. */
  execute(effect: Effect): void;
  /**
   * Begins one write of the durable store holding these persists, in order; the driver calls `written()` once the
   * store confirmed all of them. At most one write is in flight at a time.
   */
  write(persists: readonly PersistEffect[]): void;
  /** Before a step (traces, observers). */
  stepping?(input: Input): void;
  /** A step decided these effects; none has run yet (observers see decisions before they reach the world). */
  stepped?(input: Input, effects: readonly Effect[]): void;
  /** After a step's effects that could run at once have run (the runtime's `until` watchers). */
  settled?(): void;
  /** An effect not carried out because the node stopped first (an `exit` earlier in its step). */
  dropped?(effect: Effect): void;
  /** The backlog reached its bound (true) or fell back to half of it (false): stop or resume reading the peers. */
  backlogFull?(full: boolean, backlog: number): void;
  /**
   * Bytes handed to the disks and not yet written changed by `delta` (a worker's back-pressure): up when a write
   * is carried out, down when its completion arrives, before the machine steps on it.
   */
  diskBytes?(delta: number): void;
}

export interface InterpreterOptions {
  /** The bound of the backlog (see `backlog`); default DEFAULT_INPUT_LIMIT. */
  readonly inputLimit?: number;
  /** Test-only (core/planted-bugs.ts): `effects-before-persist` releases held effects before the store confirmed. */
  readonly plantedBug?: PlantedBug;
}

/**
 * The default bound of a node's backlog. Inputs are stepped as they arrive, so a backlog only builds while the
 * durable store is slower than the peers (a write in flight holds every later step's effects) or while a step runs.
 */
export const DEFAULT_INPUT_LIMIT = 4096;

/** An effect waiting for a write of the durable store, with the step it came from (the backlog counts steps). */
interface HeldEffect {
  readonly effect: Effect;
  readonly step: number;
}

/**
 * What happens between a machine's `step` and the world, decided once for both drivers (the runtime's NodeDriver
 * and the simulator's World): inputs are stepped one at a time in arrival order (an input that arrives while
 * effects run waits its turn); each step's effects are carried out in the order the machine asked for them; from a
 * step's first `persist` on, the rest of its effects and every effect of later steps wait until the store confirmed
 * the write (durable before acknowledged, docs/core.md). The machine goes on stepping meanwhile (its state is
 * memory), and the persists of those later steps go to the store together in the next write (group commit). A
 * later persist written early acknowledges nothing: only what follows a persist waits for it.
 *
 * The backlog (inputs waiting to be stepped plus steps with effects still waiting) is bounded by `inputLimit`
 * through `backlogFull`: the driver stops reading the connections that feed the node until it fell to half.
 * Inputs past the bound are still accepted: a completion or a reply dropped would wedge the machine.
 *
 * The class keeps no clock, no timers and nothing asynchronous: the driver's I/O calls back into it.
 */
export class Interpreter<S> {
  private current: S;
  private readonly queue: Input[] = [];
  private draining = false;
  /** A write of the durable store is in flight: every effect from here on waits in `held`. */
  private writing = false;
  /** Effects that wait for a write, in the order the machine asked for them (persists included), by step. */
  private held: HeldEffect[] = [];
  /** The persists of the write in flight, by step. */
  private inFlight: HeldEffect[] = [];
  /** For each step with effects still waiting (held or in flight), how many; its size is the steps waiting. */
  private readonly waiting = new Map<number, number>();
  private nextStep = 0;
  private full = false;
  private halted = false;
  private readonly inputLimit: number;
  private readonly persistFirst: boolean;
  /** Bytes of the writes handed to the disks, by operation, until their completion arrives. */
  private readonly diskWrites = new Map<number, number>();

  constructor(
    private readonly machine: Machine<S>,
    initial: S,
    private readonly rng: Rng,
    private readonly io: InterpreterIo,
    options: InterpreterOptions = {},
  ) {
    this.current = initial;
    this.inputLimit = options.inputLimit ?? DEFAULT_INPUT_LIMIT;
    this.persistFirst = options.plantedBug !== 'effects-before-persist';
  }

  /** The machine's state. While a write is in flight it may be ahead of the store and of what the node has said. */
  get state(): S {
    return this.current;
  }

  /** Inputs received and not yet acted on: waiting to be stepped, or stepped with effects waiting for a write. */
  get backlog(): number {
    return this.queue.length + this.waiting.size;
  }

  get stopped(): boolean {
    return this.halted;
  }

  /** Whether a write of the durable store is in flight (its `written` has not come yet). */
  get writeInFlight(): boolean {
    return this.writing;
  }

  /** An input for the machine: stepped now, or after the inputs before it when a step is under way. */
  input(input: Input): void {
    if (this.halted) return;
    if (this.diskWrites.size > 0) this.completed(input);
    this.queue.push(input);
    this.drain();
  }

  /** The write in flight is durable: what waited for it goes on, and so does any input that queued meanwhile. */
  written(): void {
    if (this.halted || !this.writing) return;
    this.writing = false;
    for (const { step } of this.inFlight) this.done(step);
    this.inFlight = [];
    // An input that arrives while held effects run (a send failing at once) waits its turn instead of stepping, and
    // running, ahead of the effects of earlier steps.
    const wasDraining = this.draining;
    this.draining = true;
    try {
      this.releaseHeld();
    } finally {
      this.draining = wasDraining;
    }
    this.drain();
  }

  /** The process ends: nothing more is stepped or carried out; what waited is dropped with the process's memory. */
  stop(): void {
    if (this.halted) return;
    this.halted = true;
    this.queue.length = 0;
    this.held = [];
    this.inFlight = [];
    this.waiting.clear();
    this.writing = false;
    this.diskWrites.clear();
  }

  /** Carries out one effect, counting the bytes a disk write hands to the disks. */
  private execute(effect: Effect): void {
    if (this.io.diskBytes !== undefined) {
      let bytes = 0;
      if (effect.kind === 'write') bytes = this.handed(effect.op, lengthOfWrite(effect));
      else if (effect.kind === 'ioBatch') {
        for (const op of effect.ops) if (op.kind === 'write') bytes += this.handed(op.op, lengthOfWrite(op));
      }
      if (bytes > 0) this.io.diskBytes(bytes);
    }
    this.io.execute(effect);
  }

  private handed(op: number, bytes: number): number {
    if (bytes > 0) this.diskWrites.set(op, (this.diskWrites.get(op) ?? 0) + bytes);
    return bytes;
  }

  /** A completion arrived: the bytes of its writes are off the disks' queue before the machine hears of it. */
  private completed(input: Input): void {
    let bytes = 0;
    const free = (op: number) => {
      const handed = this.diskWrites.get(op);
      if (handed === undefined) return;
      this.diskWrites.delete(op);
      bytes += handed;
    };
    if (input.kind === 'ioDone' || input.kind === 'ioFailed') free(input.op);
    else if (input.kind === 'ioBatchDone') for (const completion of input.completions) free(completion.op);
    if (bytes > 0) this.io.diskBytes?.(-bytes);
  }

  private drain(): void {
    if (this.draining) return;
    this.draining = true;
    try {
      while (!this.halted && this.queue.length > 0) this.step(this.queue.shift()!);
    } finally {
      this.draining = false;
    }
    this.updateBacklog();
  }

  private step(input: Input): void {
    this.io.stepping?.(input);
    const result = this.machine.step(this.current, input, this.io.now(), this.rng);
    this.current = result.state;
    const effects = result.effects;
    this.io.stepped?.(input, effects);
    if (this.writing || this.held.length > 0) {
      this.hold(effects, 0);
      if (!this.persistFirst) this.releaseEarly();
    } else {
      for (let i = 0; i < effects.length; i += 1) {
        const effect = effects[i]!;
        if (this.halted) {
          this.io.dropped?.(effect);
          continue;
        }
        if (effect.kind !== 'persist') {
          this.execute(effect);
          continue;
        }
        this.hold(effects, i);
        this.releaseHeld();
        break;
      }
    }
    this.io.settled?.();
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
   * persist held; whatever is left waits for that write.
   */
  private releaseHeld(): void {
    if (!this.persistFirst) {
      this.releaseEarly();
      return;
    }
    while (!this.writing && !this.halted && this.held.length > 0) {
      const first = this.held.findIndex((held) => held.effect.kind === 'persist');
      const ready = first === -1 ? this.held.splice(0) : this.held.splice(0, first);
      for (const { effect, step } of ready) {
        if (this.halted) {
          this.io.dropped?.(effect);
          continue;
        }
        this.done(step);
        this.execute(effect);
      }
      if (first === -1 || this.halted) break;
      const rest: HeldEffect[] = [];
      this.inFlight = [];
      for (const held of this.held) (held.effect.kind === 'persist' ? this.inFlight : rest).push(held);
      this.held = rest;
      this.startWrite();
    }
    this.updateBacklog();
  }

  /** The planted bug `effects-before-persist`: every held effect runs now; the persists are written meanwhile. */
  private releaseEarly(): void {
    const persists: HeldEffect[] = [];
    for (const held of this.held.splice(0)) {
      if (held.effect.kind === 'persist') persists.push(held);
      else if (this.halted) this.io.dropped?.(held.effect);
      else {
        this.done(held.step);
        this.execute(held.effect);
      }
    }
    this.held = persists;
    if (!this.writing && !this.halted && persists.length > 0) {
      this.inFlight = persists;
      this.held = [];
      this.startWrite();
    }
    this.updateBacklog();
  }

  private startWrite(): void {
    this.writing = true;
    this.io.write(this.inFlight.map((held) => held.effect as PersistEffect));
  }

  /** Reports the backlog crossing its limit (full) and falling back to half of it (not full). */
  private updateBacklog(): void {
    if (this.halted) return;
    const backlog = this.backlog;
    const full = backlogFull(backlog, this.inputLimit, this.full);
    if (full === this.full) return;
    this.full = full;
    this.io.backlogFull?.(full, backlog);
  }
}
