import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import fc from 'fast-check';
import { replayRng } from '../rng.ts';
import { choosePadding, paddingCount } from './padding.ts';

/** The defaults of each release line (contract section 8): extraSlots 2 and no minWorkers before 0.6.0; 100 and 100 from. */
const BEFORE_0_6 = { extraSlots: 2, minWorkers: undefined };
const FROM_0_6 = { extraSlots: 100, minWorkers: 100 };

describe('padding', () => {
  it('before 0.6.0 adds min(extraSlots, unused): 2 with the default', () => {
    assert.equal(paddingCount(BEFORE_0_6.extraSlots, BEFORE_0_6.minWorkers, 10, 50), 2);
    assert.equal(paddingCount(BEFORE_0_6.extraSlots, BEFORE_0_6.minWorkers, 500, 1), 1);
    assert.equal(paddingCount(BEFORE_0_6.extraSlots, BEFORE_0_6.minWorkers, 0, 0), 0);
  });

  it('from 0.6.0 tops the offer up towards minWorkers, never below extraSlots, never beyond the unused workers', () => {
    assert.equal(paddingCount(FROM_0_6.extraSlots, FROM_0_6.minWorkers, 10, 500), 100);
    assert.equal(paddingCount(FROM_0_6.extraSlots, FROM_0_6.minWorkers, 150, 500), 100);
    assert.equal(paddingCount(FROM_0_6.extraSlots, FROM_0_6.minWorkers, 10, 40), 40);
    assert.equal(paddingCount(5, 100, 10, 500), 90);
  });

  it('follows min(max(extraSlots, minWorkers − used), unused) for any values', () => {
    fc.assert(
      fc.property(
        fc.nat(200),
        fc.option(fc.nat(200), { nil: undefined }),
        fc.nat(300),
        fc.nat(300),
        (extra, min, used, unused) => {
          const count = paddingCount(extra, min, used, unused);
          const wanted = min === undefined ? extra : Math.max(extra, min - used);
          assert.equal(count, Math.min(wanted, unused));
        },
      ),
    );
  });

  it('takes consecutive distinct workers from a random start, wrapping around', () => {
    fc.assert(
      fc.property(
        fc.array(fc.nat(), { maxLength: 20 }),
        fc.nat(25),
        fc.double({ min: 0, max: 1, maxExcluded: true, noNaN: true }),
        (pool, count, draw) => {
          const items = pool.map((_, i) => i);
          const chosen = choosePadding(items, count, replayRng([draw]));
          assert.equal(chosen.length, Math.min(count, items.length));
          assert.equal(new Set(chosen).size, chosen.length);
          chosen.forEach((item, i) => i > 0 && assert.equal(item, (chosen[i - 1]! + 1) % items.length));
        },
      ),
    );
  });
});
