import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { runSeed } from '../run.ts';
import { SCENARIOS } from '../scenarios.ts';
import { CALM_KNOBS, parseFaults } from './plan.ts';

const demo = SCENARIOS.demo!;

/** The demo job under one schedule, traced; the lines that tell a message was lost. */
function lostSends(faults: string): { readonly lost: readonly string[]; readonly violation?: string } {
  const result = runSeed({
    seed: 1,
    scenario: demo,
    trace: true,
    schedule: { knobs: { ...CALM_KNOBS, stormMs: 0 }, faults: parseFaults(faults) },
  });
  return {
    lost: result.trace.split('\n').filter((line) => / send \S+->\S+ .* LOST$/.test(line)),
    ...(result.violation === undefined ? {} : { violation: result.violation.detail }),
  };
}

const link = (line: string) => / send (\S+)->(\S+) /.exec(line)!.slice(1, 3).join('->');

describe('fault injection: partitions', () => {
  it('cuts an application’s driver from its executors only: both still reach the workers', () => {
    const { lost, violation } = lostSends('partition(a0.driver|a0.executors)@0+4000');
    assert.equal(violation, undefined);
    assert.ok(lost.length > 0, 'the tasks tried to reach their lifecycle manager during the cut');
    for (const line of lost) {
      assert.match(link(line), /^(map|reduce)-demo-.*->lm-demo$|^lm-demo->(map|reduce)-demo-/, line);
    }
  });

  it('cuts one group from the groups on the other side only, and from everything else without one', () => {
    const twoSided = lostSends('partition(w0|a0)@0+4000');
    assert.equal(twoSided.violation, undefined);
    assert.ok(twoSided.lost.length > 0, 'twoSided.lost.length > 0');
    for (const line of twoSided.lost) {
      assert.match(link(line), /^host0:\S*->(lm|map|reduce)-demo|^(lm|map|reduce)-demo\S*->host0:/, line);
    }
    // Against the rest, the worker's heartbeats to the master are lost too.
    const alone = lostSends('partition(w0)@0+4000');
    assert.ok(
      alone.lost.some((line) => /->master-0 /.test(line) || /master-0->host0/.test(line)),
      'alone.lost.some((line) => /->master-0 /.test(line) || /master-0->host0/.test(line))',
    );
  });
});

describe('fault injection: one-way partitions', () => {
  it('loses only the messages from one side to the other; the other way still arrives', () => {
    const { lost, violation } = lostSends('oneway(a0>w0)@0+20000');
    assert.equal(violation, undefined);
    assert.ok(lost.length > 0, 'the application tried to reach worker 0 during the cut');
    for (const line of lost) assert.match(link(line), /^(lm|map|reduce)-demo\S*->host0:/, line);
  });

  it('a master heard again after a one-way partition is asked again, and the job finishes', () => {
    const healAtMs = 15_000;
    const result = runSeed({
      seed: 1,
      scenario: demo,
      trace: true,
      schedule: {
        knobs: { ...CALM_KNOBS, stormMs: 0 },
        faults: parseFaults(`oneway(m0>a0.driver)@0+${healAtMs}`),
      },
    });
    assert.equal(result.violation, undefined, result.violation?.detail);
    const { counts } = result.report;
    assert.equal(counts['apps.done'], 1, result.report.notes.join('\n'));
    const lines = result.trace.split('\n');
    const at = (line: string) => Number(/^\s*([\d.]+)s/.exec(line)![1]) * 1000;
    // The fault struck where meant: the master's answers to the lifecycle manager were lost, its requests were not.
    const lost = lines.filter((line) => / send \S+->\S+ .* LOST$/.test(line));
    assert.ok(lost.length > 0, 'an answer of the master was lost');
    for (const line of lost) assert.match(link(line), /^master-0->lm-demo$/, line);
    // The lifecycle manager gave the master up as silent and refused its own requests to it meanwhile ...
    assert.ok((counts['transport.silentPeer'] ?? 0) >= 1, 'the master was given up as silent');
    const refused = lines.filter((line) => / send lm-demo->master-0 .* REFUSED$/.test(line));
    assert.ok(refused.length > 0, 'requests to the silent master failed at once');
    assert.ok(
      refused.every((line) => at(line) < healAtMs),
      'no request refused after the heal',
    );
    // ... until it heard from it again after the heal, and asked it again: the master served the job.
    assert.ok((counts['transport.silentPeerHeard'] ?? 0) >= 1, 'the master was heard from again');
    assert.ok(
      lines.some((line) => at(line) >= healAtMs && / recv lm-demo->master-0 RequestSlots /.test(line)),
      'the master took a RequestSlots after the heal',
    );
  });
});

describe('fault injection: a worker out of file descriptors', () => {
  it('fails that worker’s disk operations with NO_DESCRIPTORS for the window, charges no disk, and the job finishes', () => {
    const windowMs = 3_000;
    const result = runSeed({
      seed: 1,
      scenario: demo,
      trace: true,
      schedule: {
        knobs: { ...CALM_KNOBS, stormMs: 0 },
        faults: parseFaults(`descriptors(w0)@0+${windowMs}`),
      },
    });
    assert.equal(result.violation, undefined, result.violation?.detail);
    assert.equal(result.report.counts['apps.done'], 1, result.report.notes.join('\n'));
    const lines = result.trace.split('\n');
    // The fault struck where meant: I/O of host0 (w0), inside the window, and of no other worker.
    const failed = lines.filter((line) => / io(Failed|BatchDone) .*NO_DESCRIPTORS/.test(line));
    assert.ok(failed.length > 0, 'the worker tried disk I/O while out of descriptors');
    for (const line of failed) {
      assert.match(line, /^\s*[\d.]+s host0:/, line);
      assert.ok(Number(/^\s*([\d.]+)s/.exec(line)![1]) * 1000 <= windowMs + 1_000, line);
    }
    assert.ok(!lines.some((line) => line.includes('worker.disk.failed')), 'no disk was marked failed');
  });
});
