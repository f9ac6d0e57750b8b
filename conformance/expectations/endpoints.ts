// Contract sections 2, 4.1, 4.2 and 9.1 as data: the /api/v1 endpoints of each role and the named fields of the
// worker resource. Written from the contract; where it is silent (field types), the reading is stated beside it.

export type Role = 'master' | 'worker';

/** The release that introduced `/api/v1` (9.1 rule 1). */
export const API_V1_SINCE = '0.6.0';

/** Requests and responses of `/api/v1` (section 1 rule 1, section 4). */
export const API_MEDIA_TYPE = 'application/json';

export interface ApiEndpoint {
  readonly section: '4.1' | '4.2';
  readonly role: Role;
  readonly method: 'GET' | 'POST';
  readonly path: string;
  /** The legacy path(s) it replaces, as the table lists them. */
  readonly replaces: readonly string[];
}

function rows(section: '4.1' | '4.2', role: Role, table: [string, string, string[]][]): ApiEndpoint[] {
  return table.map(([method, path, replaces]) => ({
    section,
    role,
    method: method as 'GET' | 'POST',
    path,
    replaces,
  }));
}

/** Table 4.1 (the two `/api/v1/workers` rows are one endpoint). */
export const MASTER_ENDPOINTS: readonly ApiEndpoint[] = rows('4.1', 'master', [
  ['GET', '/api/v1/conf', ['/conf']],
  ['GET', '/api/v1/conf/dynamic', ['/listDynamicConfigs']],
  ['GET', '/api/v1/thread_dump', ['/threadDump']],
  ['GET', '/api/v1/applications', ['/applications']],
  ['GET', '/api/v1/applications/hostnames', ['/hostnames']],
  ['GET', '/api/v1/shuffles', ['/shuffle']],
  ['GET', '/api/v1/masters', ['/masterGroupInfo']],
  [
    'GET',
    '/api/v1/workers',
    ['/workerInfo', '/lostWorkers', '/excludedWorkers', '/shutdownWorkers', '/decommissionWorkers'],
  ],
  ['POST', '/api/v1/workers/exclude', ['/exclude']],
  ['GET', '/api/v1/workers/events', ['/workerEventInfo']],
  ['POST', '/api/v1/workers/events', ['/sendWorkerEvent']],
]);

/** Table 4.2. */
export const WORKER_ENDPOINTS: readonly ApiEndpoint[] = rows('4.2', 'worker', [
  ['GET', '/api/v1/conf', ['/conf']],
  ['GET', '/api/v1/conf/dynamic', ['/listDynamicConfigs']],
  ['GET', '/api/v1/thread_dump', ['/threadDump']],
  ['GET', '/api/v1/applications', ['/applications']],
  ['GET', '/api/v1/shuffles', ['/shuffle']],
  ['GET', '/api/v1/shuffles/partitions', ['/listPartitionLocationInfo']],
  ['GET', '/api/v1/workers', ['/workerInfo', '/isRegistered', '/isDecommissioning', '/isShutdown']],
  ['GET', '/api/v1/workers/unavailable_peers', ['/unavailablePeers']],
  ['POST', '/api/v1/workers/exit', ['/exit']],
]);

/**
 * Section 2's named fields of `GET /api/v1/workers`. The contract gives no types ("Field types ...: not shown"); the
 * suite reads the master's fields as lists (each replaces a legacy endpoint listing workers) and the worker's as
 * booleans (each replaces an `is...` endpoint answering yes or no).
 */
export interface NamedField {
  readonly role: Role;
  readonly name: string;
  readonly type: 'array' | 'boolean';
  readonly replaces: string;
}

export const WORKER_RESOURCE_FIELDS: readonly NamedField[] = [
  { role: 'master', name: 'lostWorkers', type: 'array', replaces: '/lostWorkers' },
  { role: 'master', name: 'excludedWorkers', type: 'array', replaces: '/excludedWorkers' },
  { role: 'master', name: 'shutdownWorkers', type: 'array', replaces: '/shutdownWorkers' },
  { role: 'master', name: 'decommissioningWorkers', type: 'array', replaces: '/decommissionWorkers' },
  { role: 'worker', name: 'isRegistered', type: 'boolean', replaces: '/isRegistered' },
  { role: 'worker', name: 'isDecommissioning', type: 'boolean', replaces: '/isDecommissioning' },
  { role: 'worker', name: 'isShutdown', type: 'boolean', replaces: '/isShutdown' },
];

/**
 * Harmless bodies for the POST endpoints: they name a worker no deployment has (port 1), or an exit type no
 * implementation has, so that a conforming node refuses or reports failure and nothing changes. The suite never
 * stops or excludes a worker it did not start itself.
 */
export const UNKNOWN_WORKER = { host: '127.0.0.1', rpcPort: 1, pushPort: 1, fetchPort: 1, replicatePort: 1 };
export const UNKNOWN_WORKER_KEY = '127.0.0.1:1:1:1:1';
export const HARMLESS_POST_BODIES: Readonly<Record<string, unknown>> = {
  'master /api/v1/workers/exclude': { add: [UNKNOWN_WORKER], remove: [] },
  'master /api/v1/workers/events': { eventType: 'NONE', workers: [UNKNOWN_WORKER] },
  'worker /api/v1/workers/exit': { type: 'NOT_AN_EXIT_TYPE' },
};
