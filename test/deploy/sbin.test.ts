// The operator's start and stop scripts (sbin/, docs/deployment.md) run a real cluster: a master and two workers on
// one host, started in the background with pid files and logs, a verified job against them, then stopped. The
// scripts run as an operator runs them: bash, the environment and SVC_CONF_DIR/svc-defaults.conf, no test harness.
import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import { existsSync, mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { after, before, describe, it } from 'node:test';
import { promisify } from 'node:util';
import { runVerifiedJob } from '../../runtime/testing/small-job.ts';

const run = promisify(execFile);
const ROOT = path.resolve(import.meta.dirname, '../..');
const SBIN = path.join(ROOT, 'sbin');

interface Started {
  readonly stdout: string;
  /** The JSON of the `listening` line the script printed. */
  readonly listening: Record<string, unknown>;
}

describe('the sbin scripts', () => {
  let dir = '';
  let env: NodeJS.ProcessEnv = {};

  const script = async (name: string, args: string[] = [], extra: NodeJS.ProcessEnv = {}) =>
    run(path.join(SBIN, name), args, { env: { ...env, ...extra }, timeout: 120_000 });

  const start = async (name: string, args: string[], extra: NodeJS.ProcessEnv = {}): Promise<Started> => {
    const { stdout } = await script(name, args, extra);
    const line = stdout.split('\n').find((text) => text.includes('"event":"listening"'));
    assert.ok(line !== undefined, `no listening line from ${name}:\n${stdout}`);
    return { stdout, listening: JSON.parse(line.slice(line.indexOf('{'))) as Record<string, unknown> };
  };

  const workerArgs = (instance: number): string[] => [
    '--conf',
    `svc.worker.storage.dirs=${path.join(dir, `worker-${instance}`, 'disk')}`,
    '--conf',
    `svc.worker.graceful.shutdown.recoverPath=${path.join(dir, `worker-${instance}`, 'recover')}`,
  ];

  before(() => {
    dir = mkdtempSync(path.join(tmpdir(), 'svc-sbin-'));
    const confDir = path.join(dir, 'etc');
    mkdirSync(confDir);
    writeFileSync(
      path.join(confDir, 'svc-defaults.conf'),
      [
        'svc.master.host 127.0.0.1',
        'svc.master.port 0',
        'svc.master.http.host 127.0.0.1',
        'svc.master.http.port 0',
        `svc.master.state.dir ${path.join(dir, 'master-state')}`,
        'svc.worker.host 127.0.0.1',
        'svc.worker.http.host 127.0.0.1',
        'svc.worker.http.port 0',
        '',
      ].join('\n'),
    );
    // The operator's environment file: read by every script (a variable it sets reaches the server's log name).
    writeFileSync(path.join(confDir, 'svc-env.sh'), `SVC_LOG_DIR=${path.join(dir, 'logs')}\n`);
    env = { ...process.env, SVC_CONF_DIR: confDir, SVC_PID_DIR: path.join(dir, 'pids') };
    delete env.NODE_OPTIONS; // the scripts run svc as an operator does, not under this test run's loader
    delete env.SVC_HOME;
    delete env.MALLOC_MMAP_THRESHOLD_; // the scripts set it (the servers warn at start without it)
    delete env.MALLOC_TRIM_THRESHOLD_;
    delete env.GLIBC_TUNABLES;
  });

  after(async () => {
    // Stop whatever a failed test left running, then remove the files.
    for (const [name, extra] of [
      ['stop-worker.sh', { SVC_INSTANCE: '1' }],
      ['stop-worker.sh', { SVC_INSTANCE: '2' }],
      ['stop-master.sh', {}],
    ] as const) {
      await script(name, [], { ...extra, SVC_WORKER_STOP_TIMEOUT: '20' }).catch(() => undefined);
    }
    rmSync(dir, { recursive: true, force: true });
  });

  it('start a master and two workers that run a verified job, then stop them', async () => {
    const master = await start('start-master.sh', []);
    const rpcPort = (master.listening.rpc as { port: number }).port;
    const httpPort = (master.listening.http as { port: number }).port;
    const masterUrl = `svc://127.0.0.1:${rpcPort}`;
    const masterPid = Number(readFileSync(path.join(dir, 'pids', 'svc-master-1.pid'), 'utf8'));
    assert.match(master.stdout, new RegExp(`running as process ${masterPid}`));

    const workers = await Promise.all(
      [1, 2].map((instance) =>
        start('start-worker.sh', [masterUrl, ...workerArgs(instance)], { SVC_INSTANCE: String(instance) }),
      ),
    );
    for (const [i, worker] of workers.entries()) {
      const http = (worker.listening.http as { port: number }).port;
      // The readiness check the systemd unit runs: the worker is registered with its master.
      const ready = await script('svc', [
        'admin',
        'ready',
        'worker',
        '--worker',
        `http://127.0.0.1:${http}`,
        '--wait',
        '60',
      ]);
      assert.match(ready.stdout, /registered with its master/, `worker ${i + 1}`);
    }
    const ready = await script('svc', ['admin', 'ready', '--master', `http://127.0.0.1:${httpPort}`]);
    assert.match(ready.stdout, /the master at .* is ready/);
    // The logs are where svc-env.sh put them, one per process.
    for (const name of ['svc-master-1.log', 'svc-worker-1.log', 'svc-worker-2.log']) {
      assert.ok(existsSync(path.join(dir, 'logs', name)), `${name} in SVC_LOG_DIR`);
    }

    const masterLog = readFileSync(path.join(dir, 'logs', 'svc-master-1.log'), 'utf8');
    assert.doesNotMatch(masterLog, /process\.allocatorUntuned/, 'the scripts tune the allocator');

    await runVerifiedJob(masterUrl, { maps: 3, partitions: 4, recordsPerPartition: 50 });

    for (const instance of ['1', '2']) {
      const stopped = await script('stop-worker.sh', [], { SVC_INSTANCE: instance });
      assert.match(stopped.stdout, new RegExp(`svc worker ${instance} stopped`));
      assert.equal(existsSync(path.join(dir, 'pids', `svc-worker-${instance}.pid`)), false);
    }
    const stopped = await script('stop-master.sh');
    assert.match(stopped.stdout, /svc master 1 stopped/);
    assert.throws(() => process.kill(masterPid, 0), { code: 'ESRCH' });
  });

  it('refuse to start a second master over a running one, and stop nothing twice', async () => {
    await start('start-master.sh', []);
    const second = await script('start-master.sh').then(
      () => assert.fail('a second start succeeded'),
      (error: { code: number; stderr: string }) => error,
    );
    assert.equal(second.code, 1);
    assert.match(second.stderr, /svc master 1 is running as process \d+; stop it first/);
    await script('stop-master.sh');
    const again = await script('stop-master.sh');
    assert.match(again.stdout, /no svc master 1 to stop/);
  });

  it('report a server that cannot start, with the end of its log, and leave no pid file', async () => {
    const failed = await script('start-master.sh', ['--conf', 'svc.master.port=not-a-port']).then(
      () => assert.fail('a master with a bad port started'),
      (error: { code: number; stderr: string }) => error,
    );
    assert.equal(failed.code, 1);
    assert.match(failed.stderr, /svc master 1 exited while starting/);
    assert.match(failed.stderr, /svc\.master\.port/);
    assert.equal(existsSync(path.join(dir, 'pids', 'svc-master-1.pid')), false);
  });

  it('keep the previous logs, rotated', () => {
    // The three masters of the tests above each wrote a log: the newest is .log, the earlier ones .log.1 and .log.2.
    for (const name of ['svc-master-1.log', 'svc-master-1.log.1', 'svc-master-1.log.2']) {
      assert.ok(existsSync(path.join(dir, 'logs', name)), name);
    }
  });
});
