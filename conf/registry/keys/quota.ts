/** Quotas, worker tags and the dynamic-configuration store that can override them per tenant and user. */
import { MASTER, SERVERS, compatibilityOnly, type KeySpec, type Role } from '../spec.ts';

const QUOTA_ROLES: readonly Role[] = ['master', 'client'];

const QUOTA_LIMITS = [
  { metric: 'diskBytesWritten', type: 'bytes', what: 'bytes written to local disks' },
  { metric: 'diskFileCount', type: 'int', what: 'files on local disks' },
  { metric: 'hdfsBytesWritten', type: 'bytes', what: 'bytes written to the distributed tier' },
  { metric: 'hdfsFileCount', type: 'int', what: 'files on the distributed tier' },
] as const;

function quotaLimits(scope: 'user' | 'cluster', since: '0.5.0' | '0.6.0'): readonly KeySpec[] {
  const whose = scope === 'user' ? 'one user' : 'the whole cluster';
  return QUOTA_LIMITS.map(({ metric, type, what }) => ({
    key: `svc.quota.${scope}.${metric}`,
    type,
    default: 'unlimited',
    unlimited: true,
    min: 0,
    dynamic: true,
    since,
    roles: QUOTA_ROLES,
    description: `Quota: most ${what} by ${whose}.`,
  }));
}

export const QUOTA_KEYS: readonly KeySpec[] = [
  {
    key: 'svc.quota.enabled',
    type: 'boolean',
    default: 'true',
    roles: QUOTA_ROLES,
    description: 'Whether quotas are enforced.',
  },
  {
    key: 'svc.quota.user.enabled',
    type: 'boolean',
    default: 'true',
    since: '0.6.0',
    roles: QUOTA_ROLES,
    description: 'Whether per-user quotas are enforced.',
  },
  {
    key: 'svc.quota.cluster.enabled',
    type: 'boolean',
    default: 'true',
    since: '0.6.0',
    roles: QUOTA_ROLES,
    description: 'Whether cluster-wide quotas are enforced.',
  },
  {
    key: 'svc.quota.interruptShuffle.enabled',
    type: 'boolean',
    default: 'false',
    roles: QUOTA_ROLES,
    description: 'Whether running shuffles of an application over its quota are interrupted.',
  },
  ...quotaLimits('user', '0.5.0'),
  ...quotaLimits('cluster', '0.6.0'),
  {
    key: 'svc.dynamicConfig.store.backend',
    type: 'enum',
    values: ['FS'],
    since: '0.5.0',
    roles: SERVERS,
    description: 'Store of dynamic configuration: FS (a YAML file); unset: dynamic configuration is off.',
  },
  {
    key: 'svc.dynamicConfig.store.fs.path',
    type: 'string',
    roles: SERVERS,
    description:
      'YAML file of the FS dynamic-configuration store (unset: dynamicConfig.yaml in $SVC_CONF_DIR).',
  },
  {
    key: 'svc.dynamicConfig.refresh.interval',
    type: 'time',
    default: '120s',
    since: '0.5.0',
    roles: SERVERS,
    description: 'Interval at which dynamic configuration is reloaded.',
  },
  {
    key: 'svc.tags.enabled',
    type: 'boolean',
    default: 'true',
    since: '0.6.0',
    roles: MASTER,
    effect: compatibilityOnly('svc’s workers carry no tags; every worker can be offered'),
    description: 'Whether slot offers are limited to workers carrying the tags an application asks for.',
  },
  {
    key: 'svc.tags.tagsExpr',
    type: 'string',
    default: '',
    dynamic: true,
    since: '0.6.0',
    roles: MASTER,
    effect: compatibilityOnly('svc’s workers carry no tags; every worker can be offered'),
    description: 'Tags a worker must carry to be offered (comma-separated; empty: every worker).',
  },
  {
    key: 'svc.tags.preferClientTagsExpr',
    type: 'boolean',
    default: 'false',
    dynamic: true,
    since: '0.6.0',
    roles: MASTER,
    effect: compatibilityOnly('svc’s workers carry no tags; every worker can be offered'),
    description: 'Whether the tags a client asks for replace the configured ones.',
  },
];
