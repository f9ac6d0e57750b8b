import { secretLookup, type CachedSecret } from '../machines/cached-secrets.ts';

/**
 * A worker's cache of the applications' secrets it learnt from the master (svc.auth.enabled), as decisions: whether
 * a lookup is answered from the cache or asks the master (GetApplicationSecret, one request per application in
 * flight), what an answer does to the cache, and which entry goes when it is full. How long a learnt secret is
 * trusted is core/machines/cached-secrets.ts's rule. The asking itself is the driver's (the runtime's pseudo-node
 * runtime/process/application-secrets.ts; the simulator's world, sim/world/handshakes.ts).
 */

/** How many applications' secrets a worker keeps; the oldest learnt is forgotten first (and asked again if needed). */
export const MAX_CACHED_SECRETS = 10_000;

export interface SecretCacheConfig {
  /** How long a learnt secret is trusted (svc.worker.auth.secretCache.expiry). */
  readonly maxAgeMs: number;
  readonly maxEntries: number;
}

export interface SecretCacheState {
  /** Learnt secrets by application, oldest learnt first (a Map keeps insertion order). */
  readonly entries: Map<string, CachedSecret>;
  /** Applications whose secret the master is being asked for. */
  readonly asking: Set<string>;
}

export function initialSecretCache(): SecretCacheState {
  return { entries: new Map(), asking: new Set() };
}

export type CacheLookup =
  | { readonly kind: 'cached'; readonly secret: string }
  /** Ask the master; `send`: no request for this application is in flight yet (else wait for that one's answer). */
  | { readonly kind: 'ask'; readonly send: boolean };

/** A lookup of `appId`'s secret at `now`; `fresh`: a proof did not match the cached secret. */
export function lookupCachedSecret(
  config: SecretCacheConfig,
  state: SecretCacheState,
  appId: string,
  now: number,
  fresh: boolean,
): CacheLookup {
  const lookup = secretLookup(state.entries.get(appId), now, config.maxAgeMs, fresh);
  if (lookup.kind === 'useCached') return { kind: 'cached', secret: lookup.secret };
  if (state.asking.has(appId)) return { kind: 'ask', send: false };
  state.asking.add(appId);
  return { kind: 'ask', send: true };
}

/**
 * The master's answer (or its absence) for `appId` at `now`. `found`: remembered, the oldest entry evicted past the
 * bound; `unregistered`: the master holds no secret for it, forgotten; `unanswered`: the master could not be asked
 * (or did not say in time): the cache is left as it was.
 */
export function secretAnswered(
  config: SecretCacheConfig,
  state: SecretCacheState,
  appId: string,
  answer:
    | { readonly kind: 'found'; readonly secret: string }
    | { readonly kind: 'unregistered' }
    | { readonly kind: 'unanswered' },
  now: number,
): void {
  state.asking.delete(appId);
  if (answer.kind === 'unregistered') {
    state.entries.delete(appId);
    return;
  }
  if (answer.kind !== 'found') return;
  state.entries.delete(appId);
  state.entries.set(appId, { secret: answer.secret, learntAt: now });
  if (state.entries.size > config.maxEntries) state.entries.delete(state.entries.keys().next().value!);
}
