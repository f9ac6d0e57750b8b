import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { runSeed } from '../run.ts';
import { SCENARIOS } from '../scenarios.ts';
import { drawsHaGroup } from './ha-share.ts';

/** The swarm's share of seeds whose master is a group of three masters that fails over while jobs run. */
describe("the swarm's share of seeds whose master is a group", () => {
  const shareSeeds = Array.from({ length: 400 }, (_, seed) => seed).filter(drawsHaGroup);

  it('draws about a tenth of the seeds', () => {
    assert.ok(shareSeeds.length >= 20 && shareSeeds.length <= 70, `${shareSeeds.length} of 400`);
  });

  it('runs the jobs to the end across failovers, the workers and clients following the leader', () => {
    let failedOver = 0;
    for (const seed of shareSeeds.slice(0, 4)) {
      const result = runSeed({ seed, scenario: SCENARIOS['swarm']! });
      assert.equal(result.violation, undefined, `seed ${seed}: ${result.violation?.detail}`);
      const counts = result.report.counts;
      assert.equal(counts['ha.groups'], 1, `seed ${seed} ran a group`);
      assert.ok((counts['ha.terms'] ?? 0) >= 1, `seed ${seed}: a master led`);
      assert.ok((counts['ha.follow.unreachable'] ?? 0) > 0, `seed ${seed}: processes moved on from members`);
      if ((counts['ha.terms'] ?? 0) > 1) failedOver += 1;
    }
    assert.ok(failedOver > 0, 'some seed failed over to another leader');
  });

  it('leaves the other seeds a single master', () => {
    const seed = Array.from({ length: 20 }, (_, s) => s).find((s) => !drawsHaGroup(s))!;
    const result = runSeed({ seed, scenario: SCENARIOS['swarm']! });
    assert.equal(result.report.counts['ha.groups'], undefined);
  });
});
