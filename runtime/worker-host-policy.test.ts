// svc.master.{allow,deny}WorkerHostPattern on real processes: a worker whose host the master's patterns refuse is
// told why at every attempt, gives up after svc.worker.register.timeout and exits 1 naming the pattern, and the
// master logs the refusal; a host the patterns admit registers (docs/operations.md, "Which hosts may join").
import assert from 'node:assert/strict';
import { writeFileSync } from 'node:fs';
import path from 'node:path';
import { after, describe, it } from 'node:test';
import { LocalCluster } from './cluster/local-cluster.ts';
import { ServerProcess } from './cluster/server-process.ts';

describe('worker host patterns on real processes', () => {
  const clusters: LocalCluster[] = [];
  const started: ServerProcess[] = [];

  after(async () => {
    await Promise.all(started.map((process) => process.stop()));
    await Promise.all(clusters.map((cluster) => cluster.stop()));
  });

  function worker(
    cluster: LocalCluster,
    name: string,
    settings: readonly string[],
    options: { env?: Record<string, string>; confFile?: string; host?: string | null } = {},
  ): ServerProcess {
    const own = path.join(cluster.dir, name);
    const process = new ServerProcess({
      name,
      ...(options.env === undefined ? {} : { env: options.env }),
      args: [
        'worker',
        cluster.masterUrl,
        ...(options.confFile === undefined ? [] : ['--conf-file', options.confFile]),
        ...[
          ...(options.host === null ? [] : [`svc.worker.host=${options.host ?? '127.0.0.1'}`]),
          `svc.worker.storage.dirs=${path.join(own, 'disk-1')}`,
          'svc.worker.http.host=127.0.0.1',
          'svc.worker.http.port=0',
          ...settings,
        ].flatMap((setting) => ['--conf', setting]),
      ],
      logFile: path.join(cluster.dir, 'logs', `${name}.log`),
    });
    started.push(process);
    return process;
  }

  it('a denied host is refused: the worker exits 1 naming the pattern, the master logs why', async () => {
    const cluster = await LocalCluster.start({
      workers: 0,
      masterConf: ['svc.master.denyWorkerHostPattern=127\\.0\\..*'],
    });
    clusters.push(cluster);
    const refused = worker(cluster, 'worker-denied', ['svc.worker.register.timeout=1s']);
    assert.equal(await refused.waitForExit(), 1);
    const gaveUp = refused.seen((line) => line.event === 'worker.register.gaveUp');
    assert.equal(gaveUp.length, 1, 'the worker says once that it gives up');
    assert.match(String(gaveUp[0]?.reason), /matches svc\.master\.denyWorkerHostPattern/);
    const exit = refused.seen((line) => line.event === 'driver.exit');
    assert.match(String(exit[0]?.reason), /Check that .* this host is allowed to join/);
    const logged = cluster.master.seen((line) => line.event === 'master.worker.registerRefused');
    assert.ok(logged.length >= 1, 'the master logs the refusal');
    assert.match(String(logged[0]?.reason), /host '127\.0\.0\.1' matches svc\.master\.denyWorkerHostPattern/);
    assert.equal(cluster.master.seen((line) => line.event === 'master.worker.registered').length, 0);
  });

  it('an allowed host registers, one the allow pattern does not match is refused', async () => {
    const cluster = await LocalCluster.start({
      workers: 0,
      masterConf: ['svc.master.allowWorkerHostPattern=127\\.0\\.0\\.1'],
    });
    clusters.push(cluster);
    const admitted = worker(cluster, 'worker-allowed', []);
    await cluster.master.waitForEvent('master.worker.registered');
    await admitted.waitForEvent('worker.registered');
    const response = await fetch(`${cluster.masterHttpUrl}/api/v1/workers`);
    const body = (await response.json()) as { workers: { host: string }[] };
    assert.deepEqual(
      body.workers.map((w) => w.host),
      ['127.0.0.1'],
    );
    const outside = worker(cluster, 'worker-outside', [
      'svc.worker.host=localhost',
      'svc.worker.register.timeout=1s',
    ]);
    assert.equal(await outside.waitForExit(), 1);
    const gaveUp = outside.seen((line) => line.event === 'worker.register.gaveUp');
    assert.match(String(gaveUp[0]?.reason), /does not match svc\.master\.allowWorkerHostPattern/);

    // SVC_LOCAL_HOSTNAME wins over the properties file's svc.worker.host (contract 9.3): the file says localhost,
    // which the allow pattern refuses; the environment says 127.0.0.1, and the worker registers under it.
    const file = path.join(cluster.dir, 'worker-env.conf');
    writeFileSync(file, 'svc.worker.host localhost\n');
    const named = worker(cluster, 'worker-env', ['svc.worker.register.timeout=5s'], {
      env: { SVC_LOCAL_HOSTNAME: '127.0.0.1' },
      confFile: file,
      host: null,
    });
    const listening = await named.waitForEvent('listening');
    assert.equal(listening.host, '127.0.0.1');
    await named.waitForEvent('worker.registered');
  });
});
