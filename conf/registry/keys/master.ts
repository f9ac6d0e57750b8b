/** Keys of the master: addresses, slot offers, worker tracking, high availability. */
import { hostPortList, regularExpression } from '../checks.ts';
import { ALL_ROLES, MASTER, compatibilityOnly, type KeySpec, type Role } from '../spec.ts';

const PORT = { type: 'int', min: 0, max: 65535 } as const;

/** The management interface's authentication keys of `role` (master or worker). */
export function httpAuthKeys(role: Role): readonly KeySpec[] {
  return [
    {
      key: `svc.${role}.http.auth.supportedSchemes`,
      type: 'list',
      values: ['BASIC', 'BEARER'],
      default: '',
      since: '0.6.0',
      roles: [role],
      description:
        `Authentication schemes the ${role}'s management interface accepts (empty: no authentication); with one ` +
        'set, every request needs credentials of an accepted scheme (docs/http-api.md, Authentication).',
    },
    {
      key: `svc.${role}.http.auth.administers`,
      type: 'list',
      default: '',
      since: '0.6.0',
      roles: [role],
      description:
        `Users allowed to call the ${role}'s mutating management endpoints (basic user names, bearer token ` +
        'names); with authentication on and this empty, nobody may.',
    },
    {
      key: `svc.${role}.http.auth.basic.file`,
      type: 'string',
      since: '0.6.0',
      roles: [role],
      description:
        `svc addition: file of the users of the ${role}'s management interface for BASIC, one user:password line ` +
        'each, the password in clear or as $scrypt$<salt>$<hash> (base64); read when the process starts.',
    },
    {
      key: `svc.${role}.http.auth.basic.users`,
      type: 'list',
      since: '0.6.0',
      secret: true,
      roles: [role],
      description:
        `svc addition: more BASIC users of the ${role}'s management interface, as user:password entries; a ` +
        `secret, shown as ******, but visible on a command line: prefer svc.${role}.http.auth.basic.file.`,
    },
    {
      key: `svc.${role}.http.auth.bearer.file`,
      type: 'string',
      since: '0.6.0',
      roles: [role],
      description:
        `svc addition: file of the bearer tokens of the ${role}'s management interface, one name:token line each ` +
        '(the name is who the token authenticates), the token in clear or as $sha256$<hex>; read at start.',
    },
    {
      key: `svc.${role}.http.auth.bearer.tokens`,
      type: 'list',
      since: '0.6.0',
      secret: true,
      roles: [role],
      description:
        `svc addition: more bearer tokens of the ${role}'s management interface, as name:token entries; a ` +
        `secret, shown as ******, but visible on a command line: prefer svc.${role}.http.auth.bearer.file.`,
    },
  ];
}

/** The management interface's TLS key of `role`; the certificate and key are svc.ssl.certFile and keyFile. */
export function httpTlsKeys(role: Role): readonly KeySpec[] {
  return [
    {
      key: `svc.${role}.http.ssl.enabled`,
      type: 'boolean',
      default: 'false',
      roles: [role],
      description:
        `svc addition: serve the ${role}'s management interface over HTTPS, with the certificate and key of ` +
        'svc.ssl.certFile and svc.ssl.keyFile.',
    },
  ];
}

export const MASTER_KEYS: readonly KeySpec[] = [
  {
    key: 'svc.master.host',
    type: 'string',
    default: '<localhost>',
    roles: MASTER,
    description:
      'Host name the master binds to and advertises (SVC_LOCAL_HOSTNAME takes priority over the file).',
  },
  {
    key: 'svc.master.port',
    ...PORT,
    default: '9097',
    roles: MASTER,
    description:
      'Control-plane port of the master (0: any free port, printed in the master’s "listening" line; workers and ' +
      'clients must then be given the bound port).',
  },
  {
    key: 'svc.master.internal.port',
    ...PORT,
    min: 1,
    default: '8097',
    roles: MASTER,
    effect: compatibilityOnly(
      'svc has no internal port: masters and workers talk on the control-plane ports',
    ),
    description: 'Port for traffic between masters and workers when svc.internal.port.enabled is on.',
  },
  {
    key: 'svc.master.http.host',
    type: 'string',
    default: '<localhost>',
    roles: MASTER,
    description: 'Host the master’s management interface and metrics listen on.',
  },
  {
    key: 'svc.master.http.port',
    ...PORT,
    default: '9098',
    roles: MASTER,
    description:
      'Port of the master’s management interface and metrics, 1–65535; 0 is accepted on purpose and means any free ' +
      'port, printed in the master’s "listening" line (LocalCluster starts nodes so).',
  },
  ...httpAuthKeys('master'),
  ...httpTlsKeys('master'),
  {
    key: 'svc.master.state.dir',
    type: 'string',
    default: '<tmp>/svc-master-state',
    roles: MASTER,
    description:
      'svc addition: directory of the store a single master keeps its durable state in (what it offered and to ' +
      'whom), so that a restarted master remembers it.',
  },
  {
    key: 'svc.master.state.dbBackend',
    type: 'enum',
    values: ['ROCKSDB', 'LEVELDB'],
    default: 'ROCKSDB',
    roles: MASTER,
    description: 'svc addition: storage engine of the master’s state store (svc.master.state.dir).',
  },
  {
    key: 'svc.master.heartbeat.worker.timeout',
    type: 'time',
    default: '120s',
    aliases: [{ key: 'svc.worker.heartbeat.timeout', deprecatedIn: '0.3.0' }],
    roles: ['master', 'worker'],
    description: 'A worker silent for this long is lost; workers send heartbeats four times per timeout.',
  },
  {
    key: 'svc.master.heartbeat.application.timeout',
    type: 'time',
    default: '300s',
    aliases: [{ key: 'svc.application.heartbeat.timeout', deprecatedIn: '0.3.0' }],
    roles: MASTER,
    description: 'An application silent for this long is lost and its shuffles are released.',
  },
  {
    key: 'svc.master.workerUnavailableInfo.expireTimeout',
    type: 'time',
    default: '1800s',
    roles: MASTER,
    description: 'How long the master remembers a lost or shut-down worker.',
  },
  {
    key: 'svc.master.receive.maxPartialFrameBytes',
    type: 'bytes',
    default: '128m',
    min: 1024 * 1024,
    since: '0.6.0',
    roles: MASTER,
    description:
      'svc addition: the most memory all partly received frames may hold in the master; a connection whose frame ' +
      'would take it past this is closed (a worker counts them in svc.worker.memory.size instead).',
  },
  {
    key: 'svc.master.allowWorkerHostPattern',
    type: 'string',
    since: '0.6.0',
    check: regularExpression,
    roles: MASTER,
    description: 'Only workers whose host matches this regular expression may register (unset: any host).',
  },
  {
    key: 'svc.master.denyWorkerHostPattern',
    type: 'string',
    since: '0.6.0',
    check: regularExpression,
    roles: MASTER,
    description: 'Workers whose host matches this regular expression may not register (unset: none refused).',
  },
  {
    key: 'svc.master.excludeWorker.unhealthyDiskRatioThreshold',
    type: 'double',
    default: '1.0',
    min: 0,
    max: 1,
    roles: MASTER,
    description:
      'A worker with at least this share of unhealthy disks is excluded (unless a distributed tier exists).',
  },
  {
    key: 'svc.master.slot.assign.policy',
    type: 'enum',
    values: ['ROUNDROBIN', 'LOADAWARE'],
    default: 'ROUNDROBIN',
    roles: MASTER,
    description: 'How the master spreads partitions over disks: round-robin, or by disk speed (load-aware).',
  },
  {
    key: 'svc.master.slot.assign.budgetMode',
    type: 'enum',
    values: ['OVERCOMMIT', 'STRICT'],
    default: 'OVERCOMMIT',
    since: '0.6.0',
    roles: MASTER,
    description:
      'svc addition: whether the master may place partitions on local disks beyond their slot budgets when nothing ' +
      'else has room (OVERCOMMIT, as the reference does) or reports them unplaced instead (STRICT).',
  },
  {
    key: 'svc.master.slot.assign.maxWorkers',
    type: 'int',
    default: '10000',
    min: 1,
    since: '0.3.1',
    roles: MASTER,
    description: 'Most workers one shuffle’s slots are offered on (a client may ask for fewer).',
  },
  {
    key: 'svc.master.slot.assign.extraSlots',
    type: 'int',
    min: 0,
    roles: MASTER,
    description: 'Spare workers added to a slot offer for the client to revive partitions on.',
  },
  {
    key: 'svc.master.slot.assign.minWorkers',
    type: 'int',
    min: 0,
    roles: MASTER,
    description:
      'Least number of workers a slot offer involves, padding the offer when there are few reducers.',
  },
  {
    key: 'svc.master.slot.assign.loadAware.numDiskGroups',
    type: 'int',
    default: '5',
    min: 1,
    roles: MASTER,
    description: 'Load-aware offers: number of groups disks are sorted into by speed.',
  },
  {
    key: 'svc.master.slot.assign.loadAware.diskGroupGradient',
    type: 'double',
    default: '0.1',
    min: 0,
    roles: MASTER,
    description: 'Load-aware offers: how much more each faster disk group receives than the next slower one.',
  },
  {
    key: 'svc.master.slot.assign.loadAware.flushTimeWeight',
    type: 'double',
    default: '0.0',
    min: 0,
    roles: MASTER,
    description: 'Load-aware offers: weight of a disk’s average flush time in its speed.',
  },
  {
    key: 'svc.master.slot.assign.loadAware.fetchTimeWeight',
    type: 'double',
    default: '1.0',
    min: 0,
    roles: MASTER,
    description: 'Load-aware offers: weight of a disk’s average fetch time in its speed.',
  },
  {
    key: 'svc.master.estimatedPartitionSize.initialSize',
    type: 'bytes',
    default: '64m',
    min: 1,
    roles: MASTER,
    description:
      'Partition size assumed when computing disk slots until enough has been written to measure it.',
  },
  {
    key: 'svc.master.estimatedPartitionSize.minSize',
    type: 'bytes',
    default: '8m',
    min: 1,
    since: '0.4.1',
    roles: MASTER,
    description: 'Smallest value the measured partition size is raised to.',
  },
  {
    key: 'svc.master.estimatedPartitionSize.maxSize',
    type: 'bytes',
    fallback: { key: 'svc.worker.shuffle.partitionSplit.max', factor: 2 },
    min: 1,
    since: '0.4.1',
    roles: MASTER,
    description: 'Largest value the measured partition size is lowered to.',
  },
  {
    key: 'svc.master.estimatedPartitionSize.update.initialDelay',
    type: 'time',
    default: '5min',
    roles: MASTER,
    description: 'Delay after start before the partition size is first measured.',
  },
  {
    key: 'svc.master.estimatedPartitionSize.update.interval',
    type: 'time',
    default: '10min',
    roles: MASTER,
    description: 'Interval between measurements of the partition size.',
  },
  {
    key: 'svc.master.userResourceConsumption.update.interval',
    type: 'time',
    default: '30s',
    roles: MASTER,
    description: 'Interval at which the master recomputes per-user resource use and quota status.',
  },
  {
    key: 'svc.master.userResourceConsumption.metrics.enabled',
    type: 'boolean',
    default: 'false',
    roles: MASTER,
    description: 'Whether the master exports per-user resource use as metrics.',
  },
  {
    key: 'svc.master.dfs.expireDirs.timeout',
    type: 'time',
    default: '1h',
    roles: MASTER,
    description:
      'How often the master removes, from the distributed tier (svc.storage.hdfs.dir), the shuffle directories of ' +
      'applications it no longer has (expired or lost): at most this long after an application ends.',
  },
  {
    key: 'svc.master.persist.workerNetworkLocation',
    type: 'boolean',
    default: 'false',
    roles: MASTER,
    effect: compatibilityOnly('the master always keeps a worker’s rack with the worker in its durable state'),
    description: 'Whether a worker’s rack is kept in the master’s durable state.',
  },
  {
    key: 'svc.master.ha.enabled',
    type: 'boolean',
    default: 'false',
    roles: ALL_ROLES,
    description: 'Whether the masters run as a high-availability group.',
  },
  {
    key: 'svc.master.ha.node.id',
    type: 'string',
    roles: MASTER,
    description: 'Id of this master within its high-availability group.',
  },
  {
    key: 'svc.master.ha.node.<id>.host',
    type: 'string',
    roles: ALL_ROLES,
    description: 'Host of master <id> of the high-availability group.',
  },
  {
    key: 'svc.master.ha.node.<id>.port',
    ...PORT,
    min: 1,
    default: '9097',
    roles: ALL_ROLES,
    description: 'Control-plane port of master <id> of the high-availability group.',
  },
  {
    key: 'svc.master.ha.node.<id>.internal.port',
    ...PORT,
    min: 1,
    default: '8097',
    roles: ALL_ROLES,
    description: 'Internal port of master <id> of the high-availability group.',
  },
  {
    key: 'svc.master.ha.etcd.endpoints',
    type: 'list',
    since: '0.6.0',
    roles: MASTER,
    check: hostPortList,
    description:
      'svc addition: addresses (host:port) of the etcd members that hold the high-availability group’s leader key ' +
      'and state (docs/high-availability.md); required with svc.master.ha.enabled.',
  },
  {
    key: 'svc.master.ha.lease.timeout',
    type: 'time',
    default: '8s',
    since: '0.6.0',
    roles: MASTER,
    description:
      'svc addition: the TTL of the etcd lease a master of the group campaigns and leads on: a dead leader’s ' +
      'successor is elected at most this long after its last renewal (docs/high-availability.md, Configuration).',
  },
  {
    key: 'svc.master.ha.lease.renew.interval',
    type: 'time',
    default: '2s',
    since: '0.6.0',
    roles: MASTER,
    description:
      'svc addition: how often a master of the group renews its etcd lease; with the lease it must leave a leader ' +
      'more than two renewals to act on one (docs/high-availability.md, Configuration).',
  },
  {
    key: 'svc.master.ha.campaign.retry.interval',
    type: 'time',
    default: '2s',
    since: '0.6.0',
    roles: MASTER,
    description:
      'svc addition: how long a master of the group waits before it campaigns again after it lost its lease or ' +
      'could not get one (etcd unreachable).',
  },
  {
    key: 'svc.master.ha.etcd.keyPrefix',
    type: 'string',
    default: '/svc/',
    since: '0.6.0',
    roles: MASTER,
    description:
      'svc addition: the prefix of every etcd key of the group (its leader key and state), so that several svc ' +
      'clusters can share one etcd.',
  },
  {
    key: 'svc.master.ha.etcd.ssl.caFile',
    type: 'string',
    since: '0.6.0',
    roles: MASTER,
    description:
      'svc addition: PEM file of the authority that signed the etcd members’ certificates; set, the masters speak ' +
      'TLS to etcd (etcd --cert-file/--key-file).',
  },
  {
    key: 'svc.master.ha.etcd.ssl.certFile',
    type: 'string',
    since: '0.6.0',
    roles: MASTER,
    description:
      'svc addition: PEM file of the certificate a master presents to etcd when etcd asks clients for one ' +
      '(etcd --client-cert-auth); with svc.master.ha.etcd.ssl.keyFile.',
  },
  {
    key: 'svc.master.ha.etcd.ssl.keyFile',
    type: 'string',
    since: '0.6.0',
    roles: MASTER,
    description: 'svc addition: PEM file of the key of svc.master.ha.etcd.ssl.certFile.',
  },
  {
    key: 'svc.master.ha.etcd.user',
    type: 'string',
    since: '0.6.0',
    roles: MASTER,
    description:
      'svc addition: the etcd user the masters authenticate as when etcd’s authentication is on (etcdctl auth ' +
      'enable); with svc.master.ha.etcd.password.',
  },
  {
    key: 'svc.master.ha.etcd.password',
    type: 'string',
    since: '0.6.0',
    roles: MASTER,
    secret: true,
    description: 'svc addition: the password of svc.master.ha.etcd.user.',
  },
];
