// Graceful restart with each recovery store (issue 26, item 2), on real processes: a worker holding committed
// partitions stops gracefully and starts again on the same ports and directories, with
// svc.worker.graceful.shutdown.recoverDbBackend ROCKSDB and LEVELDB; every partition is fetched again and verified
// record by record (replication off: the restarted worker's partitions can come from nowhere else). A store it
// cannot read stops the worker at start with exit code 2, naming the directory and the way out; taken, the way out
// starts a worker that claims nothing it held. Entries of a record version this release does not read are refused
// one by one (keys of another layout in one line), and their partitions are never served: a read of them fails,
// the others verify. A partition file damaged on disk while the worker was down fails its read, never other records.
import assert from 'node:assert/strict';
import { readdirSync, readFileSync, renameSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { afterEach, describe, it } from 'node:test';
import { workerKey } from '../core/domain/index.ts';
import { connectExecutor, type ShuffleClient } from './client/shuffle-client.ts';
import { LocalCluster } from './cluster/local-cluster.ts';
import { STARTUP_WAIT_MS } from './cluster/server-process.ts';
import { getJson } from './http/testing/http-client.ts';
import { openDurableStore, type DbBackend } from './storage/durable-store.ts';
import {
  clientSide,
  readAndVerify,
  recordOf,
  winnersOf,
  writeMaps,
  type ClientSide,
  type SmallJob,
} from './testing/small-job.ts';

const JOB: SmallJob = { maps: 3, partitions: 6, recordsPerPartition: 40, recordBytes: 100 };
const decoder = new TextDecoder();

function graceful(backend: DbBackend): string[] {
  return [
    'svc.worker.graceful.shutdown.enabled=true',
    `svc.worker.graceful.shutdown.recoverDbBackend=${backend}`,
    'svc.worker.graceful.shutdown.checkSlotsFinished.interval=200ms',
    'svc.worker.graceful.shutdown.timeout=60s',
  ];
}

interface Committed {
  readonly client: ClientSide;
  readonly winners: Map<number, number>;
  /** The worker stopped gracefully, by index, and the partitions it held. */
  readonly index: number;
  readonly partitions: ReadonlySet<number>;
  readonly recoverPath: string;
}

/**
 * Runs the job to its end (reading once commits every partition), then stops gracefully the worker holding the most
 * partitions; resolves once it exited 0.
 */
async function commitAndStop(cluster: LocalCluster, clients: ClientSide[]): Promise<Committed> {
  const client = await clientSide(cluster.masterUrl);
  clients.push(client);
  const winners = winnersOf(await writeMaps(client.executor, 0, JOB));
  await readAndVerify(client.executor, 0, JOB, winners);
  const copies = client.app.state().shuffles.get(0)!.reserved;
  const held = cluster.workerIds.map(
    (id) => new Set(copies.filter((copy) => workerKey(copy.worker) === id).map((copy) => copy.partitionId)),
  );
  const index = held.reduce((best, set, i) => (set.size > held[best]!.size ? i : best), 0);
  assert.ok(held[index]!.size > 0, 'the stopped worker holds committed partitions');
  const worker = cluster.workers[index]!;
  worker.kill('SIGTERM');
  assert.equal(await worker.waitForExit(), 0, 'a graceful shutdown exits 0');
  return {
    client,
    winners,
    index,
    partitions: held[index]!,
    recoverPath: path.join(cluster.dir, `worker-${index}`, 'recover'),
  };
}

/** The rpc ports of the workers the master lists in `shutdownWorkers` of GET /api/v1/workers. */
async function shutdownWorkers(cluster: LocalCluster): Promise<number[]> {
  const response = await getJson(cluster.masterHttpUrl, '/api/v1/workers');
  assert.equal(response.status, 200, response.text);
  return (response.json as { shutdownWorkers: { rpcPort: number }[] }).shutdownWorkers.map((w) => w.rpcPort);
}

/** A new executor (no cached locations): it asks the lifecycle manager where each partition is. */
function freshReader(client: ClientSide): ShuffleClient {
  return connectExecutor({ lifecycleManager: client.app.lifecycleManager, appId: client.app.appId });
}

/** Partition `p` of the job exactly as the winners wrote it, sorted. */
function expected(winners: ReadonlyMap<number, number>, p: number): string[] {
  return [...winners.entries()]
    .flatMap(([mapId, attemptId]) =>
      Array.from({ length: JOB.recordsPerPartition }, (_, i) =>
        decoder.decode(recordOf(mapId, attemptId, p, i, JOB.recordBytes)),
      ),
    )
    .sort();
}

describe('graceful restart with each recovery store (real processes)', () => {
  let cluster: LocalCluster | undefined;
  const clients: ClientSide[] = [];
  afterEach(async () => {
    for (const client of clients.splice(0)) await client.close().catch(() => undefined);
    await cluster?.stop();
    cluster = undefined;
  });

  for (const backend of ['ROCKSDB', 'LEVELDB'] as const) {
    it(`${backend}: the restarted worker serves every committed partition again, verified record by record`, async () => {
      cluster = await LocalCluster.start({ workers: 2, workerConf: graceful(backend) });
      const committed = await commitAndStop(cluster, clients);
      // RocksDB writes OPTIONS files, LevelDB never does: the store on disk is the configured backend's.
      const options = readdirSync(committed.recoverPath).filter((name) => name.startsWith('OPTIONS-'));
      assert.equal(options.length > 0, backend === 'ROCKSDB', readdirSync(committed.recoverPath).join(' '));

      const id = cluster.workerIds[committed.index]!;
      const rpcPort = Number(id.split(':')[1]);
      assert.ok(
        (await shutdownWorkers(cluster)).includes(rpcPort),
        'while it is down the master lists it in shutdownWorkers',
      );
      const restarted = await cluster.startWorker(committed.index, { samePorts: true });
      assert.equal(cluster.workerIds[committed.index], id, 'back under the same id');
      const restored = await restarted.waitForEvent('worker.recovery.restored', STARTUP_WAIT_MS);
      assert.equal(restored.files, committed.partitions.size, 'one committed file per partition it held');
      await restarted.waitForEvent('worker.registered', STARTUP_WAIT_MS);
      assert.equal(
        (await shutdownWorkers(cluster)).includes(rpcPort),
        false,
        'registered again, not shut down',
      );
      const reader = freshReader(committed.client);
      try {
        await readAndVerify(reader, 0, JOB, committed.winners);
      } finally {
        await reader.close();
      }
    });

    it(`${backend}: an unreadable store stops the worker at start naming the way out, which starts it empty`, async () => {
      cluster = await LocalCluster.start({ workers: 2, workerConf: graceful(backend) });
      const committed = await commitAndStop(cluster, clients);
      writeFileSync(path.join(committed.recoverPath, 'CURRENT'), 'MANIFEST-999999\n');

      await assert.rejects(cluster.startWorker(committed.index, { samePorts: true }));
      const refused = cluster.workers[committed.index]!;
      assert.equal(await refused.waitForExit(), 2, 'a configuration error');
      const message = refused.stderr.join('\n');
      assert.ok(message.includes(committed.recoverPath), message);
      assert.match(message, /svc\.worker\.graceful\.shutdown\.recoverPath/);
      assert.match(message, new RegExp(`recoverDbBackend ${backend}`));
      assert.match(message, /damaged/);
      assert.ok(message.includes(`mv ${committed.recoverPath} ${committed.recoverPath}.unreadable`), message);
      assert.doesNotMatch(message, /^\s+at /m, 'a message, not a stack trace');

      // The way out the message names: the store moved aside, the worker starts and claims nothing it held.
      renameSync(committed.recoverPath, `${committed.recoverPath}.unreadable`);
      const started = await cluster.startWorker(committed.index, { samePorts: true });
      const listening = started.seen((line) => line.event === 'listening')[0]!;
      assert.equal(listening.recoveredKeys, 0);
      const leftovers = await started.waitForEvent('worker.leftovers.found', STARTUP_WAIT_MS);
      assert.equal(leftovers.files, committed.partitions.size, 'the files it held are leftovers, not served');
      await started.waitForEvent('worker.registered', STARTUP_WAIT_MS);
      await assertNeverServed(committed);
    });
  }

  it('entries of an unknown record version are refused one by one and their partitions never served', async () => {
    cluster = await LocalCluster.start({ workers: 2, workerConf: graceful('ROCKSDB') });
    const committed = await commitAndStop(cluster, clients);
    // What a later release might have written: the same keys, a record version this one does not read.
    const store = await openDurableStore('ROCKSDB', committed.recoverPath);
    const entries = await store.load();
    assert.ok(entries.size > 0, 'the graceful shutdown left entries');
    await store.write([
      ...[...entries].map(([key, value]) => ({
        key,
        value: JSON.stringify({ ...(JSON.parse(value) as object), version: 99 }),
      })),
      // And a key of a layout this release never wrote.
      { key: 'v2/format', value: '2' },
    ]);
    await store.close();

    const restarted = await cluster.startWorker(committed.index, { samePorts: true });
    const rejected = await restarted.waitForCount(
      (line) => line.event === 'worker.recovery.rejected',
      entries.size,
      'one refusal per entry',
    );
    for (const line of rejected) assert.match(String(line.error), /record version 99 is not 1/);
    assert.equal(restarted.seen((line) => line.event === 'worker.recovery.restored').length, 0);
    const unknown = await restarted.waitForEvent('worker.recovery.unknownKeys');
    assert.deepEqual(unknown.examples, ['v2/format']);
    await restarted.waitForEvent('worker.registered', STARTUP_WAIT_MS);
    await assertNeverServed(committed);
  });

  it('a partition file damaged while the worker was down is never served as records', async () => {
    cluster = await LocalCluster.start({ workers: 2, workerConf: graceful('ROCKSDB') });
    const committed = await commitAndStop(cluster, clients);
    const shuffleDir = path.join(
      cluster.dir,
      `worker-${committed.index}`,
      'disk-1',
      'svc-worker',
      'shuffle_data',
      `${committed.client.app.appId}-0`,
    );
    const [name] = readdirSync(shuffleDir).sort();
    assert.ok(name !== undefined, `partition files in ${shuffleDir}`);
    const damaged = Number(name.split('-')[0]);
    assert.ok(committed.partitions.has(damaged), `${name} is a partition the worker held`);
    // One byte flipped in the middle of the file: a payload byte or a header field, both under a batch's CRC.
    const file = path.join(shuffleDir, name);
    const bytes = readFileSync(file);
    const at = Math.floor(bytes.length / 2);
    bytes[at] = bytes[at]! ^ 0xff;
    writeFileSync(file, bytes);

    const restarted = await cluster.startWorker(committed.index, { samePorts: true });
    await restarted.waitForEvent('worker.recovery.restored', STARTUP_WAIT_MS);
    await restarted.waitForEvent('worker.registered', STARTUP_WAIT_MS);
    const reader = freshReader(committed.client);
    try {
      const shuffle = reader.shuffle(0, { maps: JOB.maps, partitions: JOB.partitions });
      for (let p = 0; p < JOB.partitions; p += 1) {
        const read = shuffle.read(p, { timeoutMs: 30_000 });
        if (p === damaged) {
          // Whichever field the flip hit (magic, version, length, payload), the frame check names the damage.
          await assert.rejects(read, (error: Error) => {
            assert.match(error.message, /CRC-32|damaged|torn|format version/, error.message);
            return true;
          });
        } else {
          const got = (await read).map((record) => decoder.decode(record)).sort();
          assert.deepEqual(got, expected(committed.winners, p), `partition ${p}`);
        }
      }
    } finally {
      await reader.close();
    }
  });

  /** Partitions of the restarted worker fail to read (never other records); the others verify. */
  async function assertNeverServed(committed: Committed): Promise<void> {
    const reader = freshReader(committed.client);
    try {
      const shuffle = reader.shuffle(0, { maps: JOB.maps, partitions: JOB.partitions });
      for (let p = 0; p < JOB.partitions; p += 1) {
        const read = (async () => {
          const records: string[] = [];
          for await (const record of shuffle.reader(p, { timeoutMs: 30_000 }))
            records.push(decoder.decode(record));
          return records.sort();
        })();
        if (committed.partitions.has(p)) {
          await assert.rejects(read, `partition ${p} was on the restarted worker: no read may succeed`);
        } else {
          assert.deepEqual(await read, expected(committed.winners, p), `partition ${p}`);
        }
      }
    } finally {
      await reader.close();
    }
  }
});
