import type { Hello, HelloReply } from '../../core/handshake/index.ts';
import type { Effect, Input, NodeId } from '../../core/machines/effects.ts';
import type { MessageType } from '../../core/protocol/messages.ts';
import type { World } from './world.ts';

/** What an observer's onInput asks for: a received message's type, every receive, or another input kind. */
export type InputKey = MessageType | Input['kind'];
/** What an observer's onEffect asks for: a sent message's type, every send, or another effect kind. */
export type EffectKey = MessageType | Effect['kind'];

/**
 * Hooks through which invariant checkers and workload models watch a run. All optional.
 *
 * A checker names what it looks at (`inputs`, `effects`), and the world hands it exactly that, one input or effect
 * at a time: most checkers care about a handful of message types, and calling every checker with every step's
 * effects cost about a fifth of a run (docs/simulation.md, Performance).
 */
export interface Observer {
  /** The inputs onInput sees; omitted: every input. */
  readonly inputs?: readonly InputKey[];
  /** Before the node's machine sees `input`. */
  onInput?(node: NodeId, input: Input, world: World): void;
  /** The effects onEffect sees; omitted: every effect. */
  readonly effects?: readonly EffectKey[];
  /** After the node's machine stepped, once per effect it asked for (all of them are executed after the hooks). */
  onEffect?(node: NodeId, effect: Effect, world: World): void;
  /** After every step, with all its effects (for models that read the node's new state). */
  onStep?(node: NodeId, effects: readonly Effect[], world: World): void;
  /**
   * When a `send` or an `adminReply` actually leaves the node: at once, or once the durable store confirmed a
   * `persist` the machine placed before it (world.ts). Checkers of what a node acknowledged look here.
   */
  onDeparture?(node: NodeId, effect: Effect, world: World): void;
  onCrash?(node: NodeId, world: World): void;
  onExit?(node: NodeId, code: number, reason: string, world: World): void;
  onStart?(node: NodeId, world: World): void;
  /** A connection's handshake was answered: `acceptor` accepted or refused `opener`'s `hello` (sim/world/handshakes.ts). */
  onHandshake?(acceptor: NodeId, opener: NodeId, hello: Hello, reply: HelloReply, world: World): void;
}

/**
 * The world's observers, indexed by what they look at. The list for each key is built the first time the key
 * occurs and keeps the observers in the order they were added, so dispatch is one map lookup per input or effect
 * and the calls happen in the same order as a plain loop over every observer would make them.
 */
export class Observers {
  private readonly all: Observer[] = [];
  private readonly byInput = new Map<InputKey, readonly Observer[]>();
  private readonly byEffect = new Map<EffectKey, readonly Observer[]>();
  private steppers: readonly Observer[] = [];
  private departures: readonly Observer[] = [];

  add(observer: Observer): void {
    this.all.push(observer);
    this.byInput.clear();
    this.byEffect.clear();
    this.steppers = this.all.filter((o) => o.onStep !== undefined);
    this.departures = this.all.filter((o) => o.onDeparture !== undefined);
  }

  departure(node: NodeId, effect: Effect, world: World): void {
    for (const observer of this.departures) observer.onDeparture!(node, effect, world);
  }

  input(node: NodeId, input: Input, world: World): void {
    const key = input.kind === 'receive' ? input.envelope.message.type : input.kind;
    let list = this.byInput.get(key);
    if (list === undefined) {
      list = this.all.filter((o) => o.onInput !== undefined && wants(o.inputs, key, input.kind));
      this.byInput.set(key, list);
    }
    for (const observer of list) observer.onInput!(node, input, world);
  }

  effects(node: NodeId, effects: readonly Effect[], world: World): void {
    for (const effect of effects) {
      const key = effect.kind === 'send' ? effect.message.type : effect.kind;
      let list = this.byEffect.get(key);
      if (list === undefined) {
        list = this.all.filter((o) => o.onEffect !== undefined && wants(o.effects, key, effect.kind));
        this.byEffect.set(key, list);
      }
      for (const observer of list) observer.onEffect!(node, effect, world);
    }
    for (const observer of this.steppers) observer.onStep!(node, effects, world);
  }

  start(node: NodeId, world: World): void {
    for (const observer of this.all) observer.onStart?.(node, world);
  }

  handshake(acceptor: NodeId, opener: NodeId, hello: Hello, reply: HelloReply, world: World): void {
    for (const observer of this.all) observer.onHandshake?.(acceptor, opener, hello, reply, world);
  }

  crash(node: NodeId, world: World): void {
    for (const observer of this.all) observer.onCrash?.(node, world);
  }

  exit(node: NodeId, code: number, reason: string, world: World): void {
    for (const observer of this.all) observer.onExit?.(node, code, reason, world);
  }
}

/** Whether a subscription covers `key`; `kind` is the input or effect kind, so that 'send'/'receive' cover all. */
function wants<K extends string>(subscription: readonly K[] | undefined, key: K, kind: K): boolean {
  return subscription === undefined || subscription.includes(key) || subscription.includes(kind);
}
