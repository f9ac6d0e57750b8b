// Back-pressure on a real worker: with a memory budget far smaller than the data in flight, the worker stops
// reading push connections instead of buffering without bound, resumes once its disks caught up, and loses nothing;
// partly received frames pause it too, and no connection is closed for the memory they hold.
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { workerMemoryLimitsFrom } from '../conf/machine-configs.ts';
import { resolveConfig } from '../conf/resolve.ts';
import { CURRENT_RELEASE } from '../core/release/version.ts';
import { LocalCluster } from './cluster/local-cluster.ts';
import { type SmallJob, runVerifiedJob } from './testing/small-job.ts';

// 8 MB pushed by four maps at once into a worker whose pause threshold is about 218 KB.
const JOB: SmallJob = { maps: 4, partitions: 4, recordsPerPartition: 500, recordBytes: 1000 };

describe('back-pressure on a real worker', () => {
  let cluster: LocalCluster;
  before(async () => {
    cluster = await LocalCluster.start({ workers: 1, workerConf: ['svc.worker.memory.size=256k'] });
  });
  after(async () => {
    await cluster?.stop();
  });

  it('pauses and resumes reading pushes under a small memory budget, and the job verifies', async () => {
    await runVerifiedJob(cluster.masterUrl, JOB);
    const events = cluster.workers[0]!.seen((line) => String(line.event).startsWith('worker.backPressure.'));
    const pushEvents = events.filter((line) => line.service === 'push').map((line) => String(line.event));
    assert.ok(
      pushEvents.length >= 2,
      `the worker paused and resumed push reads (${pushEvents.length} events)`,
    );
    pushEvents.forEach((event, i) =>
      assert.equal(
        event,
        i % 2 === 0 ? 'worker.backPressure.paused' : 'worker.backPressure.resumed',
        `event ${i}`,
      ),
    );
    assert.equal(pushEvents.at(-1), 'worker.backPressure.resumed', 'the worker ends reading again');
    for (const line of events)
      assert.ok(
        Number(line.bytesInFlight) <= 256 * 1024 + 4 * 1024 * 1024,
        'Number(line.bytesInFlight) <= 256 * 1024 + 4 * 1024 * 1024',
      );
    // At this budget partly received frames may hold one frame (svc.network.frame.maxSize), and pause the data
    // ports above 0: frames of pushes larger than one socket read are partly received for a while, so some pause
    // comes from them, and none is given up for memory while it arrives.
    const { backPressure: limits } = workerMemoryLimitsFrom(
      resolveConfig({
        release: CURRENT_RELEASE,
        role: 'worker',
        overrides: { 'svc.worker.memory.size': '256k' },
      }),
    );
    const byFramesAlone = events.filter(
      (line) =>
        line.event === 'worker.backPressure.paused' &&
        Number(line.partialFrameBytes) > 0 &&
        Number(line.bytesInFlight) + Math.min(Number(line.partialFrameBytes), limits.resumeBytes) <
          limits.pauseReceiveBytes,
    );
    assert.ok(byFramesAlone.length > 0, 'some pause came from partly received frames alone');
    const shed = cluster.workers[0]!.seen(
      (line) => line.cause === 'receiveMemoryFull' || line.cause === 'frameStalled',
    );
    assert.deepEqual(shed, [], 'no connection was closed to give memory back');
  });
});
