// The container image (deploy/container/) cannot be built or run on this machine (no base image can be pulled,
// and the container runtime is refused setrlimit), so its parts are tested where they run: the entrypoint script
// starts a master and a worker in the foreground, as the image's ENTRYPOINT does, with the image's own
// configuration (its directories moved into a scratch directory); a job verifies against them, and SIGTERM stops
// each. The Containerfile is checked for what the image promises: a non-root user, and volumes for every directory
// its configuration writes to.
import assert from 'node:assert/strict';
import { mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { after, before, describe, it } from 'node:test';
import { checkConfigText, resolveConfig } from '../../conf/index.ts';
import { ServerProcess, STARTUP_WAIT_MS } from '../../runtime/cluster/server-process.ts';
import { runVerifiedJob } from '../../runtime/testing/small-job.ts';

const ROOT = path.resolve(import.meta.dirname, '../..');
const CONTAINER = path.join(ROOT, 'deploy', 'container');
const ENTRYPOINT = path.join(CONTAINER, 'entrypoint.sh');
const IMAGE_CONF = readFileSync(path.join(CONTAINER, 'svc-defaults.conf'), 'utf8');
const IMAGE_DATA = '/var/lib/svc';

/** The Containerfile's instruction `name` (its JSON array or its text), every occurrence. */
function instructions(name: string): string[] {
  const text = readFileSync(path.join(CONTAINER, 'Containerfile'), 'utf8').replace(/\\\n/g, ' ');
  return text
    .split('\n')
    .filter((line) => line.startsWith(`${name} `))
    .map((line) => line.slice(name.length + 1).trim());
}

describe("the container image's configuration and Containerfile", () => {
  it('configure svc with no problem and no key set in vain', () => {
    const report = checkConfigText(IMAGE_CONF, { fileName: 'svc-defaults.conf' });
    assert.equal(report.errorCount + report.warningCount, 0, report.lines.join('\n'));
    assert.deepEqual(report.withoutEffect, []);
  });

  it('run as a user other than root, from the entrypoint the tests run', () => {
    const user = instructions('USER');
    assert.equal(user.length, 1);
    assert.notEqual(user[0], 'root');
    assert.notEqual(user[0], '0');
    assert.deepEqual(instructions('ENTRYPOINT'), ['["/opt/svc/deploy/container/entrypoint.sh"]']);
  });

  it('keep every directory the configuration writes to on a volume', () => {
    const volumes = JSON.parse(instructions('VOLUME')[0] ?? '[]') as string[];
    const master = resolveConfig({ role: 'master', fileText: IMAGE_CONF, env: {} });
    const worker = resolveConfig({ role: 'worker', fileText: IMAGE_CONF, env: {} });
    const dirs = [
      master.getString('svc.master.state.dir'),
      ...worker.getList('svc.worker.storage.dirs').map((entry) => entry.split(':')[0]!),
      worker.getString('svc.worker.graceful.shutdown.recoverPath'),
    ];
    assert.deepEqual([...dirs].sort(), [...volumes].sort());
  });
});

describe("the container's entrypoint", () => {
  let dir = '';
  const started: ServerProcess[] = [];

  const entrypoint = (role: string, args: string[]): ServerProcess => {
    const server = new ServerProcess({
      name: `entrypoint-${role}`,
      command: [ENTRYPOINT, role],
      args,
      logFile: path.join(dir, `${role}.log`),
      env: { SVC_CONF_DIR: path.join(dir, 'etc') },
    });
    started.push(server);
    return server;
  };

  before(() => {
    dir = mkdtempSync(path.join(tmpdir(), 'svc-entrypoint-'));
    mkdirSync(path.join(dir, 'etc'));
    // The image's configuration, its data directory moved here (a test cannot write /var/lib/svc).
    writeFileSync(
      path.join(dir, 'etc', 'svc-defaults.conf'),
      IMAGE_CONF.replaceAll(IMAGE_DATA, path.join(dir, 'data')),
    );
  });

  after(async () => {
    await Promise.all(started.map((server) => server.stop()));
    rmSync(dir, { recursive: true, force: true });
  });

  it('runs a master and a worker in the foreground that serve a job, and SIGTERM stops them', async () => {
    // Ports from 0 on loopback here; the image fixes them (its configuration), which the options override.
    const local = ['--conf', 'svc.master.host=127.0.0.1', '--conf', 'svc.worker.host=127.0.0.1'];
    const master = entrypoint('master', [
      ...local,
      '--conf',
      'svc.master.port=0',
      '--conf',
      'svc.master.http.port=0',
    ]);
    const listening = await master.waitForEvent('listening', STARTUP_WAIT_MS);
    const masterUrl = `svc://127.0.0.1:${(listening.rpc as { port: number }).port}`;
    const worker = entrypoint('worker', [
      masterUrl,
      ...local,
      ...['rpc', 'push', 'fetch', 'replicate', 'http'].flatMap((service) => [
        '--conf',
        `svc.worker.${service}.port=0`,
      ]),
    ]);
    await worker.waitForEvent('worker.registered', STARTUP_WAIT_MS);
    // The node is svc itself, not a shell around it: the signal the container runtime sends reaches it.
    assert.match(
      readFileSync(`/proc/${worker.pid}/cmdline`, 'utf8').replaceAll('\0', ' '),
      /svc\.(mjs|js) worker/,
    );
    await runVerifiedJob(masterUrl, { maps: 2, partitions: 3, recordsPerPartition: 40 });

    worker.kill('SIGTERM');
    assert.equal(await worker.exited(), 0);
    master.kill('SIGTERM');
    assert.equal(await master.exited(), 0);
  });

  it('refuses a role it does not know, saying how to call it', async () => {
    const wrong = entrypoint('coordinator', []);
    assert.equal(await wrong.exited(), 2);
    assert.match(wrong.stderr.join('\n'), /usage: entrypoint\.sh master\|worker/);
  });
});
