// The management API of a follower, on real processes and a real etcd: three masters, two workers and an application
// that registered a shuffle. A follower's GET /api/v1/workers, /applications, /shuffles and a legacy read equal the
// leader's for what the leader persists, and say they were served by the follower from an etcd revision; a command
// sent to a follower is answered 503 with the leader; `svc admin` reads from followers and sends a command on to the
// leader; with etcd stopped, a follower's reads answer 503 saying that etcd cannot be read.
import assert from 'node:assert/strict';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { after, before, describe, it } from 'node:test';
import type { ServerProcess } from './cluster/server-process.ts';
import { etcdSkipReason, startTestEtcd, type TestEtcd } from './testing/etcd.ts';
import { MasterGroupProcesses } from './testing/master-group-processes.ts';
import { pollFor } from './testing/poll.ts';
import { clientSide, type ClientSide } from './testing/small-job.ts';
import { svcAdmin } from './testing/svc-admin.ts';

const STARTUP_WAIT_MS = 120_000;

interface WorkerFields {
  host: string;
  rpcPort: number;
  workerState?: string;
  networkLocation?: string;
}

/** The fields of a worker the leader persists (its id, state and rack), in the order listed. */
function persistedWorkers(body: unknown): unknown {
  const { workers, lostWorkers, excludedWorkers, shutdownWorkers, decommissioningWorkers } = body as Record<
    string,
    unknown[]
  >;
  // Sorted: a follower lists entries in the order of their keys in etcd, the leader in the order it took them in.
  const ids = (list: unknown[] | undefined) =>
    (list ?? [])
      .map((entry) => {
        const worker = ((entry as { worker?: WorkerFields }).worker ?? entry) as WorkerFields;
        return `${worker.host}:${worker.rpcPort}:${worker.workerState ?? ''}:${worker.networkLocation ?? ''}`;
      })
      .sort();
  return {
    workers: ids(workers),
    lostWorkers: ids(lostWorkers),
    excludedWorkers: ids(excludedWorkers),
    shutdownWorkers: ids(shutdownWorkers),
    decommissioningWorkers: ids(decommissioningWorkers),
  };
}

if (etcdSkipReason !== undefined) console.log(`# skipping the follower reads test: ${etcdSkipReason}`);

describe(
  'the management API of a follower of three masters',
  { skip: etcdSkipReason, timeout: 300_000 },
  () => {
    let etcd: TestEtcd;
    let dir: string;
    let processes: MasterGroupProcesses;
    let client: ClientSide | undefined;

    before(async () => {
      etcd = await startTestEtcd('svc-master-ha-follower-reads');
      dir = mkdtempSync(path.join(tmpdir(), 'svc-master-ha-follower-reads-'));
      processes = await MasterGroupProcesses.onLoopback({
        etcdEndpoint: etcd.etcd.endpoint,
        dir,
        members: 3,
      });
    });

    after(async () => {
      await client?.close().catch(() => undefined);
      await processes?.stopAll();
      await etcd?.close();
      if (dir !== undefined) rmSync(dir, { recursive: true, force: true });
    });

    /** `http://127.0.0.1:<port>` of a master's management port: the leader's `listening`, a follower's own line. */
    function httpOf(master: ServerProcess, event: 'listening' | 'ha.notLeaderHttp'): string {
      const line = master.seen((candidate) => candidate.event === event)[0];
      assert.ok(line !== undefined, `${master.options.name} logged ${event}`);
      return `http://127.0.0.1:${(line.http as { port: number }).port}`;
    }

    it('serves the reads from etcd, refuses commands with the leader, and says when etcd cannot be read', async () => {
      const m1 = processes.startMaster('m1');
      await m1.waitForEvent('listening', STARTUP_WAIT_MS);
      const followers = ['m2', 'm3'].map((id) => processes.startMaster(id));
      for (const follower of followers) await follower.waitForEvent('ha.notLeaderHttp', STARTUP_WAIT_MS);
      for (const i of [0, 1]) await processes.startWorker(i).waitForEvent('listening', STARTUP_WAIT_MS);
      client = await clientSide(processes.url, { logLevel: 'silent', conf: { 'svc.rpc.askTimeout': '10s' } });
      const appId = client.app.appId;
      assert.ok(
        (await client.app.registerShuffle(7, { maps: 2, partitions: 2 })) !== undefined,
        'registered',
      );

      const leader = httpOf(m1, 'listening');
      const follower = httpOf(followers[0]!, 'ha.notLeaderHttp');
      const get = async (base: string, apiPath: string) => {
        const response = await fetch(`${base}${apiPath}`);
        assert.equal(response.status, 200, `${base}${apiPath}: ${response.status}`);
        return { body: await response.text(), servedBy: response.headers.get('x-svc-served-by') };
      };

      // The leader persists the workers' registrations and the shuffle before it answers them: the follower's next
      // read of etcd (at most a second old) has them.
      const workers = await pollFor(
        async () => {
          const [fromLeader, fromFollower] = await Promise.all([
            get(leader, '/api/v1/workers'),
            get(follower, '/api/v1/workers'),
          ]);
          const expected = persistedWorkers(JSON.parse(fromLeader.body));
          const served = persistedWorkers(JSON.parse(fromFollower.body));
          return (expected as { workers: string[] }).workers.length === 2 &&
            JSON.stringify(served) === JSON.stringify(expected)
            ? fromFollower
            : undefined;
        },
        () => 'the follower lists the two workers as the leader does',
        { intervalMs: 200 },
      );
      assert.match(String(workers.servedBy), /^follower m2; etcd revision \d+$/, 'X-Svc-Served-By');
      for (const worker of (JSON.parse(workers.body) as { workers: Record<string, unknown>[] }).workers) {
        assert.equal(worker.heartbeatElapsedSeconds, undefined, 'no heartbeat age from a follower');
      }

      for (const apiPath of ['/api/v1/applications', '/api/v1/shuffles', '/shuffle']) {
        const [fromLeader, fromFollower] = await Promise.all([get(leader, apiPath), get(follower, apiPath)]);
        assert.match(String(fromFollower.servedBy), /^follower m2; etcd revision \d+$/, `${apiPath} header`);
        assert.equal(fromLeader.servedBy, null, `${apiPath}: the leader serves it itself`);
        if (apiPath === '/api/v1/applications') {
          const ids = (text: string) =>
            (JSON.parse(text) as { applications: { appId: string }[] }).applications.map((app) => app.appId);
          assert.deepEqual(ids(fromFollower.body), ids(fromLeader.body), 'the same applications');
          assert.deepEqual(ids(fromFollower.body), [appId]);
        } else {
          assert.equal(fromFollower.body, fromLeader.body, `${apiPath}: the same shuffles`);
          assert.ok(fromFollower.body.includes(`${appId}-7`), `${apiPath}: ${fromFollower.body}`);
        }
      }

      const refused = await fetch(`${follower}/api/v1/workers/exclude`, {
        method: 'POST',
        headers: { 'content-type': 'application/json' },
        body: JSON.stringify({ add: [] }),
      });
      assert.equal(refused.status, 503, 'a command to a follower');
      assert.equal(refused.headers.get('retry-after'), '1');
      const refusal = (await refused.json()) as { error: string; leader: string };
      assert.equal(refusal.error, 'not leader');
      assert.equal(refusal.leader, `m1@${processes.addressOf('m1')}`, 'naming the leader');

      // svc admin: a read stays on the first member that answers; a command goes on past the followers.
      const both = [follower, httpOf(followers[1]!, 'ha.notLeaderHttp')].join(',');
      const shuffles = await svcAdmin(['shuffles', '--master', both]);
      assert.equal(shuffles.code, 0, `svc admin shuffles: ${shuffles.stderr}`);
      assert.equal(shuffles.stdout, `${appId}-7\n`);
      const worker = JSON.parse((await get(leader, '/api/v1/workers')).body) as { workers: WorkerFields[] };
      const w = worker.workers[0] as WorkerFields & {
        pushPort: number;
        fetchPort: number;
        replicatePort: number;
      };
      const id = `${w.host}:${w.rpcPort}:${w.pushPort}:${w.fetchPort}:${w.replicatePort}`;
      const excluded = await svcAdmin(['exclude', '--add', id, '--master', `${both},${leader}`]);
      assert.equal(excluded.code, 0, `svc admin exclude: ${excluded.stderr}`);
      await pollFor(
        async () => {
          const body = JSON.parse((await get(follower, '/api/v1/workers')).body) as {
            excludedWorkers: WorkerFields[];
          };
          return body.excludedWorkers.some((e) => e.host === w.host && e.rpcPort === w.rpcPort)
            ? true
            : undefined;
        },
        () => 'the follower shows the worker the leader excluded',
        { intervalMs: 200 },
      );

      await client.close();
      client = undefined;
      await etcd.etcd.stop();
      const unavailable = await pollFor(
        async () => {
          const response = await fetch(`${follower}/api/v1/shuffles`);
          return response.status === 503 ? ((await response.json()) as { message: string }) : undefined;
        },
        () => 'the follower answers its reads 503 once etcd is stopped',
        // Each read waits for etcd at most the request timeout (raft.client.rpc.request.timeout, 10 s).
        { intervalMs: 200, timeoutMs: 60_000 },
      );
      assert.match(unavailable.message, /cannot read the group's state from etcd/, unavailable.message);
    });
  },
);
