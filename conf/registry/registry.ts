/**
 * The registry: every declared key (keys/*.ts) combined with its history from the contract's table
 * (core/release/config-changes.ts). Building it checks that the two never state the same thing twice: a default,
 * fallback or introduction the table states may not be declared again.
 */
import {
  introduction,
  defaultHistory,
  fallbackHistory,
  namespaceRenameOf,
  passThroughPrefixes,
  removalOf,
  replacedNamesOf,
  replacementOf,
  type Removal,
} from '../../core/release/config-changes.ts';
import { OLDEST_RELEASE } from '../../core/release/timeline.ts';
import { compareReleases, type Release } from '../../core/release/version.ts';
import type { ValueShape } from '../values.ts';
import { CLIENT_KEYS } from './keys/client.ts';
import { COMMON_KEYS } from './keys/common.ts';
import { MASTER_KEYS } from './keys/master.ts';
import { NETWORK_KEYS } from './keys/network.ts';
import { QUOTA_KEYS } from './keys/quota.ts';
import { WORKER_KEYS } from './keys/worker.ts';
import { editDistance } from './nearest.ts';
import {
  MODULES,
  type KeySpec,
  type LegacySource,
  type Module,
  type NoEffect,
  type Role,
  type ScaledFallback,
} from './spec.ts';

/** An older name of a key, and since when it is deprecated. */
export interface Alternative {
  /** The old name (with `<id>` where the key has one). */
  readonly key: string;
  readonly deprecatedIn: Release;
  /** 'renamed' / 'deprecated': the contract's table says so; 'alias': a name the reference also accepted. */
  readonly how: 'renamed' | 'deprecated' | 'alias';
  /** Old value → new value, for an old name whose values had another form. */
  readonly translate?: Readonly<Record<string, string>>;
}

/** The removal of a key on its own (as opposed to a removed prefix). */
export type KeyRemoval = Extract<Removal, { kind: 'key' }>;

/** A key the table deprecates that is not a plain alias of its replacement. */
export interface Deprecation {
  readonly release: Release;
  readonly replacement: string;
}

export interface ConfigEntry extends ValueShape {
  /** The key (concrete; a pattern with `<id>` or `<key>` for keys with a variable part). */
  readonly key: string;
  /** The key as declared and as the contract writes it (`svc.<module>.io.mode`). */
  readonly template: string;
  readonly module?: Module;
  /** The release the setting first existed in, under any name. */
  readonly since: Release;
  /** The release this name appeared in (later than `since` for a renamed key). */
  readonly introducedIn: Release;
  /** Older names, read after the key's own name, in this order. */
  readonly alternatives: readonly Alternative[];
  readonly deprecation?: Deprecation;
  readonly removal?: KeyRemoval;
  /** The declared default (or the one the table's introduction states); the table's default history wins. */
  readonly declaredDefault?: string;
  readonly declaredFallback?: ScaledFallback;
  readonly legacy?: LegacySource;
  readonly dynamic: boolean;
  readonly roles: readonly Role[];
  readonly description: string;
  readonly secret: boolean;
  readonly check?: KeySpec['check'];
  /** Set when svc accepts the key but nothing acts on it (spec.ts NoEffect); absent: the key takes effect. */
  readonly effect?: NoEffect;
  /** For keys with `<id>` or `<key>`: matches a concrete name, capturing the variable part. */
  readonly pattern?: RegExp;
}

/** How a name written by a user relates to the registry. */
export interface NameMatch {
  readonly entry: ConfigEntry;
  /** Set when the name is an older name of the entry. */
  readonly alternative?: Alternative;
  /** The variable part of a pattern key (`1` in `svc.master.ha.node.1.host`). */
  readonly instance?: string;
}

const VARIABLE = /<(id|key)>/;

function escapeRegExp(text: string): string {
  return text.replace(/[.*+?^${}()|[\]\\]/g, '\\$&');
}

/** `svc.master.ha.node.<id>.host` → a RegExp capturing the id. */
function patternOf(template: string): RegExp | undefined {
  if (!VARIABLE.test(template)) return undefined;
  const source = template
    .split(/(<id>|<key>)/)
    .map((part) => (part === '<id>' ? '([A-Za-z0-9_-]+)' : part === '<key>' ? '(.+)' : escapeRegExp(part)))
    .join('');
  return new RegExp(`^${source}$`);
}

/** Puts a pattern's variable part back: (`svc.ha.master.node.<id>.host`, `1`) → `svc.ha.master.node.1.host`. */
export function instantiate(template: string, instance: string | undefined): string {
  return instance === undefined ? template : template.replace(VARIABLE, instance);
}

function latest(releases: readonly Release[]): Release {
  return releases.reduce((a, b) => (compareReleases(a, b) >= 0 ? a : b));
}

function asScaled(fallback: KeySpec['fallback']): ScaledFallback | undefined {
  if (fallback === undefined) return undefined;
  return typeof fallback === 'string' ? { key: fallback, factor: 1 } : fallback;
}

function expandModules(spec: KeySpec): readonly { readonly key: string; readonly module?: Module }[] {
  if (!spec.key.includes('<module>')) return [{ key: spec.key }];
  return MODULES.map((module) => ({ key: spec.key.replace('<module>', module), module }));
}

function fail(template: string, message: string): never {
  throw new Error(`configuration registry: ${template}: ${message}`);
}

/** The keys the table deprecates in favour of a key that assembles them (not aliases of it). */
function legacyKeysOf(specs: readonly KeySpec[]): ReadonlySet<string> {
  return new Set(specs.flatMap((spec) => spec.legacy?.keys ?? []));
}

function buildEntry(
  spec: KeySpec,
  key: string,
  module: Module | undefined,
  legacyKeys: ReadonlySet<string>,
): ConfigEntry {
  const template = spec.key;
  const introduced = introduction(template);
  if (introduced !== undefined && (spec.default !== undefined || spec.since !== undefined)) {
    fail(
      template,
      `the contract's table introduces it (${introduced.release}); do not declare its default or since`,
    );
  }
  if (defaultHistory(template).length > 0 && spec.default !== undefined) {
    fail(template, "the contract's table states its default; do not declare one");
  }
  if (fallbackHistory(template).length > 0 && spec.fallback !== undefined) {
    fail(template, "the contract's table states its fallback; do not declare one");
  }
  const passThrough = passThroughPrefixes().find((prefix) => template.startsWith(prefix.prefix));
  const since = introduced?.release ?? passThrough?.since ?? spec.since ?? OLDEST_RELEASE;

  const tableAlternatives: Alternative[] = replacedNamesOf(template)
    .filter((replaced) => !legacyKeys.has(replaced.oldKey))
    .map((replaced) => ({ key: replaced.oldKey, deprecatedIn: replaced.release, how: replaced.how }));
  const namespace = namespaceRenameOf(template);
  if (namespace !== undefined) {
    tableAlternatives.push({ key: namespace.oldKey, deprecatedIn: namespace.release, how: 'deprecated' });
  }
  const aliases: Alternative[] = (spec.aliases ?? []).map((alias) => ({ ...alias, how: 'alias' }));
  const alternatives = [...tableAlternatives, ...aliases].map((alternative) => {
    const translate = spec.translateFrom?.[alternative.key];
    return translate === undefined ? alternative : { ...alternative, translate };
  });
  for (const oldKey of Object.keys(spec.translateFrom ?? {})) {
    if (!alternatives.some((alternative) => alternative.key === oldKey)) {
      fail(template, `translateFrom names ${oldKey}, which is not one of its older names`);
    }
  }
  // A name that replaces older ones appeared when the table says they were replaced.
  const introducedIn = latest([since, ...tableAlternatives.map((alternative) => alternative.deprecatedIn)]);

  const replacement = legacyKeys.has(template) ? replacementOf(template) : undefined;
  const removal = removalOf(template);
  return {
    key,
    template,
    ...(module === undefined ? {} : { module }),
    type: spec.type,
    ...(spec.values === undefined ? {} : { values: spec.values }),
    ...(spec.min === undefined ? {} : { min: spec.min }),
    ...(spec.max === undefined ? {} : { max: spec.max }),
    ...(spec.unlimited === undefined ? {} : { unlimited: spec.unlimited }),
    since,
    introducedIn,
    alternatives,
    ...(replacement === undefined
      ? {}
      : { deprecation: { release: replacement.release, replacement: replacement.newKey } }),
    ...(removal?.kind === 'key' ? { removal } : {}),
    ...(spec.default === undefined && introduced === undefined
      ? {}
      : { declaredDefault: spec.default ?? introduced?.default }),
    ...(spec.fallback === undefined ? {} : { declaredFallback: asScaled(spec.fallback) }),
    ...(spec.legacy === undefined ? {} : { legacy: spec.legacy }),
    dynamic: spec.dynamic ?? false,
    roles: spec.roles,
    description: spec.description,
    secret: spec.secret ?? false,
    ...(spec.check === undefined ? {} : { check: spec.check }),
    ...(spec.effect === undefined || (module !== undefined && spec.takesEffectIn?.includes(module))
      ? {}
      : { effect: spec.effect }),
    ...(VARIABLE.test(key) ? { pattern: patternOf(key) } : {}),
  };
}

export class Registry {
  readonly entries: readonly ConfigEntry[];
  private readonly exact = new Map<string, NameMatch>();
  private readonly patterns: { readonly regex: RegExp; readonly match: Omit<NameMatch, 'instance'> }[] = [];

  constructor(readonly specs: readonly KeySpec[]) {
    const legacyKeys = legacyKeysOf(specs);
    this.entries = specs.flatMap((spec) =>
      expandModules(spec).map(({ key, module }) => buildEntry(spec, key, module, legacyKeys)),
    );
    for (const entry of this.entries) {
      this.add(entry.key, { entry });
      for (const alternative of entry.alternatives) this.add(alternative.key, { entry, alternative });
    }
  }

  private add(name: string, match: Omit<NameMatch, 'instance'>): void {
    const pattern = patternOf(name);
    if (pattern !== undefined) {
      this.patterns.push({ regex: pattern, match });
      return;
    }
    if (this.exact.has(name)) fail(name, 'registered twice');
    this.exact.set(name, match);
  }

  /** What a written name refers to, or undefined when no key (or older name) has that name. */
  lookup(name: string): NameMatch | undefined {
    const exact = this.exact.get(name);
    if (exact !== undefined) return exact;
    for (const { regex, match } of this.patterns) {
      const captured = regex.exec(name);
      if (captured) return { ...match, instance: captured[1] };
    }
    return undefined;
  }

  /** The entry of a key's own name (a concrete name of a pattern key included); throws for any other name. */
  entry(key: string): NameMatch {
    const match = this.lookup(key);
    if (match === undefined || match.alternative !== undefined) {
      throw new RangeError(`${key} is not a configuration key of svc${this.suggestion(key)}`);
    }
    return match;
  }

  /** The current key nearest to a misspelt name, if one is close enough to be a likely typo. */
  nearest(name: string): string | undefined {
    let best: { key: string; distance: number } | undefined;
    for (const entry of this.entries) {
      const distance = editDistance(name, entry.key);
      if (best === undefined || distance < best.distance) best = { key: entry.key, distance };
    }
    if (best === undefined) return undefined;
    return best.distance <= Math.max(3, Math.floor(name.length / 5)) ? best.key : undefined;
  }

  /** `; did you mean X?` or nothing. */
  suggestion(name: string): string {
    const nearest = this.nearest(name);
    return nearest === undefined ? '' : `; did you mean ${nearest}?`;
  }
}

/** Every key declaration, grouped as the documentation shows them. */
export const KEY_GROUPS: readonly { readonly title: string; readonly specs: readonly KeySpec[] }[] = [
  { title: 'Common', specs: COMMON_KEYS },
  { title: 'Network modules', specs: NETWORK_KEYS },
  { title: 'Master', specs: MASTER_KEYS },
  { title: 'Worker', specs: WORKER_KEYS },
  { title: 'Client', specs: CLIENT_KEYS },
  { title: 'Quota, tags and dynamic configuration', specs: QUOTA_KEYS },
];

/** The registry of svc. */
export const REGISTRY = new Registry(KEY_GROUPS.flatMap((group) => group.specs));
