/** Keys every role reads: where the master is, timeouts, storage tiers, metrics, pass-through prefixes. */
import { STORAGE_TYPES } from '../../../core/domain/index.ts';
import { hostPortList, keyValueList } from '../checks.ts';
import { ALL_ROLES, CLIENT, compatibilityOnly, type KeySpec, MASTER, SERVERS } from '../spec.ts';

export const COMMON_KEYS: readonly KeySpec[] = [
  {
    key: 'svc.master.endpoints',
    type: 'list',
    default: '<localhost>:9097',
    roles: ALL_ROLES,
    check: hostPortList,
    description: 'Addresses (host:port) of the master or of every master of a high-availability group.',
  },
  {
    key: 'svc.rpc.askTimeout',
    type: 'time',
    default: '60s',
    roles: ALL_ROLES,
    description: 'Time to wait for the reply to a control-plane request.',
  },
  {
    key: 'svc.rpc.lookupTimeout',
    type: 'time',
    default: '30s',
    roles: ALL_ROLES,
    effect: compatibilityOnly(
      'svc addresses endpoints directly and looks none up; asks wait svc.rpc.askTimeout',
    ),
    description: 'Time to wait when looking up a remote control-plane endpoint.',
  },
  {
    key: 'svc.network.timeout',
    type: 'time',
    default: '240s',
    roles: ALL_ROLES,
    description: 'Default time after which an idle or unresponsive connection is given up.',
  },
  {
    key: 'svc.network.connect.timeout',
    type: 'time',
    default: '10s',
    roles: ALL_ROLES,
    description: 'Default time allowed to establish a connection.',
  },
  {
    key: 'svc.network.frame.maxSize',
    type: 'bytes',
    default: '128m',
    min: 1024,
    roles: ALL_ROLES,
    description:
      'svc addition: the largest frame a connection accepts; a larger one closes that connection with a logged ' +
      'reason. Must exceed svc.shuffle.chunk.size, svc.client.push.buffer.max.size and ' +
      'svc.client.push.merge.maxSize.',
  },
  {
    key: 'svc.network.port.maxConnections',
    type: 'int',
    default: '4096',
    min: 1,
    since: '0.6.0',
    roles: ALL_ROLES,
    description:
      'svc addition: the most connections one listening port (rpc, push, fetch, replicate) holds at once; one more ' +
      'is closed as it is accepted, with one rate-limited log line.',
  },
  {
    key: 'svc.network.send.maxQueuedBytes',
    type: 'bytes',
    default: '256m',
    min: 1024 * 1024,
    since: '0.6.0',
    roles: ALL_ROLES,
    description:
      'svc addition: the most bytes one connection may have waiting to be sent; a peer that reads more slowly is ' +
      'disconnected there. An accepted connection is not read while more than half of this (at most 16 MiB) ' +
      'waits, so that whoever produces its answers waits for the peer. Must exceed svc.shuffle.chunk.size.',
  },
  {
    key: 'svc.network.silentPeer.pingInterval',
    type: 'time',
    default: '1s',
    since: '0.6.0',
    roles: ALL_ROLES,
    description:
      'svc addition: a peer that owes answers and has sent nothing for this long is pinged on its connection (its ' +
      'transport answers, however busy its machine); a peer given up as silent is probed this often. Must be less ' +
      'than svc.network.silentPeer.timeout.',
  },
  {
    key: 'svc.network.silentPeer.timeout',
    type: 'time',
    default: '10s',
    since: '0.6.0',
    roles: ALL_ROLES,
    description:
      'svc addition: a peer that owes answers and has sent nothing, not even the answer to a ping, for this long is ' +
      'silent (a host cut off by the network answers nothing): every request it owes fails at once, its ' +
      'connections are closed and never reused, and requests to it fail at once until it is heard from again.',
  },
  {
    key: 'svc.log.summary.interval',
    type: 'time',
    default: '10s',
    since: '0.6.0',
    roles: ALL_ROLES,
    description:
      'svc addition: warnings a peer can repeat at will (a closed or refused connection) are written three times ' +
      'per cause in this interval; the rest are counted into one line at its end (event log.repeated).',
  },
  {
    key: 'svc.ssl.enabled',
    type: 'boolean',
    default: 'false',
    roles: ALL_ROLES,
    description:
      'svc addition: TLS on every rpc, push, fetch and replicate connection of the process, both ways; a process ' +
      'that listens (servers, an application’s lifecycle manager) needs svc.ssl.certFile and svc.ssl.keyFile.',
  },
  {
    key: 'svc.ssl.certFile',
    type: 'string',
    roles: ALL_ROLES,
    description:
      'svc addition: PEM file of the certificate chain the process presents on its TLS ports (and HTTPS), its ' +
      'own certificate first; its names (DNS or IP) must cover the host peers connect to.',
  },
  {
    key: 'svc.ssl.keyFile',
    type: 'string',
    roles: ALL_ROLES,
    description: 'svc addition: PEM file of the private key of svc.ssl.certFile.',
  },
  {
    key: 'svc.ssl.keyPassword',
    type: 'string',
    secret: true,
    roles: ALL_ROLES,
    description: 'svc addition: passphrase of an encrypted svc.ssl.keyFile (a secret, shown as ******).',
  },
  {
    key: 'svc.ssl.caFile',
    type: 'string',
    roles: ALL_ROLES,
    description:
      'svc addition: PEM file of the certificate authorities a TLS connection trusts in its peer (unset: the ' +
      'authorities Node.js trusts); the peer’s certificate must also name the host connected to.',
  },
  {
    key: 'svc.auth.enabled',
    type: 'boolean',
    default: 'false',
    roles: ALL_ROLES,
    description:
      'Application authentication in the data plane (named as in the reference; svc’s handshake is its own): an ' +
      'application registers a secret with the master, and every connection of its lifecycle manager and tasks ' +
      'proves it with an HMAC of a challenge; masters and workers prove svc.auth.internal.secret to each other. ' +
      'Set it alike on servers and clients. Registration carries the secret: use it with svc.ssl.enabled.',
  },
  {
    key: 'svc.auth.internal.secret',
    type: 'string',
    secret: true,
    roles: SERVERS,
    description:
      'svc addition: the secret masters and workers prove to each other when svc.auth.enabled (a secret, shown ' +
      'as ******, but visible on a command line: prefer svc.auth.internal.secretFile).',
  },
  {
    key: 'svc.auth.internal.secretFile',
    type: 'string',
    roles: SERVERS,
    description:
      'svc addition: file holding svc.auth.internal.secret (its first line; readable by the server only); read ' +
      'at start. One of the two is required when svc.auth.enabled.',
  },
  {
    key: 'svc.client.auth.secret',
    type: 'string',
    secret: true,
    roles: CLIENT,
    description:
      'svc addition: the application’s secret when svc.auth.enabled (a secret, shown as ******). Unset: the ' +
      'lifecycle manager draws a random one, and the application hands it to its executors.',
  },
  {
    key: 'svc.shuffle.chunk.size',
    type: 'bytes',
    default: '8m',
    min: 1,
    roles: ['worker', 'client'],
    description: 'Size of the chunks a partition file is served in when fetched.',
  },
  {
    key: 'svc.storage.availableTypes',
    type: 'list',
    values: STORAGE_TYPES,
    default: 'HDD',
    roles: ALL_ROLES,
    description:
      'Storage tiers an application may use (MEMORY, HDD, SSD, HDFS, OSS, S3); HDD and SSD both mean local disk.',
  },
  {
    key: 'svc.storage.hdfs.dir',
    type: 'string',
    roles: ALL_ROLES,
    description: 'Base directory of the distributed-filesystem tier; unset: the tier is not configured.',
  },
  {
    key: 'svc.internal.port.enabled',
    type: 'boolean',
    default: 'false',
    roles: SERVERS,
    effect: compatibilityOnly(
      'svc has no internal port: masters and workers talk on the control-plane ports',
    ),
    description: 'Whether masters and workers talk to each other on a separate internal port.',
  },
  {
    key: 'svc.cluster.name',
    type: 'string',
    default: 'default',
    since: '0.5.0',
    roles: SERVERS,
    effect: compatibilityOnly(
      'svc keeps nothing in a store shared between clusters, so nothing is named after one',
    ),
    description: 'Name of the cluster, used to tell clusters apart in shared stores.',
  },
  {
    key: 'svc.identity.user-specific.tenant',
    type: 'string',
    default: 'default',
    aliases: [{ key: 'svc.quota.identity.user-specific.tenant', deprecatedIn: '0.6.0' }],
    roles: CLIENT,
    description: 'Tenant an application runs as, for quotas and dynamic configuration.',
  },
  {
    key: 'svc.identity.user-specific.userName',
    type: 'string',
    default: 'default',
    aliases: [{ key: 'svc.quota.identity.user-specific.userName', deprecatedIn: '0.6.0' }],
    roles: CLIENT,
    description: 'User name an application runs as, for quotas and dynamic configuration.',
  },
  {
    key: 'svc.metrics.enabled',
    type: 'boolean',
    default: 'true',
    roles: SERVERS,
    description: 'Whether masters and workers collect and serve metrics.',
  },
  {
    key: 'svc.metrics.sample.rate',
    type: 'double',
    default: '1.0',
    min: 0,
    max: 1,
    roles: SERVERS,
    description: 'Fraction of timed operations that are recorded by timer metrics.',
  },
  {
    key: 'svc.metrics.timer.slidingWindow.size',
    type: 'int',
    default: '4096',
    min: 1,
    roles: SERVERS,
    description: 'Number of recent samples a timer metric keeps to compute its percentiles.',
  },
  {
    key: 'svc.metrics.extraLabels',
    type: 'list',
    default: '',
    check: keyValueList,
    roles: SERVERS,
    description: 'Labels (name=value) added to every metric.',
  },
  {
    key: 'svc.metrics.prometheus.path',
    type: 'string',
    default: '/metrics/prometheus',
    roles: SERVERS,
    description: 'HTTP path of the metrics in Prometheus text format.',
  },
  {
    key: 'svc.metrics.json.path',
    type: 'string',
    default: '/metrics/json',
    roles: SERVERS,
    description: 'HTTP path of the metrics in JSON.',
  },
  {
    key: 'svc.fsconf.<key>',
    type: 'string',
    roles: ALL_ROLES,
    effect: compatibilityOnly(
      'svc’s distributed tier is a mounted directory (NFS, CephFS, an HDFS fuse mount) that servers write with ' +
        'plain file operations: there is no filesystem client to hand these settings to; set the mount’s own ' +
        'options instead',
    ),
    description:
      'Passed to the distributed-filesystem client as its setting <key> (on a batch-engine client, prefix it with the engine’s configuration prefix).',
  },
  {
    key: 'raft.client.rpc.request.timeout',
    type: 'time',
    roles: MASTER,
    description:
      'Time a master of a high-availability group waits for a request to the coordination store (etcd): the ' +
      'deadline of each call (docs/high-availability.md, Configuration).',
  },
  {
    key: 'raft.client.rpc.watch.request.timeout',
    type: 'time',
    roles: MASTER,
    description:
      'Time a master of a high-availability group waits for a watch on the coordination store (etcd) to be ' +
      'confirmed before it reads the key again (docs/high-availability.md, Configuration).',
  },
];
