// The contract's rolling upgrade on real processes (issue 26): a master and three workers presenting 0.5.0 run a
// replicated job of a 0.5.0 client; the master is upgraded, then each worker in turn (a graceful restart as 0.6.0 on
// the same ports and directories) while that job and a second one keep writing, stage after stage; the clients are
// upgraded last. Every record of every stage is verified, after the restarts (so partly from recovered files).
import assert from 'node:assert/strict';
import { afterEach, describe, it } from 'node:test';
import { LocalCluster } from './cluster/local-cluster.ts';
import { DEFAULT_WAIT_MS, STARTUP_WAIT_MS } from './cluster/server-process.ts';
import type { MapResult, MapWriter } from './client/shuffle-client.ts';
import {
  clientSide,
  readAndVerify,
  recordsOf,
  runVerifiedJob,
  winnersOf,
  type ClientSide,
  type SmallJob,
} from './testing/small-job.ts';

const REPLICATED = {
  'svc.client.push.replicate.enabled': 'true',
  // Small push buffers: a map's output travels as many batches, so that every restart strikes pushes in flight.
  'svc.client.push.buffer.max.size': '4k',
};
// A graceful shutdown waits for its partitions to be committed (the stage that wrote them ends), then exits: the
// timeout only bounds a stuck wait, and the test fails if the wait ran into it (drainTimedOut loses uncommitted data).
const GRACEFUL = [
  'svc.worker.graceful.shutdown.enabled=true',
  'svc.worker.graceful.shutdown.checkSlotsFinished.interval=200ms',
  'svc.worker.graceful.shutdown.checkSlotsFinished.timeout=120s',
];
// A client before 0.6.0 hands its records to the map task a mebibyte at a time: each half of a map writes more.
const JOB: SmallJob = { maps: 2, partitions: 6, recordsPerPartition: 380, recordBytes: 1_000 };

/** Resolves once `ready()` holds, checking after every turn of the event loop; rejects after `timeoutMs`. */
async function until(ready: () => boolean, what: string, timeoutMs = DEFAULT_WAIT_MS): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (!ready()) {
    if (Date.now() > deadline) throw new Error(`gave up waiting ${timeoutMs} ms for ${what}`);
    await new Promise((resolve) => setImmediate(resolve));
  }
}

/** One stage of a job: a shuffle whose maps write half their records, then (later) the rest, then close. */
class Stage {
  private readonly writers: MapWriter[];
  private winners: Map<number, number> | undefined;
  constructor(
    readonly client: ClientSide,
    readonly shuffleId: number,
  ) {
    const shuffle = client.executor.shuffle(shuffleId, { maps: JOB.maps, partitions: JOB.partitions });
    this.writers = Array.from({ length: JOB.maps }, (_, mapId) => shuffle.writer(mapId, 0));
  }

  private write(from: number, to: number): void {
    this.writers.forEach((writer, mapId) =>
      recordsOf(JOB, mapId, 0).forEach((records, p) =>
        records.slice(from, to).forEach((r) => writer.write(p, r)),
      ),
    );
  }

  /** Writes the first half of every map and waits until each map has had pushes acknowledged: data in flight. */
  async begin(): Promise<this> {
    this.write(0, JOB.recordsPerPartition / 2);
    await until(
      () => this.writers.every((w) => w.acknowledgedBytes() > 0),
      `a push of every map of shuffle ${this.shuffleId} acknowledged`,
    );
    return this;
  }

  /** Writes the second half and closes every map: the stage ends and the lifecycle manager commits it. */
  async end(): Promise<void> {
    this.write(JOB.recordsPerPartition / 2, JOB.recordsPerPartition);
    const results = new Map<string, MapResult>();
    for (const [mapId, writer] of this.writers.entries()) results.set(`${mapId}/0`, await writer.close());
    this.winners = winnersOf(results);
  }

  async verify(): Promise<void> {
    assert.ok(this.winners, `shuffle ${this.shuffleId} ended`);
    await readAndVerify(this.client.executor, this.shuffleId, JOB, this.winners);
  }
}

async function status(url: string): Promise<number> {
  const response = await fetch(url);
  await response.arrayBuffer();
  return response.status;
}

describe('a rolling upgrade from 0.5.0 to 0.6.0 while jobs run (real processes)', () => {
  let cluster: LocalCluster | undefined;
  const clients: ClientSide[] = [];
  afterEach(async () => {
    await Promise.all(clients.map((client) => client.close().catch(() => undefined)));
    clients.length = 0;
    await cluster?.stop();
    cluster = undefined;
  });

  it('upgrades the master, then each worker gracefully between stages, then the clients; every stage verifies', async () => {
    cluster = await LocalCluster.start({
      workers: 3,
      release: '0.5.0',
      workerConf: GRACEFUL,
      ...(process.env.KEEP_DIR === undefined ? {} : { dir: process.env.KEEP_DIR, keepDir: true }),
    });
    const c = cluster;
    const jobA = await clientSide(c.masterUrl, { release: '0.5.0', conf: REPLICATED });
    clients.push(jobA);
    const stages: Stage[] = [];
    let a = await new Stage(jobA, 0).begin();
    stages.push(a);
    // 0.5.0 servers answer the legacy paths only; /api/v1 arrived in 0.6.0 (contract 4.1, 4.4).
    assert.equal(await status(`${c.masterHttpUrl}/workerInfo`), 200);
    assert.equal(await status(`${c.masterHttpUrl}/api/v1/workers`), 404);

    // 1. The master, while job A's first stage has pushes in flight.
    await c.restartMaster('SIGTERM', { release: '0.6.0' });
    assert.equal(c.master.seen((line) => line.event === 'listening')[0]?.release, '0.6.0');
    assert.equal(await status(`${c.masterHttpUrl}/api/v1/workers`), 200);
    assert.equal(await status(`${c.masterHttpUrl}/workerInfo`), 200, 'the legacy path stays, deprecated');
    await a.end();
    const jobB = await clientSide(c.masterUrl, { release: '0.5.0', conf: REPLICATED });
    clients.push(jobB);
    a = await new Stage(jobA, 1).begin();
    let b = await new Stage(jobB, 0).begin();
    stages.push(a, b);

    // 2. Each worker in turn: it stops taking slots, its open partitions move on (HARD_SPLIT, revive), it exits
    // once the running stages committed, and comes back as 0.6.0 on the same ports with its recovery store.
    for (let index = 0; index < 3; index += 1) {
      const worker = c.workers[index]!;
      assert.equal(await status(`${c.workerHttpUrl(index)}/api/v1/workers`), 404, `worker ${index} at 0.5.0`);
      worker.kill('SIGTERM');
      await worker.waitForEvent('process.stopping');
      await Promise.all([a.end(), b.end()]);
      assert.equal(await worker.exited(), 0, `worker ${index} shut down gracefully`);
      assert.deepEqual(
        worker.seen((line) => line.event === 'worker.lifecycle.drainTimedOut'),
        [],
        `worker ${index} drained before its deadline`,
      );
      const restarted = await c.startWorker(index, { samePorts: true, release: '0.6.0' });
      await restarted.waitForEvent('worker.registered', STARTUP_WAIT_MS);
      assert.equal(await status(`${c.workerHttpUrl(index)}/api/v1/workers`), 200, `worker ${index} at 0.6.0`);
      a = await new Stage(jobA, index + 2).begin();
      b = await new Stage(jobB, index + 1).begin();
      stages.push(a, b);
    }
    await Promise.all([a.end(), b.end()]);
    // Every stage, read after every restart: partly from files the workers recovered.
    for (const stage of stages) await stage.verify();

    // 3. The clients last: a 0.6.0 application on the upgraded cluster.
    await runVerifiedJob(c.masterUrl, JOB, { conf: REPLICATED });
  });
});
