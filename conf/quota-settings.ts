/**
 * The master's quota settings from its configuration: the switches from the properties file, the limits looked up
 * through the dynamic configuration's levels (conf/dynamic.ts) for every tenant and user the dynamic store names, and
 * at the SYSTEM level for everybody else. The master process resolves them again at each reload of the store and
 * hands them to the master machine (core/machines/master/quota.ts).
 */
import {
  QUOTA_METRICS,
  type QuotaLimits,
  type QuotaMetric,
  type QuotaSettings,
} from '../core/quota/index.ts';
import { replacedNamesOf } from '../core/release/config-changes.ts';
import { isAtLeast } from '../core/release/version.ts';
import { dynamicView, EMPTY_DYNAMIC_CONFIG, type DynamicConfig, type DynamicView } from './dynamic-view.ts';
import type { ResolvedConfig } from './resolve.ts';

/** The limit keys, written out (so that a search for a key finds where it is read). */
const LIMIT_KEYS: Readonly<Record<'user' | 'cluster', Readonly<Record<QuotaMetric, string>>>> = {
  user: {
    diskBytesWritten: 'svc.quota.user.diskBytesWritten',
    diskFileCount: 'svc.quota.user.diskFileCount',
    hdfsBytesWritten: 'svc.quota.user.hdfsBytesWritten',
    hdfsFileCount: 'svc.quota.user.hdfsFileCount',
  },
  cluster: {
    diskBytesWritten: 'svc.quota.cluster.diskBytesWritten',
    diskFileCount: 'svc.quota.cluster.diskFileCount',
    hdfsBytesWritten: 'svc.quota.cluster.hdfsBytesWritten',
    hdfsFileCount: 'svc.quota.cluster.hdfsFileCount',
  },
};

/** A key the release does not have (the cluster quotas before 0.6.0) limits nothing. */
function limitsOf(conf: ResolvedConfig, view: DynamicView, scope: 'user' | 'cluster'): QuotaLimits {
  const limits: Record<string, number> = {};
  for (const metric of QUOTA_METRICS) {
    const key = LIMIT_KEYS[scope][metric];
    if (!conf.has(key)) limits[metric] = Number.POSITIVE_INFINITY;
    else limits[metric] = metric.endsWith('Count') ? view.getInt(key) : view.getBytes(key);
  }
  return limits as QuotaLimits;
}

/** The per-user limit keys under the names the configuration's release uses (renamed from `tenant` in 0.6.0). */
function userKeysAt(conf: ResolvedConfig): Record<QuotaMetric, string> {
  const keys = { ...LIMIT_KEYS.user };
  for (const metric of QUOTA_METRICS) {
    const later = replacedNamesOf(keys[metric]).filter((r) => !isAtLeast(conf.release, r.release));
    if (later[0] !== undefined) keys[metric] = later[0].oldKey;
  }
  return keys;
}

export function quotaSettingsFrom(
  conf: ResolvedConfig,
  dynamic: DynamicConfig = EMPTY_DYNAMIC_CONFIG,
): QuotaSettings {
  const system = dynamicView(conf, dynamic);
  const tenants = new Map<string, QuotaLimits>();
  const users = new Map<string, QuotaLimits>();
  for (const [tenant, tenantConfig] of dynamic.tenants) {
    tenants.set(tenant, limitsOf(conf, dynamicView(conf, dynamic, { tenant }), 'user'));
    for (const user of tenantConfig.users.keys()) {
      users.set(`${tenant}/${user}`, limitsOf(conf, dynamicView(conf, dynamic, { tenant, user }), 'user'));
    }
  }
  return {
    enabled: conf.getBoolean('svc.quota.enabled'),
    // Before 0.6.0 there is no user or cluster switch: the (user) quotas are on with svc.quota.enabled.
    userEnabled: conf.optional('svc.quota.user.enabled', 'getBoolean') ?? true,
    clusterEnabled: conf.optional('svc.quota.cluster.enabled', 'getBoolean') ?? true,
    interruptShuffle: conf.getBoolean('svc.quota.interruptShuffle.enabled'),
    user: limitsOf(conf, system, 'user'),
    tenants,
    users,
    cluster: limitsOf(conf, system, 'cluster'),
    userKeys: userKeysAt(conf),
  };
}
