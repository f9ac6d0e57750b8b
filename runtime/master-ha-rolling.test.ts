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
import { ServerProcess } from './cluster/server-process.ts';
import { closedPort } from './testing/closed-port.ts';
import { etcdSkipReason, startTestEtcd, type TestEtcd } from './testing/etcd.ts';
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

const MEMBERS = ['m1', 'm2', 'm3'] as const;
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
    const ports = new Map<string, number>();
    /** The running process of each member, by id. */
    const members = new Map<string, ServerProcess>();
    /** Every process started, restarts included, so that after() stops them all. */
    const started: ServerProcess[] = [];
    const workers: ServerProcess[] = [];
    let client: ClientSide | undefined;
    let groupUrl = '';

    before(async () => {
      etcd = await startTestEtcd('svc-master-ha-rolling');
      dir = mkdtempSync(path.join(tmpdir(), 'svc-master-ha-rolling-'));
      for (const id of MEMBERS) ports.set(id, await closedPort());
      groupUrl = `svc://${MEMBERS.map((id) => `127.0.0.1:${ports.get(id)}`).join(',')}`;
    });

    after(async () => {
      await client?.close().catch(() => undefined);
      for (const worker of workers) await worker.stop();
      for (const master of started) await master.stop();
      await etcd?.close();
      if (dir !== undefined) rmSync(dir, { recursive: true, force: true });
    });

    function startMaster(id: string): ServerProcess {
      const run = started.filter((master) => master.options.name === `master-${id}`).length + 1;
      const conf = [
        'svc.master.host=127.0.0.1',
        'svc.master.http.host=127.0.0.1',
        'svc.master.http.port=0',
        `svc.master.state.dir=${path.join(dir, `state-${id}`)}`,
        'svc.master.ha.enabled=true',
        `svc.master.ha.node.id=${id}`,
        `svc.master.ha.etcd.endpoints=${etcd.etcd.endpoint}`,
        ...MEMBERS.flatMap((member) => [
          `svc.master.ha.node.${member}.host=127.0.0.1`,
          `svc.master.ha.node.${member}.port=${ports.get(member)}`,
          `svc.master.ha.node.${member}.internal.port=${ports.get(member)}`,
        ]),
      ];
      const master = new ServerProcess({
        name: `master-${id}`,
        logFile: path.join(dir, `master-${id}-${run}.log`),
        args: ['master', '--log-level', 'info', ...conf.flatMap((c) => ['--conf', c])],
      });
      members.set(id, master);
      started.push(master);
      return master;
    }

    function startWorker(index: number): ServerProcess {
      const own = path.join(dir, `worker-${index}`);
      const conf = [
        'svc.worker.host=127.0.0.1',
        ...['rpc', 'push', 'fetch', 'replicate'].map((service) => `svc.worker.${service}.port=0`),
        'svc.worker.http.host=127.0.0.1',
        'svc.worker.http.port=0',
        `svc.worker.storage.dirs=${path.join(own, 'disk-1')}`,
        `svc.worker.graceful.shutdown.recoverPath=${path.join(own, 'recover')}`,
      ];
      const worker = new ServerProcess({
        name: `worker-${index}`,
        logFile: path.join(dir, `worker-${index}.log`),
        args: ['worker', groupUrl, '--log-level', 'info', ...conf.flatMap((c) => ['--conf', c])],
      });
      workers.push(worker);
      return worker;
    }

    /** A planned stop of member `id` (SIGTERM, waited out), then the same member started again, back as a follower. */
    async function restart(id: string): Promise<ServerProcess> {
      const old = members.get(id)!;
      old.kill('SIGTERM');
      const code = await old.waitForExit(STARTUP_WAIT_MS);
      assert.equal(code, 0, `${id} exits 0 on SIGTERM`);
      const again = startMaster(id);
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
      const m1 = startMaster('m1');
      await m1.waitForEvent('listening', STARTUP_WAIT_MS);
      for (const id of ['m2', 'm3']) await startMaster(id).waitForEvent('ha.following', STARTUP_WAIT_MS);
      await Promise.all([0, 1, 2].map((i) => startWorker(i).waitForEvent('listening', STARTUP_WAIT_MS)));
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
      const followers = ['m2', 'm3'].map((id) => members.get(id)!);
      const leading = Promise.race(
        followers.map((follower) =>
          follower.waitForEvent('listening', STARTUP_WAIT_MS).then((line) => ({ follower, line })),
        ),
      );
      const stoppedAt = Date.now();
      const m1Again = await restart('m1');
      const { follower: newLeader, line: listening } = await leading;
      const newId = newLeader.options.name.replace('master-', '');
      const newAddress = `127.0.0.1:${ports.get(newId)}`;
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
      for (const worker of workers) {
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
