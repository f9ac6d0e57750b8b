// A real partition of a three-master group, on namespace hosts (runtime/cluster/hosts.ts): etcd on a host of its
// own, each master on a host of its own, each worker on a host of its own, the job in the root namespace. Once map 0
// is written the leader's link is set down, and with it one worker's: the leader can no longer renew its lease and
// stops acting within it (its one `ha.stepDown` line), another master leads, and the deposed leader exits with
// NOT_LEADER_EXIT_CODE. Healed, the test restarts it as an operator's supervisor would (same member id, same host)
// and it follows; the worker that was cut off with it finds the new leader (`master.follow`), and the job, written
// on across the partition, verifies every record with nothing registered lost.
import assert from 'node:assert/strict';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { after, before, describe, it } from 'node:test';
import { DEFAULT_HA_TIMING } from '../core/ha/timing.ts';
import type { MapResult } from './client/shuffle-client.ts';
import { HostNetwork, hostsUnavailableReason, type Host } from './cluster/hosts.ts';
import { NOT_LEADER_EXIT_CODE } from './process/master-leadership.ts';
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

const MEMBERS = ['m1', 'm2', 'm3'] as const;
const WORKERS = 3;
/** A loaded machine may take long to start a process: startups wait generously, the failover does not. */
const STARTUP_WAIT_MS = 120_000;
/** A cut leader's lease ends at most a TTL after its last renewal; its successor serves within two seconds more. */
const FAILOVER_BOUND_MS = DEFAULT_HA_TIMING.leaseTtlMs + 2_000;
/** The port every master binds on its own host (each host has an address of its own). */
const MASTER_PORT = 9097;
const JOB: SmallJob = { maps: 4, partitions: 6, recordsPerPartition: 50, recordBytes: 64 };

const unavailable = etcdSkipReason ?? (await hostsUnavailableReason());
if (unavailable !== undefined) console.log(`# skipping the master partition test: ${unavailable}`);

describe(
  'a partition cuts the leader of three masters off mid-job (namespace hosts, real processes)',
  { skip: unavailable, timeout: 280_000 },
  () => {
    let network: HostNetwork;
    let etcd: TestEtcd | undefined;
    let dir: string;
    const hostOf = new Map<string, Host>();
    let processes: MasterGroupProcesses;
    let client: ClientSide | undefined;
    let groupUrl = '';

    before(async () => {
      // Host 0: etcd; hosts 1–3: the masters; hosts 4–6: the workers.
      network = await HostNetwork.create({ hosts: 1 + MEMBERS.length + WORKERS });
      const etcdHost = network.hosts[0]!;
      etcd = await startTestEtcd('svc-master-ha-partition', {
        host: etcdHost.address,
        namespace: etcdHost.namespace,
      });
      dir = mkdtempSync(path.join(tmpdir(), 'svc-master-ha-partition-'));
      MEMBERS.forEach((id, index) => hostOf.set(id, network.hosts[1 + index]!));
      processes = new MasterGroupProcesses({
        etcdEndpoint: etcd.etcd.endpoint,
        dir,
        members: MEMBERS.map((id) => {
          const host = hostOf.get(id)!;
          return { id, host: host.address, port: MASTER_PORT, namespace: host.namespace };
        }),
      });
      groupUrl = processes.url;
    });

    after(async () => {
      await network?.heal();
      await client?.close().catch(() => undefined);
      await processes?.stopAll();
      await etcd?.close();
      await network?.destroy();
      if (dir !== undefined) rmSync(dir, { recursive: true, force: true });
    });

    async function getJson(
      id: string,
      listening: Record<string, unknown>,
      apiPath: string,
    ): Promise<unknown> {
      const http = listening.http as { port: number };
      const response = await fetch(`http://${hostOf.get(id)!.address}:${http.port}${apiPath}`);
      assert.equal(response.status, 200, `${id} ${apiPath} answers 200`);
      return await response.json();
    }

    it('the cut leader stops within its lease, another leads, and healed, it and its worker follow', async (t) => {
      const m1 = processes.startMaster('m1');
      await m1.waitForEvent('listening', STARTUP_WAIT_MS);
      for (const id of ['m2', 'm3'])
        await processes.startMaster(id).waitForEvent('ha.following', STARTUP_WAIT_MS);
      await Promise.all(
        Array.from({ length: WORKERS }, (_, i) =>
          processes
            .startWorker(i, network.hosts[1 + MEMBERS.length + i])
            .waitForEvent('listening', STARTUP_WAIT_MS),
        ),
      );
      client = await clientSide(groupUrl, {
        logLevel: 'silent',
        conf: {
          'svc.client.push.replicate.enabled': 'true',
          'svc.rpc.askTimeout': '10s',
          'svc.client.push.timeout': '10s',
        },
      });
      const appId = client.app.appId;
      const shuffle = client.executor.shuffle(0, { maps: JOB.maps, partitions: JOB.partitions });
      const results = new Map<string, MapResult>();
      const writeMap = async (mapId: number): Promise<void> => {
        const writer = shuffle.writer(mapId, 0);
        recordsOf(JOB, mapId, 0).forEach((records, p) => records.forEach((r) => writer.write(p, r)));
        results.set(`${mapId}/0`, await writer.close());
      };
      await writeMap(0);

      // The leader's link and the last worker's go down: both are cut off from everyone (and from each other).
      const followers = ['m2', 'm3'].map((id) => processes.members.get(id)!);
      const leading = Promise.race(
        followers.map((follower) =>
          follower.waitForEvent('listening', STARTUP_WAIT_MS).then((line) => ({ follower, line })),
        ),
      );
      const cutWorker = WORKERS - 1;
      const cutWorkerHost = network.hosts[1 + MEMBERS.length + cutWorker]!;
      await network.cut(hostOf.get('m1')!);
      await network.cut(cutWorkerHost);
      const cutAt = Date.now();

      // It stops acting within its lease, before another can lead, and says so once.
      const stepDown = await m1.waitFor(
        (line) => line.event === 'ha.stepDown',
        "m1's ha.stepDown",
        0,
        FAILOVER_BOUND_MS + 5_000,
      );
      const stoppedAfter = Date.now() - cutAt;
      assert.ok(
        stoppedAfter < DEFAULT_HA_TIMING.leaseTtlMs,
        `m1 stopped acting ${stoppedAfter} ms after the cut (lease ${DEFAULT_HA_TIMING.leaseTtlMs} ms)`,
      );
      assert.match(String(stepDown.reason), /stops acting as leader/);
      const { follower: newLeader, line: listening } = await leading;
      const ledAfter = Date.now() - cutAt;
      const newId = newLeader.options.name.replace('master-', '');
      const newAddress = processes.addressOf(newId);
      assert.ok(ledAfter < FAILOVER_BOUND_MS + 5_000, `${newId} led ${ledAfter} ms after the cut`);
      assert.equal(
        await m1.waitForExit(STARTUP_WAIT_MS),
        NOT_LEADER_EXIT_CODE,
        'the deposed leader exits 75',
      );
      assert.equal(m1.seen((line) => line.event === 'ha.stepDown').length, 1, 'one ha.stepDown line');
      t.diagnostic(`m1 stepped down ${stoppedAfter} ms after the cut; ${newId} led after ${ledAfter} ms`);

      // The job goes on while the partition lasts: the application follows the new leader.
      await writeMap(1);

      // Healed: the deposed leader, restarted as its supervisor would (exit 75: start it again), follows; the worker
      // that was cut off with it finds the new leader.
      await network.heal();
      const m1Again = processes.startMaster('m1');
      await m1Again.waitForEvent('ha.following', STARTUP_WAIT_MS);
      assert.equal(m1Again.seen((line) => line.event === 'listening').length, 0, 'm1 does not lead again');
      for (const worker of processes.workers) {
        await worker.waitFor(
          (line) => line.event === 'master.follow' && line.to === newAddress,
          `following ${newAddress}`,
          0,
          STARTUP_WAIT_MS,
        );
      }

      const follows = processes.workers[cutWorker]!.seen((line) => line.event === 'master.follow');
      t.diagnostic(
        `worker ${cutWorker}, cut off with m1, followed: ${follows.map((line) => `${String(line.to)} (${String(line.why)})`).join(', ')}`,
      );
      await writeMap(2);
      await writeMap(3);
      await readAndVerify(client.executor, 0, JOB, winnersOf(results));
      const later = await writeMaps(client.executor, 1, JOB);
      await readAndVerify(client.executor, 1, JOB, winnersOf(later));

      await pollFor(
        async () => {
          const body = (await getJson(newId, listening, '/api/v1/workers')) as {
            workers: unknown[];
            lostWorkers: unknown[];
          };
          return body.workers.length === WORKERS && body.lostWorkers.length === 0 ? body : undefined;
        },
        () => `${newId} lists the ${WORKERS} workers as registered and none lost`,
        { intervalMs: 200, timeoutMs: STARTUP_WAIT_MS },
      );
      const apps = JSON.stringify(await getJson(newId, listening, '/api/v1/applications'));
      assert.ok(apps.includes(appId), `applications at ${newId}: ${apps}`);
      const shuffles = JSON.stringify(await getJson(newId, listening, '/api/v1/shuffles'));
      assert.ok(
        shuffles.includes(`${appId}-0`) && shuffles.includes(`${appId}-1`),
        `shuffles at ${newId}: ${shuffles}`,
      );
      const group = (await getJson(newId, listening, '/api/v1/masters')) as {
        leader?: { id: string };
        masterCommitInfo: { id: string; startUpRole: string }[];
      };
      assert.equal(group.leader?.id, newId, `${newId} shows itself leading`);
    });
  },
);
