// A worker's own ways of stopping, on real processes: SIGTERM runs the configured graceful shutdown, after which
// the worker, started again under the same id, serves the partitions it kept; a second signal exits at once.
import assert from 'node:assert/strict';
import { afterEach, describe, it } from 'node:test';
import { connectExecutor } from './client/shuffle-client.ts';
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

const JOB: SmallJob = { maps: 3, partitions: 4, recordsPerPartition: 30, recordBytes: 120 };
const GRACEFUL = [
  'svc.worker.graceful.shutdown.enabled=true',
  'svc.worker.graceful.shutdown.checkSlotsFinished.interval=200ms',
  'svc.worker.graceful.shutdown.timeout=60s',
];

describe('stopping a worker on real processes', () => {
  let cluster: LocalCluster | undefined;
  afterEach(async () => {
    await cluster?.stop();
    cluster = undefined;
  });

  it('SIGTERM runs the graceful shutdown; restarted under the same id, the worker serves its partitions again', async () => {
    cluster = await LocalCluster.start({ workers: 2, workerConf: GRACEFUL });
    const client = await clientSide(cluster.masterUrl);
    try {
      const winners = winnersOf(await writeMaps(client.executor, 0, JOB));
      // Reading once ends the stage: every partition is committed before the worker is asked to stop.
      await readAndVerify(client.executor, 0, JOB, winners);
      const worker = cluster.workers[0]!;
      worker.kill('SIGTERM');
      assert.equal(await worker.waitForExit(), 0, 'a graceful shutdown exits 0');
      assert.ok(
        worker.seen((line) => line.event === 'process.stopping').length === 1,
        "worker.seen((line) => line.event === 'process.stopping').length === 1",
      );

      const restarted = await cluster.startWorker(0, { samePorts: true });
      const listening = await restarted.waitForEvent('listening', STARTUP_WAIT_MS);
      assert.ok(Number(listening.recoveredKeys) > 0, 'the recovery store kept the committed files');
      await restarted.waitForEvent('worker.registered', STARTUP_WAIT_MS);
      // A new executor has no cached file groups: it asks the lifecycle manager and fetches from both workers.
      const reader = connectExecutor({
        lifecycleManager: client.app.lifecycleManager,
        appId: client.app.appId,
      });
      try {
        await readAndVerify(reader, 0, JOB, winners);
      } finally {
        await reader.close();
      }
    } finally {
      await client.close();
    }
  });

  it('a second signal exits at once while the graceful shutdown waits for unfinished slots', async () => {
    cluster = await LocalCluster.start({
      workers: 2,
      workerConf: [...GRACEFUL, 'svc.worker.graceful.shutdown.timeout=10min'],
    });
    const client = await clientSide(cluster.masterUrl);
    try {
      // One map of three: the stage does not end, so the workers hold slots no commit has finished.
      const writer = client.executor.shuffle(0, { maps: JOB.maps, partitions: JOB.partitions }).writer(0);
      recordsOf(JOB, 0, 0).forEach((records, p) => records.forEach((r) => writer.write(p, r)));
      await writer.close();
      const worker = cluster.workers.find((w) => w.running)!;
      worker.kill('SIGTERM');
      await worker.waitForEvent('process.stopping');
      worker.kill('SIGTERM');
      assert.equal(await worker.waitForExit(), 130);
      assert.equal(worker.seen((line) => line.event === 'process.forcedExit').length, 1);
    } finally {
      await client.close();
    }
  });
});
