// The election runner's timing (./leader-election.ts), taken from the core's (core/ha/timing.ts) so that it is
// decided once: DEFAULT_HA_TIMING scaled to the runner's lease, and the core's acting deadline. The master process
// itself runs the core's leadership machine (./ha-driver.ts); this runner remains for the client comparison.
import { actingDeadline, DEFAULT_HA_TIMING, type HaTiming } from '../../core/ha/timing.ts';

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

/** `timing` with every duration scaled so that its lease is `ttlSeconds` (the clock bound unchanged). */
export function scaledTiming(ttlSeconds: number, timing: HaTiming = DEFAULT_HA_TIMING): HaTiming {
  const ratio = (ttlSeconds * 1000) / timing.leaseTtlMs;
  return {
    leaseTtlMs: ttlSeconds * 1000,
    keepAliveIntervalMs: timing.keepAliveIntervalMs * ratio,
    clockDrift: timing.clockDrift,
    stepDownMarginMs: timing.stepDownMarginMs * ratio,
    campaignRetryMs: timing.campaignRetryMs * ratio,
  };
}

export const coreRules: LeadershipRules = {
  renewIntervalMs: (ttlSeconds) => scaledTiming(ttlSeconds).keepAliveIntervalMs,
  actUntilMs: (sentAtMs, ttlSeconds) => actingDeadline(sentAtMs, ttlSeconds * 1000, scaledTiming(ttlSeconds)),
  retryDelayMs: (ttlSeconds) => scaledTiming(ttlSeconds).campaignRetryMs,
};
