import { featureSince } from './other-changes.ts';
import { topDiskUsedAppsQuery } from './prometheus.ts';
import { assertWithinHistory } from './timeline.ts';
import { isAtLeast, type Release } from './version.ts';

export type HttpRole = 'master' | 'worker';
export type HttpMethod = 'GET' | 'POST';
export type LegacyMediaType = 'text/plain' | 'application/x-www-form-urlencoded';

/** How a legacy endpoint is called at some release. */
export interface LegacyEndpointShape {
  /** The path it is served under. */
  readonly name: string;
  readonly method: HttpMethod;
  readonly requestMediaType: LegacyMediaType;
  readonly parameters: readonly string[];
  /** Whether the parameters travel as form fields in the body (otherwise in the query string). */
  readonly formParameters: boolean;
}

export interface LegacyEndpointChange {
  readonly release: Release;
  readonly set: Partial<LegacyEndpointShape>;
  readonly contract: string;
}

/** What replaces a legacy endpoint: an /api/v1 endpoint (optionally one field of its response) or a query. */
export type LegacyReplacement =
  | {
      readonly kind: 'api-v1';
      readonly method: HttpMethod;
      readonly path: string;
      readonly field?: string;
      readonly since: Release;
    }
  | { readonly kind: 'metrics-query'; readonly query: string };

export interface LegacyEndpoint {
  readonly roles: readonly HttpRole[];
  /** The shape at the start of the history; `changes` (oldest first) amend it. */
  readonly initial: LegacyEndpointShape;
  readonly changes: readonly LegacyEndpointChange[];
  readonly removedIn?: Release;
  readonly replacement: LegacyReplacement;
}

/** Every legacy endpoint still served is deprecated from this release on (contract section 4.4). */
export const LEGACY_DEPRECATED_SINCE: Release = '0.6.0';

/** Legacy endpoints answer in plain text at every release (reference section 8.4). */
export const LEGACY_RESPONSE_MEDIA_TYPE = 'text/plain';

const API_V1_SINCE = featureSince('api-v1');

function apiV1(method: HttpMethod, path: string, field?: string): LegacyReplacement {
  return field === undefined
    ? { kind: 'api-v1', method, path, since: API_V1_SINCE }
    : { kind: 'api-v1', method, path, field, since: API_V1_SINCE };
}

/** A GET endpoint that never changed: the contract's default ("GET unless stated"). */
function plainGet(
  name: string,
  roles: readonly HttpRole[],
  replacement: LegacyReplacement,
  parameters: readonly string[] = [],
): LegacyEndpoint {
  return {
    roles,
    initial: { name, method: 'GET', requestMediaType: 'text/plain', parameters, formParameters: false },
    changes: [],
    replacement,
  };
}

const BOTH: readonly HttpRole[] = ['master', 'worker'];
const MASTER: readonly HttpRole[] = ['master'];
const WORKER: readonly HttpRole[] = ['worker'];

/**
 * Contract sections 4.1 to 4.4. Shapes before a stated change follow from the change: "0.5.0: method POST" means
 * GET (the default) before, and "form parameters" from a release means query parameters before it.
 */
export const LEGACY_ENDPOINTS: readonly LegacyEndpoint[] = [
  plainGet('/conf', BOTH, apiV1('GET', '/api/v1/conf')),
  // Parameter names from reference section 8.4; the contract names none for this endpoint.
  plainGet('/listDynamicConfigs', BOTH, apiV1('GET', '/api/v1/conf/dynamic'), ['level', 'tenant', 'name']),
  plainGet('/threadDump', BOTH, apiV1('GET', '/api/v1/thread_dump')),
  plainGet('/applications', BOTH, apiV1('GET', '/api/v1/applications')),
  plainGet('/hostnames', MASTER, apiV1('GET', '/api/v1/applications/hostnames')),
  {
    ...plainGet('/shuffles', BOTH, apiV1('GET', '/api/v1/shuffles')),
    changes: [{ release: '0.5.0', set: { name: '/shuffle' }, contract: '0.5.0: renamed /shuffle.' }],
  },
  plainGet('/masterGroupInfo', MASTER, apiV1('GET', '/api/v1/masters')),
  plainGet('/workerInfo', BOTH, apiV1('GET', '/api/v1/workers')),
  plainGet('/lostWorkers', MASTER, apiV1('GET', '/api/v1/workers', 'lostWorkers')),
  {
    ...plainGet('/blacklistedWorkers', MASTER, apiV1('GET', '/api/v1/workers', 'excludedWorkers')),
    changes: [
      { release: '0.3.0', set: { name: '/excludedWorkers' }, contract: '0.3.0: renamed /excludedWorkers.' },
    ],
  },
  plainGet('/shutdownWorkers', MASTER, apiV1('GET', '/api/v1/workers', 'shutdownWorkers')),
  plainGet('/decommissionWorkers', MASTER, apiV1('GET', '/api/v1/workers', 'decommissioningWorkers')),
  plainGet('/workerEventInfo', MASTER, apiV1('GET', '/api/v1/workers/events')),
  plainGet('/listPartitionLocationInfo', WORKER, apiV1('GET', '/api/v1/shuffles/partitions')),
  plainGet('/isRegistered', WORKER, apiV1('GET', '/api/v1/workers', 'isRegistered')),
  plainGet('/isDecommissioning', WORKER, apiV1('GET', '/api/v1/workers', 'isDecommissioning')),
  plainGet('/isShutdown', WORKER, apiV1('GET', '/api/v1/workers', 'isShutdown')),
  plainGet('/unavailablePeers', WORKER, apiV1('GET', '/api/v1/workers/unavailable_peers')),
  {
    ...plainGet('/exclude', MASTER, apiV1('POST', '/api/v1/workers/exclude'), ['add', 'remove']),
    changes: [
      {
        release: '0.5.0',
        set: { method: 'POST', formParameters: true },
        contract: '0.5.0: method POST; parameters add and remove are form parameters.',
      },
      {
        release: '0.5.1',
        set: { requestMediaType: 'application/x-www-form-urlencoded' },
        contract: '0.5.1: request media type application/x-www-form-urlencoded (before: text/plain).',
      },
    ],
  },
  {
    ...plainGet('/sendWorkerEvent', MASTER, apiV1('POST', '/api/v1/workers/events'), ['type', 'workers']),
    changes: [
      {
        release: '0.5.1',
        set: { method: 'POST', formParameters: true, requestMediaType: 'application/x-www-form-urlencoded' },
        contract:
          '0.5.1: method POST; parameters type and workers are form parameters; media type ' +
          'application/x-www-form-urlencoded (before: text/plain).',
      },
    ],
  },
  {
    ...plainGet('/exit', WORKER, apiV1('POST', '/api/v1/workers/exit'), ['type']),
    changes: [
      {
        release: '0.5.0',
        set: { method: 'POST', formParameters: true },
        contract: '0.5.0: method POST; parameter type is a form parameter.',
      },
      {
        release: '0.5.1',
        set: { requestMediaType: 'application/x-www-form-urlencoded' },
        contract: '0.5.1: media type application/x-www-form-urlencoded (before: text/plain).',
      },
    ],
  },
  {
    ...plainGet('/listTopDiskUsedApps', BOTH, { kind: 'metrics-query', query: topDiskUsedAppsQuery() }),
    removedIn: '0.6.0',
  },
];

/** A legacy endpoint as served at one release by one role. */
export interface LegacyEndpointInEffect extends LegacyEndpointShape {
  readonly exists: true;
  readonly role: HttpRole;
  readonly release: Release;
  readonly responseMediaType: typeof LEGACY_RESPONSE_MEDIA_TYPE;
  readonly deprecated: boolean;
  readonly replacement: LegacyReplacement;
}

export interface LegacyEndpointAbsent {
  readonly exists: false;
  readonly why: 'unknown-path' | 'other-role' | 'removed';
  readonly message: string;
  /** What to use instead, when the endpoint was removed. */
  readonly replacement?: LegacyReplacement;
}

export type LegacyEndpointRule = LegacyEndpointInEffect | LegacyEndpointAbsent;

/** Every path an endpoint has been served under, oldest first. */
export function legacyEndpointNames(endpoint: LegacyEndpoint): readonly string[] {
  const names = [endpoint.initial.name];
  for (const change of endpoint.changes) {
    if (change.set.name !== undefined) names.push(change.set.name);
  }
  return names;
}

/**
 * The rule of legacy endpoint `path` on `role` at `release`. `path` may be any name the endpoint has had (for
 * example `/blacklistedWorkers` or `/excludedWorkers`); `name` in the answer is the one in effect at `release`.
 */
export function legacyEndpointRule(path: string, role: HttpRole, release: Release): LegacyEndpointRule {
  assertWithinHistory(release);
  const endpoint = LEGACY_ENDPOINTS.find((candidate) => legacyEndpointNames(candidate).includes(path));
  if (endpoint === undefined) {
    return {
      exists: false,
      why: 'unknown-path',
      message: `'${path}' is not a legacy endpoint; the management interface is under /api/v1 from ${API_V1_SINCE}`,
    };
  }
  if (!endpoint.roles.includes(role)) {
    return {
      exists: false,
      why: 'other-role',
      message: `'${path}' is served by the ${endpoint.roles.join(' and ')}, not by a ${role}`,
    };
  }
  if (endpoint.removedIn !== undefined && isAtLeast(release, endpoint.removedIn)) {
    return {
      exists: false,
      why: 'removed',
      message: `'${path}' was removed in ${endpoint.removedIn}; ${describeReplacement(endpoint.replacement)}`,
      replacement: endpoint.replacement,
    };
  }
  return inEffect(endpoint, role, release);
}

/** Every legacy endpoint `role` serves at `release`, in table order: the routes a server of that release has. */
export function legacyEndpointsAt(role: HttpRole, release: Release): readonly LegacyEndpointInEffect[] {
  assertWithinHistory(release);
  return LEGACY_ENDPOINTS.filter(
    (endpoint) =>
      endpoint.roles.includes(role) &&
      (endpoint.removedIn === undefined || !isAtLeast(release, endpoint.removedIn)),
  ).map((endpoint) => inEffect(endpoint, role, release));
}

function inEffect(endpoint: LegacyEndpoint, role: HttpRole, release: Release): LegacyEndpointInEffect {
  let shape = endpoint.initial;
  for (const change of endpoint.changes) {
    if (isAtLeast(release, change.release)) shape = { ...shape, ...change.set };
  }
  return {
    ...shape,
    exists: true,
    role,
    release,
    responseMediaType: LEGACY_RESPONSE_MEDIA_TYPE,
    deprecated: isAtLeast(release, LEGACY_DEPRECATED_SINCE),
    replacement: endpoint.replacement,
  };
}

/** One line an operator can act on: what to call instead. */
export function describeReplacement(replacement: LegacyReplacement): string {
  switch (replacement.kind) {
    case 'api-v1': {
      const field = replacement.field === undefined ? '' : ` (field ${replacement.field})`;
      return `use ${replacement.method} ${replacement.path}${field}, available from ${replacement.since}`;
    }
    case 'metrics-query':
      return `query the metrics instead: ${replacement.query}`;
  }
}
