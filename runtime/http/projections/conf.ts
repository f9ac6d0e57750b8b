import type { ConfigLevel, DynamicConfig, ResolvedConfig, Role } from '../../../conf/index.ts';
import { formatValue, REGISTRY, type ConfigValue } from '../../../conf/index.ts';
import type { ConfResponse, ConfigData, DynamicConfigData, DynamicConfigResponse } from './types.ts';

/** The configuration as the management interface shows it (GET /api/v1/conf and /conf/dynamic). Pure. */

/** Every key with a value for the role, sorted, secrets masked (ResolvedConfig.show). */
export function confResponse(conf: ResolvedConfig, role: Role): ConfResponse {
  return { configs: conf.show(role).map((setting) => ({ name: setting.key, value: setting.value })) };
}

function valueText(key: string, value: ConfigValue): string {
  try {
    const { entry } = REGISTRY.entry(key);
    return entry.secret === true ? '******' : formatValue(value, entry.type);
  } catch {
    return Array.isArray(value) ? value.join(',') : String(value);
  }
}

function configData(values: ReadonlyMap<string, ConfigValue>): ConfigData[] {
  return [...values]
    .map(([name, value]) => ({ name, value: valueText(name, value) }))
    .sort((a, b) => (a.name < b.name ? -1 : a.name > b.name ? 1 : 0));
}

export interface DynamicQuery {
  readonly level?: ConfigLevel;
  readonly tenant?: string;
  readonly name?: string;
}

/**
 * GET /api/v1/conf/dynamic: every level (no `level`), or one. A tenant narrows TENANT and TENANT_USER entries to
 * it; a name narrows TENANT_USER entries to that user, and needs its tenant: a name without a tenant (or, at
 * TENANT_USER, a tenant without a name) selects nothing, as in the reference.
 */
export function dynamicConfigResponse(dynamic: DynamicConfig, query: DynamicQuery): DynamicConfigResponse {
  const { level, tenant, name } = query;
  const entries: DynamicConfigData[] = [];
  if (level === undefined || level === 'SYSTEM') {
    entries.push({ level: 'SYSTEM', desc: '', configs: configData(dynamic.system) });
  }
  const incompleteUser = name !== undefined && tenant === undefined;
  if ((level === undefined || level === 'TENANT') && !incompleteUser) {
    for (const [tenantId, config] of dynamic.tenants) {
      if (tenant !== undefined && tenant !== tenantId) continue;
      entries.push({ level: 'TENANT', desc: `tenantId: ${tenantId}`, configs: configData(config.config) });
    }
  }
  const bothOrNeither = (tenant === undefined) === (name === undefined);
  if ((level === undefined || level === 'TENANT_USER') && (bothOrNeither || level === undefined)) {
    if (!incompleteUser) {
      for (const [tenantId, config] of dynamic.tenants) {
        if (tenant !== undefined && tenant !== tenantId) continue;
        for (const [user, values] of config.users) {
          if (name !== undefined && name !== user) continue;
          entries.push({
            level: 'TENANT_USER',
            desc: `tenantId: ${tenantId}, name: ${user}`,
            configs: configData(values),
          });
        }
      }
    }
  }
  return { configs: entries };
}
