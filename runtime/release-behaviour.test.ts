// A server presenting an older release behaves as that release (issue 33): a 0.4.1 worker with graceful shutdown on
// and no backend set opens its recovery store with LevelDB (the default until 0.5.0), as its /conf says, proven by
// the store's files on disk, and recovers from it across a graceful restart, on real processes.
import assert from 'node:assert/strict';
import { readdirSync, readFileSync } from 'node:fs';
import path from 'node:path';
import { after, describe, it } from 'node:test';
import { workerKey } from '../core/domain/index.ts';
import { connectExecutor } from './client/shuffle-client.ts';
import { LocalCluster } from './cluster/local-cluster.ts';
import { STARTUP_WAIT_MS } from './cluster/server-process.ts';
import { getJson } from './http/testing/http-client.ts';
import {
  clientSide,
  readAndVerify,
  winnersOf,
  writeMaps,
  type ClientSide,
  type SmallJob,
} from './testing/small-job.ts';

const RELEASE = '0.4.1';
const JOB: SmallJob = { maps: 2, partitions: 4, recordsPerPartition: 30, recordBytes: 80 };
const GRACEFUL = [
  'svc.worker.graceful.shutdown.enabled=true',
  'svc.worker.graceful.shutdown.checkSlotsFinished.interval=200ms',
  'svc.worker.graceful.shutdown.timeout=60s',
];

/** What the store in `dir` was written by: RocksDB writes OPTIONS files and names itself in LOG, LevelDB does neither. */
function storeFormat(dir: string): 'ROCKSDB' | 'LEVELDB' {
  const names = readdirSync(dir);
  assert.ok(names.includes('CURRENT') && names.includes('LOG'), `a store in ${dir}: ${names.join(' ')}`);
  const rocks =
    names.some((name) => name.startsWith('OPTIONS-')) ||
    /RocksDB/i.test(readFileSync(path.join(dir, 'LOG'), 'utf8'));
  return rocks ? 'ROCKSDB' : 'LEVELDB';
}

describe(`a worker presenting ${RELEASE} (real processes)`, () => {
  let cluster: LocalCluster | undefined;
  let client: ClientSide | undefined;
  after(async () => {
    await client?.close().catch(() => undefined);
    await cluster?.stop();
  });

  it('opens its recovery store with LevelDB, the default of its release, and recovers from it', async () => {
    cluster = await LocalCluster.start({ workers: 2, release: RELEASE, workerConf: GRACEFUL });
    const conf = await getJson(cluster.workerHttpUrl(0), '/conf');
    assert.match(
      conf.text,
      /svc\.worker\.graceful\.shutdown\.recoverDbBackend\s*=?\s*:?\s*LEVELDB/,
      conf.text,
    );
    const listening = cluster.workers[0]!.seen((line) => line.event === 'listening')[0]!;
    assert.equal(listening.recoveryStoreBackend, 'LEVELDB');

    client = await clientSide(cluster.masterUrl, { release: RELEASE });
    const winners = winnersOf(await writeMaps(client.executor, 0, JOB));
    await readAndVerify(client.executor, 0, JOB, winners);
    const copies = client.app.state().shuffles.get(0)!.reserved;
    const held = cluster.workerIds.map((id) => copies.filter((copy) => workerKey(copy.worker) === id).length);
    const index = held[0]! >= held[1]! ? 0 : 1;
    assert.ok(held[index]! > 0, 'the stopped worker holds committed partitions');

    const worker = cluster.workers[index]!;
    worker.kill('SIGTERM');
    assert.equal(await worker.waitForExit(), 0, 'a graceful shutdown exits 0');
    assert.equal(storeFormat(path.join(cluster.dir, `worker-${index}`, 'recover')), 'LEVELDB');

    const restarted = await cluster.startWorker(index, { samePorts: true });
    const restored = await restarted.waitForEvent('worker.recovery.restored', STARTUP_WAIT_MS);
    assert.equal(restored.files, held[index], 'every committed file back from the LevelDB store');
    await restarted.waitForEvent('worker.registered', STARTUP_WAIT_MS);
    const reader = connectExecutor({
      lifecycleManager: client.app.lifecycleManager,
      appId: client.app.appId,
      release: RELEASE,
    });
    try {
      await readAndVerify(reader, 0, JOB, winners);
    } finally {
      await reader.close();
    }
  });
});
