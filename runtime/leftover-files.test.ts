// Nothing leaked after a crash, on real processes: a worker killed while it holds an application's files, started
// again (graceful shutdown off: it recovers none of them), removes them once the application has ended and the
// master no longer knows its shuffles, with one log line and the LeftoverFilesRemovedCount metric: on its local disk,
// and in the DFS directory (which the chaos soak found left behind when only local disks were listed).
import assert from 'node:assert/strict';
import path from 'node:path';
import { after, before, describe, it } from 'node:test';
import { clientTierConf, LocalCluster, type Tier } from './cluster/local-cluster.ts';
import { scrapeCounter } from './metrics/testing.ts';
import { filesUnder } from './testing/files-under.ts';
import { pollUntil } from './testing/poll.ts';
import { clientSide, writeMaps, type SmallJob } from './testing/small-job.ts';

const JOB: SmallJob = { maps: 2, partitions: 4, recordsPerPartition: 20, recordBytes: 100 };

for (const tier of ['disk', 'dfs'] satisfies Tier[]) {
  describe(`files of a crashed worker on real processes (${tier})`, () => {
    let cluster: LocalCluster;
    before(async () => {
      cluster = await LocalCluster.start({
        workers: 1,
        tier,
        // Heartbeats every 0.5 s, and a grace of 1 s after the restart, so that the test need not wait an hour.
        workerConf: ['svc.master.heartbeat.worker.timeout=2s', 'svc.worker.storage.expireDirs.timeout=1s'],
      });
    });
    after(async () => {
      await cluster?.stop();
    });

    it('a restarted worker removes the files of an application the master no longer knows, and counts them', async () => {
      const disk =
        tier === 'dfs' ? path.join(cluster.dir, 'dfs') : path.join(cluster.dir, 'worker-0', 'disk-1');
      const client = await clientSide(cluster.masterUrl, { conf: clientTierConf(tier) });
      let closed = false;
      try {
        await writeMaps(client.executor, 0, JOB);
        const held = filesUnder(disk);
        assert.ok(
          held.length >= JOB.partitions,
          `the worker holds the application's files: ${held.join(', ')}`,
        );
        assert.ok(
          held.every((file) => file.includes(client.app.appId)),
          'held.every((file) => file.includes(client.app.appId))',
        );

        const killed = cluster.workers[0]!;
        killed.kill('SIGKILL');
        await killed.waitForExit();
        const restarted = await cluster.startWorker(0);
        const found = await restarted.waitForEvent('worker.leftovers.found');
        assert.equal(found.files, held.length, 'every file is a leftover: nothing was recovered');
        await restarted.waitForEvent('worker.registered');
        assert.deepEqual(filesUnder(disk).sort(), [...held].sort(), 'kept while the application lives');

        // The application ends: the master forgets its shuffles, and the next heartbeat says so.
        closed = true;
        await client.close();
        const removed = await restarted.waitForEvent('worker.leftovers.removed');
        assert.equal(removed.files, held.length);
        assert.deepEqual(removed.applications, [client.app.appId]);
        assert.equal(
          restarted.seen((line) => line.event === 'worker.leftovers.removed').length,
          1,
          'one line for the lot',
        );
        // The deletes run after the line is written; the metric is counted with it.
        assert.equal(
          await scrapeCounter(cluster.workerHttpUrl(0), 'LeftoverFilesRemovedCount'),
          held.length,
          'LeftoverFilesRemovedCount',
        );
        // The deletes were issued with the log line and complete asynchronously: the disk has no event to wait on.
        await pollUntil(
          () => filesUnder(disk).length === 0,
          () => `left: ${filesUnder(disk).join(', ')}`,
          { intervalMs: 25 },
        );
        assert.equal(restarted.seen((line) => line.event === 'worker.deleteFile.failed').length, 0);
      } finally {
        if (!closed) await client.close();
      }
    });
  });
}
