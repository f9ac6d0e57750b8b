import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import fc from 'fast-check';
import { describeMemoryFindings, keepLowestSeeds, type SeedFindings } from './summary.ts';

describe('the summary of many seeds', () => {
  it('keeps the findings of the lowest seeds in seed order, whatever order the results arrive in', () => {
    fc.assert(
      fc.property(fc.uniqueArray(fc.nat(10_000)), fc.integer({ min: 1, max: 20 }), (seeds, most) => {
        const kept: SeedFindings[] = [];
        for (const seed of seeds) keepLowestSeeds(kept, { seed, lines: [`app of ${seed}`] }, most);
        const lowest = [...seeds].sort((a, b) => a - b).slice(0, most);
        assert.deepEqual(
          kept.map((entry) => entry.seed),
          lowest,
        );
      }),
    );
  });

  it('names every application it kept and counts the rest', () => {
    const found = [
      { seed: 3, lines: ['app-0 (client 0.5.0) ...', 'app-1 (client 0.3.0) ...'] },
      { seed: 9, lines: ['app-2 (client 0.2.0) ...'] },
    ];
    assert.deepEqual(describeMemoryFindings(found, 5), [
      'memory without enabling (contract rule 4, reported, not a failure): 5 application(s)',
      '  seed 3: app-0 (client 0.5.0) ...',
      '  seed 3: app-1 (client 0.3.0) ...',
      '  seed 9: app-2 (client 0.2.0) ...',
      '  ... and 2 more in higher seeds (replay one with --seed N to see its notes)',
    ]);
    assert.deepEqual(describeMemoryFindings([], 0), []);
  });
});
