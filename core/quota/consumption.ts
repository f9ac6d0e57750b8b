import type { AppId } from '../domain/index.ts';

/** The four measures a quota limits (the reference's ResourceConsumption). */
export const QUOTA_METRICS = [
  'diskBytesWritten',
  'diskFileCount',
  'hdfsBytesWritten',
  'hdfsFileCount',
] as const;
export type QuotaMetric = (typeof QUOTA_METRICS)[number];

/** What a user (or an application, or the whole cluster) holds in live partition files. */
export type ResourceConsumption = { readonly [M in QuotaMetric]: number };

/** One application's consumption on one worker, as the worker reports it in its heartbeat. */
export interface AppConsumption extends ResourceConsumption {
  readonly appId: AppId;
}

/** Who an application runs as: `svc.identity.user-specific.tenant` and `.userName` of its client. */
export interface UserIdentifier {
  readonly tenant: string;
  readonly name: string;
}

export const NO_CONSUMPTION: ResourceConsumption = {
  diskBytesWritten: 0,
  diskFileCount: 0,
  hdfsBytesWritten: 0,
  hdfsFileCount: 0,
};

/** `tenant/name`: the key users are kept under (and shown as). */
export function userKey(user: UserIdentifier): string {
  return `${user.tenant}/${user.name}`;
}

export function addConsumption(a: ResourceConsumption, b: ResourceConsumption): ResourceConsumption {
  return {
    diskBytesWritten: a.diskBytesWritten + b.diskBytesWritten,
    diskFileCount: a.diskFileCount + b.diskFileCount,
    hdfsBytesWritten: a.hdfsBytesWritten + b.hdfsBytesWritten,
    hdfsFileCount: a.hdfsFileCount + b.hdfsFileCount,
  };
}

/** Only the four measures of `c` (a report carries its appId too). */
export function consumptionOf(c: ResourceConsumption): ResourceConsumption {
  return {
    diskBytesWritten: c.diskBytesWritten,
    diskFileCount: c.diskFileCount,
    hdfsBytesWritten: c.hdfsBytesWritten,
    hdfsFileCount: c.hdfsFileCount,
  };
}

/**
 * The master's view of usage, from the workers' last reports: per application, per user (through the application's
 * identity; an application the master does not know counts for the cluster only), and the cluster's total.
 * Iteration follows the reports' order, so the result is deterministic.
 */
export interface UsageView {
  readonly byApp: ReadonlyMap<AppId, ResourceConsumption>;
  readonly byUser: ReadonlyMap<string, ResourceConsumption>;
  readonly cluster: ResourceConsumption;
}

export function aggregateUsage(
  reports: Iterable<readonly AppConsumption[]>,
  userOf: (appId: AppId) => UserIdentifier | undefined,
): UsageView {
  const byApp = new Map<AppId, ResourceConsumption>();
  let cluster = NO_CONSUMPTION;
  for (const report of reports) {
    for (const entry of report) {
      const own = consumptionOf(entry);
      byApp.set(entry.appId, addConsumption(byApp.get(entry.appId) ?? NO_CONSUMPTION, own));
      cluster = addConsumption(cluster, own);
    }
  }
  const byUser = new Map<string, ResourceConsumption>();
  for (const [appId, used] of byApp) {
    const user = userOf(appId);
    if (user === undefined) continue;
    const key = userKey(user);
    byUser.set(key, addConsumption(byUser.get(key) ?? NO_CONSUMPTION, used));
  }
  return { byApp, byUser, cluster };
}
