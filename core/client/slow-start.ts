/**
 * How a map task slows its pushes to a worker that answers *_CONGESTED, and speeds up again (the reference's
 * slow-start push strategy, per worker). The limit is the batches of one partition the task keeps in flight to
 * that worker, at most the configured `maxInFlightPerPartition`:
 * - a congested answer halves it (at least 1) and makes the halved value the threshold; answered congested at 1,
 *   the task also waits longer before each push (one more second per congested answer in a row);
 * - a plain success adds 1 below the threshold (slow start: the limit doubles per round of answers) and 1 per
 *   `limit` successes at or above it (congestion avoidance), up to the maximum;
 * - while under the maximum, each push to the worker is followed by a pause, shorter the higher the limit.
 * A task that was never answered congested pushes at the maximum, as without congestion control.
 */
export interface PushLimit {
  /** Batches of one partition in flight to the worker. */
  readonly limit: number;
  /** Where slow start turns into congestion avoidance. */
  readonly threshold: number;
  /** Successes counted towards the next +1 in congestion avoidance. */
  readonly successes: number;
  /** Congested answers in a row while the limit was already 1. */
  readonly congestedAtOne: number;
}

/** The reference's pause: 500 ms less 60 ms per batch of the limit; at a limit of 1, 1 s more per congested answer. */
const BASE_PAUSE_MS = 500;
const PAUSE_STEP_MS = 60;
const PAUSE_PER_CONGESTED_MS = 1_000;
/** The reference's `svc.client.push.slowStart.maxSleepTime` default. */
export const MAX_PUSH_PAUSE_MS = 2_000;

export function fullPushLimit(max: number): PushLimit {
  return { limit: max, threshold: max, successes: 0, congestedAtOne: 0 };
}

export function onCongestedPush(current: PushLimit): PushLimit {
  if (current.limit <= 1)
    return { limit: 1, threshold: 1, successes: 0, congestedAtOne: current.congestedAtOne + 1 };
  const limit = Math.max(1, Math.floor(current.limit / 2));
  return { limit, threshold: limit, successes: 0, congestedAtOne: 0 };
}

export function onPlainPushSuccess(current: PushLimit, max: number): PushLimit {
  if (current.limit >= max) return current.congestedAtOne === 0 ? current : { ...current, congestedAtOne: 0 };
  if (current.limit < current.threshold) {
    return { ...current, limit: current.limit + 1, successes: 0, congestedAtOne: 0 };
  }
  const successes = current.successes + 1;
  if (successes >= current.limit)
    return { ...current, limit: current.limit + 1, successes: 0, congestedAtOne: 0 };
  return { ...current, successes, congestedAtOne: 0 };
}

/** How long the task waits after a push to the worker before the next one (0 at the maximum). */
export function pushPauseMs(current: PushLimit, max: number): number {
  if (current.limit >= max) return 0;
  const pause = Math.max(0, BASE_PAUSE_MS - PAUSE_STEP_MS * current.limit);
  if (current.limit > 1) return pause;
  return Math.min(pause + PAUSE_PER_CONGESTED_MS * current.congestedAtOne, MAX_PUSH_PAUSE_MS);
}
