// Real master processes in a high-availability group on a real etcd: the leader registers an application and a
// shuffle; SIGKILLed, another master leads within the documented bound and its management API shows both; a leader
// frozen past its lease (SIGSTOP, SIGCONT) steps down with its one log line and exits to be restarted as a follower.
import assert from 'node:assert/strict';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { after, before, describe, it } from 'node:test';
import { DEFAULT_HA_TIMING } from '../core/ha/timing.ts';
import { LocalCluster } from './cluster/local-cluster.ts';
import { planMasterGroup } from './cluster/master-group.ts';
import { ServerProcess } from './cluster/server-process.ts';
import { NOT_LEADER_EXIT_CODE } from './process/master-leadership.ts';
import { etcdSkipReason, startTestEtcd, type TestEtcd } from './testing/etcd.ts';
import { confArgs, LOOPBACK_MASTER_CONF } from './testing/master-group-processes.ts';
import { clientSide, type ClientSide } from './testing/small-job.ts';

/** The documented bound: a SIGKILLed leader's successor serves within a lease TTL plus two seconds. */
const FAILOVER_BOUND_MS = DEFAULT_HA_TIMING.leaseTtlMs + 2_000;
/**
 * What a loaded machine may add to the bound before the test fails: the successor's start (loading the state,
 * opening its ports) took 10.3 s on this 2-core machine at a load of 20, against about 9 s alone. The measured time
 * is printed; the bound itself is docs/high-availability.md's.
 */
const LOADED_MACHINE_SLACK_MS = 5_000;

if (etcdSkipReason !== undefined) console.log(`# skipping the master group tests: ${etcdSkipReason}`);

describe('a group of real masters on etcd', { skip: etcdSkipReason, timeout: 120_000 }, () => {
  let etcd: TestEtcd;
  let cluster: LocalCluster;
  let dir: string;
  let haConf: (id: string) => string[];
  const extra: ServerProcess[] = [];
  let client: ClientSide | undefined;
  let appId = '';

  before(async () => {
    etcd = await startTestEtcd('svc-master-ha');
    dir = mkdtempSync(path.join(tmpdir(), 'svc-master-ha-'));
    const group = await planMasterGroup({ etcdEndpoint: etcd.etcd.endpoint, members: 3 });
    haConf = (id) => [...group.settings(id)];
    // The cluster's own master is m1: the first to campaign on an empty etcd, it leads.
    cluster = await LocalCluster.start({ workers: 1, masterConf: haConf('m1') });
  });

  after(async () => {
    await client?.close().catch(() => undefined);
    for (const master of extra) await master.stop();
    await cluster?.stop();
    await etcd?.close();
    if (dir !== undefined) rmSync(dir, { recursive: true, force: true });
  });

  function follower(id: string): ServerProcess {
    const master = new ServerProcess({
      name: `master-${id}`,
      logFile: path.join(dir, `master-${id}.log`),
      args: [
        'master',
        '--log-level',
        'info',
        ...confArgs([
          ...LOOPBACK_MASTER_CONF,
          `svc.master.state.dir=${path.join(dir, `state-${id}`)}`,
          ...haConf(id),
        ]),
      ],
    });
    extra.push(master);
    return master;
  }

  async function getJson(master: ServerProcess, listening: Record<string, unknown>, apiPath: string) {
    const http = listening.http as { address?: string; host?: string; port: number };
    const response = await fetch(`http://127.0.0.1:${http.port}${apiPath}`);
    assert.equal(response.status, 200, `${master.options.name} ${apiPath}`);
    return await response.json();
  }

  it('a SIGKILLed leader: another leads within the bound and shows the application and shuffle', async () => {
    // Its close, after the failover, asks the dead master: the ask timeout bounds that wait.
    client = await clientSide(cluster.masterUrl, {
      logLevel: 'silent',
      conf: { 'svc.rpc.askTimeout': '3s' },
    });
    const registered = await client.app.registerShuffle(7, { maps: 2, partitions: 2 });
    assert.ok(registered !== undefined, 'the shuffle registered');
    appId = client.app.appId;

    const m2 = follower('m2');
    await m2.waitForEvent('ha.following');
    const notLeader = await m2.waitForEvent('ha.notLeaderHttp');
    const port = (notLeader.http as { port: number }).port;
    const refused = await fetch(`http://127.0.0.1:${port}/api/v1/workers/exclude`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ add: [] }),
    });
    assert.equal(refused.status, 503, 'a follower answers a command 503');
    const body = (await refused.json()) as { error: string; leader: string | null };
    assert.equal(body.error, 'not leader', 'with "not leader"');
    assert.match(String(body.leader), /^m1@127\.0\.0\.1:\d+$/, 'naming the leader');
    cluster.master.kill('SIGKILL');
    const killedAt = Date.now();
    await cluster.master.exited();
    const listening = await m2.waitForEvent('listening', FAILOVER_BOUND_MS + LOADED_MACHINE_SLACK_MS + 5_000);
    const took = Date.now() - killedAt;
    assert.ok(
      took < FAILOVER_BOUND_MS + LOADED_MACHINE_SLACK_MS,
      `m2 served ${took} ms after the kill (bound ${FAILOVER_BOUND_MS} ms, ${LOADED_MACHINE_SLACK_MS} ms more allowed for a loaded machine)`,
    );
    assert.ok(m2.seen((line) => line.event === 'ha.leading').length === 1, 'one ha.leading line');

    const apps = JSON.stringify(await getJson(m2, listening, '/api/v1/applications'));
    assert.ok(apps.includes(appId), `applications: ${apps}`);
    const shuffles = JSON.stringify(await getJson(m2, listening, '/api/v1/shuffles'));
    assert.ok(shuffles.includes(`${appId}-7`), `shuffles: ${shuffles}`);
  });

  it('a leader frozen past its lease steps down with one line when resumed, and exits to follow', async () => {
    const m2 = extra[0]!;
    const m3 = follower('m3');
    await m3.waitForEvent('ha.following');
    m2.kill('SIGSTOP');
    const listening = await m3.waitForEvent('listening', FAILOVER_BOUND_MS + LOADED_MACHINE_SLACK_MS + 5_000);
    assert.equal(listening.event, 'listening', 'm3 serves');
    m2.kill('SIGCONT');
    const code = await m2.exited();
    assert.equal(code, NOT_LEADER_EXIT_CODE);
    const stepDowns = m2.seen((line) => line.event === 'ha.stepDown');
    assert.equal(stepDowns.length, 1, 'one ha.stepDown line');
    assert.match(String(stepDowns[0]!.reason), /stops acting as leader/);
    assert.equal(m2.seen((line) => line.event === 'ha.exit').length, 1, 'one ha.exit line');
    // Nothing of the frozen leader's term survives into m3's: m3 still leads and serves the state it loaded.
    assert.equal(m3.seen((line) => line.event === 'ha.stepDown').length, 0, 'm3 still leads');
    const apps = JSON.stringify(await getJson(m3, listening, '/api/v1/applications'));
    assert.ok(apps.includes(appId), `applications at m3: ${apps}`);
  });
});
