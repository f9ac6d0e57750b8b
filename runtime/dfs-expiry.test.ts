// svc.master.dfs.expireDirs.timeout on real processes (issue 33): every period the master removes, from the
// distributed tier, the shuffle directories of applications it no longer has (here one the master never had, as
// after a lost application whose workers are gone), and keeps those of a running application, which still reads
// every record afterwards.
import assert from 'node:assert/strict';
import { existsSync, mkdirSync, readdirSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { after, before, describe, it } from 'node:test';
import { clientTierConf, LocalCluster } from './cluster/local-cluster.ts';
import { clientSide, readAndVerify, winnersOf, writeMaps, type SmallJob } from './testing/small-job.ts';

const JOB: SmallJob = { maps: 2, partitions: 3, recordsPerPartition: 20 };

describe('the master’s sweep of the distributed tier (real processes)', () => {
  let cluster: LocalCluster;
  before(async () => {
    cluster = await LocalCluster.start({
      workers: 1,
      tier: 'dfs',
      masterConf: ['svc.master.dfs.expireDirs.timeout=300ms'],
    });
  });
  after(async () => {
    await cluster?.stop();
  });

  it('removes the directories of applications it no longer has and keeps a running one’s', async () => {
    const dfs = path.join(cluster.dir, 'dfs');
    const client = await clientSide(cluster.masterUrl, { conf: clientTierConf('dfs') });
    try {
      const winners = winnersOf(await writeMaps(client.executor, 0, JOB));
      const running = `${client.app.appId}-0`;
      assert.ok(
        existsSync(path.join(dfs, running)),
        `the running application's files: ${readdirSync(dfs).join(' ')}`,
      );

      const gone = path.join(dfs, 'application-gone-4');
      mkdirSync(gone, { recursive: true });
      writeFileSync(path.join(gone, '0-0-0'), 'left by a worker that is gone for good');
      writeFileSync(path.join(dfs, 'README'), 'not a shuffle directory: never removed');

      const removed = await cluster.master.waitFor(
        (line) =>
          line.event === 'master.dfs.expiredDirsRemoved' &&
          (line.examples as string[]).includes('application-gone-4'),
        'the sweep that removes application-gone-4',
      );
      assert.equal(removed.removed, 1, 'only the expired application’s directory');
      assert.equal(existsSync(gone), false, 'the expired application’s directory is gone');
      assert.ok(existsSync(path.join(dfs, running)), 'the running application’s directory stays');
      assert.ok(existsSync(path.join(dfs, 'README')), 'a file that is no shuffle directory stays');
      await readAndVerify(client.executor, 0, JOB, winners);
    } finally {
      await client.close();
    }
  });
});
