// Stage rerun against real processes: a worker holding the only copy of partitions (replication off, the default)
// is killed after the maps ended; the read fails with a message that says exactly what to call; the application
// reruns the map stage through that call, the maps run again under the new stage attempt, and the reads verify.
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { workerKey } from '../../core/domain/index.ts';
import { LocalCluster } from '../cluster/local-cluster.ts';
import { clientSide, recordOf, recordsOf, type ClientSide, type SmallJob } from '../testing/small-job.ts';
import { ReduceTaskFailedError } from './errors.ts';
import { connectExecutor, type Shuffle } from './shuffle-client.ts';

const JOB: SmallJob = { maps: 3, partitions: 6, recordsPerPartition: 20 };
const decoder = new TextDecoder();

async function writeAll(shuffle: Shuffle): Promise<void> {
  await Promise.all(
    Array.from({ length: JOB.maps }, async (_, mapId) => {
      const writer = shuffle.writer(mapId, 0);
      recordsOf(JOB, mapId, 0).forEach((records, p) => records.forEach((r) => writer.write(p, r)));
      assert.equal((await writer.close()).outcome, 'won');
    }),
  );
}

function expected(partitionId: number): string[] {
  return Array.from({ length: JOB.maps }, (_, mapId) =>
    Array.from({ length: JOB.recordsPerPartition }, (_, i) =>
      decoder.decode(recordOf(mapId, 0, partitionId, i)),
    ),
  )
    .flat()
    .sort();
}

describe('stage rerun through the client', () => {
  let cluster: LocalCluster | undefined;
  let client: ClientSide | undefined;

  before(async () => {
    cluster = await LocalCluster.start({ workers: 2 });
  });

  after(async () => {
    await client?.close().catch(() => undefined);
    await cluster?.stop();
  });

  it('reads again after the lost worker’s shuffle is rerun under the attempt the error names', async () => {
    client = await clientSide(cluster!.masterUrl, { conf: { 'svc.rpc.askTimeout': '10s' } });
    const { app, executor } = client;
    const shape = { maps: JOB.maps, partitions: JOB.partitions };
    await writeAll(executor.shuffle(0, shape));

    // The fault strikes where meant: the killed worker holds the only copy of some partitions.
    const lm = app.state().shuffles.get(0);
    assert.ok(lm !== undefined, 'the lifecycle manager knows shuffle 0');
    assert.ok(
      lm.reserved.every((copy) => copy.mode === 'PRIMARY'),
      'replication is off by default: one copy per partition',
    );
    const victim = cluster!.workerIds[0]!;
    const lost = lm.reserved
      .filter((copy) => workerKey(copy.worker) === victim)
      .map((copy) => copy.partitionId);
    assert.ok(
      lost.length > 0,
      `worker 0 holds partitions of shuffle 0 (${JSON.stringify(lm.reserved.length)})`,
    );
    cluster!.workers[0]!.kill('SIGKILL');
    await cluster!.workers[0]!.waitForExit();

    const shuffle = executor.shuffle(0, shape);
    await assert.rejects(shuffle.read(lost[0]!), (error: unknown) => {
      assert.ok(error instanceof ReduceTaskFailedError, String(error));
      assert.equal(error.kind, 'fetch-failure');
      assert.match(error.message, /The data of shuffle 0 \(stage attempt 0\) is lost: rerun its map stage/);
      assert.match(error.message, /`await application\.rerunMapStage\(0\)`/);
      assert.match(error.message, /`client\.shuffle\(0, shape, \{ stageAttempt: 1 \}\)`/);
      return true;
    });

    const stage = await app.rerunMapStage(0);
    assert.deepEqual(stage, { shuffleId: 0, stageAttempt: 1 });
    assert.equal(app.stageAttempt(0), 1);
    // A task of the abandoned attempt is refused rather than counted. It starts from the locations its executor
    // holds and sends no RegisterShuffle: it is refused at its revive or its MapperEnd (SHUFFLE_UNREGISTERED), or,
    // where a worker has already dropped the shuffle, told that the stage ended, and ends without winning.
    const late = executor.shuffle(0, shape).writer(0, 1);
    late.write(0, recordOf(0, 1, 0, 0));
    const ended = await late.close().then(
      (result) => `ended ${result.outcome}`,
      (error: unknown) => String(error),
    );
    assert.match(ended, /SHUFFLE_UNREGISTERED|^ended lost$/, 'the late attempt does not count');

    const rerun = executor.shuffle(0, shape, { stageAttempt: stage.stageAttempt });
    await writeAll(rerun);
    for (let p = 0; p < JOB.partitions; p += 1) {
      const got = (await rerun.read(p)).map((r) => decoder.decode(r)).sort();
      assert.deepEqual(got, expected(p), `partition ${p} after the rerun`);
    }
  });

  it('refuses a shuffle declared again with another shape, in one executor and across executors', async () => {
    const { app, executor } = client!;
    executor.shuffle(5, { maps: 2, partitions: 3 });
    assert.throws(
      () => executor.shuffle(5, { maps: 2, partitions: 4 }),
      /shuffle 5 was declared with 2 maps and 3 partitions; it cannot be declared again with 2 and 4/,
    );
    const writer = executor.shuffle(5, { maps: 2, partitions: 3 }).writer(0);
    writer.write(0, recordOf(0, 0, 0, 0));
    assert.equal((await writer.close()).outcome, 'won');

    const other = connectExecutor({
      lifecycleManager: app.lifecycleManager,
      appId: app.appId,
      logLevel: 'silent',
    });
    try {
      const mismatched = other.shuffle(5, { maps: 4, partitions: 3 }).writer(0);
      mismatched.write(0, recordOf(0, 0, 0, 0));
      await assert.rejects(
        mismatched.close(),
        /SHUFFLE_ALREADY_REGISTERED: shuffle 5 of .* is registered with 2 maps and 3 partitions; this task declares 4 maps/,
      );
    } finally {
      await other.close();
    }
  });
});
