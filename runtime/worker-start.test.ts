// Starting a worker is all or nothing, on real processes: a worker that cannot bind a port or open its recovery
// store exits 2 with a message naming the key to change and never registers with the master; several workers on
// one host work when each has its own HTTP port and disks (docs/operations.md, "Several workers on one host").
import assert from 'node:assert/strict';
import { createServer, type Server } from 'node:net';
import path from 'node:path';
import { after, before, describe, it } from 'node:test';
import { LocalCluster } from './cluster/local-cluster.ts';
import { ServerProcess } from './cluster/server-process.ts';

/** A port something else holds: the server listening on it, and the port. */
async function takenPort(): Promise<{ server: Server; port: number }> {
  const server = createServer();
  await new Promise<void>((resolve) => server.listen({ host: '127.0.0.1', port: 0 }, resolve));
  const address = server.address();
  if (address === null || typeof address === 'string') throw new Error('no port');
  return { server, port: address.port };
}

describe('starting a worker on real processes', () => {
  let cluster: LocalCluster;
  const started: ServerProcess[] = [];
  let starts = 0;

  /** A worker of the cluster's master with the defaults but `settings` (and its own disk and logs). */
  function worker(settings: readonly string[]): ServerProcess {
    starts += 1;
    const own = path.join(cluster.dir, `worker-x${starts}`);
    const process = new ServerProcess({
      name: `worker-x${starts}`,
      args: [
        'worker',
        cluster.masterUrl,
        ...[
          'svc.worker.host=127.0.0.1',
          `svc.worker.storage.dirs=${path.join(own, 'disk-1')}`,
          'svc.worker.http.host=127.0.0.1',
          ...settings,
        ].flatMap((setting) => ['--conf', setting]),
      ],
      logFile: path.join(cluster.dir, 'logs', `worker-x${starts}.log`),
    });
    started.push(process);
    return process;
  }

  async function registeredWorkers(): Promise<string[]> {
    const response = await fetch(`${cluster.masterHttpUrl}/api/v1/workers`);
    const body = (await response.json()) as { workers: { host: string; rpcPort: number }[] };
    return body.workers.map((w) => `${w.host}:${w.rpcPort}`);
  }

  before(async () => {
    cluster = await LocalCluster.start({ workers: 0 });
  });
  after(async () => {
    await Promise.all(started.map((process) => process.stop()));
    await cluster?.stop();
  });

  it('a worker whose HTTP port is taken exits 2 naming the key, and never registered with the master', async () => {
    const taken = await takenPort();
    try {
      const failing = worker([`svc.worker.http.port=${taken.port}`]);
      assert.equal(await failing.waitForExit(), 2);
      const message = failing.stderr.join('\n');
      assert.match(message, /svc\.worker\.http\.port/);
      assert.match(message, new RegExp(`127\\.0\\.0\\.1:${taken.port}`));
      assert.match(message, /EADDRINUSE/);
      assert.doesNotMatch(message, /^\s+at /m, 'a message, not a stack trace');
      assert.equal(failing.seen((line) => line.event === 'listening').length, 0);
      assert.deepEqual(await registeredWorkers(), []);
      assert.equal(cluster.master.seen((line) => line.event === 'master.worker.registered').length, 0);
    } finally {
      taken.server.close();
    }
  });

  it('a data port that is taken exits 2 naming its key', async () => {
    const taken = await takenPort();
    try {
      const failing = worker(['svc.worker.http.port=0', `svc.worker.fetch.port=${taken.port}`]);
      assert.equal(await failing.waitForExit(), 2);
      assert.match(failing.stderr.join('\n'), /svc\.worker\.fetch\.port.*EADDRINUSE/);
      assert.deepEqual(await registeredWorkers(), []);
    } finally {
      taken.server.close();
    }
  });

  it('a recovery store another worker holds exits 2 naming its path and key', async () => {
    const recoverPath = path.join(cluster.dir, 'shared-recover');
    const graceful = [
      'svc.worker.graceful.shutdown.enabled=true',
      `svc.worker.graceful.shutdown.recoverPath=${recoverPath}`,
    ];
    const first = worker(['svc.worker.http.port=0', ...graceful]);
    const listening = await first.waitForEvent('listening');
    assert.equal(listening.recoveryStore, recoverPath);
    await first.waitForEvent('worker.registered');
    const second = worker(['svc.worker.http.port=0', ...graceful]);
    assert.equal(await second.waitForExit(), 2);
    const message = second.stderr.join('\n');
    assert.match(message, /svc\.worker\.graceful\.shutdown\.recoverPath/);
    assert.ok(message.includes(recoverPath), message);
    assert.doesNotMatch(message, /^\s+at /m, 'a message, not a stack trace');
    assert.equal(second.seen((line) => line.event === 'listening').length, 0);
    assert.equal(cluster.master.seen((line) => line.event === 'master.worker.registered').length, 1);
    await first.stop();
  });

  it('two workers on one host with the defaults but their HTTP ports both register, opening no recovery store', async () => {
    // Graceful shutdown is off by default: neither opens the default recovery path, so they cannot collide there.
    const workers = [worker(['svc.worker.http.port=0']), worker(['svc.worker.http.port=0'])];
    const lines = await Promise.all(workers.map((w) => w.waitForEvent('listening')));
    for (const line of lines) assert.equal(line.recoveryStore, null);
    await Promise.all(workers.map((w) => w.waitForEvent('worker.registered')));
    const registered = await registeredWorkers();
    for (const line of lines) {
      const ports = line.ports as { rpc: number };
      assert.ok(
        registered.includes(`127.0.0.1:${ports.rpc}`),
        `${String(line.node)} in ${registered.join(', ')}`,
      );
    }
    await Promise.all(workers.map((w) => w.stop()));
  });
});
