// A rolling restart of a three-master group on a real etcd while a replicated shuffle job runs: between maps each
// member in turn is stopped (SIGTERM), waited out and started again under the same member id, the two followers
// first and the leader last, each back in the group before the next goes. After the leader's planned stop another
// member leads and the workers follow it (`master.follow`); the job completes and verifies every record, and the
// leader at the end knows the application, both shuffles and all three workers, none lost.
import assert from 'node:assert/strict';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { after, before, describe, it } from 'node:test';
import { DEFAULT_HA_TIMING } from '../core/ha/timing.ts';
import type { MapResult } from './client/shuffle-client.ts';
import type { ServerProcess } from './cluster/server-process.ts';
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

/** A loaded machine may take long to start a process: startups wait generously, the failover does not. */
const STARTUP_WAIT_MS = 120_000;
/** A resigning leader hands over at once; a lease TTL plus two seconds is the bound even if its resignation is lost. */
const HANDOVER_BOUND_MS = DEFAULT_HA_TIMING.leaseTtlMs + 2_000;
const JOB: SmallJob = { maps: 4, partitions: 6, recordsPerPartition: 50, recordBytes: 64 };

if (etcdSkipReason !== undefined) console.log(`# skipping the rolling restart test: ${etcdSkipReason}`);

describe(
  'a rolling restart of three masters during a replicated job',
  { skip: etcdSkipReason, timeout: 280_000 },
  () => {
    let etcd: TestEtcd;
    let dir: string;
    /** Every process started, restarts included, so that after() stops them all. */
    let processes: MasterGroupProcesses;
    let client: ClientSide | undefined;
    let groupUrl = '';

    before(async () => {
      etcd = await startTestEtcd('svc-master-ha-rolling');
      dir = mkdtempSync(path.join(tmpdir(), 'svc-master-ha-rolling-'));
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

    /** A planned stop of member `id` (SIGTERM, waited out), then the same member started again, back as a follower. */
    async function restart(id: string): Promise<ServerProcess> {
      const old = processes.members.get(id)!;
      old.kill('SIGTERM');
      const code = await old.waitForExit(STARTUP_WAIT_MS);
      assert.equal(code, 0, `${id} exits 0 on SIGTERM`);
      const again = processes.startMaster(id);
      await again.waitForEvent('ha.following', STARTUP_WAIT_MS);
      return again;
    }

    async function getJson(listening: Record<string, unknown>, apiPath: string): Promise<unknown> {
      const http = listening.http as { port: number };
      const response = await fetch(`http://127.0.0.1:${http.port}${apiPath}`);
      assert.equal(response.status, 200, `${apiPath} answers 200`);
      return await response.json();
    }

    it('restarts each member in turn, the leader last; the job verifies and nothing is lost', async (t) => {
      // m1 campaigns first on an empty etcd and leads; m2 and m3 follow it.
      const m1 = processes.startMaster('m1');
      await m1.waitForEvent('listening', STARTUP_WAIT_MS);
      for (const id of ['m2', 'm3'])
        await processes.startMaster(id).waitForEvent('ha.following', STARTUP_WAIT_MS);
      await Promise.all(
        [0, 1, 2].map((i) => processes.startWorker(i).waitForEvent('listening', STARTUP_WAIT_MS)),
      );
      client = await clientSide(groupUrl, {
        logLevel: 'silent',
        conf: { 'svc.client.push.replicate.enabled': 'true', 'svc.rpc.askTimeout': '10s' },
      });
      const appId = client.app.appId;
      const shuffle = client.executor.shuffle(0, { maps: JOB.maps, partitions: JOB.partitions });
      const results = new Map<string, MapResult>();
      const writeMap = async (mapId: number): Promise<void> => {
        const writer = shuffle.writer(mapId, 0);
        recordsOf(JOB, mapId, 0).forEach((records, p) => records.forEach((r) => writer.write(p, r)));
        results.set(`${mapId}/0`, await writer.close());
      };

      // The followers, one at a time, between maps: the leader never changes.
      await writeMap(0);
      await restart('m2');
      await writeMap(1);
      await restart('m3');
      await writeMap(2);
      assert.equal(m1.seen((line) => line.event === 'ha.stepDown').length, 0, 'm1 led throughout');

      // The leader last: one of the restarted followers leads, and m1 comes back following it.
      const followers = ['m2', 'm3'].map((id) => processes.members.get(id)!);
      const leading = Promise.race(
        followers.map((follower) =>
          follower.waitForEvent('listening', STARTUP_WAIT_MS).then((line) => ({ follower, line })),
        ),
      );
      const stoppedAt = Date.now();
      const m1Again = await restart('m1');
      const { follower: newLeader, line: listening } = await leading;
      const newId = newLeader.options.name.replace('master-', '');
      const newAddress = processes.addressOf(newId);
      const handover = newLeader.seen((line) => line.event === 'ha.leading');
      assert.equal(handover.length, 1, `${newId} says once that it leads`);
      t.diagnostic(
        `${newId} leads after the leader's restart; m1 back as a follower ${Date.now() - stoppedAt} ms later`,
      );
      assert.ok(
        m1Again.seen((line) => line.event === 'ha.following').length >= 1,
        'the old leader follows after its restart',
      );

      await writeMap(3);
      await readAndVerify(client.executor, 0, JOB, winnersOf(results));
      const later = await writeMaps(client.executor, 1, JOB);
      await readAndVerify(client.executor, 1, JOB, winnersOf(later));

      // Every worker followed the new leader, which knows all three, the application and both shuffles.
      for (const worker of processes.workers) {
        await worker.waitFor(
          (line) => line.event === 'master.follow' && line.to === newAddress,
          `following ${newAddress}`,
          0,
          HANDOVER_BOUND_MS + 30_000,
        );
      }
      await pollFor(
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
      const apps = JSON.stringify(await getJson(listening, '/api/v1/applications'));
      assert.ok(apps.includes(appId), `applications at ${newId}: ${apps}`);
      const shuffles = JSON.stringify(await getJson(listening, '/api/v1/shuffles'));
      assert.ok(
        shuffles.includes(`${appId}-0`) && shuffles.includes(`${appId}-1`),
        `shuffles at ${newId}: ${shuffles}`,
      );
      const group = (await getJson(listening, '/api/v1/masters')) as { leader?: { id: string } };
      assert.equal(group.leader?.id, newId, `${newId} shows itself leading`);
    });
  },
);
