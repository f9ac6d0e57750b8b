/**
 * What a worker may trust of an application's secret it learnt from the master (svc.auth.enabled): the worker
 * keeps the secrets it asked for, to check the proofs of the application's connections without asking each time.
 * The master keeps an application's first secret until it forgets the application (unregistered, or its heartbeat
 * expired); the application may then register again with another secret. A cached secret is therefore trusted for
 * a bounded time only, and a proof that does not match it is checked once more against the master's answer: the
 * holder of the new secret gets in at once, the holder of an old one at most `maxAgeMs` after it was replaced.
 * Pure: the runtime (runtime/process/application-secrets.ts) keeps the cache and hands in the time.
 */

/** How long a worker trusts a secret it learnt from the master: after that it asks again. */
export const DEFAULT_SECRET_MAX_AGE_MS = 60_000;

/** A secret as the master gave it, and when the worker learnt it (ms). */
export interface CachedSecret {
  readonly secret: string;
  readonly learntAt: number;
}

/** Check a proof against the cached secret, or ask the master first (and why). */
export type SecretLookup =
  | { readonly kind: 'useCached'; readonly secret: string }
  | { readonly kind: 'ask'; readonly why: 'unknown' | 'expired' | 'mismatch' };

/**
 * Where the secret a proof is checked against comes from. `afterMismatch`: the proof did not match the cached
 * secret (asked once more, since the application may have registered again). A secret learnt `maxAgeMs` ago or
 * earlier is not trusted any more; nor is one from the future (a clock that went back): asking is always safe.
 */
export function secretLookup(
  cached: CachedSecret | undefined,
  now: number,
  maxAgeMs: number,
  afterMismatch = false,
): SecretLookup {
  if (cached === undefined) return { kind: 'ask', why: 'unknown' };
  if (afterMismatch) return { kind: 'ask', why: 'mismatch' };
  const age = now - cached.learntAt;
  if (age < 0 || age >= maxAgeMs) return { kind: 'ask', why: 'expired' };
  return { kind: 'useCached', secret: cached.secret };
}
