// A worker cut off by the network mid-job (issue 34): the master and each worker on a namespace host of its own, the
// job in the root namespace. Once the worker holding the most copies has taken map data, its link is set down: its
// process lives on and answers nothing (no reset, as on loopback). A replicated job must still verify, and the cut
// must cost it once and briefly: within svc.client.push.timeout + 30 s of the cut.
import assert from 'node:assert/strict';
import { afterEach, describe, it } from 'node:test';
import { workerKey } from '../core/domain/index.ts';
import { HostNetwork, hostsUnavailableReason } from './cluster/hosts.ts';
import { LocalCluster } from './cluster/local-cluster.ts';
import type { MapResult } from './client/shuffle-client.ts';
import {
  clientSide,
  readAndVerify,
  recordsOf,
  winnersOf,
  type ClientSide,
  type SmallJob,
} from './testing/small-job.ts';

// Before the transport gave up on silent peers (29 November 2026) the job had not verified 300 s after the cut:
// each push, the commit and the reads waited on the silent worker.
const unavailable = await hostsUnavailableReason();
if (unavailable !== undefined) console.log(`# skipping the cut-worker tests: ${unavailable}`);

const PUSH_TIMEOUT_MS = 10_000;
const JOB: SmallJob = { maps: 6, partitions: 12, recordsPerPartition: 40, recordBytes: 200 };
const SHUFFLE = 0;

async function writeMap(client: ClientSide, mapId: number): Promise<[string, MapResult]> {
  const writer = client.executor
    .shuffle(SHUFFLE, { maps: JOB.maps, partitions: JOB.partitions })
    .writer(mapId, 0);
  recordsOf(JOB, mapId, 0).forEach((records, p) => records.forEach((r) => writer.write(p, r)));
  return [`${mapId}/0`, await writer.close()];
}

describe(
  'a worker cut off by the network mid-map (namespace hosts, real processes)',
  { skip: unavailable },
  () => {
    let network: HostNetwork | undefined;
    let cluster: LocalCluster | undefined;
    const clients: ClientSide[] = [];

    afterEach(async () => {
      for (const client of clients.splice(0)) await client.close().catch(() => undefined);
      await cluster?.stop();
      await network?.destroy();
      cluster = undefined;
      network = undefined;
    });

    it(`verifies a replicated job within push.timeout + 30 s of the cut (push.timeout ${PUSH_TIMEOUT_MS / 1000} s)`, async (t) => {
      network = await HostNetwork.create({ hosts: 4 });
      cluster = await LocalCluster.start({ workers: 3, hosts: network });
      const client = await clientSide(cluster.masterUrl, {
        conf: {
          'svc.client.push.replicate.enabled': 'true',
          'svc.client.push.timeout': `${PUSH_TIMEOUT_MS}ms`,
        },
      });
      clients.push(client);
      const results = new Map([await writeMap(client, 0)]);

      // The worker holding the most copies (primaries and replicas) after map 0: the cut strikes where data is.
      const copies = client.app.state().shuffles.get(SHUFFLE)!.reserved;
      const held = cluster.workerIds.map(
        (id) => copies.filter((copy) => workerKey(copy.worker) === id).length,
      );
      const index = held.indexOf(Math.max(...held));
      assert.ok(held[index]! > 0, `the worker to cut holds copies of the shuffle: ${JSON.stringify(held)}`);

      await network.cut(cluster.workerHost(index)!);
      const cutAt = Date.now();
      for (let mapId = 1; mapId < JOB.maps; mapId += 1) results.set(...(await writeMap(client, mapId)));
      await readAndVerify(client.executor, SHUFFLE, JOB, winnersOf(results));
      const cost = Date.now() - cutAt;
      t.diagnostic(`verified ${cost} ms after the cut`);
      assert.ok(
        cost <= PUSH_TIMEOUT_MS + 30_000,
        `the job verified ${Math.round(cost / 1000)} s after the cut, more than push.timeout + 30 s`,
      );
    });
  },
);
