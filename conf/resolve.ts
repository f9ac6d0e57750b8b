/**
 * Resolution: the value of every key for a node of a given release and role, from a properties file, the
 * environment and command-line overrides. For each key the value is read from the highest source that sets it
 * (override, environment, file), in each source from the key's own name first and then its older names in order;
 * when no source sets it, from the older keys it is assembled from (if any), then its fallback key, then its
 * default as of that release.
 */
import { staysCurrent } from './stays-current.ts';
import { assertWithinHistory } from '../core/release/timeline.ts';
import { CURRENT_RELEASE, isAtLeast, type Release } from '../core/release/version.ts';
import {
  bindSettings,
  currentName,
  parseEntryValue,
  SOURCE_PRECEDENCE,
  type Binding,
  type Setting,
} from './bind.ts';
import { readEnvironment } from './environment.ts';
import { ConfigError, type Location, type Problem } from './problems.ts';
import { parseProperties } from './properties.ts';
import { defaultRuleAt, existsAt, fallbackRuleAt } from './registry/history.ts';
import {
  instantiate,
  REGISTRY,
  type ConfigEntry,
  type NameMatch,
  type Registry,
} from './registry/registry.ts';
import type { NoEffect, Role } from './registry/spec.ts';
import { formatValue, type ConfigValue, type ValueType } from './values.ts';

/** What the runtime knows about the machine: inputs, since conf/ does not look itself. */
export interface Platform {
  /** Whether the epoll event loop is available (decides `svc.<module>.io.mode` from 0.6.0). Default false. */
  readonly epollAvailable?: boolean;
  /** The host name, for `<localhost>` defaults. Default `localhost`. SVC_LOCAL_HOSTNAME wins for master and worker. */
  readonly localHostname?: string;
  /** The temporary directory, for `<tmp>` defaults. Default `/tmp`. */
  readonly tmpDir?: string;
}

export interface ResolveOptions {
  /** The release the node behaves as. Default: the release svc implements. */
  readonly release?: Release;
  /** The role of the node; decides which environment variables apply. Omitted: none of the role-bound ones. */
  readonly role?: Role;
  /** Text of the properties file (`svc-defaults.conf`). */
  readonly fileText?: string;
  /** Name of the properties file, for problem locations. Default `svc-defaults.conf`. */
  readonly fileName?: string;
  readonly env?: Readonly<Record<string, string | undefined>>;
  /** Command-line overrides, key → value. */
  readonly overrides?: Readonly<Record<string, string>>;
  readonly platform?: Platform;
}

/** Where a resolved value came from. */
export type Origin =
  | { readonly kind: 'default' }
  | { readonly kind: 'platform' }
  | { readonly kind: 'fallback'; readonly key: string }
  | { readonly kind: 'legacy'; readonly keys: readonly string[] }
  | { readonly kind: 'override' | 'env' | 'file'; readonly name: string; readonly where: Location };

export type Resolution =
  /** The key does not exist at this release (not yet introduced, or removed). */
  | { readonly status: 'absent'; readonly reason: string }
  /** An optional key that nothing sets. */
  | { readonly status: 'unset' }
  | { readonly status: 'invalid'; readonly message: string }
  | { readonly status: 'value'; readonly value: ConfigValue; readonly origin: Origin };

/** One line of a shown configuration. */
export interface ShownSetting {
  readonly key: string;
  readonly value: string;
  readonly origin: Origin;
}

/** The typed getters of a ResolvedConfig, by name (what `optional` reads a key with). */
/** A setting of a key svc accepts but does not act on. */
export interface SettingWithoutEffect {
  /** The key's current name (an older name written in the file resolves to it). */
  readonly key: string;
  readonly where: Location;
  readonly effect: NoEffect;
}

export type TypedGetter =
  'getBytes' | 'getDurationMs' | 'getInt' | 'getDouble' | 'getBoolean' | 'getString' | 'getList';

const GETTER_TYPES: Readonly<Record<TypedGetter, readonly ValueType[]>> = {
  getBytes: ['bytes'],
  getDurationMs: ['time'],
  getInt: ['int'],
  getDouble: ['double', 'int'],
  getBoolean: ['boolean'],
  getString: ['string', 'enum'],
  getList: ['list'],
};

export class ResolvedConfig {
  private readonly cache = new Map<string, Resolution>();
  private readonly resolving = new Set<string>();
  private readonly shadowed: Problem[] = [];
  private readonly bindingsByEntry = new Map<ConfigEntry, Binding[]>();
  private readonly allProblems: Problem[];
  private readonly givenProblems: readonly Problem[];

  constructor(
    readonly release: Release,
    readonly role: Role | undefined,
    readonly localHostname: string,
    private readonly bindings: readonly Binding[],
    problems: readonly Problem[],
    private readonly platform: Required<Pick<Platform, 'epollAvailable' | 'tmpDir'>>,
    private readonly registry: Registry = REGISTRY,
    private readonly later?: ResolvedConfig,
  ) {
    this.givenProblems = problems;
    for (const binding of bindings) {
      const { entry } = binding.match;
      this.bindingsByEntry.set(entry, [...(this.bindingsByEntry.get(entry) ?? []), binding]);
    }
    // Resolve every key a source sets now, so that every problem (a shadowed older name) is known before a node
    // starts. Keys nothing sets cannot have problems; they resolve when read.
    for (const binding of bindings) this.resolution(currentName(binding.match));
    this.allProblems = [...problems, ...this.shadowed];
  }

  /** Everything wrong with the configuration, errors and warnings, in the order found. */
  get problems(): readonly Problem[] {
    return this.allProblems;
  }

  get errors(): readonly Problem[] {
    return this.allProblems.filter((problem) => problem.severity === 'error');
  }

  /**
   * Whether the key exists at this release (or, with later keys, at theirs). Throws for a name that is not a key of
   * svc.
   */
  has(key: string): boolean {
    return existsAt(this.registry.entry(key).entry, this.release) || (this.later?.has(key) ?? false);
  }

  /**
   * What a server presenting this (older) release runs on: every key this release has keeps its value as of this
   * release, defaults included (contract 9.2: a changed default applies as of the release a server presents), and a
   * key introduced after it (behaviour that existed before it had a key) resolves from `later`, the same sources
   * resolved as of a later release.
   */
  withLaterKeysFrom(later: ResolvedConfig): ResolvedConfig {
    return new ResolvedConfig(
      this.release,
      this.role,
      this.localHostname,
      this.bindings,
      this.givenProblems,
      this.platform,
      this.registry,
      later,
    );
  }

  /** Whether a source (file, environment, override) sets the key, under any of its names. */
  isSet(key: string): boolean {
    const resolution = this.resolution(key);
    if (resolution.status === 'invalid') return true;
    return (
      resolution.status === 'value' && ['file', 'env', 'override', 'legacy'].includes(resolution.origin.kind)
    );
  }

  /** The value, or undefined for an optional key nothing sets or a key that does not exist at this release. */
  get(key: string): ConfigValue | undefined {
    const resolution = this.resolution(key);
    if (resolution.status === 'invalid') throw new ConfigError(resolution.message, key);
    return resolution.status === 'value' ? resolution.value : undefined;
  }

  /**
   * An optional key read with `getter`, or undefined when the key does not exist at this release (a client resolving
   * as of an older one) or nothing sets it (an empty value counts as unset): the one test every optional key needs.
   */
  optional<G extends TypedGetter>(key: string, getter: G): ReturnType<ResolvedConfig[G]> | undefined {
    if (!this.has(key)) return undefined;
    const value = this.get(key);
    if (value === undefined || value === '') return undefined;
    return this[getter](key) as ReturnType<ResolvedConfig[G]>;
  }

  getBytes(key: string): number {
    return this.typed(key, 'getBytes') as number;
  }

  /** A duration, in milliseconds. */
  getDurationMs(key: string): number {
    return this.typed(key, 'getDurationMs') as number;
  }

  getInt(key: string): number {
    return this.typed(key, 'getInt') as number;
  }

  getDouble(key: string): number {
    return this.typed(key, 'getDouble') as number;
  }

  getBoolean(key: string): boolean {
    return this.typed(key, 'getBoolean') as boolean;
  }

  getString(key: string): string {
    return this.typed(key, 'getString') as string;
  }

  getList(key: string): readonly string[] {
    return this.typed(key, 'getList') as readonly string[];
  }

  /**
   * The settings of keys that exist at this release and that svc accepts without acting on them (the registry's
   * `effect` mark), in the order given: what an operator is told at `svc conf check` and at a server's start.
   */
  get settingsWithoutEffect(): readonly SettingWithoutEffect[] {
    return this.bindings.flatMap((binding) => {
      const { entry } = binding.match;
      if (entry.effect === undefined || !existsAt(entry, this.release)) return [];
      return [{ key: currentName(binding.match), where: binding.setting.where, effect: entry.effect }];
    });
  }

  /** The ids of a key with `<id>` that are set, e.g. the nodes of `svc.master.ha.node.<id>.host`, sorted. */
  instancesOf(template: string): readonly string[] {
    const instances = new Set<string>();
    for (const binding of this.bindings) {
      if (binding.match.entry.key === template && binding.match.instance !== undefined) {
        instances.add(binding.match.instance);
      }
    }
    return [...instances].sort();
  }

  /** How the key resolves, with where its value came from. */
  resolution(key: string): Resolution {
    const cached = this.cache.get(key);
    if (cached !== undefined) return cached;
    if (this.resolving.has(key)) throw new Error(`configuration registry: ${key} falls back to itself`);
    this.resolving.add(key);
    const match = this.registry.entry(key);
    const later = this.later;
    const resolution =
      later !== undefined &&
      ((!existsAt(match.entry, this.release) && later.has(key)) || (staysCurrent(key) && later.isSet(key)))
        ? later.resolution(key)
        : this.resolve(match);
    this.resolving.delete(key);
    this.cache.set(key, resolution);
    return resolution;
  }

  /** Every key that has a value at this release (for `role` only, when given), with its value as text. */
  show(role: Role | undefined = this.role): readonly ShownSetting[] {
    const shown: ShownSetting[] = [];
    for (const key of this.concreteKeys()) {
      const { entry } = this.registry.entry(key);
      if (role !== undefined && !entry.roles.includes(role)) continue;
      const resolution = this.resolution(key);
      if (resolution.status !== 'value') continue;
      const value = entry.secret ? '******' : formatValue(resolution.value, entry.type);
      shown.push({ key, value, origin: resolution.origin });
    }
    return shown.sort((a, b) => (a.key < b.key ? -1 : a.key > b.key ? 1 : 0));
  }

  private typed(key: string, getter: TypedGetter): ConfigValue {
    const { entry } = this.registry.entry(key);
    const accepted = GETTER_TYPES[getter];
    if (!accepted.includes(entry.type)) {
      const right = (Object.keys(GETTER_TYPES) as TypedGetter[]).find(
        (name) => GETTER_TYPES[name][0] === entry.type,
      );
      throw new TypeError(`${key} is a ${entry.type} key; read it with ${right ?? 'get'}, not ${getter}`);
    }
    const resolution = this.resolution(key);
    switch (resolution.status) {
      case 'value':
        return resolution.value;
      case 'invalid':
        throw new ConfigError(resolution.message, key);
      case 'absent':
        throw new ConfigError(`${key} ${resolution.reason}; check has('${key}') before reading it`, key);
      case 'unset':
        throw new ConfigError(`${key} has no value and no default; set it in the configuration`, key);
    }
  }

  /** Every exact key, plus each instance of a pattern key that some setting names. */
  private concreteKeys(): readonly string[] {
    const keys = this.registry.entries
      .filter((entry) => entry.pattern === undefined)
      .map((entry) => entry.key);
    for (const binding of this.bindings) {
      const { entry, instance } = binding.match;
      if (instance !== undefined) keys.push(instantiate(entry.key, instance));
    }
    return [...new Set(keys)];
  }

  private resolve(match: NameMatch): Resolution {
    const { entry, instance } = match;
    if (!existsAt(entry, this.release)) {
      const reason =
        entry.removal !== undefined && isAtLeast(this.release, entry.removal.release)
          ? `was removed in ${entry.removal.release}`
          : `does not exist before ${entry.since}`;
      return { status: 'absent', reason: `${reason} (resolving as of ${this.release})` };
    }
    for (const source of SOURCE_PRECEDENCE) {
      const candidates = this.bindingsOf(entry, instance, source);
      const [winner, ...losers] = candidates;
      if (winner === undefined) continue;
      this.reportShadowed(winner, losers);
      if (!winner.outcome.ok) return { status: 'invalid', message: winner.outcome.message };
      return {
        status: 'value',
        value: winner.outcome.value,
        origin: { kind: source, name: winner.setting.name, where: winner.setting.where },
      };
    }
    return this.fromLegacy(entry) ?? this.fromFallback(entry) ?? this.fromDefault(entry);
  }

  /** The bindings of one source for a key, best first: own name before older names, later lines before earlier. */
  private bindingsOf(
    entry: ConfigEntry,
    instance: string | undefined,
    source: Binding['setting']['source'],
  ): Binding[] {
    const rank = (binding: Binding): number => {
      const alternative = binding.match.alternative;
      return alternative === undefined ? 0 : 1 + entry.alternatives.indexOf(alternative);
    };
    return (this.bindingsByEntry.get(entry) ?? [])
      .filter((binding) => binding.match.instance === instance && binding.setting.source === source)
      .map((binding, order) => ({ binding, order }))
      .sort((a, b) => rank(a.binding) - rank(b.binding) || b.order - a.order)
      .map(({ binding }) => binding);
  }

  private reportShadowed(winner: Binding, losers: readonly Binding[]): void {
    for (const loser of losers) {
      if (loser.setting.name === winner.setting.name) continue; // a plain duplicate, reported when bound
      this.shadowed.push({
        severity: 'warning',
        code: 'shadowed-key',
        where: loser.setting.where,
        subject: loser.setting.name,
        message: `${loser.setting.name} is ignored: ${winner.setting.name} sets the same key${lineOf(winner.setting)}`,
      });
    }
  }

  private fromLegacy(entry: ConfigEntry): Resolution | undefined {
    const legacy = entry.legacy;
    if (legacy === undefined || !legacy.keys.some((key) => this.isSet(key))) return undefined;
    for (const key of legacy.keys) {
      const resolution = this.resolution(key);
      if (resolution.status === 'invalid') return resolution;
    }
    const text = legacy.combine((key) => this.get(key));
    const outcome = parseEntryValue(entry, text, entry.key);
    if (!outcome.ok) return { status: 'invalid', message: outcome.message };
    return { status: 'value', value: outcome.value, origin: { kind: 'legacy', keys: legacy.keys } };
  }

  private fromFallback(entry: ConfigEntry): Resolution | undefined {
    const fallback = fallbackRuleAt(entry, this.release);
    if (fallback === undefined) return undefined;
    const resolution = this.resolution(fallback.key);
    if (resolution.status !== 'value') return resolution.status === 'invalid' ? resolution : undefined;
    const value = resolution.value;
    if (fallback.factor !== 1 && typeof value !== 'number') {
      throw new Error(`configuration registry: ${entry.key} scales ${fallback.key}, which is not a number`);
    }
    return {
      status: 'value',
      value: typeof value === 'number' ? value * fallback.factor : value,
      origin: { kind: 'fallback', key: fallback.key },
    };
  }

  private fromDefault(entry: ConfigEntry): Resolution {
    const rule = defaultRuleAt(entry, this.release);
    if (rule === undefined) return { status: 'unset' };
    if (rule.kind === 'platform') {
      const text = this.platform.epollAvailable ? rule.rule.preferred : rule.rule.otherwise;
      return { status: 'value', value: this.parseDefault(entry, text), origin: { kind: 'platform' } };
    }
    return { status: 'value', value: this.parseDefault(entry, rule.value), origin: { kind: 'default' } };
  }

  private parseDefault(entry: ConfigEntry, text: string): ConfigValue {
    const expanded = text
      .replaceAll('<localhost>', this.localHostname)
      .replaceAll('<tmp>', this.platform.tmpDir);
    const outcome = parseEntryValue(entry, expanded, entry.key);
    if (!outcome.ok) throw new Error(`configuration registry: bad default: ${outcome.message}`);
    return outcome.value;
  }
}

function lineOf(setting: Setting): string {
  return setting.where.kind === 'file' ? ` on line ${setting.where.line}` : '';
}

export const DEFAULT_FILE_NAME = 'svc-defaults.conf';

/** Resolves a configuration. Problems are collected, not thrown: check `errors` before starting a node. */
export function resolveConfig(options: ResolveOptions = {}): ResolvedConfig {
  const release = options.release ?? CURRENT_RELEASE;
  assertWithinHistory(release);
  const env = options.env ?? {};
  const fileName = options.fileName ?? DEFAULT_FILE_NAME;
  const problems: Problem[] = [];
  const settings: Setting[] = [];

  if (options.fileText !== undefined) {
    const parsed = parseProperties(options.fileText);
    for (const line of parsed.malformed) {
      problems.push({
        severity: 'error',
        code: 'syntax',
        where: { kind: 'file', file: fileName, line: line.line },
        subject: line.text,
        message: `'${line.text}' has no key; write key value or key=value`,
      });
    }
    for (const line of parsed.settings) {
      settings.push({
        name: line.key,
        raw: line.value,
        source: 'file',
        where: { kind: 'file', file: fileName, line: line.line },
      });
    }
  }
  const environment = readEnvironment(env, options.role, release);
  problems.push(...environment.problems);
  for (const setting of environment.settings) {
    settings.push({
      name: setting.key,
      raw: setting.value,
      source: 'env',
      where: { kind: 'env', variable: setting.variable },
    });
  }
  for (const [name, raw] of Object.entries(options.overrides ?? {})) {
    settings.push({ name, raw, source: 'override', where: { kind: 'override' } });
  }

  const bound = bindSettings(settings, { registry: REGISTRY, release, env });
  problems.push(...bound.problems);
  const localHostname = environment.localHostname ?? options.platform?.localHostname ?? 'localhost';
  return new ResolvedConfig(release, options.role, localHostname, bound.bindings, problems, {
    epollAvailable: options.platform?.epollAvailable ?? false,
    tmpDir: options.platform?.tmpDir ?? '/tmp',
  });
}
