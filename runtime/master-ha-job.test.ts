// A replicated shuffle job across the loss of its master group's leader, on real processes and a real etcd: three
// masters, three workers and an application given the whole group (svc://h1:p1,h2:p2,h3:p3). Once map 0 is written
// the leader is SIGKILLed; another master leads within the documented bound, the workers and the lifecycle manager
// follow it (NotLeader answers and unreachable members, core/ha/follow-leader.ts), the job completes and verifies
// every record, a shuffle registered after the failover is placed by the new leader, and the new leader shows the
// application and both shuffles.
import assert from 'node:assert/strict';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { after, before, describe, it } from 'node:test';
import { DEFAULT_HA_TIMING } from '../core/ha/timing.ts';
import { within } from './testing/deadline.ts';
import { etcdSkipReason, startTestEtcd, type TestEtcd } from './testing/etcd.ts';
import { MasterGroupProcesses } from './testing/master-group-processes.ts';
import { pollFor } from './testing/poll.ts';
import {
  clientSide,
  readAndVerify,
  recordsOf,
  winnersOf,
  writeMaps,
  type ClientSide,
  type SmallJob,
} from './testing/small-job.ts';
import { svcAdmin } from './testing/svc-admin.ts';

/** The documented bound: a SIGKILLed leader's successor serves within a lease TTL plus two seconds. */
const FAILOVER_BOUND_MS = DEFAULT_HA_TIMING.leaseTtlMs + 2_000;
/**
 * What a loaded machine may add to the bound before the test fails: the successor's start (loading the state,
 * opening its ports) took 10.3 s on this 2-core machine at a load of 20, against about 9 s alone. The measured time
 * is printed; the bound itself is docs/high-availability.md's.
 */
const LOADED_MACHINE_SLACK_MS = 5_000;
const STARTUP_WAIT_MS = 120_000;
/**
 * A worker learns its master died at its next heartbeat (a quarter of svc.master.heartbeat.worker.timeout: 30 s),
 * finds the member refused and follows the group within that one heartbeat (core/ha/follow-leader.ts,
 * resendAfterUnreachable). The wait is for that state, with room for a loaded machine.
 */
const WORKER_FOLLOWS_WITHIN_MS = 30_000 + 60_000;
const JOB: SmallJob = { maps: 4, partitions: 6, recordsPerPartition: 50, recordBytes: 64 };

if (etcdSkipReason !== undefined) console.log(`# skipping the master group job test: ${etcdSkipReason}`);

describe(
  'a replicated job across the loss of the leader of three masters',
  { skip: etcdSkipReason, timeout: 600_000 },
  () => {
    let etcd: TestEtcd;
    let dir: string;
    let processes: MasterGroupProcesses;
    let client: ClientSide | undefined;
    let groupUrl = '';

    before(async () => {
      etcd = await startTestEtcd('svc-master-ha-job');
      dir = mkdtempSync(path.join(tmpdir(), 'svc-master-ha-job-'));
      processes = await MasterGroupProcesses.onLoopback({
        etcdEndpoint: etcd.etcd.endpoint,
        dir,
        members: 3,
      });
      groupUrl = processes.url;
    });

    after(async () => {
      await client?.close().catch(() => undefined);
      await processes?.stopAll();
      await etcd?.close();
      if (dir !== undefined) rmSync(dir, { recursive: true, force: true });
    });

    async function getJson(listening: Record<string, unknown>, apiPath: string): Promise<unknown> {
      const http = listening.http as { port: number };
      const response = await fetch(`http://127.0.0.1:${http.port}${apiPath}`);
      assert.equal(response.status, 200, `${apiPath} answers 200`);
      return await response.json();
    }

    it('another master leads, the workers and the application follow it, and the job verifies', async () => {
      // m1 campaigns first on an empty etcd and leads; m2 and m3 follow it.
      const m1 = processes.startMaster('m1');
      await m1.waitForEvent('listening');
      const followers = ['m2', 'm3'].map((id) => processes.startMaster(id));
      for (const follower of followers) await follower.waitForEvent('ha.following');
      const followerHttp = followers[0]!.seen((line) => line.event === 'ha.notLeaderHttp')[0]!;
      const group = (await getJson(followerHttp, '/api/v1/masters')) as {
        leader?: { id: string };
        masterCommitInfo: { id: string; startUpRole: string; commitIndex: number }[];
      };
      assert.equal(group.leader?.id, 'm1', 'a follower names m1 as the leader');
      assert.deepEqual(
        group.masterCommitInfo.map((m) => `${m.id}:${m.startUpRole}`),
        ['m1:LEADER', 'm2:FOLLOWER', 'm3:UNKNOWN'],
        'the members and their state, as m2 knows them',
      );
      assert.ok(
        group.masterCommitInfo.every((m) => m.commitIndex > 0),
        'with the etcd revision',
      );

      // A loaded machine may take long to start a process: the startup wait is generous, the failover bound is not.
      for (const i of [0, 1, 2]) await processes.startWorker(i).waitForEvent('listening', STARTUP_WAIT_MS);
      client = await clientSide(groupUrl, {
        logLevel: 'silent',
        conf: { 'svc.client.push.replicate.enabled': 'true', 'svc.rpc.askTimeout': '10s' },
      });
      const appId = client.app.appId;

      // Map 0 is written, and its data is on the workers; then the leader dies mid-job.
      const shuffle = client.executor.shuffle(0, { maps: JOB.maps, partitions: JOB.partitions });
      const map0 = shuffle.writer(0, 0);
      recordsOf(JOB, 0, 0).forEach((records, p) => records.forEach((r) => map0.write(p, r)));
      const results = new Map([['0/0', await map0.close()]]);
      m1.kill('SIGKILL');
      const killedAt = Date.now();
      await m1.exited();
      const leading = await within(
        Promise.race(
          followers.map((follower) =>
            follower
              .waitForEvent('listening', FAILOVER_BOUND_MS + LOADED_MACHINE_SLACK_MS + 5_000)
              .then((line) => ({ follower, line })),
          ),
        ),
        'a follower leads',
        FAILOVER_BOUND_MS + LOADED_MACHINE_SLACK_MS + 5_000,
      );
      const took = Date.now() - killedAt;
      assert.ok(
        took < FAILOVER_BOUND_MS + LOADED_MACHINE_SLACK_MS,
        `a new leader served ${took} ms after the kill (bound ${FAILOVER_BOUND_MS} ms, ${LOADED_MACHINE_SLACK_MS} ms more allowed for a loaded machine)`,
      );
      const newLeader = leading.follower;
      const newId = newLeader.options.name.replace('master-', '');
      const newAddress = processes.addressOf(newId);

      // The rest of the job, then a shuffle the new leader must place.
      for (let mapId = 1; mapId < JOB.maps; mapId++) {
        const writer = shuffle.writer(mapId, 0);
        recordsOf(JOB, mapId, 0).forEach((records, p) => records.forEach((r) => writer.write(p, r)));
        results.set(`${mapId}/0`, await writer.close());
      }
      await readAndVerify(client.executor, 0, JOB, winnersOf(results));
      const after = await writeMaps(client.executor, 1, JOB);
      await readAndVerify(client.executor, 1, JOB, winnersOf(after));

      // Every worker followed the new leader, which knows all three and lost none.
      for (const worker of processes.workers) {
        await worker.waitFor(
          (line) => line.event === 'master.follow' && line.to === newAddress,
          `following ${newAddress}`,
          0,
          WORKER_FOLLOWS_WITHIN_MS,
        );
      }
      const listening = leading.line;
      const workersSeen = await pollFor(
        async () => {
          const body = (await getJson(listening, '/api/v1/workers')) as {
            workers: unknown[];
            lostWorkers: unknown[];
          };
          return body.workers.length === 3 && body.lostWorkers.length === 0 ? body : undefined;
        },
        () => `${newId} lists the three workers as registered and none lost`,
        { intervalMs: 200 },
      );
      assert.equal(workersSeen.workers.length, 3, 'three workers');
      const apps = JSON.stringify(await getJson(listening, '/api/v1/applications'));
      assert.ok(apps.includes(appId), `applications at ${newId}: ${apps}`);
      const shuffles = JSON.stringify(await getJson(listening, '/api/v1/shuffles'));
      assert.ok(
        shuffles.includes(`${appId}-0`) && shuffles.includes(`${appId}-1`),
        `shuffles at ${newId}: ${shuffles}`,
      );
      const groupNow = (await getJson(listening, '/api/v1/masters')) as { leader?: { id: string } };
      assert.equal(groupNow.leader?.id, newId, `${newId} shows itself leading`);

      // svc admin given every member (the dead one first, then the follower, then the leader) asks the leader.
      const httpOf = (line: Record<string, unknown>) =>
        `http://127.0.0.1:${(line.http as { port: number }).port}`;
      const other = followers.find((follower) => follower !== newLeader)!;
      const memberUrls = [
        httpOf(m1.seen((line) => line.event === 'listening')[0]!),
        httpOf(other.seen((line) => line.event === 'ha.notLeaderHttp')[0]!),
        httpOf(listening),
      ].join(',');
      const admin = await svcAdmin(['shuffles', '--master', memberUrls, '--json']);
      assert.equal(admin.code, 0, `svc admin shuffles: ${admin.stderr}`);
      assert.ok(admin.stdout.includes(`${appId}-1`), `svc admin shuffles: ${admin.stdout}`);
    });
  },
);
