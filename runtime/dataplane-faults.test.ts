// Faults on real processes: a worker killed mid-job, a disk directory removed, the master restarted (with its state,
// or without it: then the application's heartbeat gives it back its shuffles). Each job must still give the readers
// exactly the winners' records.
import assert from 'node:assert/strict';
import { existsSync, rmSync } from 'node:fs';
import path from 'node:path';
import { afterEach, describe, it } from 'node:test';
import { LocalCluster } from './cluster/local-cluster.ts';
import { STARTUP_WAIT_MS } from './cluster/server-process.ts';
import {
  clientSide,
  readAndVerify,
  recordsOf,
  winnersOf,
  writeMaps,
  type SmallJob,
} from './testing/small-job.ts';
import type { MapResult, ShuffleClient } from './client/shuffle-client.ts';

const JOB: SmallJob = { maps: 4, partitions: 6, recordsPerPartition: 40, recordBytes: 200 };
const REPLICATED = { 'svc.client.push.replicate.enabled': 'true' };

async function writeMap(client: ShuffleClient, mapId: number): Promise<[string, MapResult]> {
  const writer = client.shuffle(0, { maps: JOB.maps, partitions: JOB.partitions }).writer(mapId, 0);
  recordsOf(JOB, mapId, 0).forEach((records, p) => records.forEach((r) => writer.write(p, r)));
  return [`${mapId}/0`, await writer.close()];
}

describe('faults during a job on real processes', () => {
  let cluster: LocalCluster | undefined;
  afterEach(async () => {
    await cluster?.stop();
    cluster = undefined;
  });

  it('completes and verifies when a worker is killed with SIGKILL during the push phase (replication on)', async () => {
    cluster = await LocalCluster.start({ workers: 3 });
    const client = await clientSide(cluster.masterUrl, { conf: REPLICATED });
    try {
      const results = new Map([await writeMap(client.executor, 0)]);
      cluster.workers[1]!.kill('SIGKILL');
      await cluster.workers[1]!.waitForExit();
      for (let mapId = 1; mapId < JOB.maps; mapId += 1)
        results.set(...(await writeMap(client.executor, mapId)));
      await readAndVerify(client.executor, 0, JOB, winnersOf(results));
    } finally {
      await client.close();
    }
  });

  it('moves partitions off a worker whose disk directory is removed, loses nothing, and logs why', async () => {
    cluster = await LocalCluster.start({ workers: 3 });
    const client = await clientSide(cluster.masterUrl, { conf: REPLICATED });
    try {
      const results = new Map([await writeMap(client.executor, 0)]);
      const disk = path.join(cluster.dir, 'worker-0', 'disk-1');
      assert.ok(existsSync(disk), 'existsSync(disk)');
      rmSync(disk, { recursive: true, force: true });
      // The worker's storage notices the directory go (a watcher event, or the check before a create).
      const lost = await cluster.workers[0]!.waitForEvent('worker.disk.directoryLost', STARTUP_WAIT_MS);
      assert.match(String(lost.reason), /disk-1/);
      for (let mapId = 1; mapId < JOB.maps; mapId += 1)
        results.set(...(await writeMap(client.executor, mapId)));
      await readAndVerify(client.executor, 0, JOB, winnersOf(results));
      // The pushes of the later maps failed on the disk, which the worker marked failed, and said so.
      const failed = cluster.workers[0]!.seen((line) => line.event === 'worker.disk.failed');
      assert.equal(failed.length, 1, 'one line for the one disk');
      assert.equal(failed[0]!.problem, 'READ_OR_WRITE_FAILURE');
      assert.match(String(failed[0]!.disk), /disk-1/);
    } finally {
      await client.close();
    }
  });

  // Short heartbeats, so that workers and the application notice a master that forgot them within the test.
  const QUICK_HEARTBEATS = [
    'svc.master.heartbeat.worker.timeout=4s',
    'svc.client.application.heartbeatInterval=1s',
  ];

  for (const forgetState of [false, true]) {
    it(
      forgetState
        ? 'completes a job across a master restart that lost its state: workers register again, new shuffles are placed'
        : 'completes a job across a master restart: the master remembers its workers, new shuffles are placed',
      async () => {
        cluster = await LocalCluster.start({ workers: 3, conf: QUICK_HEARTBEATS });
        const client = await clientSide(cluster.masterUrl, { conf: REPLICATED });
        try {
          const results = new Map([await writeMap(client.executor, 0)]);
          const before = new Map(cluster.workers.map((worker) => [worker, worker.lineCount] as const));
          await cluster.restartMaster('SIGKILL', { forgetState });
          if (forgetState) {
            await cluster.waitForRegistrations(before);
            // The application's heartbeat names shuffle 0, which the master takes back; until then (for an
            // application timeout) it does not tell the workers, which report it, to drop it.
            const revised = await cluster.master.waitForEvent(
              'master.application.shufflesRevised',
              STARTUP_WAIT_MS,
            );
            assert.equal(revised.shuffleIds, '0');
          } else {
            await cluster.master.waitForEvent('master.restored', STARTUP_WAIT_MS);
          }
          for (let mapId = 1; mapId < JOB.maps; mapId += 1)
            results.set(...(await writeMap(client.executor, mapId)));
          await readAndVerify(client.executor, 0, JOB, winnersOf(results));
          // A second shuffle needs slots from the restarted master.
          const second = await writeMaps(client.executor, 1, JOB);
          await readAndVerify(client.executor, 1, JOB, winnersOf(second));
          const reregistered = cluster.master.seen(
            (line) => line.event === 'master.worker.registered',
          ).length;
          assert.equal(
            reregistered,
            forgetState ? 3 : 0,
            'workers register again only with a master that forgot them',
          );
        } finally {
          await client.close();
        }
      },
    );
  }
});
