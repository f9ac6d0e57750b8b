import type { AppId } from '../domain/index.ts';
import {
  QUOTA_METRICS,
  userKey,
  type QuotaMetric,
  type ResourceConsumption,
  type UsageView,
  type UserIdentifier,
} from './consumption.ts';
import { userLimits, type QuotaLimits, type QuotaSettings } from './limits.ts';

/** Why a user may not start a shuffle: the first quota found exceeded, user before cluster. */
export interface QuotaExceeded {
  readonly scope: 'user' | 'cluster';
  /** `tenant/name`, or `cluster`. */
  readonly subject: string;
  readonly metric: QuotaMetric;
  readonly usage: number;
  readonly limit: number;
  /** The key behind the limit, for the message. */
  readonly key: string;
}

/**
 * The quota status, recomputed every `svc.master.userResourceConsumption.update.interval` (and whenever the limits
 * change): which users are over their quota, whether the cluster is, and (with `svc.quota.interruptShuffle.enabled`)
 * which applications are to be interrupted.
 */
export interface QuotaStatus {
  readonly users: ReadonlyMap<string, QuotaExceeded>;
  readonly cluster: QuotaExceeded | undefined;
  readonly interrupted: ReadonlyMap<AppId, QuotaExceeded>;
}

export const NO_QUOTA_STATUS: QuotaStatus = { users: new Map(), cluster: undefined, interrupted: new Map() };

/**
 * The first measure at or beyond its limit, in the order of QUOTA_METRICS. A user at its limit is over it: one more
 * shuffle could only add to its usage. Infinity never is.
 */
export function firstExceeded(
  usage: ResourceConsumption,
  limits: QuotaLimits,
): { readonly metric: QuotaMetric; readonly usage: number; readonly limit: number } | undefined {
  for (const metric of QUOTA_METRICS) {
    const limit = limits[metric];
    if (limit !== Number.POSITIVE_INFINITY && usage[metric] >= limit) {
      return { metric, usage: usage[metric], limit };
    }
  }
  return undefined;
}

export function computeQuotaStatus(
  settings: QuotaSettings,
  usage: UsageView,
  userOf: (appId: AppId) => UserIdentifier | undefined,
): QuotaStatus {
  if (!settings.enabled) return NO_QUOTA_STATUS;
  const users = new Map<string, QuotaExceeded>();
  const limitsOf = new Map<string, QuotaLimits>();
  if (settings.userEnabled) {
    for (const [key, used] of usage.byUser) {
      const slash = key.indexOf('/');
      const limits = userLimits(settings, { tenant: key.slice(0, slash), name: key.slice(slash + 1) });
      limitsOf.set(key, limits);
      const over = firstExceeded(used, limits);
      if (over !== undefined)
        users.set(key, {
          scope: 'user',
          subject: key,
          key: settings.userKeys?.[over.metric] ?? `svc.quota.user.${over.metric}`,
          ...over,
        });
    }
  }
  const clusterOver = settings.clusterEnabled ? firstExceeded(usage.cluster, settings.cluster) : undefined;
  const cluster: QuotaExceeded | undefined =
    clusterOver === undefined
      ? undefined
      : {
          scope: 'cluster',
          subject: 'cluster',
          key: `svc.quota.cluster.${clusterOver.metric}`,
          ...clusterOver,
        };
  const interrupted = new Map<AppId, QuotaExceeded>();
  if (settings.interruptShuffle) {
    for (const [key, over] of users) {
      const apps = [...usage.byApp].filter(([appId]) => {
        const user = userOf(appId);
        return user !== undefined && userKey(user) === key;
      });
      for (const appId of heaviestUntilWithin(apps, over.metric, over.usage, over.limit))
        interrupted.set(appId, over);
    }
    if (cluster !== undefined) {
      const apps = [...usage.byApp].filter(([appId]) => !interrupted.has(appId));
      const alreadyFreed = [...interrupted.keys()].reduce(
        (sum, appId) => sum + (usage.byApp.get(appId)?.[cluster.metric] ?? 0),
        0,
      );
      for (const appId of heaviestUntilWithin(
        apps,
        cluster.metric,
        cluster.usage - alreadyFreed,
        cluster.limit,
      ))
        interrupted.set(appId, cluster);
    }
  }
  return { users, cluster, interrupted };
}

/**
 * The applications to interrupt so that the rest is within the limit: the heaviest in the exceeded measure first
 * (ties by application id), as few as that takes. The reference interrupts the largest consumers first too.
 */
export function heaviestUntilWithin(
  apps: readonly (readonly [AppId, ResourceConsumption])[],
  metric: QuotaMetric,
  usage: number,
  limit: number,
): AppId[] {
  const ordered = [...apps].sort(
    ([a, ua], [b, ub]) => ub[metric] - ua[metric] || (a < b ? -1 : a > b ? 1 : 0),
  );
  const chosen: AppId[] = [];
  let remaining = usage;
  for (const [appId, used] of ordered) {
    if (remaining < limit) break;
    chosen.push(appId);
    remaining -= used[metric];
  }
  return chosen;
}

/** Whether `user` may start a shuffle now: user first, then cluster (the reference's CheckQuota order). */
export function checkQuota(
  settings: QuotaSettings,
  status: QuotaStatus,
  user: UserIdentifier | undefined,
): QuotaExceeded | undefined {
  if (!settings.enabled) return undefined;
  const own = user === undefined || !settings.userEnabled ? undefined : status.users.get(userKey(user));
  return own ?? (settings.clusterEnabled ? status.cluster : undefined);
}

/** The refusal a client shows: who, which quota, the usage and the limit. */
export function describeExceeded(over: QuotaExceeded, user: UserIdentifier | undefined): string {
  const who = user === undefined ? 'this application' : `user ${userKey(user)}`;
  const whose = over.scope === 'user' ? `its quota` : `the cluster's quota`;
  return (
    `${who} is over ${whose}: ${over.metric} is ${over.usage}, the limit is ${over.limit} (${over.key}); ` +
    'no new shuffle is registered until usage falls below the limit or the quota is raised'
  );
}
