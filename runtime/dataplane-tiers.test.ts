// A whole shuffle through real master and worker processes on loopback, per tier and with replication off and on,
// and with an older (0.3.x) client: the readers get exactly the records the winning maps wrote.
import { after, before, describe, it } from 'node:test';
import { LocalCluster, clientTierConf, type Tier } from './cluster/local-cluster.ts';
import {
  type SmallJob,
  clientSide,
  readAndVerify,
  runVerifiedJob,
  winnersOf,
  writeMaps,
} from './testing/small-job.ts';

const JOB: SmallJob = { maps: 4, partitions: 6, recordsPerPartition: 50, recordBytes: 200 };

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
        await runVerifiedJob(cluster.masterUrl, JOB, {
          conf: { ...clientTierConf(tier), 'svc.client.push.replicate.enabled': String(replicate) },
        });
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
