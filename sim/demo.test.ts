import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { CALM_KNOBS } from './faults/plan.ts';
import { runSeed } from './run.ts';
import { scenarioNamed } from './scenarios.ts';

// `npm start` runs this scenario without faults; the quick start stays true only while it finishes cleanly.
describe('the npm start demo', () => {
  it('finishes its one replicated job with every invariant holding', () => {
    const result = runSeed({
      seed: 1,
      scenario: scenarioNamed('demo'),
      schedule: { knobs: { ...CALM_KNOBS, stormMs: 0 }, faults: [] },
    });
    assert.equal(result.violation, undefined, JSON.stringify(result.violation));
    assert.equal(result.report.counts['apps.done'], 1, JSON.stringify(result.report));
    assert.equal(result.report.counts['workers'], 3, 'three workers');
  });
});
