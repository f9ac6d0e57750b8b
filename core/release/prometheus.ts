/**
 * How metric names and labels are rendered for Prometheus (reference section 10.1), and the query that replaces
 * the removed `/listTopDiskUsedApps` endpoint (contract section 4.3).
 */

/** The kinds of metric and the series each one renders, each series named by its suffix. */
export const PROMETHEUS_SUFFIXES = {
  counter: ['Count'],
  gauge: ['Value'],
  meter: ['Count', 'MeanRate', 'OneMinuteRate', 'FiveMinuteRate', 'FifteenMinuteRate'],
  histogram: [
    'Count',
    'Max',
    'Mean',
    'Min',
    '50thPercentile',
    '75thPercentile',
    '95thPercentile',
    '98thPercentile',
    '99thPercentile',
    '999thPercentile',
  ],
  timer: [
    'Count',
    'Max',
    'Mean',
    'Min',
    '50thPercentile',
    '75thPercentile',
    '95thPercentile',
    '98thPercentile',
    '99thPercentile',
    '999thPercentile',
  ],
} as const;

export type MetricKind = keyof typeof PROMETHEUS_SUFFIXES;
export type PrometheusSuffix = (typeof PROMETHEUS_SUFFIXES)[MetricKind][number];

/**
 * The value of the `role` label on every metric a node renders. Capitalised as the reference renders it, so that
 * dashboards and the section 4.3 query work unchanged against svc and reference deployments alike.
 */
export const METRIC_ROLE_LABEL = { master: 'Master', worker: 'Worker', client: 'Client' } as const;

/** `metrics_<name>_<suffix>`, every character of the name that is not a letter or digit replaced by `_`. */
export function prometheusMetricName(name: string, suffix: PrometheusSuffix): string {
  if (name.length === 0) throw new RangeError('a metric name must not be empty');
  return `metrics_${name.replace(/[^A-Za-z0-9]/g, '_')}_${suffix}`;
}

/** How many applications the replacement of `/listTopDiskUsedApps` lists (contract section 8). */
export const TOP_DISK_USED_APPS_LIMIT = 50;

/**
 * The PromQL query that replaces `/listTopDiskUsedApps` (removed in 0.6.0): the top applications by the sum,
 * grouped by `applicationId`, of `metrics_diskBytesWritten_Value` on workers, ignoring series without an
 * application. The role matcher is `Worker`, the value svc and the reference render (label matching is
 * case-sensitive; the guide's lower-case `worker` matches no series of either).
 */
export function topDiskUsedAppsQuery(limit: number = TOP_DISK_USED_APPS_LIMIT): string {
  if (!Number.isSafeInteger(limit) || limit < 1) {
    throw new RangeError(`the number of top applications must be a positive integer, got ${limit}`);
  }
  const series = prometheusMetricName('diskBytesWritten', 'Value');
  return `topk(${limit}, sum by (applicationId) (${series}{role="${METRIC_ROLE_LABEL.worker}", applicationId!=""}))`;
}
