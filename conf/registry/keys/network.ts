/** Transport keys, one set per module (`svc.<module>.*`, contract 9.1 rule 3; modules in ../spec.ts). */
import { ALL_ROLES, compatibilityOnly, type KeySpec } from '../spec.ts';

export const NETWORK_KEYS: readonly KeySpec[] = [
  {
    key: 'svc.<module>.io.mode',
    type: 'enum',
    values: ['NIO', 'EPOLL'],
    roles: ALL_ROLES,
    effect: compatibilityOnly(
      'svc runs on the Node.js event loop; there is no NIO or EPOLL backend to choose',
    ),
    description: 'Event-loop backend of the module’s connections.',
  },
  {
    key: 'svc.<module>.io.numConnectionsPerPeer',
    type: 'int',
    min: 1,
    roles: ALL_ROLES,
    description:
      'Connections the module keeps open to each peer address: a client’s to the master and its lifecycle manager ' +
      '(`rpc`) and to each worker port it pushes to or fetches from (`data`), a server’s to the master (`rpc`) and ' +
      'a worker’s to its replicas (`replicate`). A node awaiting an answer keeps speaking on the connection its ' +
      'request went on; other messages take the least loaded one, in turn. A connection that fails is replaced at ' +
      'the next message. No process connects out through the `push` and `fetch` modules (a client’s pushes and ' +
      'fetches are its `data` module).',
  },
  {
    key: 'svc.<module>.io.connectionTimeout',
    type: 'time',
    fallback: 'svc.network.timeout',
    roles: ALL_ROLES,
    effect: compatibilityOnly('the transport applies svc.network.timeout to the connections of every module'),
    // Before 0.4.1 a client's ask timeouts fall back to the control plane's.
    takesEffectIn: ['rpc'],
    description:
      'Time after which an idle or unresponsive connection of the module is closed. svc’s transport applies ' +
      'svc.network.timeout to the connections of every module; svc.rpc.io.connectionTimeout is what a client ' +
      'before 0.4.1 waits for an ask that has no timeout of its own (svc.client.rpc.*.askTimeout).',
  },
  {
    key: 'svc.<module>.io.connectTimeout',
    type: 'time',
    fallback: 'svc.network.connect.timeout',
    roles: ALL_ROLES,
    effect: compatibilityOnly(
      'the transport applies svc.network.connect.timeout to the connections of every module',
    ),
    description: 'Time allowed to establish a connection of the module.',
  },
  {
    key: 'svc.<module>.io.maxRetries',
    type: 'int',
    default: '3',
    min: 0,
    roles: ALL_ROLES,
    effect: compatibilityOnly(
      'the transport does not retry; the protocol’s machines retry with their own attempt counts',
    ),
    description: 'Retries of a request of the module after an I/O failure (0: no retry).',
  },
  {
    key: 'svc.<module>.io.retryWait',
    type: 'time',
    default: '5s',
    roles: ALL_ROLES,
    effect: compatibilityOnly(
      'the transport does not retry; the protocol’s machines retry with their own attempt counts',
    ),
    description: 'Wait before retrying a request of the module after an I/O failure.',
  },
  {
    key: 'svc.<module>.io.serverThreads',
    type: 'int',
    default: '0',
    min: 0,
    roles: ALL_ROLES,
    effect: compatibilityOnly('svc runs each process on one event loop; thread counts do not apply'),
    description: 'Threads serving the module’s incoming connections (0: twice the number of cores).',
  },
  {
    key: 'svc.<module>.io.clientThreads',
    type: 'int',
    default: '0',
    min: 0,
    roles: ALL_ROLES,
    effect: compatibilityOnly('svc runs each process on one event loop; thread counts do not apply'),
    description: 'Threads serving the module’s outgoing connections (0: twice the number of cores).',
  },
  {
    key: 'svc.<module>.io.backLog',
    type: 'int',
    default: '0',
    min: 0,
    roles: ALL_ROLES,
    effect: compatibilityOnly('svc listens with the system’s default backlog'),
    description: 'Length of the queue of connections waiting to be accepted (0: the system default).',
  },
  {
    key: 'svc.<module>.io.sendBuffer',
    type: 'bytes',
    default: '0',
    roles: ALL_ROLES,
    effect: compatibilityOnly('svc leaves socket buffers at the system’s defaults'),
    description: 'Socket send buffer of the module (0: the system default).',
  },
  {
    key: 'svc.<module>.io.receiveBuffer',
    type: 'bytes',
    default: '0',
    roles: ALL_ROLES,
    effect: compatibilityOnly('svc leaves socket buffers at the system’s defaults'),
    description: 'Socket receive buffer of the module (0: the system default).',
  },
  {
    key: 'svc.<module>.heartbeat.interval',
    type: 'time',
    default: '60s',
    roles: ALL_ROLES,
    effect: compatibilityOnly(
      'svc’s connections carry no keep-alive messages; liveness comes from the heartbeats of the protocol',
    ),
    description: 'Interval of keep-alive messages on the module’s connections.',
  },
];
