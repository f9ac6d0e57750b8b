// The project's OpenAPI documents and the routes: each role serves exactly the /api/v1 operations its document
// describes (contract 4.1 and 4.2), every schema compiles strictly, and the document is what /openapi.json serves.
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import type { FastifyInstance } from 'fastify';
import { parse } from 'yaml';
import type { HttpRole } from '../../core/release/legacy-endpoints.ts';
import { masterApi } from './master-api.ts';
import { documentedOperations, openApiDocument, routeSchemas } from './openapi.ts';
import { buildManagementServer, type ManagementApi } from './server.ts';
import { confAt, masterStateAt, StubDriver, workerStateAt } from './testing/fixtures.ts';
import { responseValidator } from './testing/openapi-validator.ts';
import { workerApi } from './worker-api.ts';

/** Contract sections 4.1 and 4.2: the /api/v1 endpoints of each role. */
const CONTRACT: Readonly<Record<HttpRole, readonly string[]>> = {
  master: [
    'GET /api/v1/conf',
    'GET /api/v1/conf/dynamic',
    'GET /api/v1/thread_dump',
    'GET /api/v1/applications',
    'GET /api/v1/applications/hostnames',
    'GET /api/v1/shuffles',
    'GET /api/v1/masters',
    'GET /api/v1/workers',
    'POST /api/v1/workers/exclude',
    'GET /api/v1/workers/events',
    'POST /api/v1/workers/events',
  ],
  worker: [
    'GET /api/v1/conf',
    'GET /api/v1/conf/dynamic',
    'GET /api/v1/thread_dump',
    'GET /api/v1/applications',
    'GET /api/v1/shuffles',
    'GET /api/v1/shuffles/partitions',
    'GET /api/v1/workers',
    'GET /api/v1/workers/unavailable_peers',
    'POST /api/v1/workers/exit',
  ],
};

function apiOf(role: HttpRole): ManagementApi & { close(): void } {
  const conf = confAt(role, '0.6.0');
  return role === 'master'
    ? masterApi({
        driver: new StubDriver(masterStateAt(conf)),
        conf,
        self: { nodeId: 'master-0', rpcAddress: '127.0.0.1:9097' },
      })
    : workerApi({ driver: new StubDriver(workerStateAt(conf)), conf });
}

for (const role of ['master', 'worker'] as const) {
  describe(`the ${role}'s OpenAPI document`, () => {
    let app: FastifyInstance;
    before(async () => {
      app = await buildManagementServer({ api: apiOf(role) });
    });
    after(async () => {
      await app.close();
    });

    it('describes exactly the contract’s endpoints, and the routes serve exactly those', () => {
      const api = apiOf(role);
      api.close();
      const contract = [...CONTRACT[role]].sort();
      assert.deepEqual([...documentedOperations(role)].sort(), contract);
      assert.deepEqual(api.routes.map((route) => `${route.method} ${route.path}`).sort(), contract);
    });

    it('compiles strictly, every response schema of every operation', () => {
      const validator = responseValidator(role);
      for (const operation of documentedOperations(role)) {
        const [method, path] = operation.split(' ') as [string, string];
        for (const status of Object.keys(routeSchemas(role, method, path).responses)) {
          // A value no schema accepts: what matters is that the schema compiled.
          assert.notEqual(validator.check(method, path, Number(status), Symbol('x')), undefined);
        }
      }
    });

    it('is what /openapi.json and /openapi.yaml serve, and Swagger UI shows it', async () => {
      const json = await app.inject({ method: 'GET', url: '/openapi.json' });
      assert.equal(json.statusCode, 200);
      // The kept document, with `security` narrowed to what this server accepts: nothing (anonymous).
      assert.deepEqual(json.json(), JSON.parse(JSON.stringify({ ...openApiDocument(role), security: [{}] })));
      const yaml = await app.inject({ method: 'GET', url: '/openapi.yaml' });
      assert.deepEqual(parse(yaml.body), openApiDocument(role));
      const ui = await app.inject({ method: 'GET', url: '/swagger' });
      assert.equal(ui.statusCode, 200);
      assert.match(ui.body, /swagger-ui/i);
      const uiDocument = await app.inject({ method: 'GET', url: '/swagger/json' });
      assert.equal(uiDocument.json<{ paths: object }>().paths !== undefined, true);
    });

    it('every GET answers 200 with a response of its documented shape (in-process)', async () => {
      const validator = responseValidator(role);
      for (const operation of CONTRACT[role]) {
        const [method, path] = operation.split(' ') as [string, string];
        if (method !== 'GET' || path === '/api/v1/conf/dynamic') continue;
        const response = await app.inject({ method: 'GET', url: path });
        assert.equal(response.statusCode, 200, `${path}: ${response.body}`);
        const problem = validator.check(method, path, 200, response.json());
        assert.equal(problem, undefined, `${path}: ${problem}`);
      }
    });
  });
}
