// bench/master-load.bench.ts runs at a tiny size and writes well-formed results: both sides measured, every
// simulated request answered. Its timing goal lives in the benchmark, never here.
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { it } from 'node:test';

it('drives a master and the echo server with a tiny load', () => {
  const dir = mkdtempSync(path.join(tmpdir(), 'svc-master-load-test-'));
  try {
    const json = path.join(dir, 'result.json');
    const run = spawnSync(
      process.execPath,
      [
        '--import',
        'tsx',
        path.join(import.meta.dirname, 'master-load.bench.ts'),
        '--tsx',
        ...['--workers', '4', '--apps', '2', '--partitions', '20', '--heartbeat-interval', '0.5'],
        ...['--heartbeat-window', '1', '--steady', '1', '--shuffle-interval', '0.5', '--json', json],
      ],
      { encoding: 'utf8', timeout: 240_000 },
    );
    // 0 or 2: the goal is the benchmark's business, not this test's.
    assert.ok(
      run.status === 0 || run.status === 2,
      `exit ${String(run.status)}:\n${run.stdout}\n${run.stderr}`,
    );
    const result = JSON.parse(readFileSync(json, 'utf8')) as Record<
      'master' | 'echo',
      {
        heartbeats: number;
        burst: { count: number };
        steady: { count: number };
        counts: { refusals: number };
      }
    >;
    for (const side of ['master', 'echo'] as const) {
      assert.ok(result[side].heartbeats > 0, `${side}: heartbeats answered`);
      assert.equal(result[side].burst.count, 2, `${side}: one shuffle per application in the burst`);
      assert.ok(result[side].steady.count > 0, `${side}: shuffles registered in the steady phase`);
      assert.equal(result[side].counts.refusals, 0, `${side}: nothing refused`);
    }
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
});
