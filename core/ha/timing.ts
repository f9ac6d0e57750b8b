/**
 * How long a leader may act on a lease it renewed, and why a deposed leader stops before another can start.
 *
 * The argument (docs/high-availability.md, "Why a deposed leader stops first"). A leader sends a keep-alive at
 * real time K, when its own clock reads `sentAt`; the store renews the lease on receipt, at or after K, for `ttl`
 * measured on the store's clock. Clocks run at rates within [1 − ρ, 1 + ρ] of real time (`clockDrift` = ρ), so:
 *  - the lease cannot end, and so no other master can win the election, before real time K + ttl / (1 + ρ);
 *  - the leader stops acting when its clock reads `sentAt + window`, which is at most K + window / (1 − ρ) in real
 *    time (its clock may run slow);
 *  - choosing window = (1 − ρ) · (ttl / (1 + ρ) − margin) puts the leader's stop at least `margin` before the
 *    earliest real time another master can win. The margin is the time the last effects of its last acting step
 *    may take to leave the master (a step's sends, a held reply released).
 * Only answered keep-alives extend the window, each from its own send time; the store's answer can only be later.
 * etcd measures leases on its leader's monotonic clock and, when its own leader changes, extends every lease by a
 * full TTL (never shortens one): both only move the earliest end later. What the margin cannot cover (a master
 * frozen in the middle of sending) the fencing of every durable write covers (./fencing.ts).
 */
export interface HaTiming {
  /** The lease's TTL at the store. A dead leader's successor starts within about this long. */
  readonly leaseTtlMs: number;
  /** How often the leader (and a candidate) renews its lease. */
  readonly keepAliveIntervalMs: number;
  /** ρ: the bound on how far any clock's rate strays from real time (0.01: one percent). */
  readonly clockDrift: number;
  /** What separates the deposed leader's stop from the earliest start of the next (see above). */
  readonly stepDownMarginMs: number;
  /** How long a master waits before campaigning again after it lost or could not get a lease. */
  readonly campaignRetryMs: number;
}

/**
 * The defaults, against the anchors of the issue: Kubernetes' leader election (lease 15 s, renew deadline 10 s,
 * retry 2 s) and Patroni (TTL 30 s, loop 10 s) and svc's goal, a new leader serving within 10 s of the old one's
 * death. A SIGKILLed leader's lease lives at most `leaseTtlMs` past its last renewal, so the TTL is 8 s; renewing
 * every 2 s lets three keep-alives in a row fail before the leader steps down (window ≈ 6.85 s).
 */
export const DEFAULT_HA_TIMING: HaTiming = {
  leaseTtlMs: 8_000,
  keepAliveIntervalMs: 2_000,
  clockDrift: 0.01,
  stepDownMarginMs: 1_000,
  campaignRetryMs: 2_000,
};

/** How long after sending a keep-alive its answer lets the leader act (see the argument above). */
export function actingWindowMs(ttlMs: number, timing: HaTiming): number {
  const rho = timing.clockDrift;
  return Math.max(0, (1 - rho) * (ttlMs / (1 + rho) - timing.stepDownMarginMs));
}

/** Until when (on the master's clock) a keep-alive sent at `sentAt` and answered with `ttlMs` lets it act. */
export function actingDeadline(sentAt: number, ttlMs: number, timing: HaTiming): number {
  return sentAt + actingWindowMs(ttlMs, timing);
}

/**
 * What is wrong with a timing, one sentence each; empty when it is usable. A leader must be able to miss one
 * keep-alive and still renew before its window closes, or every delayed answer would depose it.
 */
export function timingProblems(timing: HaTiming): string[] {
  const problems: string[] = [];
  const positive: (keyof HaTiming)[] = ['leaseTtlMs', 'keepAliveIntervalMs', 'campaignRetryMs'];
  for (const name of positive) {
    if (!(timing[name] > 0)) problems.push(`${name} must be positive (it is ${timing[name]})`);
  }
  if (!(timing.clockDrift >= 0 && timing.clockDrift < 0.5))
    problems.push(`clockDrift must be in [0, 0.5) (it is ${timing.clockDrift})`);
  if (!(timing.stepDownMarginMs >= 0))
    problems.push(`stepDownMarginMs must not be negative (it is ${timing.stepDownMarginMs})`);
  const window = actingWindowMs(timing.leaseTtlMs, timing);
  if (problems.length === 0 && window <= 2 * timing.keepAliveIntervalMs) {
    problems.push(
      `the lease (${timing.leaseTtlMs} ms) leaves a leader ${Math.floor(window)} ms to act on one renewal, ` +
        `not more than two keep-alive intervals (${timing.keepAliveIntervalMs} ms each): ` +
        'lengthen the lease or renew more often',
    );
  }
  return problems;
}
