import { compareHolds } from '../../core/ha/fencing.ts';
import type { Compare, LeaseId, StoredKey, StoreRequest, StoreResult, Txn } from '../../core/ha/store.ts';

/** A result for a client of the store (a master), delivered by the simulation's network. */
export interface Delivery {
  readonly to: string;
  readonly result: StoreResult;
}

interface Lease {
  readonly owner: string;
  readonly ttlMs: number;
  /** In simulated (real) time: when the store's clock will have counted the TTL since the last renewal. */
  expiresAt: number;
}

interface Waiter {
  readonly from: string;
  readonly op: number;
  readonly election: string;
  readonly key: string;
}

/** What the model reports of each applied transaction, for the invariants (the writer as the simulation knows it). */
export interface AppliedWrite {
  readonly from: string;
  readonly revision: number;
  readonly txn: Txn;
  /** The key, creation revision and lease leading the election at the moment the write applied; undefined: none. */
  readonly leaderAtApply: StoredKey | undefined;
}

/**
 * The coordination store as the simulator models etcd: one linearizable key space with a single revision counter,
 * leases whose expiry the simulator controls (each measured on the store's own clock, whose rate is drawn), and
 * elections as etcd's concurrency package runs them (a candidate's key is `<election><lease>`, created with its
 * lease; the oldest key leads). It decides nothing about leadership; the masters' core/ha machines do.
 */
export class CoordinationModel {
  private revision = 1;
  private readonly keys = new Map<string, StoredKey>();
  private readonly leases = new Map<LeaseId, Lease>();
  private nextLease = 1;
  private readonly campaigns: Waiter[] = [];
  private readonly observers: {
    from: string;
    op: number;
    election: string;
    last: string | null | undefined;
  }[] = [];
  readonly applied: AppliedWrite[] = [];

  /**
   * `storeRate`: how fast the store's clock runs against simulated time (1 ± drift); `election`: the election the
   * invariants ask about.
   */
  constructor(
    private readonly storeRate: number,
    private readonly election: string,
  ) {}

  /** Who holds `lease` (the caller that was granted it); undefined: no such lease now. */
  ownerOf(lease: LeaseId | undefined): string | undefined {
    return lease === undefined ? undefined : this.leases.get(lease)?.owner;
  }

  get currentRevision(): number {
    return this.revision;
  }

  /** The keys under `prefix` as stored now. */
  range(prefix: string): StoredKey[] {
    return [...this.keys.values()]
      .filter((k) => k.key.startsWith(prefix))
      .sort((a, b) => (a.key < b.key ? -1 : 1));
  }

  leaderOf(election: string): StoredKey | undefined {
    let oldest: StoredKey | undefined;
    for (const k of this.keys.values()) {
      if (k.key.startsWith(election) && (oldest === undefined || k.createRevision < oldest.createRevision))
        oldest = k;
    }
    return oldest;
  }

  /** When the next lease ends (simulated time), for the simulation's clock; Infinity: none held. */
  nextExpiry(): number {
    let next = Infinity;
    for (const lease of this.leases.values()) next = Math.min(next, lease.expiresAt);
    return next;
  }

  /** Ends every lease whose time has come at `now`, deleting its keys; what waiting callers learn of it. */
  expire(now: number): Delivery[] {
    const out: Delivery[] = [];
    for (const [id, lease] of [...this.leases]) {
      if (lease.expiresAt <= now) this.endLease(id, out);
    }
    return out;
  }

  /** Serves one request arriving from `from` at simulated time `now`; what it answers (now or to waiting callers). */
  serve(from: string, request: StoreRequest, now: number): Delivery[] {
    const out: Delivery[] = [...this.expire(now)];
    const answer = (result: StoreResult) => out.push({ to: from, result });
    const op = request.op;
    switch (request.kind) {
      case 'leaseGrant': {
        const id = String(this.nextLease++);
        const ttlMs = Math.ceil(request.ttlMs / 1000) * 1000;
        this.leases.set(id, { owner: from, ttlMs, expiresAt: now + ttlMs / this.storeRate });
        answer({ kind: 'leaseGranted', op, lease: id, ttlMs });
        break;
      }
      case 'leaseKeepAlive': {
        const lease = this.leases.get(request.lease);
        if (lease === undefined) answer({ kind: 'keptAlive', op, lease: request.lease, ttlMs: 0 });
        else {
          lease.expiresAt = Math.max(lease.expiresAt, now + lease.ttlMs / this.storeRate);
          answer({ kind: 'keptAlive', op, lease: request.lease, ttlMs: lease.ttlMs });
        }
        break;
      }
      case 'leaseRevoke':
        if (this.leases.has(request.lease)) this.endLease(request.lease, out);
        answer({ kind: 'revoked', op });
        break;
      case 'campaign': {
        if (!this.leases.has(request.lease)) {
          answer({ kind: 'failed', op, failure: 'unavailable', detail: `lease ${request.lease} not found` });
          break;
        }
        const key = `${request.election}${request.lease}`;
        if (!this.keys.has(key)) this.put(key, request.value, request.lease);
        this.campaigns.push({ from, op, election: request.election, key });
        this.settleElections(out);
        break;
      }
      case 'getPrefix':
        answer({ kind: 'range', op, revision: this.revision, keys: this.range(request.prefix) });
        break;
      case 'txn':
        answer(this.txn(from, op, request.txn));
        break;
      case 'observe': {
        const observer = {
          from,
          op,
          election: request.election,
          last: undefined as string | null | undefined,
        };
        this.observers.push(observer);
        this.settleElections(out);
        break;
      }
      case 'cancel':
        break;
    }
    return out;
  }

  private put(key: string, value: string, lease?: LeaseId): void {
    this.revision += 1;
    const old = this.keys.get(key);
    this.keys.set(key, {
      key,
      value,
      createRevision: old?.createRevision ?? this.revision,
      modRevision: this.revision,
      ...(lease === undefined ? {} : { lease }),
    });
  }

  private txn(from: string, op: number, txn: Txn): StoreResult {
    const holds = (c: Compare) => compareHolds(c, this.keys.get(c.key));
    if (!txn.fence.every(holds)) return { kind: 'refused', op, fenceHeld: false, revision: this.revision };
    if (!txn.compares.every(holds)) return { kind: 'refused', op, fenceHeld: true, revision: this.revision };
    const leaderAtApply = this.leaderOf(this.election);
    this.revision += 1;
    for (const o of txn.ops) {
      if (o.kind === 'delete') this.keys.delete(o.key);
      else {
        const old = this.keys.get(o.key);
        this.keys.set(o.key, {
          key: o.key,
          value: o.value,
          createRevision: old?.createRevision ?? this.revision,
          modRevision: this.revision,
        });
      }
    }
    this.applied.push({ from, revision: this.revision, txn, leaderAtApply });
    return { kind: 'committed', op, revision: this.revision };
  }

  private endLease(id: LeaseId, out: Delivery[]): void {
    this.leases.delete(id);
    let deleted = false;
    for (const [key, stored] of [...this.keys]) {
      if (stored.lease === id) {
        this.keys.delete(key);
        deleted = true;
      }
    }
    if (deleted) this.revision += 1;
    for (let i = this.campaigns.length - 1; i >= 0; i -= 1) {
      const waiter = this.campaigns[i]!;
      if (!this.keys.has(waiter.key)) {
        this.campaigns.splice(i, 1);
        out.push({
          to: waiter.from,
          result: { kind: 'failed', op: waiter.op, failure: 'unavailable', detail: `lease ${id} ended` },
        });
      }
    }
    this.settleElections(out);
  }

  /** Answers every campaign whose key is now the oldest, and every observer whose leader changed. */
  private settleElections(out: Delivery[]): void {
    for (let i = this.campaigns.length - 1; i >= 0; i -= 1) {
      const waiter = this.campaigns[i]!;
      const leader = this.leaderOf(waiter.election);
      if (leader?.key === waiter.key) {
        this.campaigns.splice(i, 1);
        out.push({
          to: waiter.from,
          result: { kind: 'campaignWon', op: waiter.op, key: leader.key, revision: leader.createRevision },
        });
      }
    }
    for (const observer of this.observers) {
      const value = this.leaderOf(observer.election)?.value ?? null;
      if (value === observer.last) continue;
      observer.last = value;
      out.push({
        to: observer.from,
        result: { kind: 'leaderIs', op: observer.op, value, revision: this.revision },
      });
    }
  }

  /** Forgets a caller's long-lived calls (its process died or its connection broke). */
  dropCallsOf(from: string): void {
    for (let i = this.campaigns.length - 1; i >= 0; i -= 1)
      if (this.campaigns[i]!.from === from) this.campaigns.splice(i, 1);
    for (let i = this.observers.length - 1; i >= 0; i -= 1)
      if (this.observers[i]!.from === from) this.observers.splice(i, 1);
  }
}
