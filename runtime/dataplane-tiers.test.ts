// A whole shuffle through real master and worker processes on loopback, per tier and with replication off and on,
// and with an older (0.3.x) client: the readers get exactly the records the winning maps wrote, from files on the
// tier asked for (the workers' own gauges say which tier held them).
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { LocalCluster, clientTierConf, type Tier } from './cluster/local-cluster.ts';
import { parseExposition, samplesOf } from './metrics/testing.ts';
import {
  type SmallJob,
  clientSide,
  readAndVerify,
  runVerifiedJob,
  winnersOf,
  writeMaps,
} from './testing/small-job.ts';

const JOB: SmallJob = { maps: 4, partitions: 6, recordsPerPartition: 50, recordBytes: 200 };

/** The partition files the workers hold now, and how many of them are in the memory tier (their gauges). */
async function heldFiles(cluster: LocalCluster): Promise<{ all: number; memory: number }> {
  let all = 0;
  let memory = 0;
  for (let index = 0; index < cluster.workers.length; index += 1) {
    const response = await fetch(`${cluster.workerHttpUrl(index)}/metrics/prometheus`);
    assert.equal(response.status, 200);
    for (const sample of samplesOf(parseExposition(await response.text()))) {
      if (sample.name === 'metrics_ActiveShuffleFileCount_Value') all += sample.value;
      if (sample.name === 'metrics_MemoryStorageFileCount_Value') memory += sample.value;
    }
  }
  return { all, memory };
}

for (const tier of ['disk', 'memory', 'dfs'] as const satisfies readonly Tier[]) {
  describe(`a shuffle on the ${tier} tier`, () => {
    let cluster: LocalCluster;
    before(async () => {
      cluster = await LocalCluster.start({ workers: 3, tier });
    });
    after(async () => {
      await cluster?.stop();
    });

    for (const replicate of [false, true]) {
      it(`returns exactly the pushed records with replication ${replicate ? 'on' : 'off'}`, async () => {
        const client = await clientSide(cluster.masterUrl, {
          conf: { ...clientTierConf(tier), 'svc.client.push.replicate.enabled': String(replicate) },
        });
        try {
          const winners = winnersOf(await writeMaps(client.executor, 0, JOB));
          await readAndVerify(client.executor, 0, JOB, winners);
          // Read back while the application still holds its files: every one is on the tier asked for.
          const held = await heldFiles(cluster);
          assert.ok(
            held.all >= JOB.partitions,
            `the workers hold the shuffle's files: ${JSON.stringify(held)}`,
          );
          assert.equal(
            held.memory,
            tier === 'memory' ? held.all : 0,
            `files in the memory tier of the ${tier} cluster: ${JSON.stringify(held)}`,
          );
        } finally {
          await client.close();
        }
      });
    }

    if (tier === 'disk') {
      it('serves a 0.3.x client (its own key names) the same way', async () => {
        await runVerifiedJob(cluster.masterUrl, JOB, {
          release: '0.3.2',
          conf: { 'svc.client.push.replicate.enabled': 'true' },
        });
      });

      it('gives the reader the winning attempt of a map run twice, once', async () => {
        const client = await clientSide(cluster.masterUrl, {
          conf: { 'svc.client.push.replicate.enabled': 'true' },
        });
        try {
          const results = await writeMaps(client.executor, 0, JOB, (mapId) => (mapId === 1 ? [0, 1] : [0]));
          const winners = winnersOf(results);
          await readAndVerify(client.executor, 0, JOB, winners);
        } finally {
          await client.close();
        }
      });
    }
  });
}
