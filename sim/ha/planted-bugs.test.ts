import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { setImmediate as nextTurn } from 'node:timers/promises';
import { HA_PLANTED_BUGS } from '../../core/planted-bugs.ts';
import { runHaSeed, type HaInvariant } from './group-run.ts';

/**
 * Proof that the group simulation bites: with each planted bug of master high availability switched on, a seed
 * within the budget violates the invariant the bug breaks. Budgets are about three times the largest gap between
 * catching seeds among the first 300 (measured 29 November 2026: ha-acts-past-lease first at seed 1, gaps up to
 * 20; ha-unfenced-writes first at seed 2, gaps up to 48), so that changes to the machines do not make it flaky.
 */
const PROOF: Readonly<Record<string, { readonly invariant: HaInvariant; readonly withinSeeds: number }>> = {
  'ha-acts-past-lease': { invariant: 'ha-one-leader', withinSeeds: 60 },
  'ha-unfenced-writes': { invariant: 'ha-fenced-writes', withinSeeds: 150 },
  // First caught at seed 0, then 1, 3, 4, 5.
  'ha-confirms-before-commit': { invariant: 'ha-no-shuffle-lost', withinSeeds: 30 },
};

describe('planted bugs of master high availability', () => {
  it('has a proof for every one', () => {
    assert.deepEqual(Object.keys(PROOF).sort(), [...HA_PLANTED_BUGS].sort());
  });

  for (const bug of HA_PLANTED_BUGS) {
    const { invariant, withinSeeds } = PROOF[bug]!;
    it(`finds '${bug}' as a violation of ${invariant} within ${withinSeeds} seeds`, async () => {
      let caught: number | undefined;
      for (let seed = 0; seed < withinSeeds && caught === undefined; seed += 1) {
        await nextTurn();
        if (runHaSeed({ seed, plantedBug: bug }).violation?.invariant === invariant) caught = seed;
      }
      assert.notEqual(caught, undefined, `no seed below ${withinSeeds} caught ${bug}`);
    });
  }

  it('finds answers given before the write is durable as a lost shuffle (the checker of ha-no-shuffle-lost bites)', () => {
    const caught = [0, 1, 2, 3, 4, 5, 6, 7, 8, 9].find(
      (seed) => runHaSeed({ seed, answerBeforeDurable: true }).violation?.invariant === 'ha-no-shuffle-lost',
    );
    assert.notEqual(caught, undefined, 'no seed below 10 lost an acknowledged shuffle');
  });
});
