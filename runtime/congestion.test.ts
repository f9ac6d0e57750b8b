// Congestion control on real processes (issue 33): a worker whose watermarks a small job passes answers its pushes
// CONGESTED, the pushing map tasks slow down (their window shrinks: one line each says so), the episode ends once
// the job's pushes stop, and the job verifies; with congestion control off the same job is never answered so; and
// a watermark lowered in the dynamic configuration file congests the next job without a restart.
import assert from 'node:assert/strict';
import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { after, before, describe, it } from 'node:test';
import { startApplication } from './client/application.ts';
import type { ClientLogger } from './client/client-log.ts';
import { connectExecutor } from './client/shuffle-client.ts';
import { LocalCluster } from './cluster/local-cluster.ts';
import { within } from './testing/deadline.ts';
import { replaceFile } from './testing/replace-file.ts';
import { parseExposition, samplesOf } from './metrics/testing.ts';
import { readAndVerify, winnersOf, writeMaps, type SmallJob } from './testing/small-job.ts';

// 2 maps × 2 partitions × 40 KB, pushed in batches of 2 KB: far above 32 KB/s for the first check, and 80 batches,
// five times what the map tasks keep in flight at once (4 per partition), so that pushes still arrive after the
// worker's check has seen the watermark passed; in larger batches the whole job can land before any check runs.
// Not larger: once congested, the job goes at about the watermark's speed.
const JOB: SmallJob = { maps: 2, partitions: 2, recordsPerPartition: 40, recordBytes: 1000 };
const CLIENT_CONF = { 'svc.client.push.buffer.max.size': '2k' };
/** Far above a congested job's minute at worst: about 80 batches, one in flight, at most 2 s apart per map task. */
const JOB_DEADLINE_MS = 150_000;

const CONGESTION_ON = [
  'svc.worker.congestionControl.enabled=true',
  'svc.worker.congestionControl.userProduceSpeed.high.watermark=32k',
  'svc.worker.congestionControl.userProduceSpeed.low.watermark=16k',
  'svc.worker.congestionControl.sample.time.window=1s',
  'svc.worker.congestionControl.check.interval=10ms',
];

interface Captured {
  readonly event: unknown;
  readonly fields: Record<string, unknown>;
}

/** Runs the job as one application whose library lines (info and up) are kept; returns them. */
async function runJobCapturingClientLines(master: string): Promise<Captured[]> {
  const lines: Captured[] = [];
  const keep = (fields: Record<string, unknown>) => lines.push({ event: fields.event, fields });
  const logger: ClientLogger = { error: keep, warn: keep, info: keep };
  const options = { conf: CLIENT_CONF, logger, logLevel: 'info' as const };
  const app = await startApplication({ master, ...options });
  const executor = connectExecutor({
    lifecycleManager: app.lifecycleManager,
    appId: app.appId,
    ...options,
    ...(app.secret === undefined ? {} : { secret: app.secret }),
  });
  try {
    // A deadline of its own, so that a job that stops making progress fails with the client's last lines, not the
    // file's timeout.
    await within(
      (async () => {
        const results = await writeMaps(executor, 0, JOB);
        await readAndVerify(executor, 0, JOB, winnersOf(results));
      })(),
      'the job to verify',
      JOB_DEADLINE_MS,
    ).catch((error: unknown) => {
      const tail = lines.slice(-15).map((line) => JSON.stringify(line.fields));
      throw new Error(`${String(error)}; the client's last lines:\n${tail.join('\n')}`);
    });
  } finally {
    await executor.close();
    await app.close();
  }
  return lines;
}

async function workerCounter(cluster: LocalCluster, name: string): Promise<number> {
  const response = await fetch(`${cluster.workerHttpUrl(0)}/metrics/prometheus`);
  assert.equal(response.status, 200, 'the worker serves its metrics');
  const samples = samplesOf(parseExposition(await response.text())).filter((s) => s.name === name);
  assert.equal(samples.length, 1, `one series of ${name}`);
  return samples[0]!.value;
}

describe('congestion control on a real worker', () => {
  let cluster: LocalCluster;
  before(async () => {
    cluster = await LocalCluster.start({ workers: 1, workerConf: CONGESTION_ON });
  });
  after(async () => {
    await cluster?.stop();
  });

  it('answers CONGESTED past the watermark, the map tasks slow down, the episode ends, and the job verifies', async () => {
    const clientLines = await runJobCapturingClientLines(cluster.masterUrl);
    const worker = cluster.workers[0]!;
    const started = await worker.waitFor(
      (line) => line.event === 'worker.congestion.started',
      'the worker logs the start of the congestion episode',
    );
    assert.match(String(started.cause), /user .* produce speed \d+ B\/s > high watermark 32768 B\/s/);
    const ended = await worker.waitFor(
      (line) => line.event === 'worker.congestion.ended',
      'the episode ends once the job stopped pushing (the user falls below the low watermark)',
    );
    assert.ok(
      Number(ended.congestedReplies) > 0,
      `the end line counts the congested replies: ${String(ended.congestedReplies)}`,
    );
    // The job is over: every episode it caused ends (a throttled job may cause more than one: its pushes fall under
    // the low watermark, speed up again and pass the high one), each with one start and one end line.
    const starts = worker.seen((line) => line.event === 'worker.congestion.started').length;
    const ends = await worker.waitForCount(
      (line) => line.event === 'worker.congestion.ended',
      starts,
      `an end line for each of the ${starts} episode(s) the job caused`,
    );
    assert.equal(ends.length, starts, 'one start and one end line per episode');
    assert.ok(
      (await workerCounter(cluster, 'metrics_PushDataCongestedCount_Count')) > 0,
      'congested replies counted',
    );
    assert.ok(
      (await workerCounter(cluster, 'metrics_CongestionEpisodeCount_Count')) >= 1,
      'the episode is counted',
    );

    const slowed = clientLines.filter(
      (line) => line.event === 'push slowed down: the worker answered CONGESTED',
    );
    assert.ok(slowed.length > 0, 'a map task slowed its pushes to the worker');
    for (const line of slowed)
      assert.ok(
        Number(line.fields.window) < Number(line.fields.maxInFlightPerPartition),
        `its window shrank below the maximum: ${JSON.stringify(line.fields)}`,
      );
  });
});

describe('congestion control off (the default)', () => {
  let cluster: LocalCluster;
  before(async () => {
    cluster = await LocalCluster.start({
      workers: 1,
      // The watermarks alone do nothing without svc.worker.congestionControl.enabled.
      workerConf: CONGESTION_ON.filter((setting) => !setting.includes('enabled')),
    });
  });
  after(async () => {
    await cluster?.stop();
  });

  it('never answers CONGESTED, and no map task slows down', async () => {
    const clientLines = await runJobCapturingClientLines(cluster.masterUrl);
    assert.equal(
      await workerCounter(cluster, 'metrics_PushDataCongestedCount_Count'),
      0,
      'no congested reply',
    );
    assert.deepEqual(
      cluster.workers[0]!.seen((line) => String(line.event).startsWith('worker.congestion.')),
      [],
      'no episode',
    );
    assert.deepEqual(
      clientLines.filter((line) => String(line.event).startsWith('push slowed')),
      [],
      'no map task slowed down',
    );
  });
});

describe('congestion watermarks from the dynamic configuration, without a restart', () => {
  let cluster: LocalCluster;
  let file: string;
  /** The FS store's YAML: the user produce-speed watermarks at the SYSTEM level. */
  const watermarks = (high: string, low: string) =>
    [
      '- level: SYSTEM',
      '  config:',
      `    svc.worker.congestionControl.userProduceSpeed.high.watermark: ${high}`,
      `    svc.worker.congestionControl.userProduceSpeed.low.watermark: ${low}`,
      '',
    ].join('\n');

  before(async () => {
    const dir = mkdtempSync(path.join(tmpdir(), 'svc-congestion-dynamic-'));
    file = path.join(dir, 'dynamicConfig.yaml');
    // Far above what the job pushes: the first job is never congested.
    writeFileSync(file, watermarks('1g', '512m'));
    cluster = await LocalCluster.start({
      workers: 1,
      dir,
      workerConf: [
        'svc.worker.congestionControl.enabled=true',
        'svc.worker.congestionControl.sample.time.window=1s',
        // Every millisecond: at 10 ms a fast machine's job could end before a check saw the rate, so the episode
        // began after the last push and no reply was congested (as the conformance probe found, docs/conformance.md).
        'svc.worker.congestionControl.check.interval=1ms',
        'svc.dynamicConfig.store.backend=FS',
        `svc.dynamicConfig.store.fs.path=${file}`,
        'svc.dynamicConfig.refresh.interval=200ms',
      ],
    });
  });
  after(async () => {
    await cluster?.stop();
  });

  it('congests the next job once the file lowers the high watermark', async () => {
    const worker = cluster.workers[0]!;
    await worker.waitFor(
      (line) =>
        line.event === 'worker.congestion.watermarks' &&
        /high 1073741824/.test(String(line.userProduceSpeed)),
      'the worker taking the first watermarks from the file',
    );
    const before = await runJobCapturingClientLines(cluster.masterUrl);
    assert.equal(
      await workerCounter(cluster, 'metrics_PushDataCongestedCount_Count'),
      0,
      'not congested at 1g',
    );
    assert.deepEqual(
      before.filter((line) => String(line.event).startsWith('push slowed')),
      [],
      'no map task slowed down',
    );

    const from = worker.lineCount;
    replaceFile(file, watermarks('32k', '16k'));
    await worker.waitFor(
      (line) =>
        line.event === 'worker.congestion.watermarks' && /high 32768/.test(String(line.userProduceSpeed)),
      'the worker taking the lowered watermark from the file',
      from,
    );
    const after = await runJobCapturingClientLines(cluster.masterUrl);
    const started = await worker.waitFor(
      (line) => line.event === 'worker.congestion.started',
      'an episode under the lowered watermark',
      from,
    );
    assert.match(String(started.cause), /high watermark 32768 B\/s/);
    assert.ok(
      (await workerCounter(cluster, 'metrics_PushDataCongestedCount_Count')) > 0,
      'congested replies counted',
    );
    assert.ok(
      after.some((line) => line.event === 'push slowed down: the worker answered CONGESTED'),
      'a map task slowed down',
    );
  });
});
