// Dynamic configuration's values and their lookup (conf/dynamic.ts parses the FS store's YAML): apart from the
// parser, so that what reads a view (the client's machine configurations among them) does not import the YAML library.
import { REGISTRY } from './registry/registry.ts';
import { isDynamicAt } from './registry/history.ts';
import { ConfigError } from './problems.ts';
import type { ResolvedConfig } from './resolve.ts';
import type { ConfigValue } from './values.ts';

export const CONFIG_LEVELS = ['SYSTEM', 'TENANT', 'TENANT_USER'] as const;
export type ConfigLevel = (typeof CONFIG_LEVELS)[number];

/** Key (current name) → value, for one level. */
export type LevelValues = ReadonlyMap<string, ConfigValue>;

export interface TenantConfig {
  readonly config: LevelValues;
  readonly users: ReadonlyMap<string, LevelValues>;
}

export interface DynamicConfig {
  readonly system: LevelValues;
  readonly tenants: ReadonlyMap<string, TenantConfig>;
  /** Tag → ids of the workers that carry it. */
  readonly tags: ReadonlyMap<string, readonly string[]>;
}

export const EMPTY_DYNAMIC_CONFIG: DynamicConfig = { system: new Map(), tenants: new Map(), tags: new Map() };

/** Whose configuration is asked for: the whole system, a tenant, or a user of a tenant. */
export interface DynamicScope {
  readonly tenant?: string;
  readonly user?: string;
}

/** The level a value was found at, or `static` when it comes from the properties file, fallback or default. */
export type ValueLevel = ConfigLevel | 'static';

/** Configuration as seen by one tenant or user: dynamic keys looked up through the levels, the rest static. */
export class DynamicView {
  constructor(
    private readonly staticConfig: ResolvedConfig,
    private readonly dynamic: DynamicConfig,
    readonly scope: DynamicScope,
  ) {}

  /** The value and the level it was found at. */
  lookup(key: string): { readonly value: ConfigValue | undefined; readonly level: ValueLevel } {
    const { entry } = REGISTRY.entry(key);
    if (isDynamicAt(entry, this.staticConfig.release)) {
      for (const [level, values] of this.levels()) {
        const value = values?.get(key);
        if (value !== undefined) return { value, level };
      }
    }
    return { value: this.staticConfig.get(key), level: 'static' };
  }

  get(key: string): ConfigValue | undefined {
    return this.lookup(key).value;
  }

  getBytes(key: string): number {
    return this.number(key, 'bytes');
  }

  getInt(key: string): number {
    return this.number(key, 'int');
  }

  getDurationMs(key: string): number {
    return this.number(key, 'time');
  }

  getBoolean(key: string): boolean {
    const value = this.lookup(key).value;
    if (typeof value === 'boolean') return value;
    return this.staticConfig.getBoolean(key);
  }

  getString(key: string): string {
    const value = this.lookup(key).value;
    if (typeof value === 'string') return value;
    return this.staticConfig.getString(key);
  }

  private number(key: string, type: 'bytes' | 'int' | 'time'): number {
    const { entry } = REGISTRY.entry(key);
    if (entry.type !== type) throw new TypeError(`${key} is a ${entry.type} key, not ${type}`);
    const value = this.lookup(key).value;
    if (typeof value === 'number') return value;
    throw new ConfigError(`${key} has no value at any level and no default`, key);
  }

  /** The levels that apply to the scope, most specific first. */
  private levels(): readonly (readonly [ConfigLevel, LevelValues | undefined])[] {
    const { tenant, user } = this.scope;
    const tenantConfig = tenant === undefined ? undefined : this.dynamic.tenants.get(tenant);
    const levels: (readonly [ConfigLevel, LevelValues | undefined])[] = [];
    if (user !== undefined) levels.push(['TENANT_USER', tenantConfig?.users.get(user)]);
    if (tenant !== undefined) levels.push(['TENANT', tenantConfig?.config]);
    levels.push(['SYSTEM', this.dynamic.system]);
    return levels;
  }
}

/** The configuration of `scope` (a user needs its tenant), dynamic keys looked up through the levels. */
export function dynamicView(
  staticConfig: ResolvedConfig,
  dynamic: DynamicConfig,
  scope: DynamicScope = {},
): DynamicView {
  if (scope.user !== undefined && scope.tenant === undefined) {
    throw new RangeError(`user ${scope.user} needs its tenant: the TENANT_USER level lives under a tenant`);
  }
  return new DynamicView(staticConfig, dynamic, scope);
}
