import { QUOTA_METRICS, type QuotaMetric, type UserIdentifier } from './consumption.ts';

/** A limit per measure; Infinity: unlimited (the reference's Long.MAX_VALUE). */
export type QuotaLimits = { readonly [M in QuotaMetric]: number };

export const UNLIMITED: QuotaLimits = {
  diskBytesWritten: Number.POSITIVE_INFINITY,
  diskFileCount: Number.POSITIVE_INFINITY,
  hdfsBytesWritten: Number.POSITIVE_INFINITY,
  hdfsFileCount: Number.POSITIVE_INFINITY,
};

/**
 * The quota configuration the master decides with: the switches (`svc.quota.enabled`, `.user.enabled`,
 * `.cluster.enabled`, `.interruptShuffle.enabled`) and the limits, already resolved through the dynamic
 * configuration's levels by the driver (conf/dynamic.ts): the user limits of every user and tenant the dynamic store
 * names, each resolved TENANT_USER → TENANT → SYSTEM → static key by key, and the SYSTEM ones for everybody else.
 */
export interface QuotaSettings {
  readonly enabled: boolean;
  readonly userEnabled: boolean;
  readonly clusterEnabled: boolean;
  readonly interruptShuffle: boolean;
  /** `svc.quota.user.*` for a user of no tenant or user the dynamic store names. */
  readonly user: QuotaLimits;
  /** Tenant id → `svc.quota.user.*` for that tenant's users (TENANT → SYSTEM → static). */
  readonly tenants: ReadonlyMap<string, QuotaLimits>;
  /** `tenant/name` → `svc.quota.user.*` of that user (TENANT_USER → TENANT → SYSTEM → static). */
  readonly users: ReadonlyMap<string, QuotaLimits>;
  /** `svc.quota.cluster.*`: the whole cluster's usage. */
  readonly cluster: QuotaLimits;
  /**
   * The per-user limit keys as the presented release names them, for refusals to name the key an operator of that
   * release sets (`svc.quota.tenant.*` before 0.6.0). Absent: `svc.quota.user.*`.
   */
  readonly userKeys?: Readonly<Record<QuotaMetric, string>>;
}

/** Quotas off: what a master is given when its driver says nothing. */
export const QUOTAS_OFF: QuotaSettings = {
  enabled: false,
  userEnabled: true,
  clusterEnabled: true,
  interruptShuffle: false,
  user: UNLIMITED,
  tenants: new Map(),
  users: new Map(),
  cluster: UNLIMITED,
};

/** The limits that apply to `user`: the most specific level that names it. */
export function userLimits(settings: QuotaSettings, user: UserIdentifier): QuotaLimits {
  return (
    settings.users.get(`${user.tenant}/${user.name}`) ?? settings.tenants.get(user.tenant) ?? settings.user
  );
}

export function isUnlimited(limits: QuotaLimits): boolean {
  return QUOTA_METRICS.every((metric) => limits[metric] === Number.POSITIVE_INFINITY);
}
