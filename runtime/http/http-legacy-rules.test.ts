// The legacy endpoints as a server of each release 0.2.0..0.6.0 serves them (contract 4.3 and 4.4): built
// in-process and asked through fastify's inject, so that every release is checked, not only the one a process
// presents. The expectations are written out from the contract, not derived from core/release's table.
import assert from 'node:assert/strict';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { after, before, describe, it } from 'node:test';
import type { FastifyInstance } from 'fastify';
import type { HttpRole } from '../../core/release/legacy-endpoints.ts';
import { legacyEndpointsAt } from '../../core/release/legacy-endpoints.ts';
import { topDiskUsedAppsQuery } from '../../core/release/prometheus.ts';
import { isAtLeast, KNOWN_RELEASES, type Release } from '../../core/release/version.ts';
import type { MasterState } from '../../core/machines/master/index.ts';
import type { WorkerMachineState } from '../../core/machines/worker/index.ts';
import { masterApi } from './master-api.ts';
import { buildManagementServer, type ManagementApi } from './server.ts';
import { confAt, masterStateAt, StubDriver, WORKER_ID, workerStateAt } from './testing/fixtures.ts';
import { workerApi } from './worker-api.ts';

const ID = `${WORKER_ID.host}:${WORKER_ID.rpcPort}:${WORKER_ID.pushPort}:${WORKER_ID.fetchPort}:${WORKER_ID.replicatePort}`;
const FORM = 'application/x-www-form-urlencoded';
const TEXT = 'text/plain';

interface Expected {
  readonly path: string;
  readonly method: 'GET' | 'POST';
  /** Parameters and how they travel; absent: none. */
  readonly params?: {
    readonly values: Record<string, string>;
    readonly in: 'query' | 'form';
    readonly media?: string;
  };
}

/** Contract 4.4, written out per release: the legacy endpoints a `role` of `release` serves. */
function expectedAt(role: HttpRole, release: Release): Expected[] {
  const at = (since: Release): boolean => isAtLeast(release, since);
  const common: Expected[] = [
    { path: '/conf', method: 'GET' },
    { path: '/listDynamicConfigs', method: 'GET' },
    { path: '/threadDump', method: 'GET' },
    { path: '/applications', method: 'GET' },
    { path: at('0.5.0') ? '/shuffle' : '/shuffles', method: 'GET' },
    { path: '/workerInfo', method: 'GET' },
    ...(at('0.6.0') ? [] : [{ path: '/listTopDiskUsedApps', method: 'GET' as const }]),
  ];
  if (role === 'master') {
    const exclude: Expected = at('0.5.0')
      ? {
          path: '/exclude',
          method: 'POST',
          params: { values: { add: ID }, in: 'form', media: at('0.5.1') ? FORM : TEXT },
        }
      : { path: '/exclude', method: 'GET', params: { values: { add: ID }, in: 'query' } };
    const event: Expected = at('0.5.1')
      ? {
          path: '/sendWorkerEvent',
          method: 'POST',
          params: { values: { type: 'Decommission', workers: ID }, in: 'form', media: FORM },
        }
      : {
          path: '/sendWorkerEvent',
          method: 'GET',
          params: { values: { type: 'Decommission', workers: ID }, in: 'query' },
        };
    return [
      ...common,
      { path: '/hostnames', method: 'GET' },
      { path: '/masterGroupInfo', method: 'GET' },
      { path: '/lostWorkers', method: 'GET' },
      { path: at('0.3.0') ? '/excludedWorkers' : '/blacklistedWorkers', method: 'GET' },
      { path: '/shutdownWorkers', method: 'GET' },
      { path: '/decommissionWorkers', method: 'GET' },
      { path: '/workerEventInfo', method: 'GET' },
      exclude,
      event,
    ];
  }
  const exit: Expected = at('0.5.0')
    ? {
        path: '/exit',
        method: 'POST',
        params: { values: { type: 'GRACEFUL' }, in: 'form', media: at('0.5.1') ? FORM : TEXT },
      }
    : { path: '/exit', method: 'GET', params: { values: { type: 'GRACEFUL' }, in: 'query' } };
  return [
    ...common,
    { path: '/listPartitionLocationInfo', method: 'GET' },
    { path: '/isRegistered', method: 'GET' },
    { path: '/isDecommissioning', method: 'GET' },
    { path: '/isShutdown', method: 'GET' },
    { path: '/unavailablePeers', method: 'GET' },
    exit,
  ];
}

const RENAMED: readonly (readonly [string, string, Release])[] = [
  ['/shuffles', '/shuffle', '0.5.0'],
  ['/blacklistedWorkers', '/excludedWorkers', '0.3.0'],
];

function request(expected: Expected): {
  method: 'GET' | 'POST';
  url: string;
  payload?: string;
  headers: Record<string, string>;
} {
  const params = expected.params;
  if (params === undefined) return { method: expected.method, url: expected.path, headers: {} };
  const encoded = new URLSearchParams(params.values).toString();
  return params.in === 'query'
    ? { method: expected.method, url: `${expected.path}?${encoded}`, headers: {} }
    : {
        method: expected.method,
        url: expected.path,
        payload: encoded,
        headers: { 'content-type': params.media! },
      };
}

describe('legacy endpoints as each release serves them', () => {
  const dir = mkdtempSync(path.join(tmpdir(), 'svc-http-legacy-'));
  const dynamicFile = path.join(dir, 'dynamicConfig.yaml');
  writeFileSync(dynamicFile, '- level: SYSTEM\n  config:\n    svc.quota.user.diskBytesWritten: 10g\n');
  after(() => rmSync(dir, { recursive: true, force: true }));
  /** Dynamic configuration (FS) where the release has it (0.5.0). */
  const dynamic = (release: Release): Record<string, string> =>
    isAtLeast(release, '0.5.0')
      ? { 'svc.dynamicConfig.store.backend': 'FS', 'svc.dynamicConfig.store.fs.path': dynamicFile }
      : {};

  for (const release of KNOWN_RELEASES) {
    for (const role of ['master', 'worker'] as const) {
      describe(`a ${role} presenting ${release}`, () => {
        let app: FastifyInstance;
        let driver: StubDriver<MasterState> | StubDriver<WorkerMachineState>;
        let api: ManagementApi & { close(): void };
        before(async () => {
          const conf = confAt(role, release, dynamic(release));
          if (role === 'master') {
            const master = new StubDriver(masterStateAt(conf));
            driver = master;
            api = masterApi({
              driver: master,
              conf,
              self: { nodeId: 'master-0', rpcAddress: '127.0.0.1:9097' },
            });
          } else {
            const worker = new StubDriver(workerStateAt(conf));
            driver = worker;
            api = workerApi({ driver: worker, conf });
          }
          app = await buildManagementServer({ api });
        });
        after(async () => {
          await app.close();
        });

        it('serves exactly the contract’s legacy endpoints, in the contract’s shape', () => {
          const served = legacyEndpointsAt(role, release)
            .map((e) => `${e.method} ${e.name}`)
            .sort();
          const expected = expectedAt(role, release)
            .map((e) => `${e.method} ${e.path}`)
            .sort();
          assert.deepEqual(served, expected);
        });

        it('answers each in plain text, deprecated with a successor link from 0.6.0', async () => {
          for (const expected of expectedAt(role, release)) {
            const commandsBefore = driver.commands.length;
            const response = await app.inject(request(expected));
            // Dynamic configuration did not exist before 0.5.0: the endpoint is there, the feature is not (503).
            const unavailable = expected.path === '/listDynamicConfigs' && !isAtLeast(release, '0.5.0');
            if (unavailable) {
              assert.equal(response.statusCode, 503, response.body);
              continue;
            }
            assert.equal(response.statusCode, 200, `${expected.method} ${expected.path}: ${response.body}`);
            assert.match(String(response.headers['content-type']), /^text\/plain/);
            const deprecated = isAtLeast(release, '0.6.0');
            assert.equal(response.headers.deprecation, deprecated ? 'true' : undefined, expected.path);
            if (deprecated && expected.path !== '/listTopDiskUsedApps') {
              assert.match(String(response.headers.link), /^<\/api\/v1\/[a-z_/]+>; rel="successor-version"/);
            } else {
              assert.equal(response.headers.link, undefined);
            }
            if (expected.params !== undefined) {
              assert.equal(driver.commands.length, commandsBefore + 1, `${expected.path} sends one command`);
              const command = driver.commands.at(-1)!;
              switch (command.type) {
                case 'excludeWorkers':
                  assert.deepEqual(command.add, [ID]);
                  break;
                case 'workerEvent':
                  assert.deepEqual([command.eventType, command.workers], ['Decommission', [ID]]);
                  break;
                case 'exit':
                  assert.equal(command.exitType, 'GRACEFUL');
                  break;
                case 'quotaSettings':
                case 'congestionWatermarks':
                  assert.fail(`${expected.path} sends no ${command.type}: only the dynamic store does`);
              }
            }
          }
        });

        it('refuses another method with 405 and Allow', async () => {
          for (const expected of expectedAt(role, release)) {
            const other = expected.method === 'GET' ? 'POST' : 'GET';
            const response = await app.inject({ method: other, url: expected.path });
            assert.equal(response.statusCode, 405, `${other} ${expected.path}`);
            assert.ok(
              String(response.headers.allow).includes(expected.method),
              'String(response.headers.allow).includes(expected.method)',
            );
            assert.match(response.json<{ message: string }>().message, new RegExp(`at release ${release}`));
          }
        });

        it('takes form parameters only in the media type of the release (415 names it)', async () => {
          for (const expected of expectedAt(role, release)) {
            const media = expected.params?.media;
            if (media === undefined) continue;
            const wrong = media === FORM ? TEXT : FORM;
            const response = await app.inject({
              ...request(expected),
              headers: { 'content-type': wrong },
            });
            assert.equal(response.statusCode, 415, `${expected.path} with ${wrong}`);
            assert.ok(
              response.json<{ message: string }>().message.includes(media),
              'response.json<{ message: string }>().message.includes(media)',
            );
          }
        });

        it('names the current path for an older or newer name (404)', async () => {
          for (const [before, afterName, since] of RENAMED) {
            if (role === 'worker' && before === '/blacklistedWorkers') continue;
            const current = isAtLeast(release, since) ? afterName : before;
            const other = current === afterName ? before : afterName;
            const response = await app.inject({ method: 'GET', url: other });
            assert.equal(response.statusCode, 404, other);
            assert.ok(
              response.json<{ message: string }>().message.includes(`named ${current}`),
              'response.json<{ message: string }>().message.includes(`named ${current}`)',
            );
          }
        });

        it('says which role serves a path of the other role (404)', async () => {
          const path = role === 'master' ? '/isRegistered' : '/lostWorkers';
          const response = await app.inject({ method: 'GET', url: path });
          assert.equal(response.statusCode, 404);
          assert.match(response.json<{ message: string }>().message, /served by the (worker|master)/);
        });

        it('answers /listTopDiskUsedApps until 0.6.0, then 410 with the PromQL replacement', async () => {
          const response = await app.inject({ method: 'GET', url: '/listTopDiskUsedApps' });
          if (isAtLeast(release, '0.6.0')) {
            assert.equal(response.statusCode, 410);
            assert.ok(
              response.json<{ message: string }>().message.includes(topDiskUsedAppsQuery()),
              'response.json<{ message: string }>().message.includes(topDiskUsedAppsQuery())',
            );
          } else {
            assert.equal(response.statusCode, 200);
          }
        });

        it('has /api/v1 and its OpenAPI document from 0.6.0 only', async () => {
          for (const url of ['/api/v1/workers', '/openapi.json']) {
            const response = await app.inject({ method: 'GET', url });
            assert.equal(response.statusCode, isAtLeast(release, '0.6.0') ? 200 : 404, url);
          }
        });
      });
    }
  }
});
