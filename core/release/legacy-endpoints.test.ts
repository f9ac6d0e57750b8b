import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import fc from 'fast-check';
import {
  LEGACY_ENDPOINTS,
  legacyEndpointNames,
  legacyEndpointRule,
  legacyEndpointsAt,
  type HttpRole,
  type LegacyEndpointRule,
} from './legacy-endpoints.ts';
import { compareReleases, KNOWN_RELEASES, type Release } from './version.ts';

const knownRelease = fc.constantFrom(...KNOWN_RELEASES);
const role = fc.constantFrom<HttpRole>('master', 'worker');

/** The parts of a rule that say how to call the endpoint. */
function call(rule: LegacyEndpointRule) {
  assert.ok(rule.exists, `expected the endpoint to exist: ${rule.exists ? '' : rule.message}`);
  const { name, method, requestMediaType, parameters, formParameters } = rule;
  return { name, method, requestMediaType, parameters, formParameters };
}

describe('legacy endpoints (contract section 4.4)', () => {
  it('/exclude: GET with query parameters, POST with form parameters from 0.5.0, form media type from 0.5.1', () => {
    const before = { name: '/exclude', parameters: ['add', 'remove'] };
    assert.deepEqual(call(legacyEndpointRule('/exclude', 'master', '0.4.1')), {
      ...before,
      method: 'GET',
      requestMediaType: 'text/plain',
      formParameters: false,
    });
    assert.deepEqual(call(legacyEndpointRule('/exclude', 'master', '0.5.0')), {
      ...before,
      method: 'POST',
      requestMediaType: 'text/plain',
      formParameters: true,
    });
    assert.deepEqual(call(legacyEndpointRule('/exclude', 'master', '0.5.1')), {
      ...before,
      method: 'POST',
      requestMediaType: 'application/x-www-form-urlencoded',
      formParameters: true,
    });
  });

  it('/sendWorkerEvent: POST, form parameters type and workers, form media type, all from 0.5.1', () => {
    assert.deepEqual(call(legacyEndpointRule('/sendWorkerEvent', 'master', '0.5.0')), {
      name: '/sendWorkerEvent',
      method: 'GET',
      requestMediaType: 'text/plain',
      parameters: ['type', 'workers'],
      formParameters: false,
    });
    assert.deepEqual(call(legacyEndpointRule('/sendWorkerEvent', 'master', '0.5.1')), {
      name: '/sendWorkerEvent',
      method: 'POST',
      requestMediaType: 'application/x-www-form-urlencoded',
      parameters: ['type', 'workers'],
      formParameters: true,
    });
  });

  it('/exit (worker): POST with form parameter type from 0.5.0, form media type from 0.5.1', () => {
    assert.deepEqual(call(legacyEndpointRule('/exit', 'worker', '0.4.1')), {
      name: '/exit',
      method: 'GET',
      requestMediaType: 'text/plain',
      parameters: ['type'],
      formParameters: false,
    });
    assert.deepEqual(call(legacyEndpointRule('/exit', 'worker', '0.5.0')), {
      name: '/exit',
      method: 'POST',
      requestMediaType: 'text/plain',
      parameters: ['type'],
      formParameters: true,
    });
    assert.deepEqual(call(legacyEndpointRule('/exit', 'worker', '0.5.1')), {
      name: '/exit',
      method: 'POST',
      requestMediaType: 'application/x-www-form-urlencoded',
      parameters: ['type'],
      formParameters: true,
    });
  });

  it('/shuffles is renamed /shuffle in 0.5.0 on master and worker, and deprecated from 0.6.0', () => {
    for (const r of ['master', 'worker'] as const) {
      for (const asked of ['/shuffles', '/shuffle']) {
        assert.equal(call(legacyEndpointRule(asked, r, '0.4.1')).name, '/shuffles');
        assert.equal(call(legacyEndpointRule(asked, r, '0.5.0')).name, '/shuffle');
      }
      const at060 = legacyEndpointRule('/shuffle', r, '0.6.0');
      assert.ok(at060.exists && at060.deprecated, 'at060.exists && at060.deprecated');
      const at051 = legacyEndpointRule('/shuffle', r, '0.5.1');
      assert.ok(at051.exists && !at051.deprecated, 'at051.exists && !at051.deprecated');
    }
  });

  it('/blacklistedWorkers is renamed /excludedWorkers in 0.3.0, on the master only', () => {
    assert.equal(
      call(legacyEndpointRule('/blacklistedWorkers', 'master', '0.2.1')).name,
      '/blacklistedWorkers',
    );
    assert.equal(call(legacyEndpointRule('/excludedWorkers', 'master', '0.2.0')).name, '/blacklistedWorkers');
    assert.equal(call(legacyEndpointRule('/blacklistedWorkers', 'master', '0.3.0')).name, '/excludedWorkers');
    assert.equal(call(legacyEndpointRule('/excludedWorkers', 'master', '0.6.0')).name, '/excludedWorkers');
    assert.deepEqual(legacyEndpointRule('/excludedWorkers', 'worker', '0.5.0'), {
      exists: false,
      why: 'other-role',
      message: "'/excludedWorkers' is served by the master, not by a worker",
    });
  });

  it('/listTopDiskUsedApps is removed in 0.6.0; the replacement is the top-50 metrics query (section 4.3)', () => {
    for (const r of ['master', 'worker'] as const) {
      assert.deepEqual(call(legacyEndpointRule('/listTopDiskUsedApps', r, '0.5.1')), {
        name: '/listTopDiskUsedApps',
        method: 'GET',
        requestMediaType: 'text/plain',
        parameters: [],
        formParameters: false,
      });
      const query =
        'topk(50, sum by (applicationId) (metrics_diskBytesWritten_Value{role="Worker", applicationId!=""}))';
      assert.deepEqual(legacyEndpointRule('/listTopDiskUsedApps', r, '0.6.0'), {
        exists: false,
        why: 'removed',
        message: `'/listTopDiskUsedApps' was removed in 0.6.0; query the metrics instead: ${query}`,
        replacement: { kind: 'metrics-query', query },
      });
    }
  });

  it('every legacy endpoint is deprecated from 0.6.0 and not before', () => {
    for (const release of KNOWN_RELEASES) {
      for (const r of ['master', 'worker'] as const) {
        for (const endpoint of legacyEndpointsAt(r, release)) {
          assert.equal(endpoint.deprecated, release === '0.6.0', `${endpoint.name} at ${release}`);
          assert.equal(endpoint.responseMediaType, 'text/plain');
        }
      }
    }
  });

  it('a path that is not a legacy endpoint says so', () => {
    assert.deepEqual(legacyEndpointRule('/api/v1/workers', 'master', '0.6.0'), {
      exists: false,
      why: 'unknown-path',
      message:
        "'/api/v1/workers' is not a legacy endpoint; the management interface is under /api/v1 from 0.6.0",
    });
  });

  it('a release older than the history throws', () => {
    assert.throws(() => legacyEndpointRule('/conf', 'master', '0.1.0'), /predates the release history/);
  });
});

describe('the legacy paths at 0.6.0 and their /api/v1 replacements (contract sections 4.1, 4.2, 4.4)', () => {
  /** Written out from the contract: legacy method and path → replacement method, path and field. */
  const MASTER: readonly (readonly [string, string, string, string, string?])[] = [
    ['GET', '/conf', 'GET', '/api/v1/conf'],
    ['GET', '/listDynamicConfigs', 'GET', '/api/v1/conf/dynamic'],
    ['GET', '/threadDump', 'GET', '/api/v1/thread_dump'],
    ['GET', '/applications', 'GET', '/api/v1/applications'],
    ['GET', '/hostnames', 'GET', '/api/v1/applications/hostnames'],
    ['GET', '/shuffle', 'GET', '/api/v1/shuffles'],
    ['GET', '/masterGroupInfo', 'GET', '/api/v1/masters'],
    ['GET', '/workerInfo', 'GET', '/api/v1/workers'],
    ['GET', '/lostWorkers', 'GET', '/api/v1/workers', 'lostWorkers'],
    ['GET', '/excludedWorkers', 'GET', '/api/v1/workers', 'excludedWorkers'],
    ['GET', '/shutdownWorkers', 'GET', '/api/v1/workers', 'shutdownWorkers'],
    ['GET', '/decommissionWorkers', 'GET', '/api/v1/workers', 'decommissioningWorkers'],
    ['GET', '/workerEventInfo', 'GET', '/api/v1/workers/events'],
    ['POST', '/exclude', 'POST', '/api/v1/workers/exclude'],
    ['POST', '/sendWorkerEvent', 'POST', '/api/v1/workers/events'],
  ];
  const WORKER: readonly (readonly [string, string, string, string, string?])[] = [
    ['GET', '/conf', 'GET', '/api/v1/conf'],
    ['GET', '/listDynamicConfigs', 'GET', '/api/v1/conf/dynamic'],
    ['GET', '/threadDump', 'GET', '/api/v1/thread_dump'],
    ['GET', '/applications', 'GET', '/api/v1/applications'],
    ['GET', '/shuffle', 'GET', '/api/v1/shuffles'],
    ['GET', '/listPartitionLocationInfo', 'GET', '/api/v1/shuffles/partitions'],
    ['GET', '/workerInfo', 'GET', '/api/v1/workers'],
    ['GET', '/isRegistered', 'GET', '/api/v1/workers', 'isRegistered'],
    ['GET', '/isDecommissioning', 'GET', '/api/v1/workers', 'isDecommissioning'],
    ['GET', '/isShutdown', 'GET', '/api/v1/workers', 'isShutdown'],
    ['GET', '/unavailablePeers', 'GET', '/api/v1/workers/unavailable_peers'],
    ['POST', '/exit', 'POST', '/api/v1/workers/exit'],
  ];

  for (const [r, expected] of [
    ['master', MASTER],
    ['worker', WORKER],
  ] as const) {
    it(`${r}: every legacy path, its method and its replacement`, () => {
      const served = legacyEndpointsAt(r, '0.6.0').map((endpoint) => {
        assert.equal(endpoint.replacement.kind, 'api-v1');
        const replacement = endpoint.replacement.kind === 'api-v1' ? endpoint.replacement : undefined;
        const row = [endpoint.method, endpoint.name, replacement?.method, replacement?.path];
        return replacement?.field === undefined ? row : [...row, replacement.field];
      });
      assert.deepEqual([...served].sort(), expected.map((row) => [...row]).sort());
    });
  }

  it('every /api/v1 replacement is available from 0.6.0', () => {
    for (const endpoint of LEGACY_ENDPOINTS) {
      if (endpoint.replacement.kind === 'api-v1') assert.equal(endpoint.replacement.since, '0.6.0');
    }
  });
});

describe('legacy endpoint properties', () => {
  it('property: every name an endpoint has had gives the same answer', () => {
    fc.assert(
      fc.property(fc.constantFrom(...LEGACY_ENDPOINTS), role, knownRelease, (endpoint, r, release) => {
        const [first, ...others] = legacyEndpointNames(endpoint).map((name) =>
          legacyEndpointRule(name, r, release),
        );
        for (const other of others) {
          // An absent endpoint's message quotes the path as asked, so only the reason must agree.
          if (other.exists || first!.exists) assert.deepEqual(other, first);
          else assert.equal(other.why, first!.why);
        }
      }),
      { numRuns: 300 },
    );
  });

  it('property: legacyEndpointsAt lists exactly the endpoints that exist, as legacyEndpointRule describes them', () => {
    fc.assert(
      fc.property(role, knownRelease, (r, release: Release) => {
        const listed = legacyEndpointsAt(r, release);
        const existing = LEGACY_ENDPOINTS.map((endpoint) =>
          legacyEndpointRule(endpoint.initial.name, r, release),
        ).filter((rule) => rule.exists);
        assert.deepEqual(listed, existing);
        assert.equal(new Set(listed.map((endpoint) => endpoint.name)).size, listed.length);
      }),
    );
  });

  it('property: a POST endpoint sends its parameters as form fields, and form media type implies POST', () => {
    fc.assert(
      fc.property(role, knownRelease, (r, release) => {
        for (const endpoint of legacyEndpointsAt(r, release)) {
          if (endpoint.method === 'POST') assert.ok(endpoint.formParameters, endpoint.name);
          if (endpoint.requestMediaType === 'application/x-www-form-urlencoded') {
            assert.equal(endpoint.method, 'POST');
          }
        }
      }),
    );
  });

  it('the changes of each endpoint are oldest first', () => {
    for (const endpoint of LEGACY_ENDPOINTS) {
      for (let i = 1; i < endpoint.changes.length; i += 1) {
        assert.ok(
          compareReleases(endpoint.changes[i - 1]!.release, endpoint.changes[i]!.release) < 0,
          'compareReleases(endpoint.changes[i - 1]!.release, endpoint.changes[i]!.release) < 0',
        );
      }
    }
  });
});
