// svc.<module>.io.numConnectionsPerPeer on real processes: the connections a server accepts from one client are
// counted by the server itself (its ActiveConnectionCount gauge per port), for one connection per peer and for two,
// set by key or by the client release's default (2 before 0.4.0).
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { LocalCluster } from './cluster/local-cluster.ts';
import { parseExposition, samplesOf } from './metrics/testing.ts';
import { pollUntil } from './testing/poll.ts';
import { clientSide, readAndVerify, winnersOf, writeMaps, type SmallJob } from './testing/small-job.ts';

const JOB: SmallJob = { maps: 2, partitions: 3, recordsPerPartition: 20, recordBytes: 100 };
/** One worker holds every partition: no replica, whatever the client release's default. */
const UNREPLICATED = { 'svc.client.push.replicate.enabled': 'false' };

/** The connections the server at `url` has accepted on each port and holds open, from its own metrics. */
async function accepted(url: string): Promise<Record<string, number>> {
  const response = await fetch(`${url}/metrics/prometheus`);
  assert.equal(response.status, 200);
  const counts: Record<string, number> = {};
  for (const sample of samplesOf(parseExposition(await response.text()))) {
    if (sample.name === 'metrics_ActiveConnectionCount_Value') counts[sample.labels.service!] = sample.value;
  }
  return counts;
}

describe('connections per peer, as the servers see them', () => {
  let cluster: LocalCluster;
  before(async () => {
    cluster = await LocalCluster.start({ workers: 1 });
  });
  after(async () => {
    await cluster?.stop();
  });

  /** Waits until the master and the worker hold exactly `expected` (the worker's own link to the master aside). */
  async function seen(expected: { rpc: number; push: number; fetch: number }, what: string): Promise<void> {
    let last = '';
    await pollUntil(
      async () => {
        const master = await accepted(cluster.masterHttpUrl);
        const worker = await accepted(cluster.workerHttpUrl(0));
        const now = { rpc: (master.rpc ?? 0) - 1, push: worker.push ?? 0, fetch: worker.fetch ?? 0 };
        last = JSON.stringify(now);
        return now.rpc === expected.rpc && now.push === expected.push && now.fetch === expected.fetch;
      },
      () =>
        `${what}: the servers to hold ${JSON.stringify(expected)} connections from the client, last ${last}`,
      { intervalMs: 50 },
    );
  }

  const cases: { release: string; conf: Record<string, string>; perPeer: number; why: string }[] = [
    { release: '0.6.0', conf: {}, perPeer: 1, why: 'the default since 0.4.0' },
    {
      release: '0.6.0',
      conf: { 'svc.rpc.io.numConnectionsPerPeer': '2', 'svc.data.io.numConnectionsPerPeer': '2' },
      perPeer: 2,
      why: 'set to 2',
    },
    { release: '0.3.0', conf: {}, perPeer: 2, why: 'a 0.3.0 client’s default' },
  ];
  for (const { release, conf, perPeer, why } of cases) {
    it(`a ${release} client with ${perPeer} per peer (${why}) opens ${perPeer} to the master and to each worker port`, async () => {
      await seen({ rpc: 0, push: 0, fetch: 0 }, 'before the client');
      const client = await clientSide(cluster.masterUrlFor(release), {
        release,
        conf: { ...UNREPLICATED, ...conf },
      });
      try {
        await readAndVerify(client.executor, 0, JOB, winnersOf(await writeMaps(client.executor, 0, JOB)));
        // The lifecycle manager's connections to the master; the executor's to the worker's push and fetch ports.
        await seen({ rpc: perPeer, push: perPeer, fetch: perPeer }, `after a verified job (${why})`);
        // A second job travels on the same connections: a pool is kept, not grown.
        await readAndVerify(client.executor, 1, JOB, winnersOf(await writeMaps(client.executor, 1, JOB)));
        await seen({ rpc: perPeer, push: perPeer, fetch: perPeer }, `after a second job (${why})`);
      } finally {
        await client.close();
      }
    });
  }
});
