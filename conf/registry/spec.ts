/**
 * How a configuration key is declared. A declaration says what the key is today (type, default, roles, meaning);
 * its history across releases (renames, default changes, removals, fallback changes) comes from the contract's
 * table in core/release/config-changes.ts, which the registry applies on top (conf/registry/registry.ts).
 */
import type { Release } from '../../core/release/version.ts';
import type { ConfigValue, ValueShape } from '../values.ts';

export const ROLES = ['master', 'worker', 'client'] as const;
export type Role = (typeof ROLES)[number];

/**
 * The transport modules that `svc.<module>.*` keys exist for (contract 9.1 rule 3): `rpc` is the control plane
 * (client ↔ lifecycle manager ↔ master ↔ worker), `push`, `fetch` and `replicate` are the worker's data servers,
 * and `data` is the client's side of pushing and fetching.
 */
export const MODULES = ['rpc', 'push', 'fetch', 'replicate', 'data'] as const;
export type Module = (typeof MODULES)[number];

/**
 * The module whose key stands in for `svc.<module>.*` where the contract names a single fallback key
 * (`svc.<module>.io.connectionTimeout`, the 0.4.1 fallback of the client's ask timeouts): those asks travel on the
 * control plane.
 */
export const CONTROL_PLANE_MODULE: Module = 'rpc';

/** A fallback that scales the other key's value (the partition-size ceiling is twice the split ceiling). */
export interface ScaledFallback {
  readonly key: string;
  readonly factor: number;
}

/** An older name that the contract's table does not list but the reference still accepted. */
export interface AliasSpec {
  readonly key: string;
  readonly deprecatedIn: Release;
}

/**
 * A value assembled from deprecated keys that are not plain aliases (`svc.worker.storage.baseDir.prefix` and
 * `.number` together describe `svc.worker.storage.dirs`). Applies only when one of `keys` is set explicitly.
 */
export interface LegacySource {
  readonly keys: readonly string[];
  /** Builds the text of the new key's value from the legacy keys' values (explicit or default). */
  readonly combine: (read: (key: string) => ConfigValue | undefined) => string;
}

/**
 * A key svc accepts, so that a configuration written for the reference keeps working, but that changes nothing in
 * svc. `svc conf check` names each one a file sets, servers list them at start, and docs/configuration.md shows the
 * mark. test/key-effects.test.ts keeps the marks true: a key that no code reads must carry one.
 */
export interface NoEffect {
  readonly kind: 'none';
  /** One line: why setting the key changes nothing in svc. */
  readonly reason: string;
  /**
   * Set when svc is meant to act on the key and does not yet (accepted and ignored until it is built): where the
   * work is tracked. Absent: the key has no meaning in svc's design, and never will.
   */
  readonly pending?: string;
}

/** A key that exists for compatibility only: `reason` says why it has no meaning in svc. */
export function compatibilityOnly(reason: string): NoEffect {
  return { kind: 'none', reason };
}

/** A key svc means to act on but does not yet; `tracked` names where the work is tracked. */
export function notImplementedYet(reason: string, tracked = 'issue 33'): NoEffect {
  return { kind: 'none', reason, pending: tracked };
}

/** The mark as one line: what an operator who sets the key is told. */
export function describeNoEffect(effect: NoEffect): string {
  return effect.pending === undefined
    ? `accepted for compatibility, no effect in svc: ${effect.reason}`
    : `not implemented yet, accepted and ignored (${effect.pending}): ${effect.reason}`;
}

export interface KeySpec extends ValueShape {
  /**
   * The key. `<module>` is expanded to one key per module; `<id>` matches one name segment (a master node id);
   * `<key>` matches the rest of a name (keys passed through to another component).
   */
  readonly key: string;
  /**
   * The default as text, parsed like a user's value. `<localhost>` stands for the local host name and `<tmp>` for
   * the temporary directory, both inputs of resolution. Absent: the key is optional (or its default is a fallback).
   * Keys whose default the contract's table states carry no default here: the table is the only source.
   */
  readonly default?: string;
  /** The key whose value is used when this one is unset (before the default). */
  readonly fallback?: string | ScaledFallback;
  /** The release the setting first existed in, under any name. Defaults to the oldest release svc knows. */
  readonly since?: Release;
  readonly aliases?: readonly AliasSpec[];
  /** Value translations for deprecated names whose values differ in form: old key → old value → new value. */
  readonly translateFrom?: Readonly<Record<string, Readonly<Record<string, string>>>>;
  readonly legacy?: LegacySource;
  /** Whether the value can also come from dynamic configuration (the `isDynamic` tag, from 0.5.0). */
  readonly dynamic?: boolean;
  readonly roles: readonly Role[];
  /** One line: what the key controls. */
  readonly description: string;
  /** Whether the value must be hidden when a configuration is shown. */
  readonly secret?: boolean;
  /** Checks beyond the type; returns the expected form when the value does not fit. */
  readonly check?: (value: ConfigValue) => string | undefined;
  /** Set when svc accepts the key but nothing acts on it (absent: the key takes effect). */
  readonly effect?: NoEffect;
  /** For a `<module>` key marked with `effect`: the modules whose key takes effect all the same. */
  readonly takesEffectIn?: readonly Module[];
}

export const ALL_ROLES: readonly Role[] = ROLES;
export const MASTER: readonly Role[] = ['master'];
export const WORKER: readonly Role[] = ['worker'];
export const CLIENT: readonly Role[] = ['client'];
export const SERVERS: readonly Role[] = ['master', 'worker'];
