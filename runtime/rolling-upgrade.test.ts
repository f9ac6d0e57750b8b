// The contract's rolling upgrade on real processes (issue 26): a master and three workers presenting 0.5.0 run a
// replicated job of a 0.5.0 client; the master is upgraded, then each worker in turn (a graceful restart as 0.6.0 on
// the same ports and directories) while that job and a second one keep writing, stage after stage; the clients are
// upgraded last. Every record of every stage is verified, after the restarts (so partly from recovered files). Then
// the same from 0.3.0 to 0.4.0, with each worker's properties file migrated by `svc conf migrate` on the way.
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { mkdtempSync, readFileSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { afterEach, describe, it } from 'node:test';
import { fileURLToPath } from 'node:url';
import { isAtLeast, parseRelease } from '../core/release/version.ts';
import { LocalCluster } from './cluster/local-cluster.ts';
import { StagedShuffle } from './testing/staged-shuffle.ts';
import { STARTUP_WAIT_MS } from './cluster/server-process.ts';
import { clientSide, runVerifiedJob, type ClientSide, type SmallJob } from './testing/small-job.ts';

const CLI = fileURLToPath(new URL('./cli/main.ts', import.meta.url));
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

async function status(url: string): Promise<number> {
  const response = await fetch(url);
  await response.arrayBuffer();
  return response.status;
}

/** Whether a server of `release` serves `/api/v1` (from 0.6.0 on; contract 4.1, 4.4): 200, else 404. */
const apiStatus = (release: string) => (isAtLeast(parseRelease(release), '0.6.0') ? 200 : 404);

/**
 * A worker's settings as written for 0.3.x: its management interface under the names 0.4.0 renamed
 * (`svc.metrics.worker.prometheus.*`, now `svc.worker.http.*`). The cluster's own `--conf` settings name the same
 * address, so the file only has to be read, not to win.
 */
const WORKER_FILE_03 = [
  ...GRACEFUL.map((setting) => setting.replace('=', ' ')),
  'svc.metrics.worker.prometheus.host 127.0.0.1',
  'svc.metrics.worker.prometheus.port 0',
].join('\n');

/** `svc conf <args>` as an operator runs it; its exit status and output. */
function svcConf(...args: string[]): { status: number | null; output: string } {
  const result = spawnSync(process.execPath, ['--import', 'tsx', CLI, 'conf', ...args], { encoding: 'utf8' });
  return { status: result.status, output: `${result.stdout}${result.stderr}` };
}

/** `svc conf migrate FILE --from A --to B --write`, then `svc conf check` as of B finds nothing left to fix. */
function migrate(file: string, from: string, to: string): void {
  const before = svcConf('check', file, '--release', to);
  assert.match(
    before.output,
    /renamed svc\.worker\.http\.port in 0\.4\.0/,
    'the old names warn as of the new release',
  );
  const migrated = svcConf('migrate', file, '--from', from, '--to', to, '--write');
  assert.equal(migrated.status, 0, `svc conf migrate: ${migrated.output}`);
  const text = readFileSync(file, 'utf8');
  assert.match(text, /^svc\.worker\.http\.port 0$/m);
  assert.doesNotMatch(text, /^svc\.metrics\.worker\.prometheus/m);
  const after = svcConf('check', file, '--release', to);
  assert.equal(after.status, 0, after.output);
  assert.match(after.output, /no problems as of release/);
}

interface UpgradeCase {
  readonly from: string;
  readonly to: string;
  /** Each worker reads a properties file written for `from`, migrated with `svc conf migrate` before its restart. */
  readonly confFiles?: boolean;
}

function rollingUpgrade({ from, to, confFiles = false }: UpgradeCase): void {
  describe(`a rolling upgrade from ${from} to ${to} while jobs run (real processes)`, () => {
    let cluster: LocalCluster | undefined;
    const clients: ClientSide[] = [];
    afterEach(async () => {
      await Promise.all(clients.map((client) => client.close().catch(() => undefined)));
      clients.length = 0;
      await cluster?.stop();
      cluster = undefined;
    });

    it('upgrades the master, then each worker gracefully between stages, then the clients; every stage verifies', async () => {
      const dir = process.env.KEEP_DIR ?? mkdtempSync(path.join(tmpdir(), 'svc-upgrade-'));
      const files = [0, 1, 2].map((index) => path.join(dir, `worker-${index}.conf`));
      if (confFiles) for (const file of files) writeFileSync(file, `${WORKER_FILE_03}\n`);
      cluster = await LocalCluster.start({
        workers: 3,
        release: from,
        dir,
        ...(confFiles ? { workerConfFiles: files } : { workerConf: GRACEFUL }),
        ...(process.env.KEEP_DIR === undefined ? {} : { keepDir: true }),
      });
      const c = cluster;
      const jobA = await clientSide(c.masterUrl, { release: from, conf: REPLICATED });
      clients.push(jobA);
      const stages: StagedShuffle[] = [];
      let a = await new StagedShuffle(jobA, 0, JOB).begin();
      stages.push(a);
      assert.equal(await status(`${c.masterHttpUrl}/workerInfo`), 200, `the legacy path at ${from}`);
      assert.equal(await status(`${c.masterHttpUrl}/api/v1/workers`), apiStatus(from), `/api/v1 at ${from}`);

      // 1. The master, while job A's first stage has pushes in flight.
      await c.restartMaster('SIGTERM', { release: to });
      assert.equal(c.master.seen((line) => line.event === 'listening')[0]?.release, to);
      assert.equal(await status(`${c.masterHttpUrl}/api/v1/workers`), apiStatus(to), `/api/v1 at ${to}`);
      assert.equal(await status(`${c.masterHttpUrl}/workerInfo`), 200, `the legacy path stays at ${to}`);
      await a.end();
      const jobB = await clientSide(c.masterUrl, { release: from, conf: REPLICATED });
      clients.push(jobB);
      a = await new StagedShuffle(jobA, 1, JOB).begin();
      let b = await new StagedShuffle(jobB, 0, JOB).begin();
      stages.push(a, b);

      // 2. Each worker in turn: it stops taking slots, its open partitions move on (HARD_SPLIT, revive), it exits
      // once the running stages committed, and comes back on the new release on the same ports with its recovery
      // store (and its configuration migrated).
      for (let index = 0; index < 3; index += 1) {
        const worker = c.workers[index]!;
        const workerApi = `${c.workerHttpUrl(index)}/api/v1/workers`;
        assert.equal(await status(workerApi), apiStatus(from), `worker ${index} at ${from}`);
        worker.kill('SIGTERM');
        await worker.waitForEvent('process.stopping');
        await Promise.all([a.end(), b.end()]);
        assert.equal(await worker.waitForExit(), 0, `worker ${index} shut down gracefully`);
        assert.deepEqual(
          worker.seen((line) => line.event === 'worker.lifecycle.drainTimedOut'),
          [],
          `worker ${index} drained before its deadline`,
        );
        if (confFiles) migrate(files[index]!, from, to);
        const restarted = await c.startWorker(index, { samePorts: true, release: to });
        await restarted.waitForEvent('worker.registered', STARTUP_WAIT_MS);
        assert.equal(
          await status(`${c.workerHttpUrl(index)}/api/v1/workers`),
          apiStatus(to),
          `worker ${index} at ${to}`,
        );
        a = await new StagedShuffle(jobA, index + 2, JOB).begin();
        b = await new StagedShuffle(jobB, index + 1, JOB).begin();
        stages.push(a, b);
      }
      await Promise.all([a.end(), b.end()]);
      // Every stage, read after every restart: partly from files the workers recovered.
      for (const stage of stages) await stage.verify();

      // 3. The clients last: an application of the new release on the upgraded cluster.
      await runVerifiedJob(c.masterUrl, JOB, { release: to, conf: REPLICATED });
    });
  });
}

rollingUpgrade({ from: '0.5.0', to: '0.6.0' });
// 0.4.0 renamed most keys and removed some: each worker's settings are migrated on the way.
rollingUpgrade({ from: '0.3.0', to: '0.4.0', confFiles: true });
