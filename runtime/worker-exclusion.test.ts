// Excluded workers on real processes (issue 26, item 4): an operator excludes and un-excludes a worker through both
// generations of the management interface (the legacy form POST /exclude and POST /api/v1/workers/exclude), and the
// master excludes by itself a worker whose every disk failed, then takes it back once its disk is probed healthy.
// Every job verifies; each step waits on the API's state or a log line, never on time.
import assert from 'node:assert/strict';
import { mkdirSync, rmSync } from 'node:fs';
import path from 'node:path';
import { afterEach, describe, it } from 'node:test';
import { parseWorkerKey, workerKey, type WorkerId } from '../core/domain/index.ts';
import { LocalCluster } from './cluster/local-cluster.ts';
import { getJson, pollUntil, postForm, postJson } from './http/testing/http-client.ts';
import { scrapeGauge } from './metrics/testing.ts';
import {
  clientSide,
  readAndVerify,
  winnersOf,
  writeMaps,
  type ClientSide,
  type SmallJob,
} from './testing/small-job.ts';

const JOB: SmallJob = { maps: 2, partitions: 6, recordsPerPartition: 20, recordBytes: 64 };
// Heartbeats every 500 ms (a quarter of the timeout): exclusions and releases reach the master quickly.
const QUICK = ['svc.master.heartbeat.worker.timeout=2s'];

interface Workers {
  readonly workers: readonly WorkerId[];
  readonly excludedWorkers: readonly WorkerId[];
  readonly manualExcludedWorkers: readonly WorkerId[];
}

async function masterWorkers(cluster: LocalCluster): Promise<Workers> {
  const response = await getJson(cluster.masterHttpUrl, '/api/v1/workers');
  assert.equal(response.status, 200, response.text);
  return response.json as Workers;
}

const keysOf = (ids: readonly WorkerId[]): string[] => ids.map((id) => workerKey(id)).sort();

/** Runs one verified shuffle and returns the workers its partitions were placed on (primaries and revived copies). */
async function verifiedShuffle(client: ClientSide, shuffleId: number): Promise<Set<string>> {
  const winners = winnersOf(await writeMaps(client.executor, shuffleId, JOB));
  await readAndVerify(client.executor, shuffleId, JOB, winners);
  const shuffle = client.app.state().shuffles.get(shuffleId);
  assert.ok(shuffle, `the lifecycle manager knows shuffle ${shuffleId}`);
  return new Set(shuffle.reserved.map((copy) => workerKey(copy.worker)));
}

describe('excluding workers (real processes)', () => {
  let cluster: LocalCluster | undefined;
  let client: ClientSide | undefined;
  afterEach(async () => {
    await client?.close().catch(() => undefined);
    await cluster?.stop();
    client = undefined;
    cluster = undefined;
  });

  it('excludes and un-excludes a worker through /api/v1 and the legacy /exclude; an excluded worker gets no slots', async () => {
    cluster = await LocalCluster.start({ workers: 3, conf: QUICK });
    client = await clientSide(cluster.masterUrl);
    const [first, second] = cluster.workerIds as [string, string];
    assert.ok((await verifiedShuffle(client, 0)).has(first), 'before: the worker gets slots');

    // /api/v1: JSON worker ids.
    const excluded = await postJson(cluster.masterHttpUrl, '/api/v1/workers/exclude', {
      add: [parseWorkerKey(first)],
      remove: [],
    });
    assert.equal(excluded.status, 200, excluded.text);
    assert.equal((excluded.json as { success: boolean }).success, true, excluded.text);
    let listed = await masterWorkers(cluster);
    assert.deepEqual(keysOf(listed.excludedWorkers), [first]);
    assert.deepEqual(keysOf(listed.manualExcludedWorkers), [first]);
    assert.ok(keysOf(listed.workers).includes(first), 'an excluded worker stays registered');
    assert.equal(await scrapeGauge(cluster.masterHttpUrl, 'ExcludedWorkerCount'), 1);
    assert.equal(await scrapeGauge(cluster.masterHttpUrl, 'AvailableWorkerCount'), 2);
    const legacyList = await getJson(cluster.masterHttpUrl, '/excludedWorkers');
    assert.equal(legacyList.status, 200);
    assert.match(legacyList.text, new RegExp(first.replaceAll('.', '\\.')));
    assert.equal((await verifiedShuffle(client, 1)).has(first), false, 'no slot on the excluded worker');

    // Legacy: a form with comma-separated ids; this one removes the first and adds the second in one request.
    const legacy = await postForm(cluster.masterHttpUrl, '/exclude', { add: second, remove: first });
    assert.equal(legacy.status, 200, legacy.text);
    assert.match(legacy.text, /^success/m, legacy.text);
    // Deprecated since 0.6.0 (contract 4.4): the answer says so and names its successor.
    assert.equal(legacy.headers.deprecation, 'true');
    assert.match(String(legacy.headers.link), /<\/api\/v1\/workers\/exclude>; rel="successor-version"/);
    listed = await masterWorkers(cluster);
    assert.deepEqual(keysOf(listed.manualExcludedWorkers), [second]);
    const third = await verifiedShuffle(client, 2);
    assert.ok(third.has(first), 'the un-excluded worker gets slots again');
    assert.equal(third.has(second), false, 'the newly excluded worker gets none');

    const removed = await postJson(cluster.masterHttpUrl, '/api/v1/workers/exclude', {
      add: [],
      remove: [parseWorkerKey(second)],
    });
    assert.equal((removed.json as { success: boolean }).success, true, removed.text);
    listed = await masterWorkers(cluster);
    assert.deepEqual(listed.excludedWorkers, []);
    assert.deepEqual(listed.manualExcludedWorkers, []);
    assert.equal(await scrapeGauge(cluster.masterHttpUrl, 'ExcludedWorkerCount'), 0);
    // Excluding a worker the master does not know is refused by name, and changes nothing.
    const unknown = await postJson(cluster.masterHttpUrl, '/api/v1/workers/exclude', {
      add: [{ ...parseWorkerKey(first), rpcPort: 1 }],
      remove: [],
    });
    assert.equal((unknown.json as { success: boolean }).success, false, unknown.text);
    assert.deepEqual((await masterWorkers(cluster)).excludedWorkers, []);
  });

  it('excludes a worker whose only disk failed, logs worker.disk.failed, and takes it back once the disk is healthy', async () => {
    cluster = await LocalCluster.start({
      workers: 3,
      conf: QUICK,
      workerConf: ['svc.worker.monitor.disk.check.interval=500ms'],
    });
    client = await clientSide(cluster.masterUrl);
    const victim = cluster.workers[0]!;
    const id = cluster.workerIds[0]!;
    assert.ok(
      (await verifiedShuffle(client, 0)).has(id),
      'the worker held partitions before its disk failed',
    );

    const disk = path.join(cluster.dir, 'worker-0', 'disk-1');
    rmSync(disk, { recursive: true, force: true });
    await victim.waitForEvent('worker.disk.directoryLost');
    // The next file the worker creates there fails and marks the disk; a new shuffle asks it for files.
    const marks = victim.lineCount;
    const during = await verifiedShuffle(client, 1);
    const failed = await victim.waitFor(
      (line) => line.event === 'worker.disk.failed',
      'worker.disk.failed',
      marks,
    );
    assert.equal(failed.problem, 'READ_OR_WRITE_FAILURE');
    assert.equal(failed.healthyDisks, 0);
    assert.match(String(failed.disk), /disk-1/);
    const exclusion = await cluster.master.waitFor(
      (line) => line.event === 'master.worker.excluded' && line.worker === id,
      'the automatic exclusion of the worker',
    );
    assert.match(String(exclusion.reason), /1 of 1 local disks unhealthy/);
    const listed = await masterWorkers(cluster);
    assert.deepEqual(keysOf(listed.excludedWorkers), [id]);
    assert.deepEqual(listed.manualExcludedWorkers, [], 'the master, not an operator, excluded it');
    assert.equal(await scrapeGauge(cluster.masterHttpUrl, 'ExcludedWorkerCount'), 1);
    assert.equal(during.has(id), false, 'the shuffle that met the failed disk was placed on the others');
    assert.equal((await verifiedShuffle(client, 2)).has(id), false, 'an excluded worker gets no slots');

    // The disk comes back empty (a replaced disk, mounted again): the next probe makes the worker's working
    // directory on it again and succeeds, and the next heartbeat releases the worker.
    const workingDir = (victim.seen((line) => line.event === 'listening')[0]!.disks as string[])[0]!;
    assert.ok(workingDir.startsWith(disk) && workingDir !== disk, workingDir);
    mkdirSync(disk);
    await victim.waitForEvent('worker.disk.recovered');
    await cluster.master.waitFor(
      (line) => line.event === 'master.worker.released' && line.worker === id,
      'the release of the worker',
    );
    await pollUntil('the worker out of the excluded list', async () =>
      (await masterWorkers(cluster!)).excludedWorkers.length === 0 ? true : undefined,
    );
    assert.ok((await verifiedShuffle(client, 3)).has(id), 'the worker gets slots again');
  });
});
