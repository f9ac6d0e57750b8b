// One master's part in the election of its group: a lease kept alive, a campaign for the leader key, a watch of the
// key while another holds it. It reports what happens (elected, deposed and why, following whom, etcd unreachable)
// and acts on nothing: what a master does on each report is the core's to decide.
import { EtcdCallError } from './etcd-client.ts';
import { textOf, type EtcdStore, type Leadership } from './etcd-store.ts';
import { KeyWatch } from './key-watch.ts';
import { Event_EventType } from './proto/gen/etcd/mvccpb/kv_pb.ts';
import { LeaseKeeper } from './lease-keeper.ts';
import type { LeadershipRules } from './leadership-rules.ts';

export type ElectionReport =
  | { readonly kind: 'elected'; readonly leadership: Leadership }
  /** This master led and no longer may: its lease expired or went unrenewed until `actUntil`. */
  | { readonly kind: 'deposed'; readonly leadership: Leadership; readonly reason: string }
  | { readonly kind: 'following'; readonly leader: string; readonly revision: number }
  | { readonly kind: 'unreachable'; readonly reason: string };

export interface ElectionOptions {
  readonly leaderKey: string;
  readonly nodeId: string;
  readonly ttlSeconds: number;
  readonly watchTimeoutMs: number;
}

export class LeaderElection {
  private keeper: LeaseKeeper | undefined;
  private watch: KeyWatch | undefined;
  private leadership: Leadership | undefined;
  private actUntil = 0;
  private deadline: NodeJS.Timeout | undefined;
  private retry: NodeJS.Timeout | undefined;
  private lease: bigint | undefined;
  /** Leases given up while etcd was unreachable: etcd restores leases when it restarts, so they are revoked. */
  private readonly staleLeases = new Set<bigint>();
  private stopped = false;

  constructor(
    private readonly store: EtcdStore,
    private readonly options: ElectionOptions,
    private readonly rules: LeadershipRules,
    private readonly report: (report: ElectionReport) => void,
    private readonly now: () => number = Date.now,
  ) {}

  start(): void {
    void this.round();
  }

  /** The tenure this master may act on now, if any: checked against the clock, not only the last report. */
  current(): Leadership | undefined {
    return this.leadership !== undefined && this.now() < this.actUntil ? this.leadership : undefined;
  }

  /** Stops campaigning; a leader resigns so that another need not wait for the lease to expire. */
  async stop(): Promise<void> {
    this.stopped = true;
    const leadership = this.leadership;
    this.reset();
    if (leadership !== undefined) await this.store.resign(leadership).catch(() => undefined);
    else if (this.lease !== undefined) await this.store.revokeLease(this.lease).catch(() => undefined);
  }

  private reset(): void {
    this.keeper?.stop();
    this.keeper = undefined;
    this.watch?.cancel();
    this.watch = undefined;
    clearTimeout(this.deadline);
    clearTimeout(this.retry);
    this.leadership = undefined;
  }

  private later(): void {
    if (this.stopped) return;
    clearTimeout(this.retry);
    this.retry = setTimeout(() => void this.round(), this.rules.retryDelayMs(this.options.ttlSeconds));
  }

  private async round(): Promise<void> {
    if (this.stopped) return;
    try {
      await this.revokeStaleLeases();
      if (this.keeper === undefined) await this.newLease();
      if (this.stopped || this.lease === undefined) return;
      const outcome = await this.store.campaign(this.options.leaderKey, this.options.nodeId, this.lease);
      if (this.stopped) return;
      if (outcome.kind === 'elected') this.elected(outcome.leadership);
      else this.follow(textOf(outcome.holder), outcome.revision);
    } catch (error) {
      this.failed(error);
    }
  }

  private async revokeStaleLeases(): Promise<void> {
    for (const lease of [...this.staleLeases]) {
      try {
        await this.store.revokeLease(lease);
      } catch (error) {
        if (error instanceof EtcdCallError && error.unreachable) throw error;
        // Already expired (NOT_FOUND): nothing left to revoke.
      }
      this.staleLeases.delete(lease);
    }
  }

  private async newLease(): Promise<void> {
    const { ttlSeconds } = this.options;
    const requestedAt = this.now();
    const lease = await this.store.grantLease(ttlSeconds);
    this.lease = lease.id;
    this.renewedAt(requestedAt);
    const keeper = new LeaseKeeper(this.store.client, lease.id, this.rules.renewIntervalMs(ttlSeconds), {
      renewed: (_ttl, sentAtMs) => this.renewedAt(sentAtMs),
      expired: () => this.lost('etcd says the lease expired'),
      unreachable: (reason) => this.report({ kind: 'unreachable', reason }),
    });
    this.keeper = keeper;
    keeper.start();
  }

  private renewedAt(sentAtMs: number): void {
    this.actUntil = Math.max(this.actUntil, this.rules.actUntilMs(sentAtMs, this.options.ttlSeconds));
    this.armDeadline();
  }

  /** While leading, a timer at the end of what the last renewal allows. */
  private armDeadline(): void {
    if (this.leadership === undefined) return;
    clearTimeout(this.deadline);
    this.deadline = setTimeout(() => this.checkDeadline(), Math.max(0, this.actUntil - this.now()));
  }

  private checkDeadline(): void {
    if (this.leadership === undefined) return;
    // A timer may fire a little before the wall clock reaches the deadline: wait again rather than never.
    if (this.now() < this.actUntil) {
      this.armDeadline();
      return;
    }
    this.lost(`the lease was not renewed in time (acting until ${new Date(this.actUntil).toISOString()})`);
  }

  private elected(leadership: Leadership): void {
    this.leadership = leadership;
    this.armDeadline();
    this.report({ kind: 'elected', leadership });
  }

  /** The lease is gone or may be: drop it and any tenure, and campaign again on a new one. */
  private lost(reason: string): void {
    const leadership = this.leadership;
    const lease = this.lease;
    this.reset();
    this.lease = undefined;
    this.actUntil = 0;
    if (lease !== undefined) {
      this.staleLeases.add(lease);
      void this.revokeStaleLeases().catch(() => undefined);
    }
    if (leadership !== undefined) this.report({ kind: 'deposed', leadership, reason });
    else this.report({ kind: 'unreachable', reason });
    this.later();
  }

  private follow(leader: string, revision: number): void {
    this.report({ kind: 'following', leader, revision });
    this.watch?.cancel();
    this.watch = new KeyWatch(
      this.store.client,
      this.options.leaderKey,
      revision + 1,
      this.options.watchTimeoutMs,
      {
        changed: (events) => {
          // The leader resigned or its lease expired: campaign at once.
          if (events.some((event) => event.type === Event_EventType.DELETE)) {
            this.watch?.cancel();
            this.watch = undefined;
            void this.round();
          }
        },
        broken: (reason) => {
          this.watch = undefined;
          this.report({ kind: 'unreachable', reason });
          this.later();
        },
      },
    );
  }

  private failed(error: unknown): void {
    const reason = error instanceof Error ? error.message : String(error);
    if (error instanceof EtcdCallError && !error.unreachable) {
      this.report({ kind: 'unreachable', reason: `etcd refused: ${reason}` });
    } else this.report({ kind: 'unreachable', reason });
    // A lease etcd never confirmed may have been granted: start over on a new one.
    if (this.keeper === undefined) this.lease = undefined;
    this.later();
  }
}
