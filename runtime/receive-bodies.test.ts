// Pooled receive bodies on real workers (runtime/wire/receive-bodies.ts, runtime/driver/push-body-holds.ts): with
// every body overwritten the moment it is given back (the test hook `scribbleReturnedBodies`), replicated shuffles on
// the disk and the memory tier still read back exactly the records written, while the workers do lend bodies again.
// A body given back while a disk write, the memory tier's copy or a forward to the replica still read it would put
// the scribble into a partition file, and the reader's checks or the record comparison would fail.
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { LocalCluster, clientTierConf } from './cluster/local-cluster.ts';
import { clientSide, readAndVerify, winnersOf, writeMaps, type SmallJob } from './testing/small-job.ts';

// Merged pushes of several hundred KiB: large enough for bodies of their own (above half a 256 KiB slab).
const JOB: SmallJob = { maps: 6, partitions: 8, recordsPerPartition: 300, recordBytes: 1000 };

for (const tier of ['disk', 'memory'] as const) {
  describe(`pooled receive bodies, scribbled when given back, ${tier} tier with replication`, () => {
    let cluster: LocalCluster;
    before(async () => {
      cluster = await LocalCluster.start({ workers: 2, tier, scribbleReturnedBodies: true });
    });
    after(async () => {
      await cluster?.stop();
    });

    it('reads back every record written, while the workers lend bodies again', async () => {
      const client = await clientSide(cluster.masterUrl, {
        conf: { ...clientTierConf(tier), 'svc.client.push.replicate.enabled': 'true' },
      });
      try {
        for (let shuffleId = 0; shuffleId < 2; shuffleId += 1) {
          const winners = winnersOf(await writeMaps(client.executor, shuffleId, JOB));
          await readAndVerify(client.executor, shuffleId, JOB, winners);
        }
      } finally {
        await client.close();
      }
      const reused = cluster.workers.filter(
        (worker) => worker.seen((line) => line.event === 'worker.receiveBodies.reused').length > 0,
      );
      assert.ok(reused.length > 0, 'no worker lent a receive body again: the test proved nothing');
    });
  });
}
