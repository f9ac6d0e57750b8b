// `svc admin` as an operator runs it: a child process (node --import tsx runtime/cli/main.ts admin …) against a
// real local cluster. Excluding shows in the master's lists and taking back clears it, a decommission event makes
// the master list the worker as decommissioning, exit stops a worker, errors print the server's message and exit 1,
// an unreachable master is a clear message and exit 1; credentials go out as the Authorization header.
import assert from 'node:assert/strict';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { createServer, type IncomingHttpHeaders, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { after, before, describe, it } from 'node:test';
import { masterClient, type MasterSchemas } from '../../clients/openapi/index.ts';
import { LocalCluster } from '../cluster/local-cluster.ts';
import { pollFor } from '../testing/poll.ts';
import { pollUntil } from '../http/testing/http-client.ts';
import { clientSide, recordsOf, type ClientSide, type SmallJob } from '../testing/small-job.ts';
import { svcAdmin } from '../testing/svc-admin.ts';

interface Run {
  readonly code: number;
  readonly stdout: string;
  readonly stderr: string;
}

/** Runs `svc admin <args>` to its end (at most 60 s); SVC_ADMIN_* of this process's environment are left out. */
function ok(run: Run): string {
  assert.equal(run.code, 0, `exit ${run.code}\nstdout: ${run.stdout}\nstderr: ${run.stderr}`);
  return run.stdout;
}

function json<T>(run: Run): T {
  return JSON.parse(ok(run)) as T;
}

type Workers = MasterSchemas['WorkersResponse'];
type WorkerId = MasterSchemas['WorkerId'];

function key(worker: WorkerId): string {
  return `${worker.host}:${worker.rpcPort}:${worker.pushPort}:${worker.fetchPort}:${worker.replicatePort}`;
}

const keys = (workers: readonly WorkerId[] | undefined) => (workers ?? []).map(key);

/** A port nothing listens on: bound by the system a moment ago, then closed. */
async function closedPort(): Promise<number> {
  const server = createServer();
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as AddressInfo;
  await new Promise<void>((resolve) => server.close(() => resolve()));
  return port;
}

// One map of two, one partition, no replica: exactly one worker holds data (and keeps it, the stage never ends).
const JOB: SmallJob = { maps: 2, partitions: 1, recordsPerPartition: 5 };

describe('svc admin against a local cluster', () => {
  let cluster: LocalCluster;
  let client: ClientSide | undefined;
  let master: string;
  /** The worker that holds the partition (decommissioned below) and the other one (excluded, then exited). */
  let holder: number;
  let other: number;

  before(async () => {
    // Heartbeats every 500 ms, so that an event reaches its worker quickly.
    cluster = await LocalCluster.start({ workers: 2, conf: ['svc.master.heartbeat.worker.timeout=2s'] });
    master = cluster.masterHttpUrl;
    client = await clientSide(cluster.masterUrl, { conf: { 'svc.client.push.replicate.enabled': 'false' } });
    const writer = client.executor.shuffle(0, { maps: JOB.maps, partitions: JOB.partitions }).writer(0);
    recordsOf(JOB, 0, 0).forEach((records, p) => records.forEach((r) => writer.write(p, r)));
    await writer.close();
    // The master's count of a worker's slots follows its heartbeats: one composed before the worker reserved the
    // slot may land after the master booked it, and the next one corrects it.
    let seen = '';
    const used = await pollFor(
      async () => {
        const { data } = await masterClient(master).GET('/api/v1/workers');
        seen = JSON.stringify(data);
        return data!.workers.find((w) => (w.slotUsed ?? 0) > 0);
      },
      () => `a worker holds the partition: ${seen}`,
      { intervalMs: 100 },
    );
    holder = cluster.workerIds.indexOf(key(used));
    assert.ok(holder >= 0, 'holder >= 0');
    other = 1 - holder;
  });

  after(async () => {
    await client?.close();
    await cluster?.stop();
  });

  it('workers: a table of the registered workers and the other lists, or the raw JSON', async () => {
    const table = ok(await svcAdmin(['workers', '--master', master]));
    assert.match(table, /^workers \(2\)$/m);
    assert.match(table, /WORKER +STATE +SLOTS +HEARTBEAT +DISKS/);
    for (const id of cluster.workerIds) assert.match(table, new RegExp(`^  ${id} +Normal +\\d+ `, 'm'));
    for (const list of ['lost', 'excluded', 'shutdown', 'decommissioning'])
      assert.match(table, new RegExp(`^${list} \\(0\\): none$`, 'm'));
    const raw = json<Workers>(await svcAdmin(['workers', '--master', master, '--json']));
    assert.deepEqual(keys(raw.workers).sort(), [...cluster.workerIds].sort());
  });

  it('takes the master from the configuration when --master is left out', async () => {
    const dir = mkdtempSync(path.join(tmpdir(), 'svc-admin-'));
    try {
      const file = path.join(dir, 'svc-defaults.conf');
      const { hostname, port } = new URL(master);
      writeFileSync(file, `svc.master.http.host ${hostname}\nsvc.master.http.port ${port}\n`);
      const raw = json<Workers>(await svcAdmin(['workers', '--json', '--conf-file', file]));
      assert.equal(raw.workers.length, 2);
      // A port nothing listens on: the default is read from the file, not guessed.
      const unused = await closedPort();
      writeFileSync(file, `svc.master.http.host ${hostname}\nsvc.master.http.port ${unused}\n`);
      const refused = await svcAdmin(['workers', '--conf-file', file]);
      assert.equal(refused.code, 1);
      assert.match(refused.stderr, new RegExp(`cannot reach the master at http://${hostname}:${unused}`));
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });

  it('conf, shuffles and applications, of the master and of a worker', async () => {
    const appId = client!.app.appId;
    const conf = ok(await svcAdmin(['conf', '--master', master]));
    assert.match(conf, /^svc\.master\.http\.port += \d+$/m);
    const confJson = json<MasterSchemas['ConfResponse']>(
      await svcAdmin(['conf', '--master', master, '--json']),
    );
    assert.ok(
      confJson.configs?.some((c) => c.name === 'svc.master.http.host' && c.value === '127.0.0.1'),
      "confJson.configs?.some((c) => c.name === 'svc.master.http.host' && c.value === '127.0.0.1')",
    );
    const workerConf = ok(await svcAdmin(['conf', '--worker', cluster.workerHttpUrl(holder)]));
    assert.match(workerConf, /^svc\.worker\.http\.host += 127\.0\.0\.1$/m);

    assert.equal(ok(await svcAdmin(['shuffles', '--master', master])), `${appId}-0\n`);
    assert.deepEqual(json(await svcAdmin(['shuffles', '--master', master, '--json'])), {
      shuffleIds: [`${appId}-0`],
    });
    assert.equal(ok(await svcAdmin(['shuffles', '--worker', cluster.workerHttpUrl(holder)])), `${appId}-0\n`);
    assert.equal(ok(await svcAdmin(['shuffles', '--worker', cluster.workerHttpUrl(other)])), 'no shuffles\n');

    const apps = ok(await svcAdmin(['applications', '--master', master]));
    assert.match(apps, new RegExp(`^${appId} +\\d{4}-\\d\\d-\\d\\dT`, 'm'));
    const appsJson = json<MasterSchemas['ApplicationsHeartbeatResponse']>(
      await svcAdmin(['applications', '--master', master, '--json']),
    );
    assert.deepEqual(
      appsJson.applications.map((a) => a.appId),
      [appId],
    );
    assert.equal(
      ok(await svcAdmin(['applications', '--worker', cluster.workerHttpUrl(holder)])),
      `${appId}\n`,
    );
  });

  it('exclude --add shows in the master’s lists, --remove clears it; an unknown worker is refused', async () => {
    const id = cluster.workerIds[other]!;
    assert.match(ok(await svcAdmin(['exclude', '--add', id, '--master', master])), new RegExp(id));
    const excluded = json<Workers>(await svcAdmin(['workers', '--master', master, '--json']));
    assert.deepEqual(keys(excluded.manualExcludedWorkers), [id]);
    assert.ok(keys(excluded.excludedWorkers).includes(id), 'keys(excluded.excludedWorkers).includes(id)');
    assert.match(
      ok(await svcAdmin(['workers', '--master', master])),
      new RegExp(`^  ${id}  by an operator$`, 'm'),
    );

    ok(await svcAdmin(['exclude', '--remove', id, '--master', master]));
    const back = json<Workers>(await svcAdmin(['workers', '--master', master, '--json']));
    assert.deepEqual(keys(back.manualExcludedWorkers), []);
    assert.ok(!keys(back.excludedWorkers).includes(id), '!keys(back.excludedWorkers).includes(id)');

    const unknown = await svcAdmin(['exclude', '--add', '10.9.9.9:1:2:3:4', '--master', master]);
    assert.equal(unknown.code, 1);
    assert.match(unknown.stderr, /^svc admin exclude: .*10\.9\.9\.9:1:2:3:4/m);
    const bad = await svcAdmin(['exclude', '--add', 'host-without-ports', '--master', master]);
    assert.notEqual(bad.code, 0);
    assert.match(bad.stderr, /not a worker id; expected host:rpcPort:pushPort:fetchPort:replicatePort/);
    const nothing = await svcAdmin(['exclude', '--master', master]);
    assert.equal(nothing.code, 1);
    assert.match(nothing.stderr, /give --add or --remove/);
  });

  it('event decommission: the master lists the worker as decommissioning', async () => {
    const id = cluster.workerIds[holder]!;
    const sent = ok(await svcAdmin(['event', 'decommission', id, '--master', master]));
    assert.match(sent, new RegExp(id));
    // The event reaches the worker with its next heartbeat, and the master lists it once the worker reports it.
    const api = masterClient(master);
    await pollUntil('the worker among the master’s decommissioning workers', async () => {
      const { data } = await api.GET('/api/v1/workers');
      return keys(data?.decommissioningWorkers).includes(id) ? true : undefined;
    });
    const listed = json<Workers>(await svcAdmin(['workers', '--master', master, '--json']));
    assert.ok(keys(listed.decommissioningWorkers).includes(id), JSON.stringify(listed));
    assert.match(ok(await svcAdmin(['workers', '--master', master])), /^decommissioning \(1\)$/m);

    const refused = await svcAdmin(['event', 'sideways', id, '--master', master]);
    assert.notEqual(refused.code, 0);
    assert.match(
      refused.stderr,
      /'sideways' is not an event type; expected one of IMMEDIATELY, DECOMMISSION/,
    );
  });

  it('exit graceful on a worker: it exits', async () => {
    const run = await svcAdmin(['exit', 'graceful', '--worker', cluster.workerHttpUrl(other), '--json']);
    const answer = json<MasterSchemas['HandleResponse']>(run);
    assert.equal(answer.success, true, run.stdout);
    assert.equal(await cluster.workers[other]!.waitForExit(), 0);
  });

  it('an error prints the server’s message and exits 1', async () => {
    // A worker serves no /api/v1/workers/events: its 404 names the nearest path.
    const run = await svcAdmin(['events', '--master', cluster.workerHttpUrl(holder)]);
    assert.equal(run.code, 1);
    assert.match(
      run.stderr,
      /^svc admin events: no GET \/api\/v1\/workers\/events on this worker; .*\(HTTP 404 /m,
    );
  });

  it('an unreachable master: a clear message and exit 1', async () => {
    const port = await closedPort();
    const run = await svcAdmin(['workers', '--master', `http://127.0.0.1:${port}`]);
    assert.equal(run.code, 1);
    assert.equal(run.stdout, '');
    assert.match(
      run.stderr,
      new RegExp(
        `^svc admin workers: cannot reach the master at http://127\\.0\\.0\\.1:${port} \\(.*ECONNREFUSED`,
      ),
    );
    assert.doesNotMatch(run.stderr, /\n\s+at /, 'no stack trace');
  });
});

describe('svc admin credentials', () => {
  let server: Server;
  let url: string;
  const seen: IncomingHttpHeaders[] = [];

  before(async () => {
    // A stand-in for a node that asks for credentials: it records the headers and refuses every request.
    server = createServer((request, response) => {
      seen.push(request.headers);
      response.writeHead(401, { 'content-type': 'application/json' });
      response.end(JSON.stringify({ message: 'authentication required: svc.master.http.auth' }));
    });
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    url = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  });

  after(async () => {
    server.closeAllConnections();
    await new Promise<void>((resolve) => server.close(() => resolve()));
  });

  it('sends basic user:password, a bearer token or SVC_ADMIN_TOKEN, and prints the refusal', async () => {
    const basic = await svcAdmin(['workers', '--master', url, '--user', 'ops', '--password', 's3cret:x']);
    assert.equal(basic.code, 1);
    assert.match(
      basic.stderr,
      /^svc admin workers: authentication required: svc\.master\.http\.auth \(HTTP 401 /m,
    );
    assert.equal(seen.at(-1)?.authorization, `Basic ${Buffer.from('ops:s3cret:x').toString('base64')}`);

    assert.equal((await svcAdmin(['shuffles', '--master', url, '--token', 't0ken'])).code, 1);
    assert.equal(seen.at(-1)?.authorization, 'Bearer t0ken');

    assert.equal(
      (await svcAdmin(['applications', '--master', url], { SVC_ADMIN_TOKEN: 'from-env' })).code,
      1,
    );
    assert.equal(seen.at(-1)?.authorization, 'Bearer from-env');

    const count = seen.length;
    const half = await svcAdmin(['workers', '--master', url, '--user', 'ops']);
    assert.equal(half.code, 1);
    assert.match(half.stderr, /--user needs --password/);
    assert.equal(seen.length, count, 'nothing sent without a password');

    assert.equal((await svcAdmin(['conf', '--master', url])).code, 1);
    assert.equal(seen.at(-1)?.authorization, undefined, 'no credentials, no header');
  });
});
