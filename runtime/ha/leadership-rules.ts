// The decisions the election runner needs, behind an interface: when to renew the lease, until when a leader may
// act on its last renewal, how long to wait before trying again. They are decisions, so they belong to the core
// (core/ha/, which the simulator runs too); `provisionalRules` stands in until the runtime is pointed there.

export interface LeadershipRules {
  /** How often the lease holder sends a keep-alive. */
  renewIntervalMs(ttlSeconds: number): number;
  /**
   * The local time after which a leader whose last confirmed renewal was sent at `lastRenewalSentAtMs` stops acting:
   * before etcd can let the lease expire and another master win the leader key.
   */
  actUntilMs(lastRenewalSentAtMs: number, ttlSeconds: number): number;
  /** How long to wait before campaigning or granting a lease again after etcd failed or refused. */
  retryDelayMs(ttlSeconds: number): number;
}

/** Renew three times a lease, stop acting a tenth of it (at least 500 ms) before etcd could expire it. */
export const provisionalRules: LeadershipRules = {
  renewIntervalMs: (ttlSeconds) => Math.max(100, (ttlSeconds * 1000) / 3),
  actUntilMs: (sentAtMs, ttlSeconds) => sentAtMs + ttlSeconds * 1000 - Math.max(500, ttlSeconds * 100),
  retryDelayMs: (ttlSeconds) => Math.min(2000, Math.max(100, (ttlSeconds * 1000) / 5)),
};
