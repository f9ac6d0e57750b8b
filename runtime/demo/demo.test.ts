// `svc demo` as a user runs it: a child process that starts its own cluster and executors, runs a small job, and
// exits; interrupted, it stops everything and removes its directory; with --keep, the cluster waits for Ctrl-C.
import assert from 'node:assert/strict';
import { existsSync, readdirSync, readFileSync } from 'node:fs';
import path from 'node:path';
import { describe, it } from 'node:test';
import { dataDir, SMALL, stopDemosAfterEach, svcDemo } from '../testing/demo-run.ts';

stopDemosAfterEach();

describe('svc demo', () => {
  it('runs a small job on a local cluster, verifies it and prints its throughput', async () => {
    const run = svcDemo(SMALL);
    const dir = await dataDir(run);
    const code = await run.exit;
    const output = run.lines.join('\n');
    assert.equal(code, 0, output);
    assert.match(output, /verification OK: 6 partitions, 8192 records/);
    assert.match(output, /map phase: +4 maps, 8\.0 MiB in [\d.]+ s: [\d.]+ MiB\/s/);
    assert.match(output, /reduce phase: 6 reduces, 8\.0 MiB in [\d.]+ s: [\d.]+ MiB\/s/);
    assert.match(output, /worker-0 \S+: [\d.]+ MiB in \d+ files/);
    assert.equal(existsSync(dir), false, 'the temporary directory is removed');
  });

  it('refuses a bad flag with a clear message before starting anything', async () => {
    const run = svcDemo(['--size', '12q']);
    assert.equal(await run.exit, 1);
    assert.match(run.lines.join('\n'), /'12q' is not a size/);
    const tooSmall = svcDemo(['--size', '1k', '--maps', '4']);
    assert.equal(await tooSmall.exit, 2);
    assert.match(tooSmall.lines.join('\n'), /fewer than one per map/);
    const oneWorker = svcDemo(['--workers', '1']);
    assert.equal(await oneWorker.exit, 2);
    assert.match(oneWorker.lines.join('\n'), /replication keeps each partition on two workers/);
  });

  it('stops everything and removes its directory on Ctrl-C, exiting 130', async () => {
    const run = svcDemo(['--size', '4g', '--maps', '64', '--reduces', '8', '--progress', 'lines']);
    const dir = await dataDir(run);
    await run.waitFor(/^application /);
    run.child.kill('SIGINT');
    assert.equal(await run.exit, 130, run.lines.join('\n'));
    assert.equal(existsSync(dir), false, 'the temporary directory is removed');
  });

  it('with --keep, leaves the cluster up and prints its addresses until Ctrl-C', async () => {
    const run = svcDemo([...SMALL, '--keep']);
    const dir = await dataDir(run);
    await run.waitFor(/press Ctrl-C/);
    const output = run.lines.join('\n');
    assert.match(output, /verification OK/);
    assert.match(output, /master +svc:\/\/127\.0\.0\.1:\d+/);
    assert.match(output, /worker-2 +127\.0\.0\.1:\d+:\d+:\d+:\d+ +data /);
    run.child.kill('SIGINT');
    assert.equal(await run.exit, 0, run.lines.join('\n'));
    assert.equal(existsSync(dir), true, '--keep keeps the directory');
  });

  it('with --auth, runs the job with every connection proven and never prints a secret', async () => {
    const run = svcDemo([...SMALL, '--auth', '--keep']);
    const dir = await dataDir(run);
    await run.waitFor(/press Ctrl-C/);
    const output = run.lines.join('\n');
    assert.match(output, /authentication on/);
    assert.match(output, /verification OK: 6 partitions, 8192 records/);
    const secret = readFileSync(path.join(dir, 'internal-secret'), 'utf8').trim();
    const logs = readdirSync(path.join(dir, 'logs')).map((name) =>
      readFileSync(path.join(dir, 'logs', name), 'utf8'),
    );
    for (const text of [output, ...logs]) {
      assert.ok(!text.includes(secret), 'the internal secret is never printed or logged');
      assert.ok(
        !/authentication\.refused|AUTHENTICATION_FAILED/.test(text),
        'nothing of the job was refused',
      );
    }
    run.child.kill('SIGINT');
    assert.equal(await run.exit, 0, run.lines.join('\n'));
  });
});
