import { assembleDurable, changesBetween, durableLayout } from '../../core/ha/key-layout.ts';
import {
  actingAsLeader,
  haStep,
  initialHaState,
  leaderHint,
  type HaInput,
  type HaState,
} from '../../core/ha/leadership.ts';
import type { StoreRequest, StoreResult } from '../../core/ha/store.ts';
import { DEFAULT_HA_TIMING } from '../../core/ha/timing.ts';
import {
  emptyApplications,
  emptyRegistry,
  registerShuffle,
  unregisterShuffle,
} from '../../core/lifecycle/index.ts';
import { MASTER_STATE_PREFIX } from '../../core/machines/master/layout.ts';
import type { MasterDurableState } from '../../core/machines/master/state.ts';
import type { PlantedBug } from '../../core/planted-bugs.ts';
import type { Rng } from '../../core/rng.ts';
import { chance, pick, streamRng, uniform } from '../world/random.ts';
import { CoordinationModel, type Delivery } from './coordination-model.ts';

/**
 * A focused simulation of a group of masters on the coordination store's model: three masters running the core's
 * leadership machine (core/ha/leadership.ts) and a minimal master state (applications' shuffles, written through the
 * core's key layout), clients registering and unregistering shuffles at whichever master they believe leads, and
 * failovers drawn per seed: the leader killed, frozen past its lease, cut from the store (its requests lost, or
 * held and delivered when the cut heals, as a TCP connection delivers them late), its answers lost (its lease
 * runs out at the store while it still writes). Clocks drift within the timing's bound. Invariants:
 *  - `ha-one-leader`: a master serving as leader is the only master whose own state says it may act, and terms
 *    (the leader key's creation revision) only grow;
 *  - `ha-fenced-writes`: every write the store applies is the current leader's (its lease holds the leader key);
 *  - `ha-no-shuffle-lost`: a master that starts leading holds every shuffle whose registration was acknowledged
 *    and whose unregistration was never asked, and so does the store at the end;
 *  - `ha-liveness`: after the last fault, a master leads again and every client's operations complete.
 */
export type HaInvariant =
  'ha-one-leader' | 'ha-fenced-writes' | 'ha-no-shuffle-lost' | 'ha-liveness' | 'ha-fatal';

export interface HaViolation {
  readonly invariant: HaInvariant;
  readonly time: number;
  readonly detail: string;
}

export interface HaRunOptions {
  readonly seed: number;
  readonly plantedBug?: PlantedBug;
  readonly trace?: boolean;
  /**
   * Test-only, to prove the checker of `ha-no-shuffle-lost` bites: the serving master answers before its write
   * is confirmed (what the interpreter's held effects prevent).
   */
  readonly answerBeforeDurable?: boolean;
}

export interface HaRunResult {
  readonly seed: number;
  readonly violation?: HaViolation;
  readonly faults: readonly string[];
  /** Terms that served (startActing), and client operations acknowledged. */
  readonly terms: number;
  readonly acknowledged: number;
  readonly simulatedMs: number;
  readonly trace: string;
}

const ELECTION = '/svc/sim/election/';
const PREFIX = '/svc/sim/state/';
const TIMING = DEFAULT_HA_TIMING;
const MEMBERS = ['m1', 'm2', 'm3'] as const;
/** The runtime client's request timeout (raft.client.rpc.request.timeout's role). */
const REQUEST_TIMEOUT_MS = 3_000;
const CLIENTS = 2;
/** Operations each client completes once the last fault has ended (it works all through the faults before). */
const OPS_AFTER_CALM = 5;
const CLIENT_TIMEOUT_MS = 2_000;
const LIVENESS_BOUND_MS = 4 * TIMING.leaseTtlMs + 10_000;

const EMPTY: MasterDurableState = {
  workers: emptyRegistry(),
  applications: emptyApplications(),
  estimatedPartitionSize: 1,
  bookings: new Map(),
};

type Cut = 'drop' | 'hold' | 'answers';
type FaultKind = 'kill' | 'freeze' | Cut;
interface Fault {
  readonly kind: FaultKind;
  readonly at: number;
  readonly durationMs: number;
  readonly target: 'leader' | (typeof MEMBERS)[number];
}

interface Held {
  readonly waitFor: number;
  readonly reply: () => void;
}

interface Master {
  readonly name: string;
  incarnation: number;
  alive: boolean;
  frozenUntil: number;
  readonly rate: number;
  readonly offset: number;
  ha: HaState;
  wakeToken: number;
  /** Ops awaiting an answer (their timeout tokens), long-lived calls included. */
  outstanding: Set<number>;
  cut?: { kind: Cut; until: number; held: { request: StoreRequest; id: string }[] };
  queued: (() => void)[];
  serving?: {
    durable: MasterDurableState;
    /** The layout this master last persisted (empty on a new store: its first write carries `meta` too). */
    layout: ReadonlyMap<string, string>;
    nextPersist: number;
    confirmed: number;
    held: Held[];
  };
}

interface Client {
  readonly name: string;
  readonly appId: string;
  done: number;
  /** Operations completed after the last fault ended. */
  doneAfterCalm: number;
  nextShuffle: number;
  current?: { kind: 'register' | 'unregister'; shuffleId: number; attempt: number };
  target: string;
}

type Event = { readonly at: number; readonly seq: number; readonly run: () => void };

class HaWorld {
  now = 0;
  private seq = 0;
  private readonly queue: Event[] = [];
  violation: HaViolation | undefined;
  readonly lines: string[] = [];
  readonly acked = new Set<string>();
  readonly unregisterAsked = new Set<string>();
  acknowledged = 0;
  terms = 0;
  lastTerm = 0;
  lastTermHolder = '';
  /** When the last fault ends. */
  calm = 0;
  readonly masters: Master[];
  readonly clients: Client[];
  readonly store: CoordinationModel;
  private appliedChecked = 0;

  constructor(
    private readonly rng: Rng,
    private readonly net: Rng,
    private readonly plantedBug: PlantedBug | undefined,
    private readonly tracing: boolean,
    private readonly answerBeforeDurable: boolean,
  ) {
    const drift = () => 1 + uniform(rng, -TIMING.clockDrift, TIMING.clockDrift);
    this.store = new CoordinationModel(drift(), ELECTION);
    this.masters = MEMBERS.map((name) => ({
      name,
      incarnation: 0,
      alive: false,
      frozenUntil: 0,
      rate: drift(),
      offset: Math.floor(uniform(rng, 0, 1_000_000)),
      ha: initialHaState(this.haConfig(name)),
      wakeToken: 0,
      outstanding: new Set(),
      queued: [],
    }));
    this.clients = Array.from({ length: CLIENTS }, (_, i) => ({
      name: `c${i + 1}`,
      appId: `app-${i + 1}`,
      done: 0,
      doneAfterCalm: 0,
      nextShuffle: 0,
      target: pick(rng, MEMBERS),
    }));
  }

  private haConfig(name: string) {
    return {
      memberId: name,
      announce: name,
      election: ELECTION,
      statePrefix: PREFIX,
      timing: TIMING,
      emptyState: EMPTY,
      ...(this.plantedBug === undefined ? {} : { plantedBug: this.plantedBug }),
    };
  }

  trace(line: string): void {
    if (this.tracing) this.lines.push(`${this.now.toFixed(1).padStart(9)} ${line}`);
  }

  fail(invariant: HaInvariant, detail: string): void {
    if (this.violation !== undefined) return;
    this.violation = { invariant, time: this.now, detail };
    this.trace(`VIOLATION ${invariant}: ${detail}`);
  }

  at(time: number, run: () => void): void {
    const event = { at: Math.max(time, this.now), seq: (this.seq += 1), run };
    let i = this.queue.length;
    while (
      i > 0 &&
      (this.queue[i - 1]!.at > event.at ||
        (this.queue[i - 1]!.at === event.at && this.queue[i - 1]!.seq > event.seq))
    )
      i -= 1;
    this.queue.splice(i, 0, event);
  }

  run(until: number, finished: () => boolean): 'finished' | 'time-limit' | 'violation' {
    for (;;) {
      if (this.violation !== undefined) return 'violation';
      if (finished()) return 'finished';
      const expiry = this.store.nextExpiry();
      const next = this.queue[0];
      const at = Math.min(next?.at ?? Infinity, expiry);
      if (at > until || at === Infinity) return 'time-limit';
      this.now = Math.max(this.now, at);
      if (expiry <= (next?.at ?? Infinity)) {
        this.deliverAll(this.store.expire(this.now));
        continue;
      }
      this.queue.shift()!.run();
    }
  }

  latency(): number {
    return uniform(this.net, 0.5, 15);
  }

  local(m: Master): number {
    return m.offset + m.rate * this.now;
  }

  idOf(m: Master): string {
    return `${m.name}#${m.incarnation}`;
  }

  /** Runs `input` at master `m` now, or when it thaws; never when dead. */
  deliver(m: Master, incarnation: number, input: () => void): void {
    if (!m.alive || m.incarnation !== incarnation) return;
    if (this.now < m.frozenUntil) m.queued.push(input);
    else input();
  }

  startMaster(m: Master): void {
    m.incarnation += 1;
    m.alive = true;
    m.ha = initialHaState(this.haConfig(m.name));
    m.outstanding = new Set();
    m.queued = [];
    delete m.serving;
    this.trace(`${this.idOf(m)} starts`);
    this.haInput(m, { kind: 'start' });
  }

  haInput(m: Master, input: HaInput): void {
    const { state, effects } = haStep(m.ha, input, this.local(m));
    m.ha = state;
    const incarnation = m.incarnation;
    for (const effect of effects) {
      switch (effect.kind) {
        case 'store':
          this.sendToStore(m, effect.request);
          break;
        case 'wakeAt': {
          const token = (m.wakeToken += 1);
          this.at((effect.at - m.offset) / m.rate, () =>
            this.deliver(m, incarnation, () => {
              if (m.wakeToken === token) this.haInput(m, { kind: 'tick' });
            }),
          );
          break;
        }
        case 'startActing':
          this.startServing(m, effect.fence.createRevision, effect.recovered);
          break;
        case 'stopActing':
          this.trace(`${this.idOf(m)} stops acting: ${effect.reason}`);
          delete m.serving;
          break;
        case 'persisted':
          if (m.serving !== undefined) {
            m.serving.confirmed = Math.max(m.serving.confirmed, ...effect.ids);
            this.release(m);
          }
          break;
        case 'leaderIs':
          break;
        case 'fatal':
          this.fail('ha-fatal', `${this.idOf(m)}: ${effect.reason}`);
          break;
        case 'log':
          this.trace(`${this.idOf(m)} ${effect.level} ${effect.event} ${JSON.stringify(effect.fields)}`);
          break;
      }
    }
  }

  private startServing(m: Master, term: number, recovered: ReadonlyMap<string, string>): void {
    const id = this.idOf(m);
    if (term < this.lastTerm || (term === this.lastTerm && id !== this.lastTermHolder)) {
      this.fail(
        'ha-one-leader',
        `${id} starts term ${term} after term ${this.lastTerm} of ${this.lastTermHolder}`,
      );
    }
    this.lastTerm = term;
    this.lastTermHolder = id;
    this.terms += 1;
    const durable = assembleDurable(
      MASTER_STATE_PREFIX,
      [...recovered].map(([key, value]) => ({ key, value })),
      EMPTY,
    );
    this.trace(`${id} leads term ${term} with ${this.shufflesOf(durable).size} shuffles`);
    this.checkNoneLost(durable, `${id} starting term ${term}`);
    const layout = recovered.size === 0 ? new Map<string, string>() : durableLayout(PREFIX, durable);
    m.serving = { durable, layout, nextPersist: 0, confirmed: 0, held: [] };
  }

  shufflesOf(durable: MasterDurableState): Set<string> {
    const keys = new Set<string>();
    for (const [appId, app] of durable.applications.apps)
      for (const s of app.shuffles) keys.add(`${appId}/${s}`);
    return keys;
  }

  checkNoneLost(durable: MasterDurableState, where: string): void {
    const held = this.shufflesOf(durable);
    for (const key of this.acked) {
      if (!this.unregisterAsked.has(key) && !held.has(key)) {
        this.fail(
          'ha-no-shuffle-lost',
          `${where}: shuffle ${key} was acknowledged registered and is missing`,
        );
        return;
      }
    }
  }

  private release(m: Master): void {
    const serving = m.serving!;
    while (serving.held.length > 0 && serving.held[0]!.waitFor <= serving.confirmed)
      serving.held.shift()!.reply();
  }

  sendToStore(m: Master, request: StoreRequest): void {
    const id = this.idOf(m);
    const longLived = request.kind === 'campaign' || request.kind === 'observe';
    m.outstanding.add(request.op);
    if (!longLived && request.kind !== 'cancel') {
      const incarnation = m.incarnation;
      this.at(this.now + REQUEST_TIMEOUT_MS / m.rate, () => {
        if (m.incarnation !== incarnation || !m.outstanding.delete(request.op)) return;
        this.deliver(m, incarnation, () =>
          this.haInput(m, {
            kind: 'result',
            result: {
              kind: 'failed',
              op: request.op,
              failure: 'timeout',
              detail: `no answer in ${REQUEST_TIMEOUT_MS} ms`,
            },
          }),
        );
      });
    }
    const cut = m.cut;
    if (cut !== undefined && longLived) {
      // A call begun on a broken connection fails once the watch times out.
      const incarnation = m.incarnation;
      this.at(this.now + REQUEST_TIMEOUT_MS, () => {
        const result: StoreResult = {
          kind: 'failed',
          op: request.op,
          failure: 'unavailable',
          detail: 'connection lost',
        };
        this.deliver(m, incarnation, () => this.haInput(m, { kind: 'result', result }));
      });
      return;
    }
    if (cut !== undefined && cut.kind !== 'answers') {
      if (cut.kind === 'hold') cut.held.push({ request, id });
      return;
    }
    this.at(this.now + this.latency(), () => this.arriveAtStore(id, request));
  }

  arriveAtStore(from: string, request: StoreRequest): void {
    this.deliverAll(this.store.serve(from, request, this.now));
    if (request.kind === 'txn') this.checkApplied();
  }

  private checkApplied(): void {
    for (; this.appliedChecked < this.store.applied.length; this.appliedChecked += 1) {
      const write = this.store.applied[this.appliedChecked]!;
      const owner = this.store.ownerOf(write.leaderAtApply?.lease);
      if (owner !== write.from) {
        this.fail(
          'ha-fenced-writes',
          `the store applied a write of ${write.from} at revision ${write.revision} while ${owner ?? 'nobody'} led`,
        );
      }
    }
  }

  deliverAll(deliveries: readonly Delivery[]): void {
    for (const delivery of deliveries) {
      const m = this.masters.find((x) => this.idOf(x) === delivery.to);
      if (m === undefined || !m.alive) continue;
      if (m.cut !== undefined) {
        // A cut connection breaks long-lived calls: the client library reports them failed after its watch timeout.
        continue;
      }
      const incarnation = m.incarnation;
      const result = delivery.result;
      this.at(this.now + this.latency(), () => {
        if (m.incarnation !== incarnation) return;
        const longLived = result.kind === 'campaignWon' || result.kind === 'leaderIs';
        if (!longLived && !m.outstanding.delete(result.op)) return;
        this.deliver(m, incarnation, () => this.haInput(m, { kind: 'result', result }));
      });
    }
  }

  /** A client's request arrives at a master. */
  serve(m: Master, client: Client, attempt: number): void {
    const op = client.current;
    if (op === undefined || op.attempt !== attempt) return;
    const reply = (answer: string | null) =>
      this.at(this.now + this.latency(), () => this.clientAnswer(client, attempt, answer));
    const serving = m.serving;
    if (serving === undefined || !actingAsLeader(m.ha, this.local(m))) {
      reply(leaderHint(m.ha));
      return;
    }
    for (const other of this.masters) {
      if (
        other !== m &&
        other.alive &&
        other.serving !== undefined &&
        actingAsLeader(other.ha, this.local(other))
      ) {
        this.fail(
          'ha-one-leader',
          `${this.idOf(m)} serves as leader while ${this.idOf(other)} may act as leader too`,
        );
        return;
      }
    }
    const apps = serving.durable.applications;
    const changed =
      op.kind === 'register'
        ? registerShuffle(apps, client.appId, op.shuffleId, this.local(m))
        : unregisterShuffle(apps, client.appId, op.shuffleId);
    const isChange = 'alreadyRegistered' in changed ? !changed.alreadyRegistered : changed.wasRegistered;
    if (isChange) {
      serving.durable = { ...serving.durable, applications: changed.registry };
      serving.nextPersist += 1;
    }
    // The answer waits for this step's persist and every one before it, as the interpreter holds effects behind an
    // unconfirmed persist (or, with the checker's probe, for nothing).
    serving.held.push({
      waitFor: this.answerBeforeDurable ? 0 : serving.nextPersist,
      reply: () => reply('ok'),
    });
    this.release(m);
    if (isChange) {
      const layout = durableLayout(PREFIX, serving.durable);
      const changes = changesBetween(serving.layout, layout);
      serving.layout = layout;
      this.haInput(m, { kind: 'persist', id: serving.nextPersist, changes });
    }
  }

  clientSend(client: Client): void {
    const op = client.current;
    if (op === undefined) return;
    const attempt = (op.attempt += 1);
    const m = this.masters.find((x) => x.name === client.target)!;
    const incarnation = m.incarnation;
    this.at(this.now + this.latency(), () =>
      this.deliver(m, incarnation, () => this.serve(m, client, attempt)),
    );
    this.at(this.now + CLIENT_TIMEOUT_MS, () => {
      if (client.current?.attempt !== attempt) return;
      client.target = pick(this.rng, MEMBERS);
      this.clientSend(client);
    });
  }

  clientAnswer(client: Client, attempt: number, answer: string | null): void {
    const op = client.current;
    if (op === undefined || op.attempt !== attempt) return;
    if (answer !== 'ok') {
      client.target = answer ?? pick(this.rng, MEMBERS);
      this.at(this.now + 100, () => {
        if (client.current === op && op.attempt === attempt) this.clientSend(client);
      });
      return;
    }
    const key = `${client.appId}/${op.shuffleId}`;
    if (op.kind === 'register') this.acked.add(key);
    this.acknowledged += 1;
    this.trace(`${client.name} acknowledged ${op.kind} ${key}`);
    client.done += 1;
    if (this.now > this.calm) client.doneAfterCalm += 1;
    delete client.current;
    if (client.doneAfterCalm < OPS_AFTER_CALM)
      this.at(this.now + uniform(this.rng, 20, 400), () => this.nextOp(client));
  }

  nextOp(client: Client): void {
    const mine = [...this.acked].filter(
      (k) => k.startsWith(`${client.appId}/`) && !this.unregisterAsked.has(k),
    );
    if (mine.length > 0 && chance(this.rng, 0.3)) {
      const key = pick(this.rng, mine);
      this.unregisterAsked.add(key);
      client.current = { kind: 'unregister', shuffleId: Number(key.split('/')[1]), attempt: 0 };
    } else {
      client.current = { kind: 'register', shuffleId: (client.nextShuffle += 1), attempt: 0 };
    }
    this.clientSend(client);
  }

  leader(): Master | undefined {
    return this.masters.find(
      (m) => m.alive && m.serving !== undefined && actingAsLeader(m.ha, this.local(m)),
    );
  }

  inject(fault: Fault): void {
    const m =
      fault.target === 'leader'
        ? (this.leader() ?? pick(this.rng, this.masters))
        : this.masters.find((x) => x.name === fault.target)!;
    const end = this.now + fault.durationMs;
    this.trace(`FAULT ${fault.kind} ${this.idOf(m)} for ${fault.durationMs} ms`);
    switch (fault.kind) {
      case 'kill':
        m.alive = false;
        delete m.serving;
        this.store.dropCallsOf(this.idOf(m));
        this.at(end, () => this.startMaster(m));
        break;
      case 'freeze': {
        m.frozenUntil = Math.max(m.frozenUntil, end);
        const incarnation = m.incarnation;
        this.at(end, () => {
          if (m.incarnation !== incarnation || this.now < m.frozenUntil) return;
          const queued = m.queued;
          m.queued = [];
          for (const input of queued) this.deliver(m, incarnation, input);
        });
        break;
      }
      case 'drop':
      case 'hold':
      case 'answers': {
        const cut = { kind: fault.kind, until: end, held: [] as { request: StoreRequest; id: string }[] };
        m.cut = cut;
        this.store.dropCallsOf(this.idOf(m));
        const incarnation = m.incarnation;
        // The broken connection's long-lived calls (campaign, observe) fail once the watch times out.
        this.at(this.now + REQUEST_TIMEOUT_MS, () => {
          if (m.incarnation !== incarnation) return;
          for (const phaseOp of [
            m.ha.observeOp,
            m.ha.phase.kind === 'campaigning' ? m.ha.phase.op : undefined,
          ]) {
            if (phaseOp === undefined) continue;
            const result: StoreResult = {
              kind: 'failed',
              op: phaseOp,
              failure: 'unavailable',
              detail: 'connection lost',
            };
            this.deliver(m, incarnation, () => this.haInput(m, { kind: 'result', result }));
          }
        });
        this.at(end, () => {
          if (m.cut !== cut) return;
          delete m.cut;
          for (const { request, id } of cut.held)
            this.at(this.now + this.latency(), () => this.arriveAtStore(id, request));
        });
        break;
      }
    }
  }

  finalCheck(): void {
    const leader = this.leader();
    if (leader?.serving === undefined) {
      this.fail('ha-liveness', 'no master leads at the end');
      return;
    }
    this.checkNoneLost(leader.serving.durable, `the leader ${this.idOf(leader)} at the end`);
    const stored = assembleDurable(PREFIX, this.store.range(PREFIX), EMPTY);
    this.checkNoneLost(stored, 'the store at the end');
  }
}

function drawFaults(rng: Rng): Fault[] {
  const count = 1 + Math.floor(rng.next() * 3);
  const faults: Fault[] = [];
  let at = uniform(rng, 3_000, 12_000);
  for (let i = 0; i < count; i += 1) {
    const kind = pick<FaultKind>(rng, ['kill', 'freeze', 'freeze', 'drop', 'hold', 'hold', 'answers']);
    const durationMs = Math.round(uniform(rng, 1_000, 20_000));
    const target = chance(rng, 0.75) ? 'leader' : pick(rng, MEMBERS);
    faults.push({ kind, at: Math.round(at), durationMs, target });
    at += uniform(rng, 2_000, 25_000);
  }
  return faults;
}

export function describeFault(f: Fault): string {
  return `${f.kind}@${f.at}ms:${f.target}:${f.durationMs}ms`;
}

/** Runs one seed of the group's simulation. */
export function runHaSeed(options: HaRunOptions): HaRunResult {
  const world = new HaWorld(
    streamRng(options.seed, 'ha:draws'),
    streamRng(options.seed, 'ha:network'),
    options.plantedBug,
    options.trace ?? false,
    options.answerBeforeDurable ?? false,
  );
  const faults = drawFaults(streamRng(options.seed, 'ha:faults'));
  for (const m of world.masters)
    world.at(uniform(streamRng(options.seed, `ha:start:${m.name}`), 0, 500), () => world.startMaster(m));
  for (const client of world.clients) world.at(1_000, () => world.nextOp(client));
  for (const fault of faults) world.at(fault.at, () => world.inject(fault));
  const calm = Math.max(...faults.map((f) => f.at + f.durationMs));
  world.calm = calm;
  const outcome = world.run(
    calm + LIVENESS_BOUND_MS,
    () =>
      world.now > calm &&
      world.clients.every((c) => c.doneAfterCalm >= OPS_AFTER_CALM) &&
      world.leader() !== undefined,
  );
  if (outcome === 'time-limit') {
    world.fail(
      'ha-liveness',
      `within ${LIVENESS_BOUND_MS} ms after the last fault ended at ${calm} ms: ` +
        `leader ${world.leader()?.name ?? 'none'}, client operations done ${world.clients.map((c) => c.done).join('/')}`,
    );
  } else if (outcome === 'finished') world.finalCheck();
  return {
    seed: options.seed,
    ...(world.violation === undefined ? {} : { violation: world.violation }),
    faults: faults.map(describeFault),
    terms: world.terms,
    acknowledged: world.acknowledged,
    simulatedMs: world.now,
    trace: world.lines.join('\n'),
  };
}
