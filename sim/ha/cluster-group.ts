import { followerAnswer } from '../../core/ha/follow-leader.ts';
import type { FollowLine } from '../../core/ha/leader-following.ts';
import { assembleDurable, storeChanges } from '../../core/ha/key-layout.ts';
import { MASTER_STATE_PREFIX } from '../../core/machines/master/layout.ts';
import {
  actingAsLeader,
  haStep,
  initialHaState,
  leaderHint,
  type HaConfig,
  type HaInput,
  type HaState,
} from '../../core/ha/leadership.ts';
import type { StoreRequest, StoreResult } from '../../core/ha/store.ts';
import { DEFAULT_HA_TIMING } from '../../core/ha/timing.ts';
import type { Effect, Input, NodeId } from '../../core/machines/effects.ts';
import { type MasterDurableState } from '../../core/machines/master/state.ts';
import type { PlantedBug } from '../../core/planted-bugs.ts';
import type { Rng } from '../../core/rng.ts';
import { chance, pick, streamRng, uniform } from '../world/random.ts';
import type { MasterGroupHooks, Observer, StandbyAnswer, World } from '../world/world.ts';
import { CoordinationModel, type Delivery } from './coordination-model.ts';

/**
 * The cluster's master as a group of three masters (the swarm's share of seeds in sim/cluster/ha-share.ts): each
 * member a master machine in the world, run only while the core's leadership machine (core/ha/leadership.ts) on
 * the coordination store's model says it acts, from the state that machine loaded, its persists written through it
 * as fenced keys; a member that does not act answers as the core's follower does. Workers and lifecycle managers
 * follow the leader through the core's following (sim/world/master-group.ts). This module carries out the
 * leadership machine's effects on the world's clock, as runtime/ha/ha-driver.ts does on etcd, and draws the group's
 * failovers: the leader killed and restarted, frozen past its lease, cut from the store and the cluster or from
 * the store alone (its requests lost, or held and delivered late), its lease run out at the store (its answers
 * lost). Invariants (docs/high-availability.md, "Simulation"):
 *  - `ha-one-leader`: a member's machine acts only while no other member may act, and terms only grow;
 *  - `ha-fenced-writes`: every write the store applies is the current leader's;
 *  - `ha-no-shuffle-lost`: a leader starts from a state holding every shuffle and application a leader
 *    acknowledged registered, until its application unregistered it (or the application) or a leader's confirmed
 *    state dropped it by the rules (its application expired); and so does the store at the end.
 */
export const GROUP_TIMING = DEFAULT_HA_TIMING;
const ELECTION = '/svc/sim/cluster/election/';
const PREFIX = '/svc/sim/cluster/state/';
/** The runtime client's request timeout (raft.client.rpc.request.timeout's role). */
const REQUEST_TIMEOUT_MS = 3_000;
/** How long the supervisor waits before starting a master again (it exited as deposed, or was killed). */
const SUPERVISOR_DELAY_MS = 1_000;

type Cut = 'drop' | 'hold' | 'answers';
type FaultKind = 'kill' | 'freeze' | 'partition' | 'storeCut' | 'lease';
export interface GroupFault {
  readonly kind: FaultKind;
  readonly at: number;
  readonly durationMs: number;
  readonly target: 'leader' | number;
}

interface Member {
  readonly id: NodeId;
  /** The process's incarnation: its leadership state and store calls die with it. */
  incarnation: number;
  alive: boolean;
  frozenUntil: number;
  readonly rate: number;
  readonly offset: number;
  ha: HaState;
  wakeToken: number;
  outstanding: Set<number>;
  cut?: { kind: Cut; held: StoreRequest[] };
  queued: (() => void)[];
  /** Persists of the running machine by id, with their confirmations. */
  persists: Map<number, { confirm: () => void }>;
  nextPersist: number;
}

export interface ClusterGroupOptions {
  readonly seed: number;
  readonly masterId: NodeId;
  readonly members: readonly NodeId[];
  readonly emptyState: MasterDurableState;
  readonly plantedBug?: PlantedBug;
  /** The faults start after this (ms) and end before `faultsUntil`. */
  readonly faultsFrom: number;
  readonly faultsUntil: number;
}

export class ClusterGroup implements MasterGroupHooks {
  readonly masterId: NodeId;
  readonly members: readonly NodeId[];
  readonly faults: readonly GroupFault[];
  /** Terms that acted (startActing). */
  terms = 0;
  private readonly byId = new Map<NodeId, Member>();
  private readonly store: CoordinationModel;
  private readonly net: Rng;
  private readonly rng: Rng;
  private world!: World;
  private lastTerm = 0;
  private lastTermHolder = '';
  private expiryAt = Infinity;
  private appliedChecked = 0;
  /** Shuffles (`app/shuffle`) a leader acknowledged registered and nothing released since. */
  private readonly acked = new Set<string>();
  /** RegisterShuffle requests each member took, by `member#sender#requestId`. */
  private readonly registering = new Map<string, string>();

  constructor(private readonly options: ClusterGroupOptions) {
    this.masterId = options.masterId;
    this.members = options.members;
    this.rng = streamRng(options.seed, 'ha-cluster:draws');
    this.net = streamRng(options.seed, 'ha-cluster:network');
    const drift = () => 1 + uniform(this.rng, -GROUP_TIMING.clockDrift, GROUP_TIMING.clockDrift);
    this.store = new CoordinationModel(drift(), ELECTION);
    for (const id of options.members) {
      this.byId.set(id, {
        id,
        incarnation: 0,
        alive: false,
        frozenUntil: 0,
        rate: drift(),
        offset: Math.floor(uniform(this.rng, 0, 1_000_000)),
        ha: initialHaState(this.config(id)),
        wakeToken: 0,
        outstanding: new Set(),
        queued: [],
        persists: new Map(),
        nextPersist: 1,
      });
    }
    this.faults = drawGroupFaults(
      streamRng(options.seed, 'ha-cluster:faults'),
      options.faultsFrom,
      options.faultsUntil,
      options.members.length,
    );
  }

  /**
   * When the group is calm again: the last of its faults ended, and a deposed leader's lease has run out at the store
   * (a TTL), a campaign retried, and the new leader's first store round trips finished. Until then nobody may lead,
   * and workers cannot learn an application's secret, as after a single master's crash.
   */
  get calmAt(): number {
    const lastFaultEnds = Math.max(0, ...this.faults.map((f) => f.at + f.durationMs));
    return lastFaultEnds + GROUP_TIMING.leaseTtlMs + GROUP_TIMING.campaignRetryMs + REQUEST_TIMEOUT_MS;
  }

  /** Installs the group in `world`: its members start campaigning, its faults are scheduled. */
  install(world: World): Observer {
    this.world = world;
    world.useMasterGroup(this);
    for (const m of this.byId.values()) {
      const at = uniform(streamRng(this.options.seed, `ha-cluster:start:${m.id}`), 0, 500);
      world.schedule(at, `start master ${m.id} (campaigns)`, () => this.startProcess(m));
    }
    for (const fault of this.faults) {
      world.schedule(fault.at, `group fault ${describeGroupFault(fault)}`, () => this.inject(fault));
    }
    return this.observer();
  }

  /** The member acting as leader now, if any (operator commands go there). */
  leader(): NodeId | undefined {
    for (const m of this.byId.values()) {
      if (m.alive && this.world.isUp(m.id) && actingAsLeader(m.ha, this.local(m))) return m.id;
    }
    return undefined;
  }

  private config(id: NodeId): HaConfig {
    return {
      memberId: id,
      announce: id,
      election: ELECTION,
      statePrefix: PREFIX,
      timing: GROUP_TIMING,
      emptyState: this.options.emptyState,
      ...(this.options.plantedBug === undefined ? {} : { plantedBug: this.options.plantedBug }),
    };
  }

  private local(m: Member): number {
    return m.offset + m.rate * this.world.now;
  }

  private tag(m: Member): string {
    return `${m.id}#${m.incarnation}`;
  }

  private fail(
    invariant: 'ha-one-leader' | 'ha-fenced-writes' | 'ha-no-shuffle-lost' | 'ha-fatal',
    node: NodeId,
    detail: string,
  ): void {
    this.world.fail({ invariant, node, detail });
  }

  // --- the world's questions (MasterGroupHooks) ---

  standby(member: NodeId): StandbyAnswer {
    const m = this.byId.get(member)!;
    if (!m.alive) return { kind: 'refused' };
    if (this.world.now < m.frozenUntil) return { kind: 'silent' };
    return {
      kind: 'answer',
      message: followerAnswer({ member, leader: leaderHint(m.ha), peerFollowsLeader: true }),
    };
  }

  mayAct(member: NodeId): boolean {
    const m = this.byId.get(member)!;
    if (!m.alive) return false;
    if (!actingAsLeader(m.ha, this.local(m))) {
      // The runtime's driver asks before the machine sees anything: past its deadline it steps down first.
      this.haInput(m, { kind: 'tick' });
      return false;
    }
    for (const other of this.byId.values()) {
      if (other === m || !other.alive || !this.world.isUp(other.id)) continue;
      if (actingAsLeader(other.ha, this.local(other))) {
        this.fail(
          'ha-one-leader',
          member,
          `${this.tag(m)} acts as leader while ${this.tag(other)} may act too`,
        );
        return false;
      }
    }
    return true;
  }

  persist(
    member: NodeId,
    changes: readonly { key: string; value: string | null }[],
    confirm: () => void,
  ): void {
    const m = this.byId.get(member)!;
    // One write of the interpreter may carry several persists: a later write of a key wins (storeChanges).
    const id = m.nextPersist++;
    m.persists.set(id, { confirm });
    this.haInput(m, { kind: 'persist', id, changes: storeChanges(PREFIX, changes) });
  }

  moved(node: NodeId, line: FollowLine): void {
    this.world.trace.count(`ha.follow.${line.why}`);
    if (this.world.trace.enabled)
      this.world.trace.line(this.world.now, node, `log info ${line.event}: ${line.message}`);
  }

  // --- the leadership machine, driven ---

  private startProcess(m: Member): void {
    if (m.alive) return;
    m.incarnation += 1;
    m.alive = true;
    m.ha = initialHaState(this.config(m.id));
    m.outstanding = new Set();
    m.queued = [];
    m.persists = new Map();
    this.world.trace.line(this.world.now, m.id, `HA process ${m.incarnation} starts: campaigns`);
    this.haInput(m, { kind: 'start' });
  }

  /** The process ends (killed, or exited as deposed): its machine, its leadership and its store calls with it. */
  private endProcess(m: Member, how: 'crash' | 'exit', reason: string): void {
    if (!m.alive) return;
    m.alive = false;
    m.incarnation += 1;
    m.persists = new Map();
    this.store.dropCallsOf(this.tag(m));
    if (how === 'crash') this.world.crash(m.id);
    else this.world.exit(m.id, 75, reason);
  }

  /** Runs `input` at member `m` now, or when it thaws; never in a later process. */
  private deliver(m: Member, incarnation: number, input: () => void): void {
    if (!m.alive || m.incarnation !== incarnation) return;
    if (this.world.now < m.frozenUntil) m.queued.push(input);
    else input();
  }

  private haInput(m: Member, input: HaInput): void {
    const { state, effects } = haStep(m.ha, input, this.local(m));
    m.ha = state;
    const incarnation = m.incarnation;
    for (const effect of effects) {
      if (!m.alive || m.incarnation !== incarnation) return;
      switch (effect.kind) {
        case 'store':
          this.sendToStore(m, effect.request);
          break;
        case 'wakeAt': {
          const token = (m.wakeToken += 1);
          this.world.schedule((effect.at - m.offset) / m.rate, `${m.id} leadership tick`, () =>
            this.deliver(m, incarnation, () => {
              if (m.wakeToken === token) this.haInput(m, { kind: 'tick' });
            }),
          );
          break;
        }
        case 'startActing':
          this.startActing(m, effect.fence.createRevision, effect.recovered);
          break;
        case 'stopActing':
          this.world.trace.line(this.world.now, m.id, `stops acting: ${effect.reason}`);
          // The runtime's master exits to restart as a follower (runtime/process/master-leadership.ts).
          this.endProcess(m, 'exit', `no longer the leader: ${effect.reason}`);
          this.world.schedule(this.world.now + SUPERVISOR_DELAY_MS, `supervisor restarts ${m.id}`, () =>
            this.startProcess(m),
          );
          return;
        case 'persisted':
          for (const id of effect.ids) {
            const persist = m.persists.get(id);
            m.persists.delete(id);
            if (persist === undefined) continue;
            this.confirmed();
            // In an event of its own: the interpreter may be amid the write that asked for it.
            this.world.schedule(this.world.now, `${m.id} persist confirmed`, () => persist.confirm());
          }
          break;
        case 'leaderIs':
          break;
        case 'fatal':
          this.fail('ha-fatal', m.id, `${this.tag(m)}: ${effect.reason}`);
          break;
        case 'log':
          this.world.trace.count(`log.${effect.level}.${effect.event}`);
          if (this.world.trace.enabled)
            this.world.trace.line(
              this.world.now,
              m.id,
              `log ${effect.level} ${effect.event} ${JSON.stringify(effect.fields)}`,
            );
          break;
      }
    }
  }

  private startActing(m: Member, term: number, recovered: ReadonlyMap<string, string>): void {
    const tag = this.tag(m);
    if (term < this.lastTerm || (term === this.lastTerm && tag !== this.lastTermHolder)) {
      this.fail(
        'ha-one-leader',
        m.id,
        `${tag} starts term ${term} after term ${this.lastTerm} of ${this.lastTermHolder}`,
      );
      return;
    }
    if (this.world.isUp(m.id)) {
      // A reload under the same term (a write's outcome unknown): the runtime restarts to act on the reread state.
      this.endProcess(m, 'exit', 'leadership reloaded the state: restarting to act on it');
      this.world.schedule(this.world.now + SUPERVISOR_DELAY_MS, `supervisor restarts ${m.id}`, () =>
        this.startProcess(m),
      );
      return;
    }
    this.lastTerm = term;
    this.lastTermHolder = tag;
    this.terms += 1;
    this.checkNoneLost(
      assembleDurable(
        MASTER_STATE_PREFIX,
        [...recovered].map(([key, value]) => ({ key, value })),
        this.options.emptyState,
      ),
      `${tag} starting term ${term}`,
      m.id,
    );
    this.world.trace.line(this.world.now, m.id, `leads term ${term}`);
    // The world's view of the masters' durable store is what this leader loaded: its checkers read it there.
    this.world.coordination.clear();
    for (const [key, value] of recovered) this.world.coordination.set(key, value);
    this.world.start(m.id, recovered);
  }

  /** A leader's persist is in the store: a shuffle the store no longer holds was released by the rules. */
  private confirmed(): void {
    const held = shufflesOf(assembleDurable(PREFIX, this.store.range(PREFIX), this.options.emptyState));
    for (const key of [...this.acked]) if (!held.has(key)) this.acked.delete(key);
  }

  private checkNoneLost(durable: MasterDurableState, where: string, node: NodeId): void {
    const held = shufflesOf(durable);
    for (const key of this.acked) {
      if (!held.has(key)) {
        this.fail(
          'ha-no-shuffle-lost',
          node,
          `${where}: ${describeKey(key)} was acknowledged registered and is missing`,
        );
        return;
      }
    }
  }

  private sendToStore(m: Member, request: StoreRequest): void {
    const tag = this.tag(m);
    const incarnation = m.incarnation;
    const longLived = request.kind === 'campaign' || request.kind === 'observe';
    m.outstanding.add(request.op);
    const failLater = (failure: 'timeout' | 'unavailable', detail: string) =>
      this.world.schedule(
        this.world.now + REQUEST_TIMEOUT_MS / m.rate,
        `${m.id} store call times out`,
        () => {
          if (m.incarnation !== incarnation || !m.outstanding.delete(request.op)) return;
          const result: StoreResult = { kind: 'failed', op: request.op, failure, detail };
          this.deliver(m, incarnation, () => this.haInput(m, { kind: 'result', result }));
        },
      );
    if (!longLived && request.kind !== 'cancel')
      failLater('timeout', `no answer in ${REQUEST_TIMEOUT_MS} ms`);
    const cut = m.cut;
    if (cut !== undefined && longLived) {
      failLater('unavailable', 'connection lost');
      return;
    }
    if (cut !== undefined && cut.kind !== 'answers') {
      if (cut.kind === 'hold') cut.held.push(request);
      return;
    }
    this.world.schedule(this.world.now + this.latency(), `${m.id} store call arrives`, () =>
      this.arriveAtStore(tag, request),
    );
  }

  private latency(): number {
    return uniform(this.net, 0.5, 15);
  }

  private arriveAtStore(from: string, request: StoreRequest): void {
    this.deliverAll(this.store.serve(from, request, this.world.now));
    if (request.kind === 'txn') this.checkApplied();
    this.scheduleExpiry();
  }

  /** The store's leases end on its own clock: the next end is an event of the world's. */
  private scheduleExpiry(): void {
    const next = this.store.nextExpiry();
    if (next === Infinity || next >= this.expiryAt) return;
    this.expiryAt = next;
    this.world.schedule(next, 'a lease ends at the coordination store', () => {
      this.expiryAt = Infinity;
      this.deliverAll(this.store.expire(this.world.now));
      this.scheduleExpiry();
    });
  }

  private checkApplied(): void {
    for (; this.appliedChecked < this.store.applied.length; this.appliedChecked += 1) {
      const write = this.store.applied[this.appliedChecked]!;
      const owner = this.store.ownerOf(write.leaderAtApply?.lease);
      if (owner !== write.from) {
        this.fail(
          'ha-fenced-writes',
          this.masterId,
          `the store applied a write of ${write.from} at revision ${write.revision} while ${owner ?? 'nobody'} led`,
        );
      }
    }
  }

  private deliverAll(deliveries: readonly Delivery[]): void {
    for (const delivery of deliveries) {
      const m = [...this.byId.values()].find((x) => this.tag(x) === delivery.to);
      if (m === undefined || !m.alive || m.cut !== undefined) continue;
      const incarnation = m.incarnation;
      const result = delivery.result;
      this.world.schedule(this.world.now + this.latency(), `${m.id} hears from the store`, () => {
        if (m.incarnation !== incarnation) return;
        const longLived = result.kind === 'campaignWon' || result.kind === 'leaderIs';
        if (!longLived && !m.outstanding.delete(result.op)) return;
        this.deliver(m, incarnation, () => this.haInput(m, { kind: 'result', result }));
      });
    }
  }

  // --- faults ---

  private inject(fault: GroupFault): void {
    const members = [...this.byId.values()];
    const leader = this.leader();
    const m =
      fault.target === 'leader'
        ? leader === undefined
          ? pick(this.rng, members)
          : this.byId.get(leader)!
        : members[fault.target % members.length]!;
    const world = this.world;
    const end = world.now + fault.durationMs;
    world.trace.line(world.now, m.id, `GROUP FAULT ${fault.kind} ${this.tag(m)} for ${fault.durationMs} ms`);
    switch (fault.kind) {
      case 'kill':
        this.endProcess(m, 'crash', 'killed');
        world.schedule(end, `restart ${m.id}`, () => this.startProcess(m));
        return;
      case 'freeze': {
        m.frozenUntil = Math.max(m.frozenUntil, end);
        if (world.isUp(m.id)) world.freeze(m.id, end);
        const incarnation = m.incarnation;
        world.schedule(end, `${m.id} thaws`, () => {
          if (m.incarnation !== incarnation || world.now < m.frozenUntil) return;
          const queued = m.queued;
          m.queued = [];
          for (const input of queued) this.deliver(m, incarnation, input);
        });
        return;
      }
      case 'partition': {
        // Cut from the store (its requests lost, or held and delivered late) and from the rest of the cluster.
        const partition = world.network.partition([m.id], 'rest');
        this.cut(m, chance(this.rng, 0.5) ? 'drop' : 'hold', end);
        world.schedule(end, `${m.id} reconnected`, () => world.network.heal(partition));
        return;
      }
      case 'storeCut':
        // Cut from the store only: it still hears the cluster and writes, its requests held and delivered late.
        this.cut(m, chance(this.rng, 0.7) ? 'hold' : 'drop', end);
        return;
      case 'lease':
        // Its store answers are lost: its lease runs out at the store while it still writes.
        this.cut(m, 'answers', end);
        return;
    }
  }

  private cut(m: Member, kind: Cut, end: number): void {
    const cut = { kind, held: [] as StoreRequest[] };
    m.cut = cut;
    this.store.dropCallsOf(this.tag(m));
    const incarnation = m.incarnation;
    const tag = this.tag(m);
    // The broken connection's long-lived calls (campaign, observe) fail once the watch times out.
    this.world.schedule(this.world.now + REQUEST_TIMEOUT_MS, `${m.id} watch times out`, () => {
      if (m.incarnation !== incarnation) return;
      for (const op of [m.ha.observeOp, m.ha.phase.kind === 'campaigning' ? m.ha.phase.op : undefined]) {
        if (op === undefined) continue;
        const result: StoreResult = { kind: 'failed', op, failure: 'unavailable', detail: 'connection lost' };
        this.deliver(m, incarnation, () => this.haInput(m, { kind: 'result', result }));
      }
    });
    this.world.schedule(end, `${m.id} reaches the store again`, () => {
      if (m.cut !== cut) return;
      delete m.cut;
      for (const request of cut.held)
        this.world.schedule(this.world.now + this.latency(), `${m.id} held store call arrives`, () =>
          this.arriveAtStore(tag, request),
        );
    });
  }

  // --- what the members' machines acknowledge ---

  private observer(): Observer {
    const isMember = (node: NodeId) => this.byId.has(node);
    return {
      inputs: ['RegisterApplication', 'RegisterShuffle', 'UnregisterShuffle', 'UnregisterApplication'],
      onInput: (node: NodeId, input: Input) => {
        if (!isMember(node) || input.kind !== 'receive') return;
        const { envelope } = input;
        const message = envelope.message;
        const asked = `${node}#${envelope.from}#${envelope.requestId}`;
        if (message.type === 'RegisterShuffle' && envelope.requestId !== undefined) {
          this.registering.set(asked, `${message.appId}/${message.shuffleId}`);
        } else if (message.type === 'RegisterApplication' && envelope.requestId !== undefined) {
          this.registering.set(asked, `app:${message.appId}`);
        } else if (message.type === 'UnregisterShuffle') {
          this.acked.delete(`${message.appId}/${message.shuffleId}`);
        } else if (message.type === 'UnregisterApplication') {
          this.acked.delete(`app:${message.appId}`);
          for (const key of [...this.acked]) if (key.startsWith(`${message.appId}/`)) this.acked.delete(key);
        }
      },
      onDeparture: (node: NodeId, effect: Effect) => {
        if (!isMember(node) || effect.kind !== 'send' || effect.inReplyTo === undefined) return;
        const message = effect.message;
        if (message.type !== 'RegisterShuffleResponse' && message.type !== 'StatusResponse') return;
        const key = `${node}#${effect.to}#${effect.inReplyTo}`;
        const registered = this.registering.get(key);
        this.registering.delete(key);
        if (registered !== undefined && message.status === 'SUCCESS') this.acked.add(registered);
      },
    };
  }

  /** At the end: the store holds every shuffle acknowledged and not released. */
  finalCheck(): string | undefined {
    const stored = assembleDurable(PREFIX, this.store.range(PREFIX), this.options.emptyState);
    const held = shufflesOf(stored);
    for (const key of this.acked) {
      if (!held.has(key))
        return `the store at the end: ${describeKey(key)} was acknowledged registered and is missing`;
    }
    return undefined;
  }
}

function describeKey(key: string): string {
  return key.startsWith('app:') ? `application ${key.slice(4)}` : `shuffle ${key}`;
}

/** The registrations a durable state holds: `app:<appId>` for each application, `<appId>/<shuffleId>` for shuffles. */
function shufflesOf(durable: MasterDurableState): Set<string> {
  const keys = new Set<string>();
  for (const [appId, app] of durable.applications.apps) {
    keys.add(`app:${appId}`);
    for (const s of app.shuffles) keys.add(`${appId}/${s}`);
  }
  return keys;
}

function drawGroupFaults(rng: Rng, from: number, until: number, members: number): GroupFault[] {
  const count = 1 + Math.floor(rng.next() * 3);
  const faults: GroupFault[] = [];
  let at = uniform(rng, from, Math.max(from, until));
  for (let i = 0; i < count; i += 1) {
    const kind = pick<FaultKind>(rng, ['kill', 'freeze', 'partition', 'storeCut', 'storeCut', 'lease']);
    const durationMs = Math.round(uniform(rng, 1_000, 20_000));
    const target = chance(rng, 0.75) ? 'leader' : Math.floor(rng.next() * members);
    faults.push({ kind, at: Math.round(at), durationMs, target });
    at += uniform(rng, 2_000, 15_000);
  }
  return faults;
}

export function describeGroupFault(f: GroupFault): string {
  return `${f.kind}@${f.at}ms:${f.target === 'leader' ? 'leader' : `member${f.target}`}:${f.durationMs}ms`;
}
