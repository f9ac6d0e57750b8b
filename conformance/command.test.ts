// `svc conformance` against a real cluster: it prints a row per rule and a summary, writes JSON and JUnit XML, and
// exits 0 when the deployment conforms; checked as a release the cluster does not present, it exits 1 and the
// failing rows name what gave it away. Servers also report a deprecated key they start with.
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { after, before, describe, it } from 'node:test';
import { fileURLToPath } from 'node:url';
import { LocalCluster } from '../runtime/cluster/local-cluster.ts';
import { RUN_WAIT_MS } from '../runtime/cluster/server-process.ts';
import { within } from '../runtime/testing/deadline.ts';

const CLI = fileURLToPath(new URL('../bin/svc.mjs', import.meta.url));

function svc(...args: string[]): Promise<{ status: number | null; stdout: string; stderr: string }> {
  const child = spawn(process.execPath, ['--import', 'tsx', CLI, ...args], {
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let stdout = '';
  let stderr = '';
  child.stdout.on('data', (chunk: Buffer) => (stdout += chunk.toString()));
  child.stderr.on('data', (chunk: Buffer) => (stderr += chunk.toString()));
  return within(
    new Promise((resolve) => child.on('close', (status) => resolve({ status, stdout, stderr }))),
    `svc ${args.join(' ')} to end`,
    RUN_WAIT_MS,
  );
}

describe('svc conformance', () => {
  let cluster: LocalCluster;
  let scratch: string;

  before(async () => {
    scratch = mkdtempSync(path.join(tmpdir(), 'svc-conformance-cli-'));
    cluster = await LocalCluster.start({ workers: 1, release: '0.5.1' });
  });
  after(async () => {
    await cluster?.stop();
    if (scratch !== undefined) rmSync(scratch, { recursive: true, force: true });
  });

  it('checks a deployment as its release and writes the reports', async () => {
    const json = path.join(scratch, 'rows.json');
    const junit = path.join(scratch, 'rows.xml');
    const run = await svc(
      'conformance',
      '--release',
      '0.5.1',
      '--master',
      cluster.masterHttpUrl,
      '--worker',
      cluster.workerHttpUrl(0),
      '--no-start-servers',
      '--json',
      json,
      '--junit',
      junit,
    );
    assert.equal(
      run.status,
      0,
      run.stdout
        .split('\n')
        .filter((l) => / FAIL /.test(l))
        .join('\n') + run.stderr,
    );
    assert.match(run.stdout, /^release 0\.5\.1: CONFORMS: \d+ pass, 0 fail, \d+ not applicable$/m);
    assert.match(run.stdout, /^0\.5\.1 +pass +4\.4 +4\.4\/master-\/exclude-method +POST http/m);
    assert.match(
      run.stdout,
      /^0\.5\.1 +n\/a +9\.2 +9\.2\/removed-svc\.worker\.userResource.*--server-command/m,
    );
    const report = JSON.parse(readFileSync(json, 'utf8')) as {
      rows: { verdict: string }[];
      summaries: unknown[];
    };
    assert.equal(report.summaries.length, 1);
    assert.ok(
      report.rows.some((r) => r.verdict === 'pass'),
      "report.rows.some((r) => r.verdict === 'pass')",
    );
    assert.ok(
      !report.rows.some((r) => r.verdict === 'fail'),
      "!report.rows.some((r) => r.verdict === 'fail')",
    );
    assert.match(readFileSync(junit, 'utf8'), /<testsuite name="release 0\.5\.1" tests="\d+" failures="0"/);
  });

  it('exits 1 with the giveaway rows when the deployment is checked as another release', async () => {
    const run = await svc(
      'conformance',
      '--release',
      '0.4.1',
      '--master',
      cluster.masterHttpUrl,
      '--worker',
      cluster.workerHttpUrl(0),
      '--no-start-servers',
    );
    assert.equal(run.status, 1, run.stderr);
    assert.match(run.stdout, /^release 0\.4\.1: DOES NOT CONFORM: \d+ pass, [1-9]\d* fail/m);
    // 0.5.0 made /exclude a POST and renamed /shuffles /shuffle; a 0.5.1 cluster shows both.
    assert.match(run.stdout, /^0\.4\.1 +FAIL +4\.4 +4\.4\/master-\/exclude-method +GET http.* -> 405 /m);
    assert.match(run.stdout, /^0\.4\.1 +FAIL +4\.4 +4\.4\/master-rename-\/shuffles-\/shuffle /m);
    assert.match(
      run.stdout,
      /^0\.4\.1 +FAIL +9\.4 +9\.4\/master-LostWorkerCount .*exports metrics_LostWorkerCount_\*/m,
    );
  });
});
