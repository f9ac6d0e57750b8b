// A lost worker on real processes (issue 26, item 4): a worker holding partitions is frozen with SIGSTOP past the
// heartbeat timeout; the master lists it as lost, the map that pushes meanwhile revives its partitions on the other
// workers, and after SIGCONT the worker registers again and serves: the job verifies, and a second application's
// shuffle is placed on it and verifies. The bound itself (when a frozen worker is lost) is a property of the master
// machine, core/machines/master/lost-worker-bound.test.ts; here the worker stays frozen until the master says so.
import assert from 'node:assert/strict';
import { afterEach, describe, it } from 'node:test';
import { workerKey } from '../core/domain/index.ts';
import { LocalCluster } from './cluster/local-cluster.ts';
import type { MapResult } from './client/shuffle-client.ts';
import { getJson } from './http/testing/http-client.ts';
import { scrapeGauge } from './metrics/testing.ts';
import {
  clientSide,
  readAndVerify,
  recordsOf,
  winnersOf,
  writeMaps,
  type ClientSide,
  type SmallJob,
} from './testing/small-job.ts';

// T = 2 s: workers heartbeat every 500 ms, the master checks every 2 s, so a frozen worker is lost within 2-4 s.
// svc.rpc.askTimeout is the same on servers and clients, as it must be: a primary gives up forwarding to a frozen
// replica (PUSH_DATA_TIMEOUT_REPLICA, charged to the replica) before the client gives up on the primary (2 × it).
const SERVERS = ['svc.master.heartbeat.worker.timeout=2s', 'svc.rpc.askTimeout=4s'];
const CLIENT = {
  'svc.client.push.replicate.enabled': 'true',
  // The application hears of the lost worker at its next heartbeat, and a push to the frozen worker times out in
  // 2 × 4 s (replication doubles it) instead of 2 minutes.
  'svc.client.application.heartbeatInterval': '500ms',
  'svc.rpc.askTimeout': '4s',
};
const JOB: SmallJob = { maps: 3, partitions: 6, recordsPerPartition: 50, recordBytes: 100 };
const SHUFFLE = 0;

interface LostWorkers {
  readonly workers: readonly { readonly rpcPort: number; readonly host: string }[];
  readonly lostWorkers: readonly {
    readonly worker: { readonly rpcPort: number };
    readonly timestamp: number;
  }[];
}

async function workersOf(cluster: LocalCluster): Promise<LostWorkers> {
  const response = await getJson(cluster.masterHttpUrl, '/api/v1/workers');
  assert.equal(response.status, 200, response.text);
  return response.json as LostWorkers;
}

async function writeMap(client: ClientSide, mapId: number): Promise<[string, MapResult]> {
  const writer = client.executor
    .shuffle(SHUFFLE, { maps: JOB.maps, partitions: JOB.partitions })
    .writer(mapId, 0);
  recordsOf(JOB, mapId, 0).forEach((records, p) => records.forEach((r) => writer.write(p, r)));
  return [`${mapId}/0`, await writer.close()];
}

describe('a worker frozen past the heartbeat timeout (real processes)', () => {
  let cluster: LocalCluster | undefined;
  const clients: ClientSide[] = [];
  let frozen: (() => void) | undefined;
  afterEach(async () => {
    frozen?.(); // never leave a stopped process behind, even when the test failed
    frozen = undefined;
    for (const client of clients.splice(0)) await client.close().catch(() => undefined);
    await cluster?.stop();
    cluster = undefined;
  });

  it('is listed lost, its partitions revive elsewhere, and after SIGCONT it registers again and serves', async () => {
    cluster = await LocalCluster.start({ workers: 3, conf: SERVERS });
    const client = await clientSide(cluster.masterUrl, { conf: CLIENT });
    clients.push(client);
    const results = new Map([await writeMap(client, 0)]);

    // The worker holding the most copies of the shuffle (primaries and replicas) after map 0.
    const copies = client.app.state().shuffles.get(SHUFFLE)!.reserved;
    const held = cluster.workerIds.map((id) => copies.filter((copy) => workerKey(copy.worker) === id).length);
    const index = held.indexOf(Math.max(...held));
    const victim = cluster.workers[index]!;
    const id = cluster.workerIds[index]!;
    const rpcPort = Number(id.split(':')[1]);
    assert.ok(held[index]! > 0, 'the frozen worker holds partitions of the shuffle');

    const masterLines = cluster.master.lineCount;
    const workerLines = victim.lineCount;
    victim.kill('SIGSTOP');
    frozen = () => victim.kill('SIGCONT');
    const lost = await cluster.master.waitFor(
      (line) => line.event === 'master.worker.lost' && line.worker === id,
      'the frozen worker declared lost',
      masterLines,
    );
    assert.match(String(lost.cause), /no heartbeat for more than 2000 ms/);
    const listed = await workersOf(cluster);
    assert.ok(
      listed.lostWorkers.some((entry) => entry.worker.rpcPort === rpcPort),
      'GET /api/v1/workers lists it in lostWorkers',
    );
    assert.equal(
      listed.workers.some((worker) => worker.rpcPort === rpcPort),
      false,
      'and no longer among the registered workers',
    );
    assert.equal(await scrapeGauge(cluster.masterHttpUrl, 'LostWorkerCount'), 1);
    assert.equal(await scrapeGauge(cluster.masterHttpUrl, 'WorkerCount'), 2);

    // A map pushes while the worker is frozen: what was placed on it revives on the other workers.
    results.set(...(await writeMap(client, 1)));
    const revived = client.app
      .state()
      .shuffles.get(SHUFFLE)!
      .reserved.filter((copy) => copy.epoch > 0);
    assert.ok(revived.length > 0, 'partitions were revived while the worker was frozen');
    assert.ok(
      revived.every((copy) => workerKey(copy.worker) !== id),
      'no revived copy was placed on the lost worker',
    );

    victim.kill('SIGCONT');
    frozen = undefined;
    await victim.waitFor(
      (line) => line.event === 'worker.heartbeat.unknownToMaster',
      'the master telling the resumed worker to register again',
      workerLines,
    );
    await victim.waitFor((line) => line.event === 'worker.registered', 'its registration again', workerLines);
    const back = await workersOf(cluster);
    assert.ok(
      back.workers.some((worker) => worker.rpcPort === rpcPort),
      'the worker is registered again',
    );
    assert.equal(
      back.lostWorkers.some((entry) => entry.worker.rpcPort === rpcPort),
      false,
      'and no longer listed as lost',
    );
    assert.equal(await scrapeGauge(cluster.masterHttpUrl, 'LostWorkerCount'), 0);
    assert.equal(await scrapeGauge(cluster.masterHttpUrl, 'WorkerCount'), 3);

    // The last map, the commit and every read, with the worker back: every record, once.
    results.set(...(await writeMap(client, 2)));
    await readAndVerify(client.executor, SHUFFLE, JOB, winnersOf(results));

    // It serves again: a new application (which never saw it lost) gets slots on it, and its job verifies.
    const second = await clientSide(cluster.masterUrl, { conf: CLIENT });
    clients.push(second);
    const winners = winnersOf(await writeMaps(second.executor, 0, JOB));
    await readAndVerify(second.executor, 0, JOB, winners);
    const placed = second.app.state().shuffles.get(0)!.reserved;
    assert.ok(
      placed.some((copy) => workerKey(copy.worker) === id),
      'the second application’s shuffle has partitions on the worker that was lost',
    );
  });
});
