// Replication survives the loss of any one worker (issue 23): on three real workers with replication on, a worker
// SIGKILLed while a map's pushes are in flight, while the lifecycle manager commits, or while reducers fetch; the job
// still gives the readers exactly the winners' records. Each test first proves the fault struck where meant.
import assert from 'node:assert/strict';
import { afterEach, describe, it } from 'node:test';
import { workerKey, type PartitionLocation } from '../core/domain/index.ts';
import type { LifecycleManagerState } from '../core/machines/lifecycle-manager/index.ts';
import { LocalCluster } from './cluster/local-cluster.ts';
import { DEFAULT_WAIT_MS } from './cluster/server-process.ts';
import { pollUntil } from './testing/poll.ts';
import type { MapResult, MapWriter } from './client/shuffle-client.ts';
import {
  clientSide,
  readAndVerify,
  recordsOf,
  winnersOf,
  type ClientSide,
  type SmallJob,
} from './testing/small-job.ts';

const REPLICATED = { 'svc.client.push.replicate.enabled': 'true' };
// Small push buffers, so that a map's output travels as many batches and stays in flight for a while.
const MANY_BATCHES = { ...REPLICATED, 'svc.client.push.buffer.max.size': '4k' };
const JOB: SmallJob = { maps: 3, partitions: 6, recordsPerPartition: 400, recordBytes: 200 };
const SHUFFLE = 0;

function shuffleOf(state: LifecycleManagerState) {
  const shuffle = state.shuffles.get(SHUFFLE);
  assert.ok(shuffle, 'the lifecycle manager knows the shuffle');
  return shuffle;
}

/** The index of the worker holding the most copies (primaries and replicas) of the shuffle, and those copies. */
function busiestWorker(cluster: LocalCluster, copies: readonly PartitionLocation[]) {
  const held = cluster.workerIds.map((id) => copies.filter((copy) => workerKey(copy.worker) === id));
  const index = held.reduce((best, copiesOf, i) => (copiesOf.length > held[best]!.length ? i : best), 0);
  return { index, id: cluster.workerIds[index]!, copies: held[index]! };
}

function startWriters(client: ClientSide): {
  writers: MapWriter[];
  results: Promise<Map<string, MapResult>>;
} {
  const shuffle = client.executor.shuffle(SHUFFLE, { maps: JOB.maps, partitions: JOB.partitions });
  const writers = Array.from({ length: JOB.maps }, (_, mapId) => {
    const writer = shuffle.writer(mapId, 0);
    recordsOf(JOB, mapId, 0).forEach((records, p) => records.forEach((r) => writer.write(p, r)));
    return writer;
  });
  const results = Promise.all(
    writers.map(async (writer, mapId) => [`${mapId}/0`, await writer.close()] as const),
  );
  return { writers, results: results.then((entries) => new Map(entries)) };
}

/** Bytes a writer pushes in all: each record with its 4-byte length prefix. */
const PUSHED_PER_MAP = JOB.partitions * JOB.recordsPerPartition * (JOB.recordBytes! + 4);

describe('replication survives the loss of one of three workers (real processes)', () => {
  let cluster: LocalCluster | undefined;
  let client: ClientSide | undefined;
  afterEach(async () => {
    await client?.close().catch(() => undefined);
    await cluster?.stop();
    client = undefined;
    cluster = undefined;
  });

  it('completes and verifies when a worker is SIGKILLed while a map has pushes in flight, and revives', async () => {
    cluster = await LocalCluster.start({ workers: 3 });
    client = await clientSide(cluster.masterUrl, { conf: MANY_BATCHES });
    const app = client.app;
    const { writers, results } = startWriters(client);
    const first = writers[0]!;
    await pollUntil(
      () => first.acknowledgedBytes() > 0,
      () => 'the first acknowledged push of map 0',
      { timeoutMs: DEFAULT_WAIT_MS },
    );
    const victim = busiestWorker(cluster, shuffleOf(app.state()).reserved);
    const acknowledgedAtKill = first.acknowledgedBytes();
    cluster.workers[victim.index]!.kill('SIGKILL');
    assert.ok(acknowledgedAtKill < PUSHED_PER_MAP, 'map 0 still had bytes to push when the worker died');
    assert.ok(victim.copies.length > 0, 'the killed worker held partitions of the shuffle');
    await cluster.workers[victim.index]!.waitForExit();

    const winners = winnersOf(await results);
    await readAndVerify(client.executor, SHUFFLE, JOB, winners);
    assert.equal(winners.size, JOB.maps, 'every map has a winning attempt');
    const shuffle = shuffleOf(app.state());
    const revived = shuffle.reserved.filter((copy) => copy.epoch > 0);
    assert.ok(revived.length > 0, 'partitions were revived to new locations');
    assert.ok(
      revived.every((copy) => workerKey(copy.worker) !== victim.id),
      'no revived copy lives on the killed worker',
    );
    assert.ok(app.state().workers.excluded.has(victim.id), 'the killed worker is excluded');
    assert.equal(app.state().workers.excluded.size, 1, 'no healthy worker was charged with the loss');
  });

  it('completes and verifies when a worker is SIGKILLed while the lifecycle manager commits', async () => {
    cluster = await LocalCluster.start({ workers: 3 });
    client = await clientSide(cluster.masterUrl, { conf: REPLICATED });
    const app = client.app;
    const { results } = startWriters(client);
    await pollUntil(
      () => app.state().shuffles.get(SHUFFLE)?.phase === 'committing',
      () => 'the commit to start',
      { timeoutMs: DEFAULT_WAIT_MS },
    );
    const commit = shuffleOf(app.state()).commit;
    assert.ok(commit, 'the commit is under way');
    const victim = busiestWorker(cluster, [...commit.copiesByWorker.values()].flat());
    const awaitingVictim = commit.awaiting.has(victim.id);
    cluster.workers[victim.index]!.kill('SIGKILL');
    assert.ok(awaitingVictim, 'the commit still waited for the killed worker');
    assert.ok(victim.copies.length > 0, 'the killed worker held partitions of the shuffle');
    await cluster.workers[victim.index]!.waitForExit();

    const winners = winnersOf(await results);
    assert.equal(winners.size, JOB.maps, 'every map has a winning attempt');
    await readAndVerify(client.executor, SHUFFLE, JOB, winners);
  });

  it('completes and verifies when a worker is SIGKILLed while reducers fetch, reading the replicas', async () => {
    cluster = await LocalCluster.start({ workers: 3 });
    client = await clientSide(cluster.masterUrl, { conf: REPLICATED });
    const app = client.app;
    const winners = winnersOf(await startWriters(client).results);
    await pollUntil(
      () => app.state().shuffles.get(SHUFFLE)?.phase === 'committed',
      () => 'the commit to end',
      { timeoutMs: DEFAULT_WAIT_MS },
    );
    const primaries = shuffleOf(app.state()).reserved.filter((copy) => copy.mode === 'PRIMARY');
    const victim = busiestWorker(cluster, primaries);
    assert.ok(victim.copies.length > 0, 'the killed worker held primaries of the shuffle');

    // The reduce phase has begun (one partition read) when the worker dies; every partition whose primary it held
    // is read after, from its replica.
    const firstRead = [...Array(JOB.partitions).keys()].find(
      (p) => !victim.copies.some((copy) => copy.partitionId === p),
    );
    const shuffle = client.executor.shuffle(SHUFFLE, { maps: JOB.maps, partitions: JOB.partitions });
    if (firstRead !== undefined) await shuffle.read(firstRead);
    cluster.workers[victim.index]!.kill('SIGKILL');
    await cluster.workers[victim.index]!.waitForExit();
    // Every partition, now without the killed worker: each read must find the surviving copy.
    await readAndVerify(client.executor, SHUFFLE, JOB, winners);
  });
});
