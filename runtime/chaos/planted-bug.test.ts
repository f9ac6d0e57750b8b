// The soak catches a planted bug on real servers: with the master placing each replica on its primary's worker
// ('replica-on-primary', core/planted-bugs.ts), killing one worker loses both copies of its partitions, and jobs that
// replicate fail under a fault the design tolerates. The same seed without the bug passes every check, so the
// failure is the bug's. (The servers get the bug through runtime/testing/test-server.ts; no deployment can.)
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { runSoak, type SoakOptions } from './soak.ts';

const SOAK: SoakOptions = {
  seed: 'planted-1',
  durationMs: 40_000,
  workers: 3,
  apps: 2,
  kinds: ['kill'],
  tiers: ['disk'],
  replicateShare: 1,
  print: () => undefined,
};

describe('the chaos soak and a planted bug', () => {
  it('fails a short soak with replicas on their primaries, naming the job and the kill', async () => {
    const lines: string[] = [];
    const result = await runSoak({
      ...SOAK,
      plantedBug: 'replica-on-primary',
      print: (line) => lines.push(line),
    });
    try {
      const kills = result.timeline.filter((entry) => entry.fault.kind === 'kill');
      assert.ok(kills.length > 0, 'no worker was killed');
      const caught = result.violations.filter((v) => v.check === 'job-failed-under-tolerated-fault');
      assert.ok(
        caught.length > 0,
        `no job failed; violations: ${JSON.stringify(result.violations.map((v) => v.check))}`,
      );
      // The fault struck where meant: a failing job ran across a kill, and its failures are the lost data.
      const job = caught[0]!.job!;
      assert.equal(job.spec.replicate, true);
      assert.ok(
        kills.some((kill) => kill.startMs <= job.endMs && (kill.endMs ?? Infinity) + 15_000 >= job.startMs),
        `job ${job.spec.index} ran at ${job.startMs}..${job.endMs} ms, no kill then`,
      );
      // The report names the seed, the check, the job and the timeline.
      assert.match(result.report, /FAILED, seed planted-1/);
      assert.match(result.report, /job-failed-under-tolerated-fault: job \d+/);
      assert.match(result.report, /#\d+ kill worker-\d/);
      assert.ok(result.keptDir !== undefined, 'a failing soak keeps its logs');
    } finally {
      if (result.keptDir !== undefined) {
        const { rmSync } = await import('node:fs');
        rmSync(result.keptDir, { recursive: true, force: true });
      }
    }
  });

  it('passes the same soak without the bug', async () => {
    const result = await runSoak(SOAK);
    try {
      assert.ok(
        result.timeline.some((entry) => entry.fault.kind === 'kill'),
        'no worker was killed',
      );
      assert.ok(result.jobs.length > 0, 'result.jobs.length > 0');
      assert.deepEqual(result.violations, [], result.report);
    } finally {
      if (result.keptDir !== undefined) {
        const { rmSync } = await import('node:fs');
        rmSync(result.keptDir, { recursive: true, force: true });
      }
    }
  });
});
