// A worker that comes back after a partition (issue 34): cut off mid-job long enough for the master to declare it
// lost (svc.master.heartbeat.worker.timeout shortened to 8 s), its link then set up again. It must register again,
// take part in new shuffles, and drop what it held for the job that went on without it, while that job's reads
// still verify exactly once (nothing it held is served beside the copies that replaced it).
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { hostsUnavailableReason } from './cluster/hosts.ts';
import type { LogLine } from './cluster/server-process.ts';
import {
  copiesByWorker,
  hostCluster,
  keptClientLines,
  restOf,
  silenceLines,
  verifyThroughFault,
  writeMap,
  CUT_JOB,
} from './testing/cut-job.ts';
import { clientSide, readAndVerify, winnersOf } from './testing/small-job.ts';

const unavailable = await hostsUnavailableReason();
if (unavailable !== undefined) console.log(`# skipping the heal-worker test: ${unavailable}`);

const HEARTBEAT_TIMEOUT = '8s';
const REPLICATED = { 'svc.client.push.replicate.enabled': 'true', 'svc.client.push.timeout': '10s' };

describe('a worker back after a partition (namespace hosts, real processes)', { skip: unavailable }, () => {
  const shared = hostCluster({
    workers: 3,
    conf: [`svc.master.heartbeat.worker.timeout=${HEARTBEAT_TIMEOUT}`],
  });

  it('registers again, serves a new shuffle, drops the old job’s copies and serves none of them twice', async (t) => {
    const { cluster, network, clients } = shared;
    const job = await verifyThroughFault(cluster, {
      conf: REPLICATED,
      shuffleId: 0,
      fault: (worker) => network.cut(cluster.workerHost(worker)!),
      budgetMs: 40_000,
      clients,
    });
    const index = job.struck;
    const id = cluster.workerIds[index]!;
    const worker = cluster.workers[index]!;
    t.diagnostic(
      `the job verified ${job.cost} ms after the cut of worker ${index} (copies ${JSON.stringify(job.held)})`,
    );
    const byWorker = (line: LogLine) => line.worker === id;
    await cluster.master.waitFor(
      (line) => line.event === 'master.worker.lost' && byWorker(line),
      `worker ${index} declared lost`,
      0,
      60_000,
    );

    const beforeHeal = worker.lineCount;
    const masterBeforeHeal = cluster.master.lineCount;
    await network.heal();
    await worker.waitFor(
      (line) => line.event === 'worker.heartbeat.unknownToMaster',
      'the master’s answer that it no longer knows the worker',
      beforeHeal,
    );
    await worker.waitFor((line) => line.event === 'worker.registered', 'its registration again', beforeHeal);
    await cluster.master.waitFor(
      (line) => line.event === 'master.worker.reregistered' && byWorker(line),
      'the master taking the worker back',
      masterBeforeHeal,
    );

    // The old job's reads, with the worker back: its copies of the partitions revived elsewhere are not read
    // beside the copies that replaced them (every record exactly once).
    await readAndVerify(job.client.executor, 0, CUT_JOB, job.winners);

    // A new application's shuffle is placed on the worker too, and verifies.
    const fresh = await clientSide(cluster.masterUrl, { conf: REPLICATED });
    clients.push(fresh);
    const results = new Map([await writeMap(fresh, 0, 0)]);
    const held = copiesByWorker(cluster, fresh, 0);
    assert.ok(held[index]! > 0, `the worker back holds copies of a new shuffle: ${JSON.stringify(held)}`);
    for (let mapId = 1; mapId < CUT_JOB.maps; mapId += 1) results.set(...(await writeMap(fresh, 0, mapId)));
    await readAndVerify(fresh.executor, 0, CUT_JOB, winnersOf(results));

    // The old job ends: the worker drops what it held of it.
    const oldShuffle = `${job.client.app.appId}-0`;
    const beforeEnd = worker.lineCount;
    clients.splice(clients.indexOf(job.client), 1);
    await job.client.close();
    await worker.waitFor(
      (line) => line.event === 'worker.shuffle.dropped' && line.shuffle === oldShuffle,
      `the worker dropping ${oldShuffle}`,
      beforeEnd,
    );
  });

  it('reads every record once when a worker whose answers were dropped comes back before the stage ends', async (t) => {
    const { cluster, network, clients } = shared;
    // Packets from the worker are dropped: pushes reach it and are written, their answers never come back, so the
    // client revives them elsewhere. Healed before the stage ends, the worker answers the commit with files that
    // hold those batches too: readers must not read them twice.
    const { logger, lines } = keptClientLines();
    const client = await clientSide(cluster.masterUrl, { conf: REPLICATED, logger, logLevel: 'info' });
    clients.push(client);
    const results = new Map([await writeMap(client, 0, 0)]);
    const held = copiesByWorker(cluster, client, 0);
    const index = held.indexOf(Math.max(...held));
    assert.ok(held[index]! > 0, `the worker to cut off holds copies: ${JSON.stringify(held)}`);
    const host = cluster.workerHost(index)!;
    for (const side of restOf(shared, index)) await network.dropFromTo(host, side);
    const droppedAt = Date.now();
    for (let mapId = 1; mapId < CUT_JOB.maps / 2; mapId += 1)
      results.set(...(await writeMap(client, 0, mapId)));
    assert.ok(
      silenceLines(lines, host.address).length > 0,
      'the client sent to the worker and heard nothing back (the drop struck while it owed answers)',
    );
    await network.heal();
    t.diagnostic(`healed ${Date.now() - droppedAt} ms after the drop from worker ${index}`);
    for (let mapId = CUT_JOB.maps / 2; mapId < CUT_JOB.maps; mapId += 1)
      results.set(...(await writeMap(client, 0, mapId)));
    await readAndVerify(client.executor, 0, CUT_JOB, winnersOf(results));
  });
});
