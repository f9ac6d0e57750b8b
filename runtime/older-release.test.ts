// A cluster presenting an older release (`--release`, as during a rolling upgrade): its handshakes, legacy paths,
// metric names and clients are those of that release, end to end on real processes.
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { LocalCluster } from './cluster/local-cluster.ts';
import { runVerifiedJob, type SmallJob } from './testing/small-job.ts';

const JOB: SmallJob = { maps: 2, partitions: 3, recordsPerPartition: 20 };

describe('a cluster presenting release 0.4.1', () => {
  let cluster: LocalCluster;
  before(async () => {
    cluster = await LocalCluster.start({ workers: 2, release: '0.4.1' });
  });
  after(async () => {
    await cluster?.stop();
  });

  it('runs a 0.4.1 client’s shuffle', async () => {
    assert.equal(cluster.master.seen((line) => line.event === 'listening')[0]?.release, '0.4.1');
    assert.equal(cluster.workers[0]!.seen((line) => line.event === 'listening')[0]?.release, '0.4.1');
    await runVerifiedJob(cluster.masterUrl, JOB, { release: '0.4.1' });
  });

  it('serves the legacy paths of 0.4.1 and no /api/v1 (it arrived in 0.6.0)', async () => {
    // `/shuffles` was renamed `/shuffle` in 0.5.0 (contract 4.4): a 0.4.1 node answers the older name only.
    const shuffles = await fetch(`${cluster.masterHttpUrl}/shuffles`);
    assert.equal(shuffles.status, 200, 'GET /shuffles');
    assert.equal(shuffles.headers.get('deprecation'), null, 'deprecated only from 0.6.0');
    assert.equal((await fetch(`${cluster.masterHttpUrl}/shuffle`)).status, 404);
    const api = await fetch(`${cluster.masterHttpUrl}/api/v1/workers`);
    assert.equal(api.status, 404);
    assert.match(((await api.json()) as { message: string }).message, /0\.6\.0/);
  });

  it('exposes the metric names of 0.4.1 (LostWorkers before its 0.5.0 rename)', async () => {
    const text = await (await fetch(`${cluster.masterHttpUrl}/metrics/prometheus`)).text();
    assert.match(text, /^metrics_LostWorkers_Value\{/m);
    assert.doesNotMatch(text, /metrics_LostWorkerCount_Value/);
    assert.match(text, /^metrics_WorkerCount_Value\{[^}]*\} 2/m);
  });
});
