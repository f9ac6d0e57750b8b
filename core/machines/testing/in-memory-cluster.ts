import type { Message } from '../../protocol/messages.ts';
import { CURRENT_RELEASE, type Release } from '../../release/version.ts';
import type { Rng } from '../../rng.ts';
import type {
  AdminCommand,
  BatchableIo,
  Effect,
  IoCompletion,
  Envelope,
  FileRef,
  Input,
  IoError,
  LogLevel,
  NodeId,
} from '../effects.ts';
import { chunksOfWrite } from '../effects.ts';
import type { Machine } from '../machine.ts';

/**
 * A test-only driver that runs a set of state machines in one process with no socket, disk or clock: a queue of
 * inputs ordered by virtual time (ties by insertion), a Map of files per node, durable stores, and a seeded random
 * source per node. It executes every effect kind of ./effects.ts and lets a test drop messages, fail I/O, crash and
 * restart nodes. Same seed and same calls → the same run, event for event.
 *
 * It is deliberately simple (fixed latencies, no reordering); the simulator in sim/ is the place for realistic
 * networks and disks. Mutable by design: it is a driver, not a decision.
 */

export interface ClusterOptions {
  /** Seeds every node's random source (each node draws from its own stream, derived from this and its id). */
  readonly seed?: number;
  /** Delay of every message, in virtual ms. */
  readonly networkLatency?: number;
  /** Delay between an I/O effect and its completion, in virtual ms. */
  readonly ioLatency?: number;
  readonly startTime?: number;
}

export interface NodeOptions<S> {
  readonly machine: Machine<S>;
  /** The state the node starts (and restarts) from, before its `start` input. */
  readonly init: () => S;
  /** The node's release, stamped on every envelope it sends as `fromRelease`. */
  readonly release?: Release;
  /**
   * Which durable store the node's `start` input hands back. Default: `coordination` (shared by every master) for
   * `master-*` ids, otherwise the node's own `recovery` store.
   */
  readonly durableStore?: 'recovery' | 'coordination';
}

export interface NodeHandle<S> {
  readonly id: NodeId;
  /** The node's current state (its last state if it is down). */
  state(): S;
}

/** A stand-in node that only records what it receives; tests use it to play a peer by hand. */
export interface Probe {
  readonly id: NodeId;
  readonly inbox: readonly Envelope[];
}

export interface StoredFile {
  readonly ref: FileRef;
  readonly bytes: Uint8Array;
  /** Bytes made durable by a completed flush; a crash truncates the file to this length. */
  readonly durableLength: number;
}

export interface LogRecord {
  readonly at: number;
  readonly node: NodeId;
  readonly level: LogLevel;
  readonly event: string;
  readonly fields?: Readonly<Record<string, unknown>>;
}

export interface MetricRecord {
  readonly at: number;
  readonly node: NodeId;
  readonly name: string;
  readonly op: 'inc' | 'set' | 'observe';
  readonly value: number;
  readonly labels?: Readonly<Record<string, string>>;
}

export interface Delivery {
  readonly at: number;
  readonly envelope: Envelope;
}

export type IoEffect = BatchableIo;

/** What made `run` return. */
export type RunEnd = 'condition' | 'quiescent' | 'time-limit' | 'event-limit';

export interface RunOptions {
  /** Checked after every event; the run stops as soon as it holds. */
  readonly until?: () => boolean;
  /** Stop before processing an event later than this virtual time. */
  readonly maxTime?: number;
  /** Stop after this many events (guards a test against a machine that never settles). */
  readonly maxEvents?: number;
}

export interface RunResult {
  readonly end: RunEnd;
  readonly events: number;
  readonly now: number;
}

interface Rule<T> {
  readonly match: (value: T) => boolean;
  remaining: number;
}

interface NodeEntry {
  readonly id: NodeId;
  readonly machine: Machine<unknown>;
  readonly init: () => unknown;
  readonly release: Release;
  readonly durableStore: 'recovery' | 'coordination';
  state: unknown;
  up: boolean;
  /** Bumped by crash and exit, so that inputs queued for an earlier incarnation are dropped. */
  incarnation: number;
  readonly timers: Map<string, number>;
  readonly files: Map<string, MutableFile>;
  readonly recovery: Map<string, string>;
  readonly rng: Rng;
}

interface MutableFile {
  ref: FileRef;
  data: Uint8Array;
  length: number;
  durableLength: number;
}

interface QueuedEvent {
  readonly at: number;
  readonly seq: number;
  readonly node: NodeId;
  readonly incarnation: number;
  readonly input: Input;
  /** Set for timers: the firing is void when the timer was set again or cancelled since. */
  readonly timerGeneration?: number;
}

export class InMemoryCluster {
  private readonly nodes = new Map<NodeId, NodeEntry>();
  private readonly probes = new Map<NodeId, Envelope[]>();
  private readonly queue = new EventHeap();
  private readonly coordination = new Map<string, string>();
  private readonly dropRules: Rule<Envelope>[] = [];
  private readonly ioRules: (Rule<{ node: NodeId; effect: IoEffect }> & { error: IoError })[] = [];
  private readonly seed: number;
  private readonly networkLatency: number;
  private readonly ioLatency: number;
  private seq = 0;
  private timerGeneration = 0;
  private clock: number;

  /** Everything recorded during the run, in order. */
  readonly logs: LogRecord[] = [];
  readonly metrics: MetricRecord[] = [];
  readonly delivered: Delivery[] = [];
  readonly dropped: Envelope[] = [];
  readonly exits: { at: number; node: NodeId; code: number; reason: string }[] = [];
  /** Answers to operator commands, in order. */
  readonly adminReplies: {
    at: number;
    node: NodeId;
    commandId: number | undefined;
    success: boolean;
    message: string;
  }[] = [];

  constructor(options: ClusterOptions = {}) {
    this.seed = options.seed ?? 1;
    this.networkLatency = options.networkLatency ?? 1;
    this.ioLatency = options.ioLatency ?? 1;
    this.clock = options.startTime ?? 0;
  }

  get now(): number {
    return this.clock;
  }

  addNode<S>(id: NodeId, options: NodeOptions<S>): NodeHandle<S> {
    if (this.nodes.has(id) || this.probes.has(id)) throw new Error(`node '${id}' is already in the cluster`);
    const entry: NodeEntry = {
      id,
      machine: options.machine,
      init: options.init,
      release: options.release ?? CURRENT_RELEASE,
      durableStore: options.durableStore ?? (id.startsWith('master-') ? 'coordination' : 'recovery'),
      state: options.init(),
      up: false,
      incarnation: 0,
      timers: new Map(),
      files: new Map(),
      recovery: new Map(),
      rng: seededRng(mix(this.seed, id)),
    };
    this.nodes.set(id, entry);
    return { id, state: () => entry.state as S };
  }

  addProbe(id: NodeId): Probe {
    if (this.nodes.has(id) || this.probes.has(id)) throw new Error(`node '${id}' is already in the cluster`);
    const inbox: Envelope[] = [];
    this.probes.set(id, inbox);
    return { id, inbox };
  }

  /** Queues the node's `start` input now (with its durable store as `recovered`). */
  start(id: NodeId): void {
    const node = this.node(id);
    node.up = true;
    const store = node.durableStore === 'coordination' ? this.coordination : node.recovery;
    this.enqueue(node, this.clock, { kind: 'start', recovered: new Map(store) });
  }

  startAll(): void {
    for (const id of this.nodes.keys()) this.start(id);
  }

  /** Sends a message as if from `from` (a probe or any name); it travels like any other message. */
  inject(envelope: Omit<Envelope, 'fromRelease'> & { fromRelease?: Release }): void {
    this.transmit({ ...envelope, fromRelease: envelope.fromRelease ?? CURRENT_RELEASE });
  }

  /**
   * The connection a request went out on closed before its answer came: its sender hears `sendFailed` with `sent`
   * (a driver's transport reports the requests a closed connection leaves unanswered so).
   */
  connectionLost(envelope: Envelope): void {
    this.enqueue(this.node(envelope.from), this.clock, {
      kind: 'sendFailed',
      to: envelope.to,
      message: envelope.message,
      ...(envelope.requestId === undefined ? {} : { requestId: envelope.requestId }),
      sent: true,
    });
  }

  /** Tells a reduce task its consumer is done with every chunk it handed out up to `chunk` (a `consumed` input). */
  consumed(id: NodeId, chunk: number): void {
    this.enqueue(this.node(id), this.clock, { kind: 'consumed', chunk });
  }

  /** Delivers an operator command; its answer lands in `adminReplies` with the same `commandId`. */
  admin(id: NodeId, command: AdminCommand, commandId?: number): void {
    this.enqueue(
      this.node(id),
      this.clock,
      commandId === undefined ? { kind: 'admin', command } : { kind: 'admin', command, commandId },
    );
  }

  /**
   * Silently drops the next `times` messages for which `match` holds (a lost packet: the sender only learns from
   * its own timeout).
   */
  dropMessages(match: (envelope: Envelope) => boolean, times = 1): void {
    this.dropRules.push({ match, remaining: times });
  }

  /** Completes the next `times` I/O effects for which `match` holds with `ioFailed(error)` instead of doing them. */
  failIo(
    match: (io: { node: NodeId; effect: IoEffect }) => boolean,
    error: IoError = 'IO_ERROR',
    times = 1,
  ): void {
    this.ioRules.push({ match, error, remaining: times });
  }

  /**
   * Kills a node: its timers and queued inputs vanish, messages to it are refused until it restarts, and every file
   * loses what was written after its last completed flush. Its durable store survives.
   */
  crash(id: NodeId): void {
    const node = this.node(id);
    node.up = false;
    node.incarnation += 1;
    node.timers.clear();
    for (const file of node.files.values()) file.length = file.durableLength;
  }

  /** Starts a node again from its initial state; `start` hands back its durable store. */
  restart(id: NodeId): void {
    const node = this.node(id);
    if (node.up) this.crash(id);
    node.state = node.init();
    this.start(id);
  }

  /** Processes events in time order until the queue is empty, `until` holds, or a limit is reached. */
  run(options: RunOptions = {}): RunResult {
    const maxEvents = options.maxEvents ?? 1_000_000;
    let events = 0;
    if (options.until?.()) return { end: 'condition', events, now: this.clock };
    for (;;) {
      const next = this.queue.peek();
      if (next === undefined) return { end: 'quiescent', events, now: this.clock };
      if (options.maxTime !== undefined && next.at > options.maxTime) {
        this.clock = Math.max(this.clock, options.maxTime);
        return { end: 'time-limit', events, now: this.clock };
      }
      if (events >= maxEvents) return { end: 'event-limit', events, now: this.clock };
      this.queue.pop();
      // Stale inputs (a replaced timer, an input for a crashed incarnation) vanish without moving the clock.
      if (!this.isLive(next)) continue;
      this.clock = Math.max(this.clock, next.at);
      this.process(next);
      events += 1;
      if (options.until?.()) return { end: 'condition', events, now: this.clock };
    }
  }

  isUp(id: NodeId): boolean {
    return this.node(id).up;
  }

  /** A node's files as they are now (copies; a crash would keep only the first `durableLength` bytes). */
  files(id: NodeId): ReadonlyMap<string, StoredFile> {
    const out = new Map<string, StoredFile>();
    for (const [key, file] of this.node(id).files) {
      out.set(key, {
        ref: file.ref,
        bytes: file.data.slice(0, file.length),
        durableLength: file.durableLength,
      });
    }
    return out;
  }

  /** A node's durable store (for coordination-store nodes, the shared store). */
  durable(id: NodeId): ReadonlyMap<string, string> {
    const node = this.node(id);
    return new Map(node.durableStore === 'coordination' ? this.coordination : node.recovery);
  }

  /** Messages of one type delivered so far (to nodes and probes), in delivery order. */
  deliveredOf<T extends Message['type']>(type: T): Envelope<Extract<Message, { type: T }>>[] {
    return this.delivered
      .filter((d) => d.envelope.message.type === type)
      .map((d) => d.envelope as Envelope<Extract<Message, { type: T }>>);
  }

  private node(id: NodeId): NodeEntry {
    const node = this.nodes.get(id);
    if (node === undefined) throw new Error(`no node '${id}' in the cluster (add it with addNode first)`);
    return node;
  }

  private enqueue(node: NodeEntry, at: number, input: Input, timerGeneration?: number): void {
    this.seq += 1;
    this.queue.push({
      at,
      seq: this.seq,
      node: node.id,
      incarnation: node.incarnation,
      input,
      ...(timerGeneration === undefined ? {} : { timerGeneration }),
    });
  }

  private isLive(event: QueuedEvent): boolean {
    const node = this.node(event.node);
    if (!node.up || node.incarnation !== event.incarnation) return false;
    return event.input.kind !== 'timer' || node.timers.get(event.input.name) === event.timerGeneration;
  }

  private process(event: QueuedEvent): void {
    const node = this.node(event.node);
    if (event.input.kind === 'timer') node.timers.delete(event.input.name);
    if (event.input.kind === 'receive')
      this.delivered.push({ at: this.clock, envelope: event.input.envelope });
    const step = node.machine.step(node.state, event.input, this.clock, node.rng);
    node.state = step.state;
    for (const effect of step.effects) {
      if (!node.up) break;
      this.execute(node, effect);
    }
  }

  private execute(node: NodeEntry, effect: Effect): void {
    switch (effect.kind) {
      case 'send':
        this.send(node, effect);
        return;
      case 'setTimer': {
        this.timerGeneration += 1;
        node.timers.set(effect.name, this.timerGeneration);
        this.enqueue(
          node,
          Math.max(effect.at, this.clock),
          { kind: 'timer', name: effect.name },
          this.timerGeneration,
        );
        return;
      }
      case 'cancelTimer':
        node.timers.delete(effect.name);
        return;
      case 'createFile':
      case 'write':
      case 'flush':
      case 'read':
      case 'moveFile':
        this.enqueue(node, this.clock + this.ioLatency, this.io(node, effect));
        return;
      case 'ioBatch':
        this.enqueue(node, this.clock + this.ioLatency, {
          kind: 'ioBatchDone',
          completions: effect.ops.map((op) => this.io(node, op)),
        });
        return;
      case 'deleteFile':
        node.files.delete(effect.file.id);
        return;
      case 'persist': {
        const store = effect.store === 'coordination' ? this.coordination : node.recovery;
        if (effect.value === null) store.delete(effect.key);
        else store.set(effect.key, effect.value);
        return;
      }
      case 'log':
        this.logs.push({
          at: this.clock,
          node: node.id,
          level: effect.level,
          event: effect.event,
          ...(effect.fields === undefined ? {} : { fields: effect.fields }),
        });
        return;
      case 'adminReply':
        this.adminReplies.push({
          at: this.clock,
          node: node.id,
          commandId: effect.commandId,
          success: effect.success,
          message: effect.message,
        });
        return;
      case 'metric':
        this.metrics.push({
          at: this.clock,
          node: node.id,
          name: effect.name,
          op: effect.op,
          value: effect.value,
          ...(effect.labels === undefined ? {} : { labels: effect.labels }),
        });
        return;
      case 'exit':
        this.exits.push({ at: this.clock, node: node.id, code: effect.code, reason: effect.reason });
        node.up = false;
        node.incarnation += 1;
        node.timers.clear();
        return;
    }
  }

  private send(node: NodeEntry, effect: Extract<Effect, { kind: 'send' }>): void {
    const envelope: Envelope = {
      from: node.id,
      to: effect.to,
      fromRelease: node.release,
      message: effect.message,
      ...(effect.requestId === undefined ? {} : { requestId: effect.requestId }),
      ...(effect.inReplyTo === undefined ? {} : { inReplyTo: effect.inReplyTo }),
    };
    const target = this.nodes.get(effect.to);
    if (!this.probes.has(effect.to) && (target === undefined || !target.up)) {
      // Connection refused: the sender learns at once, as a real client does from a failed connect.
      this.enqueue(node, this.clock, {
        kind: 'sendFailed',
        to: effect.to,
        message: effect.message,
        ...(effect.requestId === undefined ? {} : { requestId: effect.requestId }),
      });
      return;
    }
    this.transmit(envelope);
  }

  private transmit(envelope: Envelope): void {
    const rule = this.dropRules.find((r) => r.remaining > 0 && r.match(envelope));
    if (rule !== undefined) {
      rule.remaining -= 1;
      this.dropped.push(envelope);
      return;
    }
    const probe = this.probes.get(envelope.to);
    if (probe !== undefined) {
      this.delivered.push({ at: this.clock + this.networkLatency, envelope });
      probe.push(envelope);
      return;
    }
    const target = this.nodes.get(envelope.to);
    if (target === undefined || !target.up) {
      this.dropped.push(envelope);
      return;
    }
    this.enqueue(target, this.clock + this.networkLatency, { kind: 'receive', envelope });
  }

  /** Performs one I/O effect now (or fails it by an I/O rule) and returns its completion. */
  private io(node: NodeEntry, effect: IoEffect): IoCompletion {
    const rule = this.ioRules.find((r) => r.remaining > 0 && r.match({ node: node.id, effect }));
    if (rule !== undefined) {
      rule.remaining -= 1;
      return { kind: 'ioFailed', op: effect.op, error: rule.error };
    }
    const outcome = performIo(node.files, effect);
    return typeof outcome === 'string'
      ? { kind: 'ioFailed', op: effect.op, error: outcome }
      : { kind: 'ioDone', op: effect.op, ...(outcome === undefined ? {} : { bytes: outcome }) };
  }
}

/** Applies one I/O effect to a node's files: the bytes read, nothing, or the error. */
function performIo(files: Map<string, MutableFile>, effect: IoEffect): Uint8Array | IoError | undefined {
  switch (effect.kind) {
    case 'createFile':
      if (files.has(effect.file.id)) return 'EXISTS';
      files.set(effect.file.id, { ref: effect.file, data: new Uint8Array(64), length: 0, durableLength: 0 });
      return undefined;
    case 'write': {
      const file = files.get(effect.file.id);
      if (file === undefined) return 'NOT_FOUND';
      for (const chunk of chunksOfWrite(effect)) append(file, chunk);
      return undefined;
    }
    case 'flush': {
      const file = files.get(effect.file.id);
      if (file === undefined) return 'NOT_FOUND';
      file.durableLength = file.length;
      return undefined;
    }
    case 'read': {
      const file = files.get(effect.file.id);
      if (file === undefined) return 'NOT_FOUND';
      const end = Math.min(file.length, effect.offset + effect.length);
      return file.data.slice(Math.min(effect.offset, end), end);
    }
    case 'moveFile': {
      const file = files.get(effect.file.id);
      if (file === undefined) return 'NOT_FOUND';
      if (effect.to.id !== effect.file.id && files.has(effect.to.id)) return 'EXISTS';
      files.delete(effect.file.id);
      // A move lands whole on the new tier: everything moved is as durable as the target makes it.
      files.set(effect.to.id, { ...file, ref: effect.to, durableLength: file.length });
      return undefined;
    }
  }
}

function append(file: MutableFile, bytes: Uint8Array): void {
  const needed = file.length + bytes.length;
  if (needed > file.data.length) {
    const grown = new Uint8Array(Math.max(needed, file.data.length * 2));
    grown.set(file.data.subarray(0, file.length));
    file.data = grown;
  }
  file.data.set(bytes, file.length);
  file.length = needed;
}

/** Binary min-heap on (at, seq): virtual time first, then the order events were queued. */
class EventHeap {
  private readonly items: QueuedEvent[] = [];

  push(event: QueuedEvent): void {
    const items = this.items;
    items.push(event);
    let i = items.length - 1;
    while (i > 0) {
      const parent = (i - 1) >> 1;
      if (!before(items[i]!, items[parent]!)) break;
      [items[i], items[parent]] = [items[parent]!, items[i]!];
      i = parent;
    }
  }

  peek(): QueuedEvent | undefined {
    return this.items[0];
  }

  pop(): QueuedEvent | undefined {
    const items = this.items;
    const top = items[0];
    const last = items.pop();
    if (items.length > 0 && last !== undefined) {
      items[0] = last;
      let i = 0;
      for (;;) {
        const left = 2 * i + 1;
        const right = left + 1;
        let smallest = i;
        if (left < items.length && before(items[left]!, items[smallest]!)) smallest = left;
        if (right < items.length && before(items[right]!, items[smallest]!)) smallest = right;
        if (smallest === i) break;
        [items[i], items[smallest]] = [items[smallest]!, items[i]!];
        i = smallest;
      }
    }
    return top;
  }
}

function before(a: QueuedEvent, b: QueuedEvent): boolean {
  return a.at < b.at || (a.at === b.at && a.seq < b.seq);
}

/** mulberry32: small, fast and good enough for a test driver's draws. */
function seededRng(seed: number): Rng {
  let s = seed >>> 0;
  return {
    next() {
      s = (s + 0x6d2b79f5) >>> 0;
      let t = s;
      t = Math.imul(t ^ (t >>> 15), t | 1);
      t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
      return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
    },
  };
}

/** FNV-1a of the node id folded into the seed, so each node has its own stream. */
function mix(seed: number, id: string): number {
  let h = (0x811c9dc5 ^ seed) >>> 0;
  for (let i = 0; i < id.length; i += 1) {
    h ^= id.charCodeAt(i);
    h = Math.imul(h, 0x01000193) >>> 0;
  }
  return h;
}
