import type { LogLevel } from '../machines/effects.ts';
import type { MasterDurableState } from '../machines/master/state.ts';
import type { PlantedBug } from '../planted-bugs.ts';
import { type Fence, type KnownKey } from './fencing.ts';
import { afterCommit, knownFromRange, planWrites, recoveredForMaster } from './key-layout.ts';
import type { LeaseId, StoreRequest, StoreResult, Txn } from './store.ts';
import { actingDeadline, type HaTiming } from './timing.ts';

/**
 * One master's part in its high-availability group, as a pure machine: when to take a lease, campaign, load the
 * durable state and start acting as leader, renew, and stop acting (before the lease can end: ./timing.ts), and the
 * leader's fenced, compare-and-swap writes of the durable state (./key-layout.ts). The driver (runtime/ha/ on
 * etcd, sim/ha/ on the simulator's model) carries out `store` requests and hands their results back, wakes the
 * machine at `wakeAt`, and runs the master machine only between `startActing` and `stopActing`.
 */
export interface HaConfig {
  /** This master's id in the group (svc.master.ha.node.id). */
  readonly memberId: string;
  /** What the election announces for this master: its id and addresses, for followers to redirect to. */
  readonly announce: string;
  /** The election's prefix in the store. */
  readonly election: string;
  /** The prefix the durable state's keys live under (./key-layout.ts). */
  readonly statePrefix: string;
  readonly timing: HaTiming;
  /** The master's empty durable state, what a new cluster starts from. */
  readonly emptyState: MasterDurableState;
  readonly plantedBug?: PlantedBug;
}

/** Where a master stands. Every phase but `waiting` and `resigned` holds a lease. */
export type HaPhase =
  | { readonly kind: 'idle' }
  | { readonly kind: 'waiting'; readonly until: number }
  | { readonly kind: 'granting'; readonly op: number; readonly sentAt: number }
  | { readonly kind: 'campaigning'; readonly op: number }
  | { readonly kind: 'loading'; readonly op: number; readonly fence: Fence }
  | { readonly kind: 'leading'; readonly fence: Fence }
  | { readonly kind: 'resigned' };

export interface HeldLease {
  readonly id: LeaseId;
  /** On this master's clock: until when the lease lets it act (./timing.ts). */
  readonly actingUntil: number;
  readonly nextKeepAliveAt: number;
  /** The keep-alive in flight and when it was sent; undefined: none. */
  readonly keepAlive?: { readonly op: number; readonly sentAt: number };
}

/** The leader's writes: what it knows of its keys, the persists waiting, the transactions under way. */
export interface WriterState {
  readonly known: ReadonlyMap<string, KnownKey>;
  /** Persists not yet under way, written together, confirming them all (group commit). */
  readonly waiting: readonly number[];
  /** Their changes, a later one of a key replacing an earlier (null: delete); undefined: none. */
  readonly pending?: ReadonlyMap<string, string | null>;
  readonly underWay?: {
    readonly ids: readonly number[];
    readonly op: number;
    readonly txns: readonly Txn[];
  };
}

export interface HaState {
  readonly config: HaConfig;
  readonly phase: HaPhase;
  readonly lease?: HeldLease;
  readonly writer?: WriterState;
  readonly nextOp: number;
  /** When the store first failed to answer since it last did; undefined: it answers. */
  readonly unreachableSince?: number;
  /** The leader the election last reported (its announced value), for "not leader" answers. */
  readonly leader: { readonly value: string | null; readonly revision: number };
  readonly observeOp?: number;
  readonly wakeAt?: number;
}

export type HaInput =
  | { readonly kind: 'start' }
  | { readonly kind: 'tick' }
  | { readonly kind: 'result'; readonly result: StoreResult }
  /**
   * The master persisted `changes` (keys of its durable state under the state prefix, ./key-layout.ts; null
   * deletes): write them; `id` is confirmed later.
   */
  | { readonly kind: 'persist'; readonly id: number; readonly changes: ReadonlyMap<string, string | null> }
  /** A planned stop: give up leadership now, so that another master leads without waiting for the lease. */
  | { readonly kind: 'resign' };

export type HaEffect =
  | { readonly kind: 'store'; readonly request: StoreRequest }
  /** Deliver a `tick` at this time (on this master's clock), replacing any earlier request. */
  | { readonly kind: 'wakeAt'; readonly at: number }
  /**
   * Act as leader from now: start the master machine afresh with `start{recovered}` (the restart path: every
   * worker's and application's timeout restarts from now), and route its coordination persists here.
   */
  | { readonly kind: 'startActing'; readonly fence: Fence; readonly recovered: ReadonlyMap<string, string> }
  /**
   * Stop acting now: drop the master machine and every effect it still holds behind an unconfirmed persist
   * (`abandoned` lists those persists: never confirmed, their replies never sent); answer "not leader" from now.
   */
  | { readonly kind: 'stopActing'; readonly reason: string; readonly abandoned: readonly number[] }
  /** These persists are in the store: release what the master holds behind them. */
  | { readonly kind: 'persisted'; readonly ids: readonly number[] }
  /** Who leads, as the election reported it (null: nobody); followers redirect there. */
  | { readonly kind: 'leaderIs'; readonly value: string | null; readonly revision: number }
  /** The state in the store cannot be read: no master can lead on it; an operator must repair it. */
  | { readonly kind: 'fatal'; readonly reason: string }
  | {
      readonly kind: 'log';
      readonly level: LogLevel;
      readonly event: string;
      readonly fields: Readonly<Record<string, unknown>>;
    };

export function initialHaState(config: HaConfig): HaState {
  return { config, phase: { kind: 'idle' }, nextOp: 1, leader: { value: null, revision: 0 } };
}

/** Whether this master may act as leader at `now` (its clock): the one question every driver asks before acting. */
export function actingAsLeader(state: HaState, now: number): boolean {
  if (state.phase.kind !== 'leading' || state.lease === undefined) return false;
  return state.config.plantedBug === 'ha-acts-past-lease' || now < state.lease.actingUntil;
}

/**
 * Whom a master that does not act names as leader in its "not leader" answers: the election's last report, unless
 * that names itself (a report from before it stopped acting); null: it does not know, the caller tries another.
 */
export function leaderHint(state: HaState): string | null {
  const value = state.leader.value;
  return value === state.config.announce ? null : value;
}

interface Out {
  readonly now: number;
  readonly effects: HaEffect[];
}

export function haStep(
  state: HaState,
  input: HaInput,
  now: number,
): { readonly state: HaState; readonly effects: HaEffect[] } {
  const out: Out = { now, effects: [] };
  let s = checkDeadline(state, out);
  s = onInput(s, input, out);
  s = renew(s, out);
  s = scheduleWake(s, out);
  return { state: s, effects: out.effects };
}

function log(out: Out, level: LogLevel, event: string, fields: Record<string, unknown>): void {
  out.effects.push({ kind: 'log', level, event, fields });
}

function request(s: HaState, out: Out, make: (op: number) => StoreRequest): HaState {
  out.effects.push({ kind: 'store', request: make(s.nextOp) });
  return { ...s, nextOp: s.nextOp + 1 };
}

function onInput(s: HaState, input: HaInput, out: Out): HaState {
  switch (input.kind) {
    case 'start':
      if (s.phase.kind !== 'idle') return s;
      return grantLease(observe(s, out), out);
    case 'tick':
      if (s.phase.kind === 'waiting' && out.now >= s.phase.until) return grantLease(s, out);
      if (s.observeOp === undefined && s.phase.kind !== 'idle' && s.phase.kind !== 'resigned')
        return observe(s, out);
      return s;
    case 'result':
      return onResult(s, input.result, out);
    case 'persist':
      return onPersist(s, input.id, input.changes, out);
    case 'resign':
      return resign(s, out);
  }
}

function observe(s: HaState, out: Out): HaState {
  const op = s.nextOp;
  return { ...request(s, out, () => ({ kind: 'observe', op, election: s.config.election })), observeOp: op };
}

function grantLease(s: HaState, out: Out): HaState {
  const op = s.nextOp;
  const next = request(s, out, () => ({ kind: 'leaseGrant', op, ttlMs: s.config.timing.leaseTtlMs }));
  return { ...next, phase: { kind: 'granting', op, sentAt: out.now }, lease: undefined };
}

/**
 * The safety rule: at or past its acting deadline a master stops acting, whatever else it was told; it assumes its
 * lease gone and campaigns again on a new one.
 */
function checkDeadline(s: HaState, out: Out): HaState {
  const lease = s.lease;
  if (lease === undefined || out.now < lease.actingUntil) return s;
  if (s.phase.kind === 'leading' && s.config.plantedBug === 'ha-acts-past-lease') return s;
  const why =
    `lease ${lease.id} was not renewed in time (acting deadline ${lease.actingUntil} passed at ${out.now}` +
    (s.unreachableSince === undefined
      ? ')'
      : `; the coordination store has not answered since ${s.unreachableSince})`);
  return loseLease(s, out, why, true);
}

/** Gives the lease up: stop acting if leading, revoke it (best effort) and campaign again after the retry delay. */
function loseLease(s: HaState, out: Out, why: string, revoke: boolean): HaState {
  let next = stopIfLeading(s, out, why);
  if (next.phase.kind !== 'leading' && s.phase.kind !== 'leading') {
    log(out, 'info', 'ha.campaign.abandoned', { member: s.config.memberId, reason: why });
  }
  const lease = next.lease;
  if (revoke && lease !== undefined) {
    const op = next.nextOp;
    next = request(next, out, () => ({ kind: 'leaseRevoke', op, lease: lease.id }));
  }
  return {
    ...next,
    lease: undefined,
    writer: undefined,
    phase: { kind: 'waiting', until: out.now + s.config.timing.campaignRetryMs },
  };
}

function stopIfLeading(s: HaState, out: Out, why: string): HaState {
  if (s.phase.kind !== 'leading') return s;
  const writer = s.writer;
  const abandoned = [...(writer?.underWay?.ids ?? []), ...(writer?.waiting ?? [])];
  log(out, 'warn', 'ha.stepDown', {
    member: s.config.memberId,
    term: s.phase.fence.createRevision,
    reason: `stops acting as leader: ${why}`,
  });
  out.effects.push({ kind: 'stopActing', reason: why, abandoned });
  return { ...s, writer: undefined };
}

function resign(s: HaState, out: Out): HaState {
  const next = loseLease(
    stopIfLeading(s, out, 'resigned (planned stop)'),
    out,
    'resigned (planned stop)',
    true,
  );
  return { ...next, phase: { kind: 'resigned' } };
}

function onResult(s: HaState, result: StoreResult, out: Out): HaState {
  if (result.kind === 'failed') return onFailed(s, result, out);
  const reached = s.unreachableSince === undefined ? s : { ...s, unreachableSince: undefined };
  if (s.unreachableSince !== undefined) {
    log(out, 'info', 'ha.store.reachable', {
      member: s.config.memberId,
      unreachableSince: s.unreachableSince,
    });
  }
  const phase = reached.phase;
  switch (result.kind) {
    case 'leaseGranted': {
      if (phase.kind !== 'granting' || phase.op !== result.op) {
        // A lease nobody waits for any more: give it back rather than let it hold a key.
        const op = reached.nextOp;
        return request(reached, out, () => ({ kind: 'leaseRevoke', op, lease: result.lease }));
      }
      // A grant starts the lease at the store no earlier than it was sent: it counts like a keep-alive's answer.
      const lease: HeldLease = {
        id: result.lease,
        actingUntil: actingDeadline(phase.sentAt, result.ttlMs, reached.config.timing),
        nextKeepAliveAt: phase.sentAt + reached.config.timing.keepAliveIntervalMs,
      };
      const op = reached.nextOp;
      const next = request(reached, out, () => ({
        kind: 'campaign',
        op,
        election: reached.config.election,
        lease: result.lease,
        value: reached.config.announce,
      }));
      return { ...next, lease, phase: { kind: 'campaigning', op } };
    }
    case 'keptAlive':
      return onKeptAlive(reached, result, out);
    case 'campaignWon': {
      if (phase.kind !== 'campaigning' || phase.op !== result.op || reached.lease === undefined)
        return reached;
      const fence: Fence = { key: result.key, createRevision: result.revision, lease: reached.lease.id };
      log(out, 'info', 'ha.elected', {
        member: reached.config.memberId,
        term: result.revision,
        hint: 'loading the durable state before serving',
      });
      return load(reached, fence, out);
    }
    case 'range': {
      if (phase.kind !== 'loading' || phase.op !== result.op) return reached;
      let recovered: ReadonlyMap<string, string>;
      try {
        recovered = recoveredForMaster(reached.config.statePrefix, result.keys, reached.config.emptyState);
      } catch (error) {
        const reason =
          `the master's state in the coordination store cannot be read: ${error instanceof Error ? error.message : String(error)}. ` +
          `Repair or delete the keys under ${reached.config.statePrefix} (deleting them starts an empty master: ` +
          'workers register again, and the shuffles of running applications are lost)';
        log(out, 'error', 'ha.load.failed', { member: reached.config.memberId, reason });
        out.effects.push({ kind: 'fatal', reason });
        return resign(reached, out);
      }
      const known = knownFromRange(result.keys.filter((k) => k.key.startsWith(reached.config.statePrefix)));
      log(out, 'warn', 'ha.leading', {
        member: reached.config.memberId,
        term: phase.fence.createRevision,
        revision: result.revision,
        keys: known.size,
        reason: 'elected and loaded: acting as leader (worker and application timeouts restart now)',
      });
      out.effects.push({ kind: 'startActing', fence: phase.fence, recovered });
      return { ...reached, phase: { kind: 'leading', fence: phase.fence }, writer: { known, waiting: [] } };
    }
    case 'committed':
      return onCommitted(reached, result.op, result.revision, out);
    case 'refused': {
      if (reached.writer?.underWay?.op !== result.op) return reached;
      if (!result.fenceHeld) {
        return loseLease(
          reached,
          out,
          `a write was refused: leader key no longer ours at revision ${result.revision}`,
          true,
        );
      }
      // Someone else changed a key of the state under this leader: reread it all rather than overwrite.
      return reload(
        reached,
        out,
        `a compare-and-swap failed at revision ${result.revision}: the stored state changed under this leader`,
      );
    }
    case 'leaderIs':
      if (result.op !== reached.observeOp) return reached;
      out.effects.push({ kind: 'leaderIs', value: result.value, revision: result.revision });
      return { ...reached, leader: { value: result.value, revision: result.revision } };
    case 'revoked':
      return reached;
  }
}

function load(s: HaState, fence: Fence, out: Out): HaState {
  const op = s.nextOp;
  const next = request(s, out, () => ({ kind: 'getPrefix', op, prefix: s.config.statePrefix }));
  return { ...next, phase: { kind: 'loading', op, fence } };
}

/** Stop acting and read the state again under the same lease and term: the restart path without a new election. */
function reload(s: HaState, out: Out, why: string): HaState {
  if (s.phase.kind !== 'leading') return s;
  const fence = s.phase.fence;
  return load(stopIfLeading(s, out, why), fence, out);
}

function onKeptAlive(s: HaState, result: Extract<StoreResult, { kind: 'keptAlive' }>, out: Out): HaState {
  const lease = s.lease;
  if (lease?.keepAlive?.op !== result.op) return s;
  if (result.ttlMs <= 0) return loseLease(s, out, `the store says lease ${lease.id} has ended`, false);
  const until = actingDeadline(lease.keepAlive.sentAt, result.ttlMs, s.config.timing);
  const { keepAlive: _answered, ...rest } = lease;
  return { ...s, lease: { ...rest, actingUntil: Math.max(lease.actingUntil, until) } };
}

function onFailed(s: HaState, result: Extract<StoreResult, { kind: 'failed' }>, out: Out): HaState {
  const unreachableSince = s.unreachableSince ?? out.now;
  if (s.unreachableSince === undefined) {
    log(out, 'warn', 'ha.store.unreachable', {
      member: s.config.memberId,
      failure: result.failure,
      detail: result.detail,
      hint: 'acting as leader, if leading, until the lease deadline; then stepping down',
    });
  }
  const failed = { ...s, unreachableSince };
  const phase = s.phase;
  if (result.op === s.observeOp) return { ...failed, observeOp: undefined };
  if (s.lease?.keepAlive?.op === result.op) {
    const { keepAlive: _failed, ...rest } = s.lease;
    return { ...failed, lease: rest };
  }
  if (
    (phase.kind === 'granting' || phase.kind === 'campaigning' || phase.kind === 'loading') &&
    phase.op === result.op
  ) {
    return loseLease(
      failed,
      out,
      `the coordination store did not answer (${result.failure}: ${result.detail})`,
      true,
    );
  }
  if (s.writer?.underWay?.op === result.op) {
    // The write may or may not have applied: what this leader knows is no longer sure. Reread under the same term.
    return reload(failed, out, `a write's outcome is unknown (${result.failure}: ${result.detail})`);
  }
  return failed;
}

function renew(s: HaState, out: Out): HaState {
  const lease = s.lease;
  if (lease === undefined || lease.keepAlive !== undefined || out.now < lease.nextKeepAliveAt) return s;
  const op = s.nextOp;
  const next = request(s, out, () => ({ kind: 'leaseKeepAlive', op, lease: lease.id }));
  return {
    ...next,
    lease: {
      ...lease,
      keepAlive: { op, sentAt: out.now },
      nextKeepAliveAt: out.now + s.config.timing.keepAliveIntervalMs,
    },
  };
}

function scheduleWake(s: HaState, out: Out): HaState {
  const times: number[] = [];
  if (s.phase.kind === 'waiting') times.push(s.phase.until);
  if (s.lease !== undefined) {
    times.push(s.lease.nextKeepAliveAt);
    if (s.phase.kind === 'leading' || s.phase.kind === 'loading' || s.phase.kind === 'campaigning')
      times.push(s.lease.actingUntil);
  }
  if (s.observeOp === undefined && s.phase.kind !== 'idle' && s.phase.kind !== 'resigned')
    times.push(out.now + s.config.timing.campaignRetryMs);
  const at = times.length === 0 ? undefined : Math.max(out.now, Math.min(...times));
  if (at === undefined || at === s.wakeAt) return s;
  out.effects.push({ kind: 'wakeAt', at });
  return { ...s, wakeAt: at };
}

function onPersist(s: HaState, id: number, changes: ReadonlyMap<string, string | null>, out: Out): HaState {
  if (s.phase.kind !== 'leading' || s.writer === undefined) {
    log(out, 'warn', 'ha.persist.notLeader', {
      member: s.config.memberId,
      id,
      hint: 'a master that does not lead has no machine to persist from; the driver must drop it',
    });
    return s;
  }
  const earlier = s.writer.pending;
  const pending = earlier === undefined ? changes : new Map([...earlier, ...changes]);
  const writer: WriterState = { ...s.writer, waiting: [...s.writer.waiting, id], pending };
  return startWrite({ ...s, writer }, out);
}

/** Starts the next transaction, or the next group of waiting persists, when nothing is under way. */
function startWrite(s: HaState, out: Out): HaState {
  const writer = s.writer;
  if (s.phase.kind !== 'leading' || writer === undefined || writer.underWay !== undefined) return s;
  if (writer.waiting.length === 0 || writer.pending === undefined) return s;
  const fence = s.config.plantedBug === 'ha-unfenced-writes' ? undefined : s.phase.fence;
  const plan = planWrites(s.config.statePrefix, writer.known, writer.pending, fence);
  if (plan.kind === 'oversized') {
    const reason = `key ${plan.key} would need ${plan.bytes} bytes, more than one etcd request may carry`;
    log(out, 'error', 'ha.persist.oversized', { member: s.config.memberId, reason });
    out.effects.push({ kind: 'fatal', reason });
    return resign(s, out);
  }
  const ids = writer.waiting;
  const { pending: _written, ...rest } = writer;
  if (plan.txns.length === 0) {
    out.effects.push({ kind: 'persisted', ids });
    return { ...s, writer: { ...rest, waiting: [] } };
  }
  return sendTxn({ ...s, writer: { ...rest, waiting: [] } }, ids, plan.txns, out);
}

function sendTxn(s: HaState, ids: readonly number[], txns: readonly Txn[], out: Out): HaState {
  if (s.config.plantedBug === 'ha-confirms-before-commit' && s.writer?.underWay === undefined)
    out.effects.push({ kind: 'persisted', ids });
  const op = s.nextOp;
  const next = request(s, out, () => ({ kind: 'txn', op, txn: txns[0]! }));
  return { ...next, writer: { ...s.writer!, underWay: { ids, op, txns } } };
}

function onCommitted(s: HaState, op: number, revision: number, out: Out): HaState {
  const writer = s.writer;
  const underWay = writer?.underWay;
  if (writer === undefined || underWay?.op !== op) return s;
  const known = new Map(writer.known);
  afterCommit(known, underWay.txns[0]!, revision);
  const rest = underWay.txns.slice(1);
  const { underWay: _done, ...idle } = writer;
  const next: HaState = { ...s, writer: { ...idle, known } };
  if (rest.length > 0) return sendTxn(next, underWay.ids, rest, out);
  out.effects.push({ kind: 'persisted', ids: underWay.ids });
  return startWrite(next, out);
}
