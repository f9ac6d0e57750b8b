// `npm start -- --keep` (svc demo --keep) as an operator uses it: after the job, it prints the management (/api/v1),
// metrics and Swagger UI addresses of every node, and each of them answers; the `svc admin` line it prints works.
import assert from 'node:assert/strict';
import { execFile, spawn } from 'node:child_process';
import { rmSync } from 'node:fs';
import { createInterface } from 'node:readline';
import { fileURLToPath } from 'node:url';
import { after, describe, it } from 'node:test';
import { masterClient, workerClient } from '../clients/openapi/index.ts';
import { RUN_WAIT_MS } from './cluster/server-process.ts';
import { within } from './testing/deadline.ts';

const CLI = fileURLToPath(new URL('./cli/main.ts', import.meta.url));
const SMALL = ['--size', '4m', '--maps', '2', '--reduces', '2', '--workers', '2', '--progress', 'none'];

describe('svc demo --keep', () => {
  const child = spawn(process.execPath, ['--import', 'tsx', CLI, 'demo', ...SMALL, '--keep'], {
    stdio: ['ignore', 'pipe', 'pipe'],
    env: { ...process.env, CI: '' },
  });
  const lines: string[] = [];
  const exit = new Promise<number | null>((resolve) => child.on('exit', (code) => resolve(code)));
  const kept = new Promise<void>((resolve, reject) => {
    const onLine = (line: string) => {
      lines.push(line);
      if (/press Ctrl-C/.test(line)) resolve();
    };
    createInterface({ input: child.stdout }).on('line', onLine);
    createInterface({ input: child.stderr }).on('line', onLine);
    void exit.then((code) => reject(new Error(`svc demo exited (${code}) first:\n${lines.join('\n')}`)));
  });
  kept.catch(() => undefined);

  after(async () => {
    if (child.exitCode === null && child.signalCode === null) {
      child.kill('SIGINT');
      // A second Ctrl-C makes the demo kill what it started at once.
      const timer = setTimeout(() => child.kill('SIGINT'), 10_000);
      await within(exit, 'svc demo --keep to exit after two Ctrl-C');
      clearTimeout(timer);
    }
    const dir = /directory (\S+) \(kept/.exec(lines.join('\n'))?.[1];
    if (dir !== undefined) rmSync(dir, { recursive: true, force: true });
  });

  it('prints the management, metrics and Swagger addresses of every node, and they answer', async () => {
    await within(kept, "svc demo --keep's 'press Ctrl-C' line", RUN_WAIT_MS);
    const output = lines.join('\n');
    const addresses = (label: string) =>
      [...output.matchAll(new RegExp(`^ +${label} +(http://127\\.0\\.0\\.1:\\d+\\S*)$`, 'gm'))].map(
        (m) => m[1]!,
      );
    const apis = addresses('management');
    const metrics = addresses('metrics');
    const swaggers = addresses('swagger');
    // The master first, then each worker.
    assert.equal(apis.length, 3, output);
    assert.equal(metrics.length, 3, output);
    assert.equal(swaggers.length, 3, output);
    assert.ok(
      apis.every((url) => url.endsWith('/api/v1')),
      "apis.every((url) => url.endsWith('/api/v1'))",
    );
    assert.ok(
      metrics.every((url) => url.endsWith('/metrics/prometheus')),
      "metrics.every((url) => url.endsWith('/metrics/prometheus'))",
    );
    assert.ok(
      swaggers.every((url) => url.endsWith('/swagger')),
      "swaggers.every((url) => url.endsWith('/swagger'))",
    );
    assert.match(output, /^ +master +svc:\/\/127\.0\.0\.1:\d+\n +management +http:/m);

    const [masterApi, ...workerApis] = apis;
    const cluster = await masterClient(masterApi!).GET('/api/v1/workers');
    assert.equal(cluster.response.status, 200);
    assert.equal(cluster.data?.workers.length, 2);
    for (const api of workerApis) {
      const info = await workerClient(api).GET('/api/v1/workers');
      assert.equal(info.response.status, 200);
      assert.equal(info.data?.isRegistered, true);
    }
    for (const url of metrics) {
      const response = await fetch(url);
      assert.equal(response.status, 200, url);
      assert.match(response.headers.get('content-type') ?? '', /text\/plain/);
      assert.match(await response.text(), /^# (HELP|TYPE) /m);
    }
    for (const url of swaggers) {
      const response = await fetch(url);
      assert.equal(response.status, 200, url);
      assert.match(await response.text(), /swagger/i);
    }

    const admin = /operate it with: (svc admin workers --master (\S+))/.exec(output);
    assert.ok(admin !== null, output);
    const table = await new Promise<string>((resolve, reject) =>
      execFile(
        process.execPath,
        ['--import', 'tsx', CLI, 'admin', 'workers', '--master', admin[2]!],
        { timeout: 60_000 },
        (error, stdout, stderr) => (error === null ? resolve(stdout) : reject(new Error(`${stderr}`))),
      ),
    );
    assert.match(table, /^workers \(2\)$/m);

    child.kill('SIGINT');
    assert.equal(await within(exit, 'svc demo --keep to exit after Ctrl-C'), 0, lines.join('\n'));
  });
});
