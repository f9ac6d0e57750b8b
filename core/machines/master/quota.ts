import type { AppId } from '../../domain/index.ts';
import {
  aggregateUsage,
  checkQuota,
  computeQuotaStatus,
  describeExceeded,
  NO_QUOTA_STATUS,
  QUOTA_METRICS,
  QUOTAS_OFF,
  type AppConsumption,
  type QuotaExceeded,
  type QuotaSettings,
  type QuotaStatus,
  type UsageView,
  type UserIdentifier,
} from '../../quota/index.ts';
import { adminReply, log, setEntry } from '../outbox.ts';
import type { MasterOutbox } from './outbox.ts';
import type { MasterState } from './state.ts';

/**
 * The master's side of quotas (core/quota decides): the workers' last reports, the usage and quota status recomputed
 * every `svc.master.userResourceConsumption.update.interval` and whenever the limits change, the check a new shuffle
 * goes through, and the limits the driver hands in (the dynamic configuration, reloaded without a restart). None of
 * it is durable: after a restart the workers' next heartbeats report the usage again.
 */
export interface MasterQuota {
  readonly settings: QuotaSettings;
  /** Worker key → its last report (applications with live files there). */
  readonly reports: ReadonlyMap<string, readonly AppConsumption[]>;
  readonly usage: UsageView;
  readonly status: QuotaStatus;
}

export const EMPTY_USAGE: UsageView = {
  byApp: new Map(),
  byUser: new Map(),
  cluster: { diskBytesWritten: 0, diskFileCount: 0, hdfsBytesWritten: 0, hdfsFileCount: 0 },
};

export function initialMasterQuota(settings: QuotaSettings | undefined): MasterQuota {
  return {
    settings: settings ?? QUOTAS_OFF,
    reports: new Map(),
    usage: EMPTY_USAGE,
    status: NO_QUOTA_STATUS,
  };
}

/** A worker's heartbeat carried its report: kept until the next recomputation (in place: the machine owns it). */
export function recordConsumption(
  s: MasterState,
  workerKey: string,
  report: readonly AppConsumption[] | undefined,
): void {
  if (report === undefined && !s.quota.reports.has(workerKey)) return;
  setEntry(s.quota.reports, workerKey, report ?? []);
}

function userOfApp(s: MasterState): (appId: AppId) => UserIdentifier | undefined {
  return (appId) => s.durable.applications.apps.get(appId)?.user;
}

/** Recomputes usage and status from the reports of the workers still registered; logs who went over and back. */
export function updateQuotaStatus(s: MasterState, out: MasterOutbox): MasterState {
  const live = s.durable.workers.workers;
  const reports = new Map([...s.quota.reports].filter(([key]) => live.has(key)));
  const userOf = userOfApp(s);
  const usage = aggregateUsage(reports.values(), userOf);
  const status = computeQuotaStatus(s.quota.settings, usage, userOf);
  logStatusChanges(out, s.quota.status, status);
  return { ...s, quota: { ...s.quota, reports, usage, status } };
}

function logStatusChanges(out: MasterOutbox, before: QuotaStatus, after: QuotaStatus): void {
  for (const [user, over] of after.users) {
    if (!before.users.has(user))
      log(out, 'warn', 'master.quota.exceeded', {
        ...fieldsOf(over),
        hint: 'new shuffles of the user are refused',
      });
  }
  for (const user of before.users.keys()) {
    if (!after.users.has(user)) log(out, 'info', 'master.quota.withinLimits', { user });
  }
  if (after.cluster !== undefined && before.cluster === undefined)
    log(out, 'warn', 'master.quota.exceeded', {
      ...fieldsOf(after.cluster),
      hint: 'new shuffles are refused',
    });
  if (after.cluster === undefined && before.cluster !== undefined)
    log(out, 'info', 'master.quota.withinLimits', { user: 'cluster' });
  for (const [appId, over] of after.interrupted) {
    if (!before.interrupted.has(appId))
      log(out, 'warn', 'master.quota.interrupt', { appId, ...fieldsOf(over) });
  }
}

function fieldsOf(over: QuotaExceeded): Record<string, string | number> {
  return {
    scope: over.scope,
    user: over.subject,
    quota: over.key,
    usage: over.usage,
    limit: over.limit,
  };
}

/**
 * Whether the application may register a new shuffle: undefined when it may; otherwise the quota it is over and the
 * message its client shows.
 */
export function quotaRefusal(
  s: MasterState,
  appId: AppId,
): { readonly over: QuotaExceeded; readonly message: string } | undefined {
  const user = s.durable.applications.apps.get(appId)?.user;
  // The planted bug checks the cluster's quota only, as if the application had no user.
  const checked = s.config.plantedBug === 'quota-user-ignored' ? undefined : user;
  const over = checkQuota(s.quota.settings, s.quota.status, checked);
  return over === undefined ? undefined : { over, message: describeExceeded(over, user) };
}

/** The message that interrupts the application's shuffles (the heartbeat reply's quota status), if any. */
export function interruption(s: MasterState, appId: AppId): string | undefined {
  const over = s.quota.status.interrupted.get(appId);
  if (over === undefined) return undefined;
  const user = s.durable.applications.apps.get(appId)?.user;
  return `shuffles of ${appId} are interrupted (svc.quota.interruptShuffle.enabled): ${describeExceeded(over, user)}`;
}

/** The driver hands in new quota settings (the dynamic configuration was reloaded): the status follows at once. */
export function setQuotaSettings(
  s: MasterState,
  out: MasterOutbox,
  settings: QuotaSettings,
  commandId: number | undefined,
): MasterState {
  log(out, 'info', 'master.quota.settings', {
    enabled: settings.enabled,
    user: limitsText(settings.user),
    cluster: limitsText(settings.cluster),
    tenants: settings.tenants.size,
    users: settings.users.size,
  });
  adminReply(out, commandId, true, 'quota settings applied');
  return updateQuotaStatus({ ...s, quota: { ...s.quota, settings } }, out);
}

function limitsText(limits: QuotaSettings['user']): string {
  return QUOTA_METRICS.map((metric) =>
    limits[metric] === Number.POSITIVE_INFINITY ? `${metric}=unlimited` : `${metric}=${limits[metric]}`,
  ).join(' ');
}
