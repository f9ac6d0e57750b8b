import {
  lengthOfWrite,
  type Effect,
  type Envelope,
  type Input,
  type IoCompletion,
  type NodeId,
  type Principal,
} from '../../core/machines/effects.ts';
import { Interpreter, type PersistEffect } from '../../core/interpreter/interpreter.ts';
import type { Machine } from '../../core/machines/machine.ts';
import type { PlantedBug } from '../../core/planted-bugs.ts';
import { CURRENT_RELEASE, type Release } from '../../core/release/version.ts';
import type { Rng } from '../../core/rng.ts';
import type { InvariantName } from './invariant-catalogue.ts';
import { EventQueue } from './event-queue.ts';
import { Observers, type Observer } from './observers.ts';
import { CALM_NETWORK, Network, type NetworkRates } from './network.ts';
import { LazyStream, logUniform, streamRng } from './random.ts';
import {
  NodeStorage,
  SharedDfs,
  type DiskFaults,
  type DiskSpec,
  type FileEffect,
  type IoRates,
} from './storage.ts';
import { workerServiceFor } from '../../core/protocol/services.ts';
import { STALLED_FRAME_MS, type BackPressureLimits } from '../../core/storage/back-pressure.ts';
import {
  WorkerBackPressure,
  type PartialFrame,
  type PartialFrameLimit,
  type PausedService,
  type PressureChange,
} from './back-pressure.ts';
import { Routes, type Speaker, type TransportModel } from './routes.ts';
import {
  Handshakes,
  type ConnectionVerdict,
  type HandshakeEnd,
  type SettledVerdict,
  type SimConnection,
} from './handshakes.ts';
import { DEFAULT_SECRET_MAX_AGE_MS } from '../../core/machines/cached-secrets.ts';
import { refusalAnswer, type Hello, type HelloReply } from '../../core/handshake/index.ts';
import { describe, Trace } from './trace.ts';
import { UnansweredRequests } from '../../core/interpreter/unanswered-requests.ts';
import { SilenceWatch, type OwedRequest } from './silence.ts';
import { GroupFollowing, type MasterGroupHooks } from './master-group.ts';
import { checkRecords } from '../../core/machines/client/records.ts';

export type { EffectKey, InputKey, Observer } from './observers.ts';
export type { MasterGroupHooks, StandbyAnswer } from './master-group.ts';

/** A node of the simulated cluster: a core state machine and what the simulator needs to run it. */
export interface NodeDefinition<S = unknown> {
  readonly id: NodeId;
  /** master, worker, lifecycle-manager, map task, ...: only for traces and fault targeting. */
  readonly role: string;
  /** The release the node runs; stamped on every envelope it sends (the handshake's job on a real wire). */
  readonly release?: Release;
  /**
   * Who the node's connections prove to be (application authentication); stamped on every envelope it sends, as
   * a real connection's handshake establishes it. Absent: nothing proved.
   */
  readonly principal?: Principal;
  readonly machine: Machine<S>;
  /** The state of a freshly started process (first start and every restart), for the release it now runs. */
  readonly initialState: (release: Release) => S;
  readonly disks?: readonly DiskSpec[];
  /** Whether the node writes to the shared distributed filesystem. */
  readonly dfs?: boolean;
  /**
   * Whether the node has no address of its own (a task): messages reach it only on the connection it last spoke
   * on (the core's reply routes, sim/world/routes.ts).
   */
  readonly addressless?: boolean;
  /**
   * A worker's back-pressure thresholds (its memory budget × the directMemoryRatio* keys): above them it stops
   * reading its push and replicate ports until its disks caught up (sim/world/back-pressure.ts). Absent: never.
   */
  readonly backPressure?: BackPressureLimits;
  /**
   * With `backPressure`: data messages count as partly received frames while they travel, in the back-pressure and
   * against this limit, past which the connections holding the most are closed (sim/world/back-pressure.ts).
   * Absent: messages arrive whole and hold nothing before they do.
   */
  readonly partialFrames?: PartialFrameLimit;
  /**
   * The durable store handed back in `start`: a worker's own recovery store, or the masters' shared coordination
   * store. Default: coordination for `master-*` ids, recovery otherwise.
   */
  readonly durableStore?: 'recovery' | 'coordination';
  /**
   * The bound of the node's backlog (core/interpreter/interpreter.ts): at it, a master or a worker stops reading its
   * connections until the backlog fell to half, as a server process does. Default DEFAULT_INPUT_LIMIT.
   */
  readonly inputLimit?: number;
}

/** Something went wrong that the run must report: an invariant broke, or a machine threw. */
export interface Violation {
  /** The invariant broken, by its name in invariant-catalogue.ts. */
  readonly invariant: InvariantName;
  readonly time: number;
  readonly node?: NodeId;
  readonly detail: string;
}

export interface WorldOptions {
  readonly seed: number;
  readonly trace?: boolean;
  readonly network?: NetworkRates;
  readonly io?: IoRates;
  /** How long a durable store takes to confirm a write; default DEFAULT_STORE_LATENCY. */
  readonly storeLatency?: StoreLatency;
  /** A bug planted in the interpreter every node runs (core/planted-bugs.ts); only the proof tests set it. */
  readonly plantedBug?: PlantedBug;
}

/** A request on its way to a process, or taken by it, that it has not answered yet. */
interface PendingRequest {
  readonly sender: NodeId;
  /** The sender's process when it asked: a later one of the same node waits for nothing. */
  readonly senderIncarnation: number;
  readonly to: NodeId;
  readonly message: Envelope['message'];
  readonly requestId: number;
}

/** A durable store's write latency, drawn log-uniformly for each write between the bounds (ms). */
export interface StoreLatency {
  readonly minMs: number;
  readonly maxMs: number;
}

/** A synced RocksDB batch: a tenth of a millisecond on a fast SSD to several on a busy disk. */
export const DEFAULT_STORE_LATENCY: StoreLatency = { minMs: 0.05, maxMs: 8 };

/** One key a write of a durable store sets (or, with null, deletes). */
interface StoreChange {
  readonly store: 'recovery' | 'coordination';
  readonly key: string;
  readonly value: string | null;
}

export type RunOutcome = 'stopped' | 'idle' | 'time-limit' | 'event-limit' | 'failed';

type SimEvent =
  | {
      readonly kind: 'input';
      readonly node: NodeId;
      readonly incarnation: number;
      readonly input: Input;
      /** The connection a received envelope came on (absent: handed to the node from outside the network). */
      readonly via?: Speaker;
      /** The handshaken connection it came on, when it is one the sender opened (sim/world/handshakes.ts). */
      readonly connection?: SimConnection;
      /** The partly received frame this arrival completes (counted in the node's back-pressure until then). */
      readonly frame?: number;
    }
  | {
      readonly kind: 'timer';
      readonly node: NodeId;
      readonly incarnation: number;
      readonly name: string;
      readonly generation: number;
    }
  | { readonly kind: 'action'; readonly label: string; readonly run: (world: World) => void }
  /** A node's write of its durable store is confirmed (dropped if the node crashed meanwhile: the write is lost). */
  | {
      readonly kind: 'stored';
      readonly node: NodeId;
      readonly incarnation: number;
      readonly changes: readonly StoreChange[];
    };

interface SimNode {
  readonly def: NodeDefinition;
  release: Release;
  /** The current (or last) process's interpreter: its machine state and the effects waiting for a store write. */
  interpreter: Interpreter<unknown> | undefined;
  up: boolean;
  /** Bumped on every crash and exit: completions, timers and messages meant for an earlier process are dropped. */
  incarnation: number;
  /** When the current process started (meaningful while up). */
  startedAt: number;
  readonly timers: Map<string, number>;
  timerGeneration: number;
  readonly rng: Rng;
  readonly storage: NodeStorage | undefined;
  /** The worker's graceful-shutdown store; survives crashes and exits (but not a write it had not confirmed). */
  readonly recovery: Map<string, string>;
  readonly storeRng: Rng;
  readonly addressless: boolean;
  /** The process's back-pressure (workers with limits only); a restart starts with nothing in flight. */
  pressure: WorkerBackPressure<ShedNotice | undefined> | undefined;
  /** Whether the backlog is at its bound: arrivals from the network wait in `backlogArrivals` (servers only). */
  backlogFull: boolean;
  /** A completion freed enough of the disks' queue for the paused ports to resume: read them after its step. */
  diskResumed: boolean;
  /** The back-pressure whose check for stalled frames is pending (`armStallCheck`), if any. */
  stallCheckFor: WorkerBackPressure<ShedNotice | undefined> | undefined;
  readonly backlogArrivals: Extract<SimEvent, { kind: 'input' }>[];
  /** Arrivals on a paused port, in arrival order, per port. */
  readonly heldArrivals: Map<PausedService, Extract<SimEvent, { kind: 'input' }>[]>;
  /** The process's route table (with a transport model only); a restart empties it. */
  routes: Routes | undefined;
  /** What its connections establish at a peer's handshake (this incarnation's, renewed at each start). */
  speaker: Speaker;
  /** Until when the process reads nothing and runs no timer (SIGSTOP); its events wait until then. */
  frozenUntil: number;
}

/** Whom to tell, and what, when a partly received frame is given up: the sender's process that sent it. */
interface ShedNotice {
  readonly sender: NodeId;
  readonly incarnation: number;
  readonly input: Extract<Input, { kind: 'sendFailed' }>;
}

/** Sees a message go to a connection other than its addressee's: a route was taken over (sim/invariants/isolation.ts). */
export type RouteCapture = (world: World, on: NodeId, via: NodeId, envelope: Envelope) => void;

/**
 * The simulated world: a virtual clock, one event queue, the network, the disks and the nodes. It executes exactly
 * the effect vocabulary of core/machines/effects.ts and adds no decisions of its own; every random choice comes from
 * a stream derived from the seed, and nothing reads the real clock, so a seed replays exactly.
 */
export class World {
  readonly trace: Trace;
  readonly network: Network;
  /** The masters' shared coordination store (high availability); survives every crash. */
  readonly coordination = new Map<string, string>();
  readonly seed: number;
  private readonly queue = new EventQueue<SimEvent>();
  /** Requests each process has not answered: its end fails them at their senders. */
  private readonly unanswered: UnansweredRequests<NodeId, PendingRequest>;
  private readonly nodes = new Map<NodeId, SimNode>();
  private readonly observers = new Observers();
  private readonly dfs = new SharedDfs();
  /** Shared by every node's storage, so that the end of the storm calms every disk at once. */
  private readonly ioRates: { ioError: number; noSpace: number };
  private readonly storeLatency: StoreLatency;
  private readonly plantedBug: PlantedBug | undefined;
  private clock = 0;
  private stopped = false;
  private failure: Violation | undefined;
  private processed = 0;
  private transport: TransportModel | undefined;
  /** Every connection's handshake, run by the core's machines (with a transport model only). */
  private handshakes: Handshakes | undefined;
  private readonly captures: RouteCapture[] = [];
  /** Each process's watch on the peers it waits for (with a transport model that sets one). */
  private silence: SilenceWatch | undefined;
  private nextFrameId = 1;
  /** The cluster's master as a group of masters, which the other processes follow (./master-group.ts). */
  private group: GroupFollowing | undefined;

  constructor(options: WorldOptions) {
    this.seed = options.seed;
    this.trace = new Trace(options.trace ?? false);
    this.network = new Network(streamRng(options.seed, 'network'), options.network ?? CALM_NETWORK);
    this.ioRates = { ...(options.io ?? { ioError: 0, noSpace: 0 }) };
    this.storeLatency = options.storeLatency ?? DEFAULT_STORE_LATENCY;
    this.plantedBug = options.plantedBug;
    this.unanswered = new UnansweredRequests(
      options.plantedBug === undefined ? {} : { plantedBug: options.plantedBug },
    );
  }

  /**
   * Routes messages through the core's reply routes from now on (sim/world/routes.ts): replies and messages to
   * addressless nodes on the connection their addressee last spoke on, under the core's speaker rules.
   */
  modelTransport(model: TransportModel): void {
    this.transport = model;
    this.handshakes = new Handshakes({
      authenticated: model.authenticated,
      ...(model.plantedBug === undefined ? {} : { plantedBug: model.plantedBug }),
      secretCacheExpiryMs: model.secretCacheExpiryMs ?? DEFAULT_SECRET_MAX_AGE_MS,
      masterSecret: (appId) => this.masterSecret(appId),
      afterRoundTrip: (label, then) => this.schedule(this.clock + this.network.roundTrip(), label, then),
      now: () => this.clock,
      count: (name) => this.trace.count(name),
      verdict: (acceptor, opener, hello, reply) => this.handshaken(acceptor, opener, hello, reply),
    });
    if (model.silentPeers !== undefined) {
      this.silence = new SilenceWatch(
        model.silentPeers,
        {
          now: () => this.clock,
          count: (name) => this.trace.count(name),
          ping: (from, to) => this.ping(from, to),
          failOwed: (asker, peer, owed) => this.failOwed(asker, peer, owed),
          violation: (invariant, asker, _peer, detail) => this.fail({ invariant, node: asker, detail }),
          schedule: (at, label, check) => this.schedule(at, label, check),
        },
        model.plantedBug,
      );
    }
  }

  /**
   * A ping from `from`'s process to `to`, answered by `to`'s driver without its machine (a busy process answers),
   * or with a reset when no process listens there; lost both ways by a partition, as any message.
   */
  private ping(from: NodeId, to: NodeId): void {
    const asker = this.nodes.get(from)!;
    const incarnation = asker.incarnation;
    const answered = (): void => {
      if (asker.up && asker.incarnation === incarnation) this.silence!.heard(from, to);
    };
    for (const at of this.network.arrivals(from, to, this.clock).slice(0, 1)) {
      this.schedule(at, `${to} answers ${from}'s ping`, () => {
        for (const back of this.network.arrivals(to, from, this.clock).slice(0, 1))
          this.schedule(back, `${from} hears ${to}`, answered);
      });
    }
  }

  /** `asker` gave `peer` up as silent: each request it owed is failed at `asker` at once, as a closed connection's. */
  private failOwed(asker: NodeId, peer: NodeId, owed: readonly OwedRequest[]): void {
    const node = this.nodes.get(asker)!;
    for (const request of owed) {
      this.unanswered.answered(peer, asker, request.requestId);
      this.enqueue(node, this.clock, {
        kind: 'sendFailed',
        to: peer,
        message: request.message,
        requestId: request.requestId,
        sent: true,
      });
    }
  }

  /**
   * The master's answer to GetApplicationSecret, as its machine gives it (core/machines/master/applications.ts),
   * or undefined when no master process is up to ask.
   */
  private masterSecret(appId: string): { readonly found: boolean; readonly secret: string } | undefined {
    for (const node of this.nodes.values()) {
      if (node.def.role !== 'master' || !node.up) continue;
      const state = node.interpreter?.state as {
        readonly durable?: {
          readonly applications?: { readonly apps?: ReadonlyMap<string, { secret?: string }> };
        };
      };
      const secret = state.durable?.applications?.apps?.get(appId)?.secret;
      return { found: secret !== undefined, secret: secret ?? '' };
    }
    return undefined;
  }

  private handshaken(acceptor: HandshakeEnd, opener: HandshakeEnd, hello: Hello, reply: HelloReply): void {
    this.trace.count(reply.accepted ? 'handshake.accepted' : `handshake.refusedBy.${reply.status}`);
    if (this.trace.enabled && !reply.accepted) {
      this.trace.line(
        this.clock,
        acceptor.id,
        `handshake of ${opener.id} refused: ${reply.status} ${reply.message}`,
      );
    }
    this.observers.handshake(acceptor.id, opener.id, hello, reply, this);
  }

  private handshakeEnd(node: SimNode): HandshakeEnd {
    return {
      id: node.def.id,
      incarnation: node.incarnation,
      role: node.def.role,
      release: node.release,
      speaker: node.speaker,
    };
  }

  /** Calls `capture` whenever a message goes to a connection that is not its addressee's. */
  onRouteCapture(capture: RouteCapture): void {
    this.captures.push(capture);
  }

  /** The nodes `id`'s process has open routes to now (read only; empty without a transport model). */
  routesOf(id: NodeId): NodeId[] {
    const routes = this.nodes.get(id)?.routes;
    if (routes === undefined) return [];
    return routes.nodes().filter((node) => routes.route(node) !== undefined);
  }

  /**
   * An envelope arrives at `to` on a connection of an outsider (`speaker.via` is no node of the world), at `at`:
   * it passes the speaker rules as any other would.
   */
  injectVia(to: NodeId, envelope: Envelope, speaker: Speaker, at = this.clock): void {
    const node = this.node(to);
    this.queue.push(Math.max(at, this.clock), {
      kind: 'input',
      node: to,
      incarnation: node.incarnation,
      input: { kind: 'receive', envelope },
      via: speaker,
    });
  }

  /**
   * A hostile peer's connection `via` (no node of the world) begins a frame of `bytes` to `to`'s `service` port and
   * sends no more of it. The worker holds it as a partly received frame until its deadline (`timeoutMs`, the
   * runtime's svc.network.timeout, which runs while a frame is under way) closes the connection, unless it gave the
   * connection up first. Returns false when `to` is down or does not model partly received frames.
   */
  stallFrame(to: NodeId, service: PausedService, via: string, bytes: number, timeoutMs: number): boolean {
    const node = this.node(to);
    const pressure = node.pressure;
    if (!node.up || pressure === undefined || !pressure.countsPartialFrames) return false;
    const id = this.nextFrameId++;
    this.trace.count('partialFrames.stalled');
    if (this.trace.enabled) {
      this.trace.line(this.clock, to, `${via} begins a ${service} frame and stalls after ${bytes} bytes`);
    }
    const { change, shed } = pressure.frameSent(
      { id, link: `${via} ${service}`, bytes, detail: undefined },
      service,
      this.clock,
    );
    this.pressureChanged(node, change, shed);
    this.schedule(this.clock + timeoutMs, `${to} closes ${via}'s stalled frame`, () => {
      if (node.pressure !== pressure) return; // the process ended: the connection went with it
      const closed = pressure.frameArrived(id, service, this.clock);
      if (closed !== 'shed') this.pressureChanged(node, closed.change, closed.shed);
    });
    return true;
  }

  /** Changes the background I/O fault rates of every disk from now on. */
  setIoRates(rates: IoRates): void {
    this.ioRates.ioError = rates.ioError;
    this.ioRates.noSpace = rates.noSpace;
  }

  get now(): number {
    return this.clock;
  }

  get eventsProcessed(): number {
    return this.processed;
  }

  get violation(): Violation | undefined {
    return this.failure;
  }

  observe(observer: Observer): void {
    this.observers.add(observer);
  }

  addNode<S>(def: NodeDefinition<S>): void {
    if (this.nodes.has(def.id)) throw new RangeError(`node ${def.id} is defined twice`);
    const storage =
      def.disks !== undefined || def.dfs === true
        ? new NodeStorage(
            def.id,
            def.disks ?? [],
            def.dfs === true ? this.dfs : undefined,
            streamRng(this.seed, `disk:${def.id}`),
            this.ioRates,
          )
        : undefined;
    this.nodes.set(def.id, {
      def,
      release: def.release ?? CURRENT_RELEASE,
      interpreter: undefined,
      up: false,
      incarnation: 0,
      startedAt: 0,
      timers: new Map(),
      timerGeneration: 0,
      rng: new LazyStream(this.seed, `node:${def.id}`),
      storage,
      recovery: new Map(),
      storeRng: new LazyStream(this.seed, `store:${def.id}`),
      routes: undefined,
      speaker: {
        via: def.id,
        incarnation: 0,
        identity:
          def.role === 'master' || def.role === 'worker'
            ? { role: def.role }
            : {
                role: 'client',
                ...(def.principal?.kind === 'application' ? { application: def.principal.appId } : {}),
              },
        principal: def.principal,
      },
      addressless: def.addressless === true,
      pressure: undefined,
      backlogFull: false,
      diskResumed: false,
      backlogArrivals: [],
      stallCheckFor: undefined,
      heldArrivals: new Map(),
      frozenUntil: 0,
    });
  }

  /**
   * Makes the cluster's master a group: its members' leadership is `hooks`' (sim/ha/cluster-group.ts), and every
   * other process follows its leader through the core's following (./master-group.ts).
   */
  useMasterGroup(hooks: MasterGroupHooks): void {
    this.group = new GroupFollowing(hooks);
  }

  /** Freezes a process until `until` (SIGSTOP, then SIGCONT): what reaches it waits, and its timers too. */
  freeze(id: NodeId, until: number): void {
    const node = this.node(id);
    node.frozenUntil = Math.max(node.frozenUntil, until);
    this.trace.line(this.clock, id, `FREEZE until ${until.toFixed(1)}`);
  }

  hasNode(id: NodeId): boolean {
    return this.nodes.has(id);
  }

  roleOf(id: NodeId): string | undefined {
    return this.nodes.get(id)?.def.role;
  }

  isUp(id: NodeId): boolean {
    return this.nodes.get(id)?.up ?? false;
  }

  /** When the node's current process started; undefined while it is down. */
  upSince(id: NodeId): number | undefined {
    const node = this.nodes.get(id);
    return node?.up === true ? node.startedAt : undefined;
  }

  /** The machine state of a node, for checkers that need to look inside (read only). */
  stateOf(id: NodeId): unknown {
    return this.nodes.get(id)?.interpreter?.state;
  }

  /** The durable store a node's `start` hands back, as confirmed writes left it (read only). */
  durableStoreOf(id: NodeId): ReadonlyMap<string, string> {
    const node = this.node(id);
    return this.storeKindOf(node) === 'coordination' ? this.coordination : node.recovery;
  }

  storageOf(id: NodeId): NodeStorage | undefined {
    return this.nodes.get(id)?.storage;
  }

  /** The fault switches of the distributed filesystem, shared by every worker that has a DFS. */
  dfsFaults(): DiskFaults {
    return this.dfs.faults;
  }

  releaseOf(id: NodeId): Release {
    return this.node(id).release;
  }

  /** Changes the release a node runs from its next start on (a rolling upgrade restarts it on the new binary). */
  upgrade(id: NodeId, release: Release): void {
    const node = this.node(id);
    if (node.up) throw new Error(`node ${id} is running; stop it before installing release ${release}`);
    node.release = release;
  }

  /** Schedules a world action (a fault, a workload step) at virtual time `at`. */
  schedule(at: number, label: string, run: (world: World) => void): void {
    this.queue.push(Math.max(at, this.clock), { kind: 'action', label, run });
  }

  /**
   * Starts (or restarts) a process with a fresh state; it first sees `start` with its recovery store, or with
   * `recovered` (a member of a master group, from the state its leadership loaded).
   */
  start(id: NodeId, recovered?: ReadonlyMap<string, string>): void {
    const node = this.node(id);
    if (node.up) throw new Error(`node ${id} is already running; crash or exit it before starting it again`);
    node.up = true;
    node.startedAt = this.clock;
    node.routes =
      this.transport === undefined ? undefined : new Routes(this.transport, this.clock, this.connectionOpen);
    node.speaker = { ...node.speaker, incarnation: node.incarnation };
    node.pressure =
      node.def.backPressure === undefined
        ? undefined
        : new WorkerBackPressure(node.def.backPressure, node.def.partialFrames);
    node.interpreter = this.interpreterFor(node);
    this.silence?.started(id);
    this.group?.started(id);
    this.trace.line(this.clock, id, `START incarnation=${node.incarnation} release=${node.release}`);
    this.observers.start(id, this);
    const leftovers = node.storage?.diskFiles();
    this.enqueue(node, this.clock, {
      kind: 'start',
      recovered: new Map(recovered ?? this.durableStoreOf(id)),
      ...(leftovers === undefined ? {} : { leftovers }),
    });
  }

  /**
   * Power loss: the process dies, memory is gone, disks keep only synced bytes; the durable store keeps the writes
   * it confirmed and loses the one in flight (and whatever waited for it).
   */
  crash(id: NodeId): void {
    const node = this.node(id);
    if (!node.up) return;
    this.stop_(node);
    node.storage?.crash();
    this.trace.line(this.clock, id, 'CRASH');
    this.observers.crash(id, this);
  }

  /**
   * Replaces a running process with a fresh one (a task retried in the same slot): no power loss, nothing of the
   * old process survives but its durable store.
   */
  relaunch(id: NodeId): void {
    const node = this.node(id);
    if (node.up) {
      this.stop_(node);
      node.storage?.processExit();
    }
    this.trace.line(this.clock, id, 'RELAUNCH');
    this.start(id);
  }

  /** The process exits on its own (as its `exit` effect does): a deposed leader of a master group. */
  exit(id: NodeId, code: number, reason: string): void {
    const node = this.node(id);
    if (!node.up) return;
    this.trace.line(this.clock, id, `EXIT code=${code} ${reason}`);
    this.stop_(node);
    node.storage?.processExit();
    this.observers.exit(id, code, reason, this);
  }

  /** Hands an input to a node from outside the cluster (an operator command, a task launch) at time `at`. */
  inject(id: NodeId, input: Input, at = this.clock): void {
    const node = this.node(id);
    this.enqueue(node, at, input);
  }

  /** Ends the run at the current event (the workload reached its goal). */
  stop(): void {
    this.stopped = true;
  }

  /** Records a violation and ends the run. The first violation wins: later ones are consequences. */
  fail(violation: Omit<Violation, 'time'>): void {
    if (this.failure) return;
    this.failure = { ...violation, time: this.clock };
    this.trace.line(
      this.clock,
      violation.node ?? '-',
      `VIOLATION ${violation.invariant}: ${violation.detail}`,
    );
  }

  /** Runs events until the world is stopped, fails, runs out of events, or reaches a limit. */
  run(limits: { readonly until: number; readonly maxEvents: number }): RunOutcome {
    while (!this.stopped && !this.failure) {
      const next = this.queue.peek();
      if (next === undefined) return 'idle';
      if (next.time > limits.until) {
        this.clock = limits.until;
        return 'time-limit';
      }
      if (this.processed >= limits.maxEvents) return 'event-limit';
      this.queue.pop();
      this.clock = next.time;
      this.processed += 1;
      this.dispatch(next.event);
    }
    return this.failure ? 'failed' : 'stopped';
  }

  private dispatch(event: SimEvent): void {
    if (event.kind === 'action') {
      this.trace.line(this.clock, '-', event.label);
      try {
        event.run(this);
      } catch (error) {
        this.fail({
          invariant: 'simulator-threw',
          detail: `${event.label}: ${error instanceof Error ? (error.stack ?? error.message) : String(error)}`,
        });
      }
      return;
    }
    const node = this.nodes.get(event.node)!;
    if (!node.up || node.incarnation !== event.incarnation) return;
    if (node.frozenUntil > this.clock) {
      this.queue.push(node.frozenUntil, event);
      return;
    }
    if (this.group?.isMember(node.def.id) === true && event.kind !== 'stored') {
      if (!this.group.hooks.mayAct(node.def.id)) return;
    }
    if (event.kind === 'stored') {
      this.stored(node, event.changes);
      return;
    }
    if (event.kind === 'timer') {
      if (node.timers.get(event.name) !== event.generation) return;
      node.timers.delete(event.name);
      this.step(node, { kind: 'timer', name: event.name });
      return;
    }
    if (this.silence !== undefined) this.watchArrival(node, event.input);
    if (node.backlogFull && event.input.kind === 'receive') {
      // Its connections are not read while the backlog is full; the sender's bytes wait in the network.
      node.backlogArrivals.push(event);
      this.trace.count('backlog.held');
      return;
    }
    if (event.frame !== undefined && node.pressure !== undefined && event.input.kind === 'receive') {
      const service = workerServiceFor(event.input.envelope.message) as PausedService;
      const arrival = node.pressure.frameArrived(event.frame, service, this.clock);
      if (arrival === 'shed') return; // its connection was closed: the rest of the frame never came
      this.pressureChanged(node, arrival.change, arrival.shed);
    }
    if (node.pressure !== undefined && event.via !== undefined && this.holdArrival(node, event)) return;
    this.arrive(node, event);
    if (node.diskResumed) {
      // A completion freed enough bytes on the disks' queue (the interpreter counts them): read the ports again.
      node.diskResumed = false;
      this.releaseArrivals(node);
    }
  }

  /** What reached `node` tells its silence watch: the sender was heard from; an answer or failure settles a request. */
  private watchArrival(node: SimNode, input: Input): void {
    if (input.kind === 'receive') {
      const envelope = input.envelope;
      this.silence!.heard(node.def.id, envelope.from);
      if (envelope.inReplyTo !== undefined)
        this.silence!.settled(node.def.id, envelope.from, envelope.inReplyTo);
    } else if (input.kind === 'sendFailed' && input.requestId !== undefined) {
      this.silence!.settled(node.def.id, input.to, input.requestId);
    }
  }

  /** A paused port is not read: its arrivals wait, in order, behind any that already wait. */
  private holdArrival(node: SimNode, event: Extract<SimEvent, { kind: 'input' }>): boolean {
    if (event.input.kind !== 'receive') return false;
    const service = workerServiceFor(event.input.envelope.message);
    if (service !== 'push' && service !== 'replicate') return false;
    const held = node.heldArrivals.get(service);
    if (!node.pressure!.isPaused(service) && (held === undefined || held.length === 0)) return false;
    if (held === undefined) node.heldArrivals.set(service, [event]);
    else held.push(event);
    this.trace.count(`backPressure.held.${service}`);
    if (this.trace.enabled) {
      this.trace.line(
        this.clock,
        node.def.id,
        `held ${event.input.envelope.message.type} from ${event.input.envelope.from}: ${service} paused (${node.pressure!.bytesInFlight} bytes in flight)`,
      );
    }
    return true;
  }

  /** Reads the ports that resumed, in arrival order, until one pauses again. */
  private releaseArrivals(node: SimNode): void {
    for (const [service, held] of node.heldArrivals) {
      while (held.length > 0 && node.up && !node.pressure!.isPaused(service)) {
        const event = held.shift()!;
        if (event.incarnation === node.incarnation) this.arrive(node, event);
      }
    }
  }

  private arrive(node: SimNode, arrival: Extract<SimEvent, { kind: 'input' }>): void {
    const event = this.provenAtArrival(arrival);
    if (event === undefined) return;
    if (event.via !== undefined && node.routes !== undefined && event.input.kind === 'receive') {
      const from = event.input.envelope.from;
      const refusal = node.routes.arrived(from, event.via, this.clock);
      if (refusal !== undefined) {
        // The runtime closes the connection: the envelope never reaches the machine.
        this.trace.count('transport.refused');
        if (this.trace.enabled) {
          this.trace.line(
            this.clock,
            node.def.id,
            `refused ${from} on ${event.via.via}'s connection: ${refusal}`,
          );
        }
        return;
      }
    }
    if (this.group === undefined) {
      this.step(node, event.input);
      return;
    }
    const input = this.group.arriving(node.def.id, event.input, (resend) =>
      this.send(node, { kind: 'send', ...resend }, false),
    );
    if (input !== undefined) this.step(node, input);
  }

  /**
   * An envelope on a connection whose proof the acceptor kept for later (the master's first registration): the
   * acceptor's machine checks it now if it can, and the envelope then carries what the connection proved, or is
   * lost with the connection the check closed (a request fails at its sender, as on any closed connection).
   */
  private provenAtArrival(
    event: Extract<SimEvent, { kind: 'input' }>,
  ): Extract<SimEvent, { kind: 'input' }> | undefined {
    const connection = event.connection;
    if (connection === undefined || event.input.kind !== 'receive' || !connection.provingLater) return event;
    const envelope = event.input.envelope;
    if (!this.handshakes!.arrived(connection)) {
      const sender = this.nodes.get(envelope.from);
      if (envelope.requestId !== undefined && sender !== undefined) {
        this.queue.push(this.clock + this.network.roundTrip() / 2, {
          kind: 'input',
          node: envelope.from,
          incarnation: connection.opener.incarnation,
          input: {
            kind: 'sendFailed',
            to: envelope.to,
            message: envelope.message,
            requestId: envelope.requestId,
            sent: true,
          },
        });
      }
      return undefined;
    }
    if (connection.principal === envelope.principal) return event;
    const proven: Envelope =
      connection.principal === undefined ? envelope : { ...envelope, principal: connection.principal };
    return { ...event, input: { kind: 'receive', envelope: proven }, via: connection.speaker };
  }

  private step(node: SimNode, input: Input): void {
    try {
      node.interpreter!.input(input);
    } catch (error) {
      if (!(error instanceof MachineThrew)) throw error;
      this.fail({
        invariant: 'machine-threw',
        node: node.def.id,
        detail: `${node.def.role} machine threw on ${input.kind}: ${error.cause instanceof Error ? (error.cause.stack ?? error.cause.message) : String(error.cause)}`,
      });
    }
  }

  /**
   * A process's interpreter: the core's sequencing (core/interpreter/interpreter.ts), the same code the runtime's
   * driver runs, with the world's I/O: effects on the simulated network and disks, and writes of the durable store
   * confirmed after a latency drawn from the node's store stream.
   */
  private interpreterFor(node: SimNode): Interpreter<unknown> {
    const id = node.def.id;
    const machine = node.def.machine;
    const threw: Machine<unknown> = {
      step(state, input, now, rng) {
        try {
          return machine.step(state, input, now, rng);
        } catch (error) {
          throw new MachineThrew(error);
        }
      },
    };
    return new Interpreter(
      threw,
      node.def.initialState(node.release),
      node.rng,
      {
        now: () => this.clock,
        execute: (effect) => this.execute(node, effect),
        write: (persists) => this.write(node, persists),
        stepping: (input) => {
          if (this.trace.enabled) this.trace.line(this.clock, id, traceInput(input));
          this.observers.input(id, input, this);
        },
        stepped: (_input, effects) => this.observers.effects(id, effects, this),
        dropped: (effect) => this.trace.line(this.clock, id, `ignored after exit: ${effect.kind}`),
        ...(node.def.backPressure === undefined
          ? {}
          : {
              diskBytes: (delta: number) => {
                if (node.pressure?.change(delta) === true) node.diskResumed = true;
              },
            }),
        ...(node.def.role === 'master' || node.def.role === 'worker'
          ? { backlogFull: (full: boolean, backlog: number) => this.backlogChanged(node, full, backlog) }
          : {}),
      },
      {
        ...(node.def.inputLimit === undefined ? {} : { inputLimit: node.def.inputLimit }),
        ...(this.plantedBug === undefined ? {} : { plantedBug: this.plantedBug }),
      },
    );
  }

  /** A server's backlog reached its bound, or fell back to half: its connections stop, or start again, being read. */
  private backlogChanged(node: SimNode, full: boolean, backlog: number): void {
    node.backlogFull = full;
    this.trace.count(full ? 'backlog.full' : 'backlog.drained');
    if (this.trace.enabled) {
      this.trace.line(this.clock, node.def.id, `backlog ${full ? 'full' : 'drained'} at ${backlog} inputs`);
    }
    if (full) return;
    const incarnation = node.incarnation;
    // Read in an event of its own, as the resumed ports of back-pressure are.
    this.schedule(this.clock, `${node.def.id} reads its connections again`, () => {
      if (!node.up || node.incarnation !== incarnation) return;
      while (!node.backlogFull && node.backlogArrivals.length > 0)
        this.dispatch(node.backlogArrivals.shift()!);
    });
  }

  /** One write of a node's durable store, confirmed after the store's latency (lost if the node ends first). */
  private write(node: SimNode, persists: readonly PersistEffect[]): void {
    const changes = persists.map((effect) => ({ store: effect.store, key: effect.key, value: effect.value }));
    if (this.group?.isMember(node.def.id) === true) {
      const incarnation = node.incarnation;
      this.group.hooks.persist(node.def.id, changes, () => {
        if (node.up && node.incarnation === incarnation) this.stored(node, changes);
      });
      return;
    }
    const { minMs, maxMs } = this.storeLatency;
    const latency = minMs === maxMs ? minMs : logUniform(node.storeRng, minMs, maxMs);
    this.queue.push(this.clock + latency, {
      kind: 'stored',
      node: node.def.id,
      incarnation: node.incarnation,
      changes,
    });
  }

  /** A write is confirmed: its keys are durable from now on, and what waited for it goes on. */
  private stored(node: SimNode, changes: readonly StoreChange[]): void {
    for (const change of changes) {
      const store = change.store === 'recovery' ? node.recovery : this.coordination;
      if (change.value === null) store.delete(change.key);
      else store.set(change.key, change.value);
      if (this.trace.enabled)
        this.trace.line(this.clock, node.def.id, `persist ${change.store} ${change.key}`);
    }
    node.interpreter!.written();
  }

  private execute(node: SimNode, effect: Effect): void {
    const id = node.def.id;
    const now = this.clock;
    switch (effect.kind) {
      case 'send':
        this.send(node, effect);
        return;
      case 'setTimer': {
        const generation = ++node.timerGeneration;
        node.timers.set(effect.name, generation);
        this.queue.push(Math.max(effect.at, now), {
          kind: 'timer',
          node: id,
          incarnation: node.incarnation,
          name: effect.name,
          generation,
        });
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
      case 'deleteFile': {
        if (this.trace.enabled) this.trace.line(now, id, traceEffect(effect));
        if (!node.storage) {
          if (effect.kind !== 'deleteFile') {
            this.enqueue(node, now, { kind: 'ioFailed', op: effect.op, error: 'NOT_FOUND' });
          }
          return;
        }
        const completion = node.storage.execute(effect, now);
        if (completion) this.enqueue(node, completion.at, completion.input);
        return;
      }
      case 'ioBatch': {
        // Each operation runs now, as if issued alone; the machine hears of all of them when the last completed.
        let at = now;
        const completions: IoCompletion[] = [];
        for (const op of effect.ops) {
          if (this.trace.enabled) this.trace.line(now, id, traceEffect(op));
          const completion = node.storage?.execute(op, now);
          if (completion === undefined) {
            completions.push({ kind: 'ioFailed', op: op.op, error: 'NOT_FOUND' });
            continue;
          }
          at = Math.max(at, completion.at);
          completions.push(completion.input);
        }
        this.enqueue(node, at, { kind: 'ioBatchDone', completions });
        return;
      }
      case 'persist':
        return; // written through the interpreter's write(), never executed alone
      case 'log':
        this.trace.count(`log.${effect.level}.${effect.event}`);
        if (this.trace.enabled) {
          this.trace.line(now, id, `log ${effect.level} ${effect.event} ${describe(effect.fields ?? {})}`);
        }
        return;
      case 'metric': {
        const name = `metric.${effect.name}`;
        if (effect.op === 'set') this.trace.set(name, effect.value);
        else this.trace.count(name, effect.value);
        return;
      }
      case 'adminReply':
        this.observers.departure(id, effect, this);
        this.trace.count(`admin.${effect.success ? 'done' : 'refused'}`);
        if (this.trace.enabled) {
          this.trace.line(now, id, `admin reply ${effect.success ? 'ok' : 'refused'}: ${effect.message}`);
        }
        return;
      case 'exit':
        this.trace.line(now, id, `EXIT code=${effect.code} ${effect.reason}`);
        this.stop_(node);
        node.storage?.processExit();
        this.observers.exit(id, effect.code, effect.reason, this);
        return;
    }
  }

  private send(node: SimNode, sent: Extract<Effect, { kind: 'send' }>, observed = true): void {
    const from = node.def.id;
    if (observed) this.observers.departure(from, sent, this);
    const member = this.group?.addressee(from, sent);
    const effect = member === undefined ? sent : { ...sent, to: member };
    // Built field by field rather than with conditional spreads: one envelope per message is the hottest
    // allocation of the world.
    const envelope: { -readonly [K in keyof Envelope]: Envelope[K] } = {
      from,
      to: effect.to,
      fromRelease: node.release,
      message: effect.message,
    };
    if (this.handshakes === undefined) {
      if (node.def.principal !== undefined) envelope.principal = node.def.principal;
    } else if (this.transport!.authenticated) {
      // Back on a connection the addressee opened (a reply, a message to a task): the peer it chose to reach.
      envelope.principal = SERVER;
    }
    if (effect.requestId !== undefined) envelope.requestId = effect.requestId;
    if (effect.inReplyTo !== undefined) {
      envelope.inReplyTo = effect.inReplyTo;
      this.unanswered.answered(from, effect.to, effect.inReplyTo);
    }
    const target = this.nodes.get(effect.to);
    if (node.routes !== undefined && (effect.inReplyTo !== undefined || target?.addressless === true)) {
      // A reply goes back where its addressee last spoke, and so does any message to a node without an address,
      // which nothing else reaches.
      const route = node.routes.route(effect.to);
      if (route !== undefined && route.via !== effect.to) {
        if (this.trace.enabled)
          this.trace.line(this.clock, from, `send ${traceEnvelope(envelope)} TO ${route.via}`);
        for (const capture of this.captures) capture(this, from, route.via, envelope);
        return;
      }
      if (route === undefined && target?.addressless === true) {
        // No connection to it (it never spoke here, its route was forgotten, or its process ended).
        this.refused(node, effect, envelope);
        return;
      }
    }
    if (
      this.silence !== undefined &&
      effect.requestId !== undefined &&
      effect.inReplyTo === undefined &&
      !this.silence.mayAsk(from, effect.to)
    ) {
      // Given up as silent and not heard from since: the request fails at once instead of waiting on the peer.
      this.trace.count('transport.silentPeerRefused');
      this.refused(node, effect, envelope);
      return;
    }
    if (target !== undefined && !target.up && this.group?.isMember(target.def.id) === true) {
      this.standbyAnswers(node, target, effect, envelope);
      return;
    }
    if (target === undefined || !target.up) {
      // Nobody listens at that address: the connection is refused, and the sender hears so after a round trip.
      this.refused(node, effect, envelope);
      return;
    }
    if (this.handshakes !== undefined && effect.inReplyTo === undefined && !target.addressless) {
      // A connection of the sender's process to the target's: handshaken by the core's machines first.
      const verdict = this.handshakes.connect(
        { id: node.def.id, incarnation: node.incarnation },
        { id: target.def.id, incarnation: target.incarnation },
        () => ({ opener: this.handshakeEnd(node), acceptor: this.handshakeEnd(target) }),
      );
      if (verdict.kind === 'pending') {
        const incarnation = node.incarnation;
        verdict.connection.waiting.push((settled) => {
          if (node.up && node.incarnation === incarnation)
            this.overConnection(node, effect, envelope, settled);
        });
        return;
      }
      this.overConnection(node, effect, envelope, verdict);
      return;
    }
    this.transmit(node, target, effect, envelope, undefined);
  }

  /**
   * A member of the master group whose machine does not run: a follower answers a request as the core decides
   * (over the network, lost as any message), a frozen one answers nothing, and where no process runs the
   * connection is refused.
   */
  private standbyAnswers(
    node: SimNode,
    target: SimNode,
    effect: Extract<Effect, { kind: 'send' }>,
    envelope: Envelope,
  ): void {
    const standby = this.group!.hooks.standby(target.def.id);
    if (standby.kind === 'refused') {
      this.refused(node, effect, envelope);
      return;
    }
    const there = this.network.arrivals(node.def.id, target.def.id, this.clock);
    if (this.trace.enabled) {
      const fate = standby.kind === 'silent' || there.length === 0 ? ' LOST' : ' (a follower)';
      this.trace.line(this.clock, node.def.id, `send ${traceEnvelope(envelope)}${fate}`);
    }
    if (standby.kind === 'silent' || there.length === 0 || effect.requestId === undefined) return;
    const back = this.network.arrivals(target.def.id, node.def.id, there[0]!);
    if (back.length === 0) return;
    const answer: { -readonly [K in keyof Envelope]: Envelope[K] } = {
      from: target.def.id,
      to: node.def.id,
      fromRelease: target.release,
      inReplyTo: effect.requestId,
      message: standby.message,
    };
    if (this.transport?.authenticated === true) answer.principal = SERVER;
    this.enqueue(node, back[0]!, { kind: 'receive', envelope: answer });
  }

  /** A send on a connection whose handshake is settled: sent, answered with the peer's refusal, or failed. */
  private overConnection(
    node: SimNode,
    effect: Extract<Effect, { kind: 'send' }>,
    envelope: { -readonly [K in keyof Envelope]: Envelope[K] },
    verdict: SettledVerdict,
  ): void {
    const target = this.nodes.get(effect.to)!;
    switch (verdict.kind) {
      case 'open':
        if (verdict.connection.principal === undefined) delete envelope.principal;
        else envelope.principal = verdict.connection.principal;
        if (!target.up || target.incarnation !== verdict.connection.acceptor.incarnation) {
          this.refused(node, effect, envelope);
          return;
        }
        this.transmit(node, target, effect, envelope, verdict.connection);
        return;
      case 'refused':
        this.handshakeRefused(node, effect, envelope, verdict);
        return;
      case 'closed':
        this.refused(node, effect, envelope);
    }
  }

  /**
   * The peer refused the handshake: a request gets the core's answer in the peer's name (`refusalAnswer`) after a
   * round trip.
   */
  private handshakeRefused(
    node: SimNode,
    effect: Extract<Effect, { kind: 'send' }>,
    envelope: Envelope,
    verdict: Extract<ConnectionVerdict, { kind: 'refused' }>,
  ): void {
    if (this.trace.enabled)
      this.trace.line(this.clock, node.def.id, `send ${traceEnvelope(envelope)} REFUSED ${verdict.status}`);
    const answer = refusalAnswer(envelope, verdict);
    if (answer !== undefined)
      this.enqueue(node, this.clock + this.network.roundTrip(), { kind: 'receive', envelope: answer });
  }

  /** Puts an envelope on the network to `target` (on `connection` when the sender opened one). */
  private transmit(
    node: SimNode,
    target: SimNode,
    effect: Extract<Effect, { kind: 'send' }>,
    envelope: Envelope,
    connection: SimConnection | undefined,
  ): void {
    const from = node.def.id;
    if (effect.requestId !== undefined && effect.inReplyTo === undefined) {
      const request = {
        sender: from,
        senderIncarnation: node.incarnation,
        to: effect.to,
        message: effect.message,
        requestId: effect.requestId,
      };
      this.unanswered.asked(effect.to, from, effect.requestId, request, this.clock);
      this.silence?.asked(from, effect.to, effect.requestId, effect.message);
    }
    const arrivals = this.network.arrivals(from, effect.to, this.clock);
    if (this.trace.enabled) {
      const fate = arrivals.length === 0 ? ' LOST' : arrivals.length > 1 ? ' DUPLICATED' : '';
      this.trace.line(this.clock, from, `send ${traceEnvelope(envelope)}${fate}`);
    }
    const via =
      this.transport === undefined
        ? undefined
        : (connection?.speaker ??
          (this.transport.authenticated ? node.speaker : { ...node.speaker, principal: undefined }));
    const frame = arrivals.length === 0 ? undefined : this.frameBegins(node, target, effect, envelope);
    for (const at of arrivals) {
      this.queue.push(at, {
        kind: 'input',
        node: effect.to,
        incarnation: target.incarnation,
        input: { kind: 'receive', envelope },
        ...(via === undefined ? {} : { via }),
        ...(connection === undefined ? {} : { connection }),
        ...(frame === undefined ? {} : { frame }),
      });
    }
  }

  /**
   * A data message to a worker that models partly received frames, on a port it reads: counted from now until it
   * arrives, and past the worker's limit the core's choice of connections to close (sim/world/back-pressure.ts).
   * Returns the frame's id for its arrivals, or undefined when it is not counted.
   */
  private frameBegins(
    sender: SimNode,
    target: SimNode,
    effect: Extract<Effect, { kind: 'send' }>,
    envelope: Envelope,
  ): number | undefined {
    const pressure = target.pressure;
    if (pressure === undefined || !pressure.countsPartialFrames) return undefined;
    const service = workerServiceFor(envelope.message);
    if (service !== 'push' && service !== 'replicate') return undefined;
    const bytes = payloadBytes(envelope.message);
    if (bytes === 0) return undefined;
    const limit = target.def.partialFrames?.limitBytes ?? Infinity;
    if (bytes > limit) {
      // The runtime's limit is at least svc.network.frame.maxSize: a frame this large would have been refused.
      this.fail({
        invariant: 'simulator-threw',
        node: target.def.id,
        detail: `a ${envelope.message.type} of ${bytes} bytes exceeds ${target.def.id}'s limit of ${limit} bytes for partly received frames: the scenario's svc.network.frame.maxSize is too small for its clients`,
      });
      return undefined;
    }
    const id = this.nextFrameId++;
    const { change, shed } = pressure.frameSent(
      {
        id,
        link: `${sender.def.id} ${service}`,
        bytes,
        detail: {
          sender: sender.def.id,
          incarnation: sender.incarnation,
          input: {
            kind: 'sendFailed',
            to: effect.to,
            message: effect.message,
            ...(effect.requestId === undefined ? {} : { requestId: effect.requestId }),
            sent: true,
          },
        },
      },
      service,
      this.clock,
    );
    this.pressureChanged(target, change, shed);
    return id;
  }

  /**
   * Counts pauses caused by partly received frames, loses the frames given up, and reads a port that resumed again
   * (at once, in an event of its own).
   */
  private pressureChanged(
    node: SimNode,
    change: PressureChange,
    shed: readonly PartialFrame<ShedNotice | undefined>[],
  ): void {
    for (const frame of shed) this.frameShed(node, frame);
    for (const service of change.pausedByPartialFrames) {
      this.trace.count(`backPressure.partialFramesPaused.${service}`);
      if (this.trace.enabled) {
        this.trace.line(
          this.clock,
          node.def.id,
          `${service} paused by partly received frames (${node.pressure!.partialFrameBytes} bytes, ${node.pressure!.bytesInFlight} in flight)`,
        );
      }
    }
    this.armStallCheck(node);
    if (!change.resumed) return;
    const incarnation = node.incarnation;
    // Not read within the sender's step: the worker reads its sockets in an event of its own.
    this.schedule(this.clock, `${node.def.id} reads its resumed ports`, () => {
      if (node.up && node.incarnation === incarnation && node.pressure !== undefined)
        this.releaseArrivals(node);
    });
  }

  /**
   * While partly received frames keep `node`'s ports paused, a check when the oldest frame under way turns stalled
   * (core/storage/back-pressure.ts, `STALLED_FRAME_MS`): the stalled ones are given up, largest first, until the
   * rest fit under the pause threshold. One check is pending per node at a time; each re-arms the next.
   */
  private armStallCheck(node: SimNode): void {
    const pressure = node.pressure;
    if (pressure === undefined || node.stallCheckFor === pressure) return;
    const stalledMs = node.def.partialFrames?.stalledMs ?? STALLED_FRAME_MS;
    const at = pressure.nextStallCheck(stalledMs);
    if (at === undefined) return;
    node.stallCheckFor = pressure;
    this.schedule(Math.max(at, this.clock), `${node.def.id} checks its stalled frames`, () => {
      if (node.pressure !== pressure) return; // the process ended, and its connections with it
      node.stallCheckFor = undefined;
      const { change, shed } = pressure.shedStalled(this.clock, stalledMs);
      this.pressureChanged(node, change, shed);
    });
  }

  /**
   * The worker closed the connection holding `frame`: the message is lost, and its sender hears so (sendFailed) once
   * the close has reached it. (Only that message: the world does not yet key connections by port, so the other
   * requests on the same connection are not failed with it; docs/simulation.md, what it does not cover.)
   */
  private frameShed(node: SimNode, frame: PartialFrame<ShedNotice | undefined>): void {
    if (frame.detail === undefined) {
      // A hostile peer's stalled frame: nobody of the world to tell.
      this.trace.count('partialFrames.shedStalled');
      if (this.trace.enabled) {
        this.trace.line(
          this.clock,
          node.def.id,
          `closed ${frame.link}'s stalled frame of ${frame.bytes} bytes, over the limit`,
        );
      }
      return;
    }
    this.trace.count('partialFrames.shed');
    if (this.trace.enabled) {
      this.trace.line(
        this.clock,
        node.def.id,
        `closed ${frame.detail.sender}'s connection: ${frame.bytes} bytes of a ${frame.detail.input.message.type} partly received, over the limit`,
      );
    }
    this.queue.push(this.clock + this.network.roundTrip() / 2, {
      kind: 'input',
      node: frame.detail.sender,
      incarnation: frame.detail.incarnation,
      input: frame.detail.input,
    });
  }

  private refused(node: SimNode, effect: Extract<Effect, { kind: 'send' }>, envelope: Envelope): void {
    if (this.trace.enabled)
      this.trace.line(this.clock, node.def.id, `send ${traceEnvelope(envelope)} REFUSED`);
    this.enqueue(node, this.clock + this.network.roundTrip(), {
      kind: 'sendFailed',
      to: effect.to,
      message: effect.message,
      ...(effect.requestId === undefined ? {} : { requestId: effect.requestId }),
    });
  }

  /** A node's connections are open while its process runs; an outsider's (the intruder's) stay open. */
  private readonly connectionOpen = (via: NodeId, incarnation: number): boolean => {
    const node = this.nodes.get(via);
    return node === undefined || (node.up && node.incarnation === incarnation);
  };

  private enqueue(node: SimNode, at: number, input: Input): void {
    this.queue.push(Math.max(at, this.clock), {
      kind: 'input',
      node: node.def.id,
      incarnation: node.incarnation,
      input,
    });
  }

  private storeKindOf(node: SimNode): 'recovery' | 'coordination' {
    return node.def.durableStore ?? (node.def.id.startsWith('master-') ? 'coordination' : 'recovery');
  }

  private stop_(node: SimNode): void {
    // Its connections close: each request it had not answered fails at its sender once the close reached it.
    for (const request of this.unanswered.ended(node.def.id)) {
      const sender = this.nodes.get(request.sender);
      if (sender === undefined || !sender.up || sender.incarnation !== request.senderIncarnation) continue;
      this.trace.count('transport.unansweredFailed');
      this.enqueue(sender, this.clock + this.network.roundTrip() / 2, {
        kind: 'sendFailed',
        to: request.to,
        message: request.message,
        requestId: request.requestId,
        sent: true,
      });
    }
    this.handshakes?.ended(node.def.id);
    this.silence?.stopped(node.def.id);
    node.up = false;
    node.routes = undefined;
    node.pressure = undefined;
    node.heldArrivals.clear();
    node.backlogFull = false;
    node.backlogArrivals.length = 0;
    node.incarnation += 1;
    node.timers.clear();
    node.interpreter?.stop();
  }

  private node(id: NodeId): SimNode {
    const node = this.nodes.get(id);
    if (!node) throw new RangeError(`no node ${id} in this world`);
    return node;
  }
}

/** A machine's exception, told apart from the world's own on its way out of the interpreter. */
class MachineThrew extends Error {
  constructor(override readonly cause: unknown) {
    super('the machine threw');
  }
}

const SERVER: Principal = { kind: 'server' };

/** The bytes a data message carries: what its frame holds while it is partly received. */
function payloadBytes(message: Envelope['message']): number {
  if (message.type === 'PushData') return message.payload.length;
  if (message.type === 'PushMergedData') {
    let bytes = 0;
    for (const batch of message.batches) bytes += batch.payload.length;
    return bytes;
  }
  return 0;
}

function traceInput(input: Input): string {
  switch (input.kind) {
    case 'start':
      return `start recovered=${input.recovered.size}`;
    case 'receive':
      return `recv ${traceEnvelope(input.envelope)}`;
    case 'timer':
      return `timer ${input.name}`;
    case 'ioDone':
      return `ioDone op=${input.op}${input.bytes ? ` bytes=${input.bytes.length}` : ''}`;
    case 'ioFailed':
      return `ioFailed op=${input.op} ${input.error}`;
    case 'ioBatchDone':
      return `ioBatchDone ${input.completions.map((c) => (c.kind === 'ioDone' ? `op=${c.op}${c.bytes ? ` bytes=${c.bytes.length}` : ''}` : `op=${c.op} ${c.error}`)).join(', ')}`;
    case 'sendFailed':
      return `sendFailed to=${input.to} ${input.message.type}`;
    case 'admin':
      return `admin ${describe(input.command)}`;
    case 'consumed':
      return `consumed chunk=${input.chunk}`;
    case 'records':
      return `records ${recordCount(input.runs)}`;
    case 'recordsEnd':
      return 'recordsEnd';
    case 'diskSpace':
      return `diskSpace ${input.disks.map((d) => `${d.mountPoint}=${d.availableBytes}/${d.totalBytes}`).join(', ')}`;
  }
}

function traceEnvelope(envelope: Envelope): string {
  const { type, ...fields } = envelope.message as unknown as { type: string } & Record<string, unknown>;
  const ids =
    (envelope.requestId === undefined ? '' : ` #${envelope.requestId}`) +
    (envelope.inReplyTo === undefined ? '' : ` re#${envelope.inReplyTo}`);
  return `${envelope.from}->${envelope.to} ${type}${ids} ${describe(fields)}`;
}

function traceEffect(effect: FileEffect): string {
  switch (effect.kind) {
    case 'createFile':
    case 'flush':
      return `${effect.kind} op=${effect.op} ${effect.file.tier}${effect.file.mountPoint}:${effect.file.id}`;
    case 'write':
      return `write op=${effect.op} ${effect.file.tier}${effect.file.mountPoint}:${effect.file.id} +${lengthOfWrite(effect)}`;
    case 'read':
      return `read op=${effect.op} ${effect.file.tier}${effect.file.mountPoint}:${effect.file.id} @${effect.offset}+${effect.length}`;
    case 'moveFile':
      return `move op=${effect.op} ${effect.file.tier}:${effect.file.id} -> ${effect.to.tier}${effect.to.mountPoint}`;
    case 'deleteFile':
      return `delete ${effect.file.tier}${effect.file.mountPoint}:${effect.file.id}`;
  }
}

/** How many records a map task's `records` input carries (its runs are whole records: the task checks). */
function recordCount(runs: readonly Uint8Array[]): number {
  let count = 0;
  for (const run of runs) {
    const checked = checkRecords(run);
    count += checked.ok ? checked.count : 0;
  }
  return count;
}
