/**
 * Whether a shuffle runs on svc or falls back to the engine's own shuffle (svc.client.spark.shuffle.fallback.policy;
 * the deprecated svc.client.spark.shuffle.forceFallback.enabled=true reads as ALWAYS). The policy weighs why svc
 * cannot serve a shuffle, learnt by the client from the cluster's answer; ALWAYS needs no answer, and the client
 * asks nothing.
 */

export type FallbackPolicy = 'AUTO' | 'ALWAYS' | 'NEVER';

export const FALLBACK_POLICY_KEY = 'svc.client.spark.shuffle.fallback.policy';

/** Why svc cannot serve a shuffle, with the cluster's own words. */
export type CannotServe =
  /** No worker could be offered: none registered, all excluded, or none with room (SLOT_NOT_AVAILABLE). */
  | { readonly kind: 'noWorkers'; readonly message: string }
  /** The cluster refused the client's release (CLIENT_RELEASE_REFUSED). */
  | { readonly kind: 'releaseRefused'; readonly message: string }
  /** The application's user is over its quota (QUOTA_EXCEEDED, svc.quota.*). */
  | { readonly kind: 'quotaExceeded'; readonly message: string };

export type ShuffleDecision =
  | { readonly kind: 'svc' }
  /** Run the shuffle with the engine's own shuffle; `reason` says why, for the engine's log. */
  | { readonly kind: 'fallback'; readonly reason: string }
  /** Neither: the shuffle fails, with a message naming the cause and the policy. */
  | { readonly kind: 'fail'; readonly cause: CannotServe; readonly message: string };

/** A policy as configured, or undefined for a value that is none (the registry refuses such values first). */
export function parseFallbackPolicy(text: string): FallbackPolicy | undefined {
  const upper = text.trim().toUpperCase();
  return upper === 'AUTO' || upper === 'ALWAYS' || upper === 'NEVER' ? upper : undefined;
}

/** The decision that needs no word from the cluster (ALWAYS), or undefined: ask, then `decideShuffle`. */
export function decideWithoutAsking(policy: FallbackPolicy): ShuffleDecision | undefined {
  return policy === 'ALWAYS'
    ? { kind: 'fallback', reason: `${FALLBACK_POLICY_KEY} is ALWAYS: svc was not asked` }
    : undefined;
}

/** The decision once the cluster answered: `cannotServe` undefined means svc took the shuffle. */
export function decideShuffle(policy: FallbackPolicy, cannotServe: CannotServe | undefined): ShuffleDecision {
  const without = decideWithoutAsking(policy);
  if (without !== undefined) return without;
  if (cannotServe === undefined) return { kind: 'svc' };
  const why = `${describeCause(cannotServe)}: ${cannotServe.message}`;
  if (policy === 'AUTO') return { kind: 'fallback', reason: `${why} (${FALLBACK_POLICY_KEY} is AUTO)` };
  return {
    kind: 'fail',
    cause: cannotServe,
    message:
      `${why}. ${FALLBACK_POLICY_KEY} is NEVER, so the shuffle does not fall back to the engine's own shuffle: ` +
      `${remedy(cannotServe)}, or set the policy to AUTO`,
  };
}

/**
 * Why svc cannot serve, from the status a shuffle's registration was answered with; undefined for any other status
 * (a failure that is not the cluster's lack of service, reported as it is). The one place statuses become causes:
 * QUOTA_EXCEEDED is the master's refusal of a user over quota.
 */
export function cannotServeFrom(status: string, message: string): CannotServe | undefined {
  switch (status) {
    case 'SLOT_NOT_AVAILABLE':
    case 'WORKER_EXCLUDED':
      return { kind: 'noWorkers', message };
    case 'CLIENT_RELEASE_REFUSED':
      return { kind: 'releaseRefused', message };
    case 'QUOTA_EXCEEDED':
      return { kind: 'quotaExceeded', message };
    default:
      return undefined;
  }
}

function describeCause(cause: CannotServe): string {
  switch (cause.kind) {
    case 'noWorkers':
      return 'svc has no worker to offer this shuffle';
    case 'releaseRefused':
      return 'the svc cluster refused this client’s release';
    case 'quotaExceeded':
      return 'the application’s user is over its svc quota';
  }
}

function remedy(cause: CannotServe): string {
  switch (cause.kind) {
    case 'noWorkers':
      return 'start workers (or recommission them)';
    case 'releaseRefused':
      return 'use a client release the servers admit (upgrade servers first)';
    case 'quotaExceeded':
      return 'free space of the user’s shuffles or raise the quota (svc.quota.*)';
  }
}
