// Property-based fuzzing of a running master's and worker's management interface (real processes on loopback):
// random methods, paths, query strings, media types, bodies and form fields never get a 5xx, every error is JSON
// {message}, and the servers still answer afterwards. Requests that could stop the worker (a valid exit) are made
// invalid on purpose, so the worker under test stays up; nothing else a random request can do affects the run.
import { METHODS as HTTP_METHODS } from 'node:http';
import assert from 'node:assert/strict';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { after, before, describe, it } from 'node:test';
import fc from 'fast-check';
import { LEGACY_ENDPOINTS, legacyEndpointNames } from '../../core/release/legacy-endpoints.ts';
import { LocalCluster } from '../cluster/local-cluster.ts';
import { documentedOperations } from './openapi.ts';
import { requestPath } from './server.ts';
import { getJson, send, type RawRequest } from './testing/http-client.ts';

const KNOWN_PATHS = [
  ...new Set([
    ...documentedOperations('master').map((operation) => operation.split(' ')[1]!),
    ...documentedOperations('worker').map((operation) => operation.split(' ')[1]!),
    ...LEGACY_ENDPOINTS.flatMap((endpoint) => legacyEndpointNames(endpoint)),
    '/openapi.json',
    '/openapi.yaml',
    '/swagger',
    '/swagger/json',
    '/',
  ]),
];

const METHODS = ['GET', 'POST', 'PUT', 'DELETE', 'PATCH', 'OPTIONS', 'HEAD'];
const MEDIA_TYPES = [
  'application/json',
  'application/json; charset=utf-8',
  'APPLICATION/JSON',
  'text/plain',
  'text/plain; charset=utf-8',
  'application/x-www-form-urlencoded',
  'application/x-www-form-urlencoded; charset=utf-99',
  'multipart/form-data; boundary=x',
  'application/octet-stream',
  ';',
  'application/json;',
];

const segment = fc.stringMatching(/^[A-Za-z0-9._~!$&'()*+,;=:@-]{0,12}$/);
const percent = fc.constantFrom('%', '%2', '%zz', '%2F', '%00', '%e0%a4%a', '%C3%A9', '%20', '%2e%2e');
const pathArb = fc.oneof(
  fc.constantFrom(...KNOWN_PATHS),
  fc.tuple(fc.constantFrom(...KNOWN_PATHS), segment).map(([known, extra]) => `${known}/${extra}`),
  fc
    .tuple(fc.constantFrom(...KNOWN_PATHS), fc.constantFrom('/', '//', '%2F', '.', '/..', '/%2e%2e', 'X'))
    .map(([known, extra]) => `${known}${extra}`),
  fc.array(fc.oneof(segment, percent), { maxLength: 5 }).map((parts) => `/${parts.join('/')}`),
);

const fieldName = fc.oneof(
  fc.constantFrom(
    'add',
    'remove',
    'type',
    'workers',
    'eventType',
    'level',
    'tenant',
    'name',
    'x',
    '__proto__',
  ),
  fc.string({ unit: 'grapheme', maxLength: 8 }),
);
const fieldValue = fc.oneof(
  fc.string({ unit: 'grapheme', maxLength: 30 }),
  fc.constantFrom('NONE', 'IMMEDIATELY', 'Decommission', 'SYSTEM', 'h:1:2:3:4', 'h:1:2:3', ',,', 'a:b:c:d:e'),
);
const queryArb = fc.oneof(
  fc.constant(''),
  fc
    .array(fc.tuple(fieldName, fieldValue), { maxLength: 4 })
    .map((pairs) => pairs.map(([k, v]) => `${encodeURIComponent(k)}=${encodeURIComponent(v)}`).join('&')),
  fc.stringMatching(/^[A-Za-z0-9=&%+;]{0,20}$/),
);

const workerId = fc.record(
  {
    host: fc.oneof(fc.string({ maxLength: 10 }), fc.constant('h'), fc.integer()),
    rpcPort: fc.oneof(fc.integer(), fc.double(), fc.string({ maxLength: 3 }), fc.constant(2 ** 40)),
    pushPort: fc.integer({ min: -1, max: 70_000 }),
    fetchPort: fc.integer({ min: 0, max: 65_535 }),
    replicatePort: fc.integer({ min: 0, max: 65_535 }),
  },
  { requiredKeys: [] },
);
const requestObject = fc.record(
  {
    add: fc.oneof(fc.array(workerId, { maxLength: 3 }), fc.jsonValue()),
    remove: fc.array(workerId, { maxLength: 3 }),
    eventType: fc.oneof(
      fc.constantFrom('NONE', 'RECOMMISSION', 'DECOMMISSION', 'decommission', 'Graceful', ''),
      fc.jsonValue(),
    ),
    workers: fc.oneof(fc.array(workerId, { maxLength: 3 }), fc.jsonValue()),
    type: fc.oneof(fc.constantFrom('LATER', 'graceful', ''), fc.jsonValue()),
    extra: fc.jsonValue(),
  },
  { requiredKeys: [] },
);
const bodyArb: fc.Arbitrary<string | Uint8Array | undefined> = fc.oneof(
  fc.constant(undefined),
  fc.jsonValue().map((value) => JSON.stringify(value)),
  requestObject.map((value) => JSON.stringify(value)),
  fc
    .array(fc.tuple(fieldName, fieldValue), { maxLength: 4 })
    .map((pairs) => new URLSearchParams(pairs).toString()),
  fc.string({ unit: 'grapheme', maxLength: 60 }),
  fc.uint8Array({ maxLength: 64 }),
  fc.constantFrom(
    '{"__proto__": {"polluted": true}}',
    '{"constructor": {"prototype": {"polluted": true}}}',
    `${'['.repeat(3_000)}${']'.repeat(3_000)}`,
    '{"add": [{"host": "h", "rpcPort": 1e400, "pushPort": 1, "fetchPort": 1, "replicatePort": 1}]}',
    'x'.repeat(1_100_000),
  ),
);

const requestArb = fc.record({
  method: fc.oneof(fc.constantFrom(...METHODS), fc.stringMatching(/^[A-Z]{1,7}$/)),
  path: pathArb,
  query: queryArb,
  contentType: fc.option(
    fc.oneof(fc.constantFrom(...MEDIA_TYPES), fc.stringMatching(/^[\x20-\x7e]{0,30}$/)),
    {
      nil: undefined,
    },
  ),
  body: bodyArb,
});

type Fuzzed = typeof requestArb extends fc.Arbitrary<infer T> ? T : never;

/** Fastify's default body limit, which the management interface keeps (runtime/http/server.ts answers 413 past it). */
const SERVER_BODY_LIMIT_BYTES = 1024 * 1024;

function bodyBytes(request: RawRequest): number {
  return request.body === undefined ? 0 : Buffer.byteLength(request.body);
}

/** Whether a request could reach a worker's exit endpoint (the router decodes the path and folds slashes). */
function reachesExit(path: string): boolean {
  const decoded = requestPath(path);
  if (decoded === undefined) return false;
  const normalized = decoded.replace(/\/{2,}/g, '/').replace(/(.)\/+$/, '$1');
  return normalized === '/api/v1/workers/exit' || normalized === '/exit';
}

function toRequest(fuzzed: Fuzzed, role: 'master' | 'worker'): RawRequest {
  const path = fuzzed.query === '' ? fuzzed.path : `${fuzzed.path}?${fuzzed.query}`;
  let { contentType, body } = fuzzed;
  if (role === 'worker' && reachesExit(fuzzed.path)) {
    // Keep the worker up: a body no exit endpoint accepts, whatever else the request is.
    const api = requestPath(fuzzed.path)!.includes('/api/');
    contentType = api ? 'application/json' : 'application/x-www-form-urlencoded';
    body = api ? '{"type":"NOT-AN-EXIT-TYPE"}' : 'type=not-an-exit-type';
  }
  return {
    method: fuzzed.method,
    path,
    headers: contentType === undefined ? {} : { 'content-type': contentType },
    ...(body === undefined ? {} : { body }),
  };
}

describe('fuzzing the management interface of running servers', () => {
  let cluster: LocalCluster;
  const dir = mkdtempSync(path.join(tmpdir(), 'svc-http-fuzz-'));
  before(async () => {
    // Dynamic configuration on, so that its endpoints answer (off, they answer 503 by design).
    const dynamicFile = path.join(dir, 'dynamicConfig.yaml');
    writeFileSync(
      dynamicFile,
      '- level: TENANT\n  tenantId: t\n  config:\n    svc.quota.user.diskFileCount: 5\n',
    );
    cluster = await LocalCluster.start({
      workers: 1,
      conf: ['svc.dynamicConfig.store.backend=FS', `svc.dynamicConfig.store.fs.path=${dynamicFile}`],
    });
  });
  after(async () => {
    await cluster?.stop();
    rmSync(dir, { recursive: true, force: true });
  });

  for (const role of ['master', 'worker'] as const) {
    it(`never answers the ${role} with a 5xx, and every error is JSON {message}`, async () => {
      const base = role === 'master' ? cluster.masterHttpUrl : cluster.workerHttpUrl(0);
      const statuses = new Map<number, number>();
      await fc.assert(
        fc.asyncProperty(requestArb, async (fuzzed) => {
          const request = toRequest(fuzzed, role);
          let response;
          try {
            response = await send(base, request);
          } catch (error) {
            // The client refused to send it (a method or header node:http rejects): nothing reached the server.
            if (error instanceof TypeError || (error as { code?: string }).code?.startsWith('ERR_') === true)
              return;
            // A method node's HTTP parser does not know is refused at the connection (400, then closed), and a
            // body over the server's limit is refused (413 or 415) before it is read, the connection closed behind
            // the answer: with the body still being written, the client may see the close, not the answer.
            const code = (error as { code?: string }).code;
            const refusedUnread =
              !HTTP_METHODS.includes(request.method) || bodyBytes(request) > SERVER_BODY_LIMIT_BYTES;
            if (refusedUnread && (code === 'EPIPE' || code === 'ECONNRESET')) return;
            throw error;
          }
          statuses.set(response.status, (statuses.get(response.status) ?? 0) + 1);
          assert.ok(
            response.status < 500,
            `${request.method} ${request.path}: ${response.status} ${response.text}`,
          );
          if (response.status >= 400 && request.method !== 'HEAD') {
            assert.match(String(response.headers['content-type']), /^application\/json/, response.text);
            const message = (response.json as { message?: unknown } | undefined)?.message;
            assert.equal(typeof message, 'string', response.text);
          }
        }),
        { numRuns: 400 },
      );
      assert.equal((await getJson(base, '/api/v1/workers')).status, 200, 'still answers');
      // The requests reached the server and met its every kind of answer, not only one refusal.
      const answered = [...statuses.values()].reduce((sum, n) => sum + n, 0);
      assert.ok(answered >= 300, `only ${answered} of 400 requests were answered`);
      for (const status of [200, 400, 404, 405, 415]) {
        assert.ok((statuses.get(status) ?? 0) > 0, `no ${status} among ${JSON.stringify([...statuses])}`);
      }
    });
  }

  it('left both servers running', () => {
    assert.equal(cluster.master.running, true);
    assert.equal(cluster.workers[0]!.running, true);
  });
});
