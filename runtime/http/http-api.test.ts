// The management interface of a running master and workers (real processes on loopback, ports from 0): every
// /api/v1 endpoint of contract 4.1 and 4.2 in its documented shape, operator commands that reach the machines,
// the error codes, the legacy endpoints as 0.6.0 serves them, and a worker told to exit that exits.
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { createServer } from 'node:net';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { after, before, describe, it } from 'node:test';
import { parseWorkerKey, WORKER_EVENT_TYPES, type WorkerId } from '../../core/domain/index.ts';
import { topDiskUsedAppsQuery } from '../../core/release/prometheus.ts';
import { legacyEndpointsAt } from '../../core/release/legacy-endpoints.ts';
import { LocalCluster } from '../cluster/local-cluster.ts';
import { STARTUP_WAIT_MS } from '../cluster/server-process.ts';
import { within } from '../testing/deadline.ts';
import { openApiDocument } from './openapi.ts';
import { getJson, postForm, postJson, send, type RawResponse } from './testing/http-client.ts';
import { responseValidator } from './testing/openapi-validator.ts';

const masterDoc = responseValidator('master');
const workerDoc = responseValidator('worker');

interface Handle {
  readonly success: boolean;
  readonly message: string;
}

function documented(doc: typeof masterDoc, method: string, apiPath: string, response: RawResponse): void {
  assert.match(String(response.headers['content-type']), /^application\/json/, `${method} ${apiPath}`);
  const problem = doc.check(method, apiPath, response.status, response.json);
  assert.equal(problem, undefined, `${method} ${apiPath} ${response.status}: ${problem}\n${response.text}`);
}

describe('the management interface of running servers', () => {
  let cluster: LocalCluster;
  let master: string;
  let worker: string;
  let ids: WorkerId[];
  const dir = mkdtempSync(path.join(tmpdir(), 'svc-http-api-'));
  const dynamicFile = path.join(dir, 'dynamicConfig.yaml');

  before(async () => {
    writeFileSync(dynamicFile, '- level: SYSTEM\n  config:\n    svc.quota.user.diskBytesWritten: 10g\n');
    cluster = await LocalCluster.start({
      workers: 3,
      // Heartbeats 150 s apart: an event sent here is cleared again long before a worker could act on it.
      conf: ['svc.master.heartbeat.worker.timeout=10min'],
      masterConf: ['svc.dynamicConfig.store.backend=FS', `svc.dynamicConfig.store.fs.path=${dynamicFile}`],
    });
    master = cluster.masterHttpUrl;
    worker = cluster.workerHttpUrl(0);
    ids = cluster.workerIds.map((key) => parseWorkerKey(key));
  });

  after(async () => {
    await cluster?.stop();
    rmSync(dir, { recursive: true, force: true });
  });

  it('announces the bound HTTP address in the listening line', () => {
    const line = cluster.master.seen((l) => l.event === 'listening')[0]!;
    assert.deepEqual(line.http, { host: '127.0.0.1', port: cluster.masterHttpPort });
    assert.ok(
      cluster.masterHttpPort > 0 && cluster.workerHttpPorts.every((port) => port > 0),
      'cluster.masterHttpPort > 0 && cluster.workerHttpPorts.every((port) => port > 0)',
    );
  });

  it('answers every /api/v1 GET of the master in its documented shape', async () => {
    for (const apiPath of [
      '/api/v1/conf',
      '/api/v1/conf/dynamic',
      '/api/v1/thread_dump',
      '/api/v1/applications',
      '/api/v1/applications/hostnames',
      '/api/v1/shuffles',
      '/api/v1/masters',
      '/api/v1/workers',
      '/api/v1/workers/events',
    ]) {
      const response = await getJson(master, apiPath);
      assert.equal(response.status, 200, `${apiPath}: ${response.text}`);
      documented(masterDoc, 'GET', apiPath, response);
    }
    const workers = (await getJson(master, '/api/v1/workers')).json as { workers: { host: string }[] };
    assert.equal(workers.workers.length, 3);
    const conf = (await getJson(master, '/api/v1/conf')).json as {
      configs: { name: string; value: string }[];
    };
    assert.ok(
      conf.configs.some((c) => c.name === 'svc.master.http.host' && c.value === '127.0.0.1'),
      "conf.configs.some((c) => c.name === 'svc.master.http.host' && c.value === '127.0.0.1')",
    );
    const dynamic = (await getJson(master, '/api/v1/conf/dynamic?level=SYSTEM')).json as {
      configs: { level: string; configs: { name: string; value: string }[] }[];
    };
    assert.deepEqual(dynamic.configs[0]?.configs, [
      { name: 'svc.quota.user.diskBytesWritten', value: '10g' },
    ]);
  });

  it('answers every /api/v1 GET of a worker in its documented shape', async () => {
    for (const apiPath of [
      '/api/v1/conf',
      '/api/v1/thread_dump',
      '/api/v1/applications',
      '/api/v1/shuffles',
      '/api/v1/shuffles/partitions',
      '/api/v1/workers',
      '/api/v1/workers/unavailable_peers',
    ]) {
      const response = await getJson(worker, apiPath);
      assert.equal(response.status, 200, `${apiPath}: ${response.text}`);
      documented(workerDoc, 'GET', apiPath, response);
    }
    const info = (await getJson(worker, '/api/v1/workers')).json as Record<string, unknown>;
    assert.deepEqual(
      [info.host, info.rpcPort, info.isRegistered, info.isShutdown, info.isDecommissioning],
      [ids[0]!.host, ids[0]!.rpcPort, true, false, false],
    );
    const dump = (await getJson(worker, '/api/v1/thread_dump')).json as {
      threadStacks: { threadName: string; stackTrace: string[] }[];
    };
    assert.deepEqual(
      dump.threadStacks.slice(0, 2).map((t) => t.threadName),
      ['main', 'libuv'],
    );
    assert.ok(
      dump.threadStacks[1]!.stackTrace.some((handle) => handle.startsWith('tcp')),
      "dump.threadStacks[1]!.stackTrace.some((handle) => handle.startsWith('tcp'))",
    );
  });

  it('answers 503 for dynamic configuration where it is off', async () => {
    const response = await getJson(worker, '/api/v1/conf/dynamic');
    assert.equal(response.status, 503);
    documented(workerDoc, 'GET', '/api/v1/conf/dynamic', response);
    assert.match((response.json as { message: string }).message, /svc\.dynamicConfig\.store\.backend/);
  });

  it('excludes a worker and takes it back, as GET /api/v1/workers shows', async () => {
    const listed = async (field: 'excludedWorkers' | 'manualExcludedWorkers'): Promise<number[]> => {
      const body = (await getJson(master, '/api/v1/workers')).json as Record<string, { rpcPort: number }[]>;
      return body[field]!.map((w) => w.rpcPort);
    };
    const added = await postJson(master, '/api/v1/workers/exclude', { add: [ids[0]] });
    documented(masterDoc, 'POST', '/api/v1/workers/exclude', added);
    assert.equal((added.json as Handle).success, true, added.text);
    assert.deepEqual(await listed('excludedWorkers'), [ids[0]!.rpcPort]);
    assert.deepEqual(await listed('manualExcludedWorkers'), [ids[0]!.rpcPort]);

    const removed = await postJson(master, '/api/v1/workers/exclude', { remove: [ids[0]] });
    assert.equal((removed.json as Handle).success, true, removed.text);
    assert.deepEqual(await listed('excludedWorkers'), []);

    const unknown = await postJson(master, '/api/v1/workers/exclude', {
      add: [{ ...ids[0]!, rpcPort: 1 }],
    });
    assert.equal(unknown.status, 200);
    assert.equal((unknown.json as Handle).success, false);
    assert.match((unknown.json as Handle).message, /unknown to this master/);
  });

  it('takes a worker event of every type and lists it until it is cleared', async () => {
    const events = async (): Promise<string[]> => {
      const response = await getJson(master, '/api/v1/workers/events');
      documented(masterDoc, 'GET', '/api/v1/workers/events', response);
      return (response.json as { workerEvents: { event: { eventType: string } }[] }).workerEvents.map(
        (e) => e.event.eventType,
      );
    };
    const sendEvent = async (eventType: string): Promise<Handle> => {
      const response = await postJson(master, '/api/v1/workers/events', { eventType, workers: [ids[0]] });
      documented(masterDoc, 'POST', '/api/v1/workers/events', response);
      return response.json as Handle;
    };
    for (const type of WORKER_EVENT_TYPES) {
      const answer = await sendEvent(type.toUpperCase());
      assert.equal(answer.success, true, `${type}: ${answer.message}`);
      if (type === 'None' || type === 'Recommission') {
        // Nothing to do for a worker in service with no pending event: the machine says so.
        assert.match(answer.message, /unchanged/);
        assert.deepEqual(await events(), []);
      } else {
        assert.match(answer.message, new RegExp(`${type} sent`));
        assert.deepEqual(await events(), [type]);
        assert.equal((await sendEvent('NONE')).success, true);
        assert.deepEqual(await events(), []);
      }
    }
  });

  it('answers bad requests with precise codes and messages', async () => {
    const cases: [RawResponse, number, RegExp][] = [
      [await getJson(master, '/api/v1/worker'), 404, /nearest valid path is \/api\/v1\/workers/],
      [await send(master, { method: 'DELETE', path: '/api/v1/workers' }), 405, /allowed: GET, HEAD/],
      [
        await send(master, {
          method: 'POST',
          path: '/api/v1/workers/exclude',
          headers: { 'content-type': 'text/plain' },
          body: 'add=x',
        }),
        415,
        /accepts application\/json/,
      ],
      [
        await postJson(master, '/api/v1/workers/events', { eventType: 'SOON', workers: [ids[0]] }),
        400,
        /body\.eventType: expected one of/,
      ],
      [
        await postJson(master, '/api/v1/workers/exclude', { add: [{ host: 'h', rpcPort: 'x' }] }),
        400,
        /body\.add\[0\]/,
      ],
      [await postJson(worker, '/api/v1/workers/exit', { type: 'LATER' }), 400, /body\.type: expected one of/],
      [await getJson(worker, '/api/v1/conf?verbose=1'), 400, /unknown field 'verbose'/],
      [await getJson(master, '/listTopDiskUsedApps'), 410, /removed in 0\.6\.0/],
    ];
    for (const [response, status, message] of cases) {
      assert.equal(response.status, status, response.text);
      assert.match((response.json as { message: string }).message, message);
    }
    assert.equal(cases[1]![0].headers.allow, 'GET, HEAD');
    assert.ok(
      (cases[7]![0].json as { message: string }).message.includes(topDiskUsedAppsQuery()),
      '(cases[7]![0].json as { message: string }).message.includes(topDiskUsedAppsQuery())',
    );
  });

  it('serves the legacy endpoints of 0.6.0 in plain text, deprecated, with their successor', async () => {
    for (const [role, base] of [
      ['master', master],
      ['worker', worker],
    ] as const) {
      for (const endpoint of legacyEndpointsAt(role, '0.6.0')) {
        if (endpoint.method !== 'GET') continue;
        const response = await send(base, { method: 'GET', path: endpoint.name });
        const status = endpoint.name === '/listDynamicConfigs' && role === 'worker' ? 503 : 200;
        assert.equal(response.status, status, `${role} ${endpoint.name}: ${response.text}`);
        if (status !== 200) continue;
        assert.match(String(response.headers['content-type']), /^text\/plain/);
        assert.equal(response.headers.deprecation, 'true');
        assert.match(String(response.headers.link), /^<\/api\/v1\//);
      }
    }
    const registered = await send(worker, { method: 'GET', path: '/isRegistered' });
    assert.equal(registered.text.split('\n')[1], 'true');

    const excluded = await postForm(master, '/exclude', { add: cluster.workerIds[0]! });
    assert.equal(excluded.status, 200, excluded.text);
    assert.match(
      (await send(master, { method: 'GET', path: '/excludedWorkers' })).text,
      new RegExp(ids[0]!.host),
    );
    await postForm(master, '/exclude', { remove: cluster.workerIds[0]! });
    const event = await postForm(master, '/sendWorkerEvent', {
      type: 'Recommission',
      workers: cluster.workerIds[0]!,
    });
    assert.equal(event.status, 200, event.text);
    assert.equal(
      event.headers.link,
      '</api/v1/workers/events>; rel="successor-version"; title="POST /api/v1/workers/events"',
    );
    const wrongMedia = await send(master, {
      method: 'POST',
      path: '/exclude',
      headers: { 'content-type': 'text/plain' },
      body: `add=${cluster.workerIds[0]!}`,
    });
    assert.equal(wrongMedia.status, 415);
  });

  it('serves its OpenAPI document and Swagger UI', async () => {
    const document = await getJson(master, '/openapi.json');
    // Without authentication the served document offers anonymous access only.
    assert.deepEqual(
      document.json,
      JSON.parse(JSON.stringify({ ...openApiDocument('master'), security: [{}] })),
    );
    const ui = await send(worker, { method: 'GET', path: '/swagger' });
    assert.equal(ui.status, 200);
    assert.match(ui.text, /swagger-ui/i);
  });

  it('POST /api/v1/workers/exit makes the worker exit, and the master lists it shut down, not lost', async () => {
    const response = await postJson(cluster.workerHttpUrl(1), '/api/v1/workers/exit', {
      type: 'IMMEDIATELY',
    });
    documented(workerDoc, 'POST', '/api/v1/workers/exit', response);
    assert.equal((response.json as Handle).success, true, response.text);
    assert.equal(await cluster.workers[1]!.waitForExit(), 0);
    // It reported its exit before it went: a planned stop, listed in shutdownWorkers in state Exit.
    const body = (await getJson(master, '/api/v1/workers')).json as {
      lostWorkers: { worker: { rpcPort: number } }[];
      shutdownWorkers: { rpcPort: number; workerState?: string }[];
    };
    assert.deepEqual(
      body.shutdownWorkers.filter((w) => w.rpcPort === ids[1]!.rpcPort).map((w) => w.workerState),
      ['Exit'],
    );
    assert.equal(body.lostWorkers.length, 0);
  });

  it('a master whose HTTP port is taken exits 2, naming the keys', async () => {
    const blocker = createServer();
    await new Promise<void>((resolve) => blocker.listen(0, '127.0.0.1', resolve));
    const port = (blocker.address() as { port: number }).port;
    try {
      const cli = new URL('../cli/main.ts', import.meta.url).pathname;
      const child = spawn(
        process.execPath,
        [
          '--import',
          'tsx',
          cli,
          'master',
          ...['svc.master.host=127.0.0.1', 'svc.master.port=0', 'svc.master.http.host=127.0.0.1']
            .concat([
              `svc.master.http.port=${port}`,
              `svc.master.state.dir=${path.join(dir, 'blocked-master')}`,
            ])
            .flatMap((setting) => ['--conf', setting]),
        ],
        { stdio: ['ignore', 'ignore', 'pipe'] },
      );
      let stderr = '';
      child.stderr.on('data', (chunk: Buffer) => (stderr += chunk.toString()));
      const code = await within(
        new Promise<number | null>((resolve) => child.on('exit', resolve)),
        'the master whose HTTP port is taken to exit',
        STARTUP_WAIT_MS,
      );
      assert.equal(code, 2, stderr);
      assert.match(stderr, /svc\.master\.http\.host\/svc\.master\.http\.port: .*EADDRINUSE/);
    } finally {
      blocker.close();
    }
  });

  it('the legacy POST /exit (form parameter type) makes a worker exit too', async () => {
    const response = await postForm(cluster.workerHttpUrl(2), '/exit', { type: 'GRACEFUL' });
    assert.equal(response.status, 200, response.text);
    assert.match(response.text, /^success/m);
    assert.equal(await cluster.workers[2]!.waitForExit(), 0);
  });
});
