// `svc master` and `svc worker` refuse what they cannot run with one clear message and exit 2, before binding
// anything; their --help documents every flag.
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { after, describe, it } from 'node:test';
import { fileURLToPath } from 'node:url';
import { ServerProcess } from '../cluster/server-process.ts';

const CLI = fileURLToPath(new URL('./main.ts', import.meta.url));
const scratch = mkdtempSync(path.join(tmpdir(), 'svc-cli-'));

function svc(...args: string[]): { status: number | null; stdout: string; stderr: string } {
  const result = spawnSync(process.execPath, ['--import', 'tsx', CLI, ...args], {
    encoding: 'utf8',
    timeout: 60_000,
    // Nothing of the worker's defaults may point at a real directory of this machine.
    env: { ...process.env, TMPDIR: scratch },
  });
  return { status: result.status, stdout: result.stdout, stderr: result.stderr };
}

describe('svc master and svc worker', () => {
  after(() => rmSync(scratch, { recursive: true, force: true }));

  it('a worker with no tier that can hold a file refuses to start, naming the keys', () => {
    const run = svc(
      'worker',
      'svc://127.0.0.1:1',
      '--conf',
      'svc.worker.directMemoryRatioForMemoryFileStorage=0',
      '--conf',
      `svc.worker.graceful.shutdown.recoverPath=${path.join(scratch, 'recover')}`,
    );
    assert.equal(run.status, 2, run.stderr);
    assert.match(run.stderr, /no tier that can hold a partition file/);
    for (const key of [
      'svc.worker.storage.dirs',
      'svc.storage.hdfs.dir',
      'svc.worker.directMemoryRatioForMemoryFileStorage',
    ]) {
      assert.ok(run.stderr.includes(key), `names ${key}`);
    }
    assert.equal(run.stdout.includes('"event":"listening"'), false, 'nothing was bound');
  });

  it('refuses a silent-peer ping interval not below its timeout, naming both keys', () => {
    const run = svc(
      'master',
      '--conf',
      'svc.master.port=0',
      '--conf',
      'svc.master.http.port=0',
      '--conf',
      `svc.master.state.dir=${path.join(scratch, 'master-state')}`,
      '--conf',
      'svc.network.silentPeer.pingInterval=10s',
      '--conf',
      'svc.network.silentPeer.timeout=5s',
    );
    assert.equal(run.status, 2, run.stderr);
    assert.match(
      run.stderr,
      /svc\.network\.silentPeer\.pingInterval \(10000 ms\) must be above 0 and below svc\.network\.silentPeer\.timeout \(5000 ms\)/,
    );
  });

  it('refuses an rss:// master URL with the svc:// form to write instead', () => {
    const run = svc('worker', 'rss://127.0.0.1:9097');
    assert.equal(run.status, 2);
    assert.match(run.stderr, /write svc:\/\/127\.0\.0\.1:9097/);
  });

  it('refuses a bad setting, naming the key, the value and the expected form', () => {
    const run = svc('master', '--conf', 'svc.master.port=abc');
    assert.equal(run.status, 2);
    assert.match(
      run.stderr,
      /svc\.master\.port: invalid value 'abc'; expected a whole number from 0 to 65535/,
    );
  });

  it('a server presenting an older release accepts a key that release still reads and the current one removed', async () => {
    const removed = 'svc.worker.userResourceConsumption.update.interval=30s';
    const dirs = (name: string): string[] => [
      '--conf',
      `svc.worker.storage.dirs=${path.join(scratch, name)}`,
      '--conf',
      'svc.worker.http.port=0',
      '--conf',
      `svc.worker.graceful.shutdown.recoverPath=${path.join(scratch, `${name}-recover`)}`,
    ];
    // 0.4.0 removed the key: a server presenting 0.4.0 (or the current release) refuses it, naming it.
    const refused = svc(
      'worker',
      'svc://127.0.0.1:1',
      '--release',
      '0.4.0',
      '--conf',
      removed,
      ...dirs('r4'),
    );
    assert.equal(refused.status, 2, refused.stderr);
    assert.match(
      refused.stderr,
      /svc\.worker\.userResourceConsumption\.update\.interval was removed in 0\.4\.0/,
    );
    // A 0.3.0 server read it: presenting 0.3.0 (the old half of a rolling upgrade), the worker starts.
    const worker = new ServerProcess({
      name: 'worker-0.3.0',
      args: ['worker', 'svc://127.0.0.1:1', '--release', '0.3.0', '--conf', removed, ...dirs('r3')],
      logFile: path.join(scratch, 'worker-0.3.0.log'),
      env: { TMPDIR: scratch },
    });
    try {
      const listening = await worker.waitForEvent('listening');
      assert.equal(listening.release, '0.3.0');
    } finally {
      await worker.stop();
    }
  });

  for (const role of ['master', 'worker']) {
    it(`svc ${role} --help documents every flag`, () => {
      const run = svc(role, '--help');
      assert.equal(run.status, 0);
      for (const flag of ['--conf-file', '--conf', '--log-level', '--help'])
        assert.ok(run.stdout.includes(flag), flag);
      assert.match(run.stdout, /listening/);
    });
  }
});
