// Quotas on real processes (issue 33): a user over its quota gets QuotaExceededError for a new shuffle; a quota
// lowered in the dynamic configuration file refuses the next shuffle without a restart; a bad file keeps the last
// good values and is reported in one log line naming the file and the line. Every wait syncs on the master's log.
import assert from 'node:assert/strict';
import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { after, before, describe, it } from 'node:test';
import { QuotaExceededError } from './client/errors.ts';
import { LocalCluster } from './cluster/local-cluster.ts';
import type { LogLine } from './cluster/server-process.ts';
import { pollUntil } from './testing/poll.ts';
import { replaceFile } from './testing/replace-file.ts';
import { clientSide, writeMaps, type ClientSide, type SmallJob } from './testing/small-job.ts';

const JOB: SmallJob = { maps: 2, partitions: 2, recordsPerPartition: 20 };

/** The FS store's YAML: tenant t, each user with a diskBytesWritten quota. */
function dynamicFile(users: Readonly<Record<string, string>>): string {
  const lines = ['- level: TENANT', '  tenantId: t', '  users:'];
  for (const [name, limit] of Object.entries(users)) {
    lines.push(`    - name: ${name}`, '      config:', `        svc.quota.user.diskBytesWritten: ${limit}`);
  }
  return `${lines.join('\n')}\n`;
}

function asUser(cluster: LocalCluster, name: string): Promise<ClientSide> {
  return clientSide(cluster.masterUrl, {
    conf: {
      'svc.identity.user-specific.tenant': 't',
      'svc.identity.user-specific.userName': name,
      'svc.client.application.heartbeatInterval': '200ms',
    },
  });
}

/** A cluster whose master reads `file` as its dynamic configuration, every 200 ms. */
function quotaCluster(dir: string, file: string, masterConf: readonly string[] = []): Promise<LocalCluster> {
  return LocalCluster.start({
    workers: 1,
    dir,
    logLevel: 'debug',
    // Heartbeats every 500 ms, usage and status every 200 ms, the file read every 200 ms.
    conf: ['svc.master.heartbeat.worker.timeout=2s'],
    masterConf: [
      'svc.dynamicConfig.store.backend=FS',
      `svc.dynamicConfig.store.fs.path=${file}`,
      'svc.dynamicConfig.refresh.interval=200ms',
      'svc.master.userResourceConsumption.update.interval=200ms',
      ...masterConf,
    ],
  });
}

const overQuota =
  (user: string) =>
  (line: LogLine): boolean =>
    line.event === 'master.quota.exceeded' && line.user === user;

async function refused(client: ClientSide, shuffleId: number): Promise<QuotaExceededError> {
  const error = await writeMaps(client.executor, shuffleId, JOB).then(
    () => undefined,
    (caught: unknown) => caught,
  );
  assert.ok(error instanceof QuotaExceededError, `a QuotaExceededError, not ${String(error)}`);
  return error;
}

describe('quotas on real processes', () => {
  let cluster: LocalCluster;
  let file: string;
  before(async () => {
    const dir = mkdtempSync(path.join(tmpdir(), 'svc-quota-'));
    file = path.join(dir, 'dynamicConfig.yaml');
    writeFileSync(file, dynamicFile({ alice: '1' }));
    cluster = await quotaCluster(dir, file);
  });
  after(async () => {
    await cluster?.stop();
  });

  it('refuses a new shuffle of a user over quota with QuotaExceededError naming user, quota, usage and limit', async () => {
    const alice = await asUser(cluster, 'alice');
    try {
      const from = cluster.master.lineCount;
      await writeMaps(alice.executor, 0, JOB);
      await cluster.master.waitFor(overQuota('t/alice'), 'alice over her quota', from);
      // The worker's own management interface shows her usage too, with her application under her.
      const own = (await (await fetch(`${cluster.workerHttpUrl(0)}/api/v1/workers`)).json()) as {
        resourceConsumptions?: Record<string, { diskFileCount?: number; subResourceConsumptions?: object }>;
      };
      const usage = own.resourceConsumptions?.['t/alice'];
      assert.ok((usage?.diskFileCount ?? 0) > 0, JSON.stringify(own.resourceConsumptions));
      assert.deepEqual(Object.keys(usage?.subResourceConsumptions ?? {}), [alice.app.appId]);
      const error = await refused(alice, 1);
      for (const part of [
        't/alice',
        'diskBytesWritten',
        'the limit is 1 ',
        'svc.quota.user.diskBytesWritten',
      ])
        assert.ok(error.message.includes(part), `the error names ${part}: ${error.message}`);
      assert.equal(error.status, 'QUOTA_EXCEEDED');
    } finally {
      await alice.close();
    }
  });

  it('refuses the next shuffle once the quota is lowered in the dynamic file, without a restart', async () => {
    const bob = await asUser(cluster, 'bob');
    try {
      await writeMaps(bob.executor, 0, JOB);
      await writeMaps(bob.executor, 1, JOB);
      const from = cluster.master.lineCount;
      replaceFile(file, dynamicFile({ alice: '1', bob: '1' }));
      await cluster.master.waitFor(overQuota('t/bob'), 'bob over his lowered quota', from);
      const error = await refused(bob, 2);
      assert.ok(error.message.includes('t/bob'), error.message);
    } finally {
      await bob.close();
    }
  });

  it('keeps the last good values when the file turns bad, and says so in one line naming the line', async () => {
    const carol = await asUser(cluster, 'carol');
    try {
      let from = cluster.master.lineCount;
      replaceFile(file, dynamicFile({ alice: '1', bob: '1', carol: '1' }));
      await cluster.master.waitFor((line) => line.event === 'dynamicConfig.loaded', 'the good file', from);
      from = cluster.master.lineCount;
      // Line 12 names a size that is not one.
      replaceFile(file, dynamicFile({ alice: '1', bob: '1', carol: 'lots' }));
      const rejected = await cluster.master.waitFor(
        (line) => line.event === 'dynamicConfig.rejected',
        'the bad file reported',
        from,
      );
      assert.match(
        String(rejected.reason),
        new RegExp(`${file.replaceAll('.', '\\.')}:12`),
        String(rejected.reason),
      );
      await cluster.master.waitForCount(
        (line) => line.event === 'dynamicConfig.refreshed',
        3,
        'three more reads of the bad file',
        cluster.master.lineCount,
      );
      const reports = cluster.master.seen((line) => line.event === 'dynamicConfig.rejected');
      assert.equal(reports.length, 1, 'one line for the bad file, not one per read');
      // Carol's quota of 1 byte (the last good value) still holds.
      await writeMaps(carol.executor, 0, JOB);
      await cluster.master.waitFor(overQuota('t/carol'), 'carol over the last good quota', from);
      await refused(carol, 1);
    } finally {
      await carol.close();
    }
  });
});

describe('quotas on real processes: svc.quota.interruptShuffle.enabled', () => {
  let cluster: LocalCluster;
  before(async () => {
    const dir = mkdtempSync(path.join(tmpdir(), 'svc-quota-'));
    const file = path.join(dir, 'dynamicConfig.yaml');
    writeFileSync(file, dynamicFile({ dave: '1' }));
    cluster = await quotaCluster(dir, file, ['svc.quota.interruptShuffle.enabled=true']);
  });
  after(async () => {
    await cluster?.stop();
  });

  it('stops a running shuffle of a user who went over quota: its map fails with QuotaExceededError', async () => {
    const dave = await asUser(cluster, 'dave');
    try {
      const shuffle = dave.executor.shuffle(0, { maps: 1, partitions: 1 });
      const writer = shuffle.writer(0, 0);
      const record = new Uint8Array(1024).fill(7);
      // More than the 1 MiB the writer stages: pushed before the map ends, so the worker holds and reports them.
      for (let i = 0; i < 1500; i += 1) writer.write(0, record);
      const from = cluster.master.lineCount;
      await cluster.master.waitFor(
        (line) => line.event === 'master.quota.interrupt' && line.appId === dave.app.appId,
        'the master interrupting dave’s application',
        from,
      );
      await pollUntil(
        () => dave.app.state().interruptedShuffles.size > 0,
        () => 'the lifecycle manager stopping the shuffle at its next heartbeat',
      );
      const error = await writer.close().then(
        () => undefined,
        (caught: unknown) => caught,
      );
      assert.ok(error instanceof QuotaExceededError, `a QuotaExceededError, not ${String(error)}`);
      assert.ok(error.message.includes('t/dave'), error.message);
    } finally {
      await dave.close();
    }
  });
});
