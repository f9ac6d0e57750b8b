// svc.client.spark.shuffle.fallback.policy on real processes, set as a batch engine hands its configuration over
// (under its prefix): with no worker, AUTO answers "fall back" and NEVER fails naming the cause and the policy; once a
// worker serves, AUTO runs the shuffle on svc; ALWAYS (here the deprecated forceFallback.enabled=true) answers
// "fall back" without asking the lifecycle manager, the master or any worker.
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { LocalCluster } from '../cluster/local-cluster.ts';
import { parseExposition, samplesOf } from '../metrics/testing.ts';
import { pollUntil } from '../testing/poll.ts';
import { clientSide, readAndVerify, winnersOf, writeMaps, type SmallJob } from '../testing/small-job.ts';
import { startApplication, type Application } from './application.ts';
import { ClientReleaseRefusedError, ShuffleNotServedError } from './errors.ts';

const JOB: SmallJob = { maps: 2, partitions: 2, recordsPerPartition: 10, recordBytes: 50 };
const SHAPE = { maps: JOB.maps, partitions: JOB.partitions };

describe('the fallback policy, with configuration handed over under the engine’s prefix', () => {
  let cluster: LocalCluster;
  const apps: Application[] = [];
  before(async () => {
    cluster = await LocalCluster.start({ workers: 0 });
  });
  after(async () => {
    await Promise.all(apps.map((app) => app.close().catch(() => undefined)));
    await cluster?.stop();
  });

  async function application(engineConf: Record<string, string>): Promise<Application> {
    const app = await startApplication({
      master: cluster.masterUrl,
      enginePrefix: 'spark',
      conf: { 'spark.executor.memory': '4g', ...engineConf },
      logLevel: 'silent',
    });
    apps.push(app);
    return app;
  }

  it('AUTO answers "fall back" when no worker can be offered', async () => {
    const app = await application({});
    const registered = await app.registerShuffle(1, SHAPE);
    assert.equal(registered.kind, 'fallback', JSON.stringify(registered));
    assert.match(
      registered.kind === 'fallback' ? registered.reason : '',
      /svc has no worker to offer this shuffle: .*\(svc\.client\.spark\.shuffle\.fallback\.policy is AUTO\)/,
    );
  });

  it('NEVER, set as spark.svc.client.spark.shuffle.fallback.policy, fails naming the cause and the policy', async () => {
    const app = await application({ 'spark.svc.client.spark.shuffle.fallback.policy': 'NEVER' });
    await assert.rejects(app.registerShuffle(2, SHAPE), (error: unknown) => {
      assert.ok(
        error instanceof ShuffleNotServedError,
        `expected ShuffleNotServedError, got ${String(error)}`,
      );
      assert.equal(error.reason, 'noWorkers');
      assert.match(error.message, /svc has no worker to offer this shuffle/);
      assert.match(error.message, /svc\.client\.spark\.shuffle\.fallback\.policy is NEVER/);
      return true;
    });
  });

  it('a refused client release (0.2.0 against 0.6.0 servers) says the engine may fall back under AUTO', async () => {
    await assert.rejects(
      startApplication({ master: cluster.masterUrlFor('0.2.0'), release: '0.2.0', logLevel: 'silent' }),
      (error: unknown) => {
        assert.ok(
          error instanceof ClientReleaseRefusedError,
          `expected ClientReleaseRefusedError, got ${String(error)}`,
        );
        assert.match(error.fallback ?? '', /refused this client’s release.*is AUTO/);
        return true;
      },
    );
  });

  describe('once a worker serves', () => {
    before(async () => {
      await cluster.startWorker(0);
      await cluster.waitForRegistrations();
    });

    it('AUTO registers the shuffle on svc, and its executors write and read it', async () => {
      const client = await clientSide(cluster.masterUrl, { conf: {} });
      try {
        const registered = await client.app.registerShuffle(3, SHAPE);
        assert.deepEqual(registered, { kind: 'svc', shuffleId: 3, stageAttempt: 0 });
        await readAndVerify(client.executor, 3, JOB, winnersOf(await writeMaps(client.executor, 3, JOB)));
      } finally {
        await client.close();
      }
    });

    it('ALWAYS (the deprecated forceFallback.enabled=true) falls back without contacting a worker', async () => {
      const app = await application({ 'spark.svc.client.spark.shuffle.forceFallback.enabled': 'true' });
      const registered = await app.registerShuffle(4, SHAPE);
      assert.equal(registered.kind, 'fallback', JSON.stringify(registered));
      assert.match(registered.kind === 'fallback' ? registered.reason : '', /is ALWAYS: svc was not asked/);
      assert.equal(app.state().shuffles.size, 0, 'the lifecycle manager registered nothing');
      // The application stays open: had it reached the worker, its connection would keep the count above 0.
      let last: number | undefined;
      await pollUntil(
        async () => {
          const response = await fetch(`${cluster.workerHttpUrl(0)}/metrics/prometheus`);
          last = samplesOf(parseExposition(await response.text())).find(
            (sample) =>
              sample.name === 'metrics_ActiveConnectionCount_Value' && sample.labels.service === 'rpc',
          )?.value;
          return last === 0;
        },
        () =>
          `no connection on the worker's rpc port while the ALWAYS application is open (last ${String(last)})`,
        { intervalMs: 50 },
      );
    });
  });
});
