// Metrics on real processes: after a shuffle, a worker's and the master's Prometheus text carries the contract's
// names and labels, with values that match what was written (the bytes on the worker's disk, the workers known).
import assert from 'node:assert/strict';
import { readdirSync, statSync } from 'node:fs';
import path from 'node:path';
import { after, before, describe, it } from 'node:test';
import { topDiskUsedAppsQuery } from '../core/release/prometheus.ts';
import { LocalCluster } from './cluster/local-cluster.ts';
import { parseExposition, samplesOf, type ExpositionSample } from './metrics/testing.ts';
import { clientSide, readAndVerify, winnersOf, writeMaps, type SmallJob } from './testing/small-job.ts';

const JOB: SmallJob = { maps: 3, partitions: 4, recordsPerPartition: 40, recordBytes: 150 };

function bytesUnder(dir: string): number {
  let total = 0;
  for (const entry of readdirSync(dir, { withFileTypes: true, recursive: true })) {
    if (entry.isFile()) total += statSync(path.join(entry.parentPath, entry.name)).size;
  }
  return total;
}

async function scrape(url: string): Promise<ExpositionSample[]> {
  const response = await fetch(`${url}/metrics/prometheus`);
  assert.equal(response.status, 200);
  assert.match(response.headers.get('content-type') ?? '', /text\/plain/);
  return samplesOf(parseExposition(await response.text()));
}

function only(samples: readonly ExpositionSample[], name: string): ExpositionSample {
  const found = samples.filter((sample) => sample.name === name);
  assert.equal(found.length, 1, `one series of ${name}: ${JSON.stringify(found)}`);
  return found[0]!;
}

describe('metrics of real processes', () => {
  let cluster: LocalCluster;
  before(async () => {
    cluster = await LocalCluster.start({ workers: 1 });
  });
  after(async () => {
    await cluster?.stop();
  });

  it('a worker reports the bytes each application wrote to disk, and the master its workers', async () => {
    const client = await clientSide(cluster.masterUrl);
    try {
      await readAndVerify(client.executor, 0, JOB, winnersOf(await writeMaps(client.executor, 0, JOB)));
      const worker = await scrape(cluster.workerHttpUrl(0));
      const written = only(worker, 'metrics_diskBytesWritten_Value');
      assert.equal(written.labels.applicationId, client.app.appId);
      assert.equal(written.labels.role, 'Worker');
      assert.match(written.labels.instance ?? '', /^127\.0\.0\.1:\d+$/);
      assert.equal(written.labels.instance, `127.0.0.1:${new URL(cluster.workerHttpUrl(0)).port}`);
      const onDisk = bytesUnder(path.join(cluster.dir, 'worker-0', 'disk-1'));
      assert.ok(onDisk > 0, 'onDisk > 0');
      assert.equal(
        written.value,
        onDisk,
        'the bytes reported are the bytes of the application’s files on disk',
      );
      assert.equal(only(worker, 'metrics_RegisteredShuffleCount_Value').value, 1);
      const pushed = only(worker, 'metrics_PrimaryPushDataSize_Count').value;
      assert.ok(
        pushed >= JOB.maps * JOB.partitions * JOB.recordsPerPartition * (JOB.recordBytes ?? 0),
        'pushed >= JOB.maps * JOB.partitions * JOB.recordsPerPartition * (JOB.recordBytes ?? 0)',
      );
      // The section 4.3 query selects exactly these series: role "Worker" and a non-empty applicationId.
      assert.match(
        topDiskUsedAppsQuery(),
        /metrics_diskBytesWritten_Value\{role="Worker", applicationId!=""\}/,
      );

      const master = await scrape(cluster.masterHttpUrl);
      const workers = only(master, 'metrics_WorkerCount_Value');
      assert.equal(workers.value, 1);
      assert.equal(workers.labels.role, 'Master');
      assert.equal(only(master, 'metrics_RunningApplicationCount_Value').value, 1);
      const plain = await fetch(`${cluster.masterHttpUrl}/metrics`);
      assert.equal(plain.status, 200, '/metrics serves the same text');
    } finally {
      await client.close();
    }
  });
});
