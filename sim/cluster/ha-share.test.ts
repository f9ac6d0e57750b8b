import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { HA_PLANTED_BUGS } from '../../core/planted-bugs.ts';
import { INVARIANTS } from '../world/invariant-catalogue.ts';
import { drawsHaGroup, haGroupCheck } from './ha-share.ts';

/** The swarm's share of group-of-masters seeds: drawn from the seed, and it bites with the HA planted bugs on. */
describe("the swarm's share of seeds running a group of masters", () => {
  const shareSeeds = Array.from({ length: 400 }, (_, seed) => seed).filter(drawsHaGroup);

  it('draws about a tenth of the seeds', () => {
    assert.ok(shareSeeds.length >= 20 && shareSeeds.length <= 70, `${shareSeeds.length} of 400`);
  });

  const expected = {
    'ha-acts-past-lease': 'ha-one-leader',
    'ha-unfenced-writes': 'ha-fenced-writes',
  } as const;
  for (const bug of HA_PLANTED_BUGS) {
    const invariant = expected[bug as keyof typeof expected];
    it(`reports '${bug}' as a swarm violation of ${invariant} within the share's seeds below 400`, () => {
      const caught = shareSeeds.find((seed) => haGroupCheck(seed, bug).violation?.invariant === invariant);
      assert.notEqual(caught, undefined, `no share seed below 400 caught ${bug}`);
      assert.ok(invariant in INVARIANTS, `${invariant} is in the catalogue`);
    });
  }

  it('passes the share seeds without a planted bug', () => {
    for (const seed of shareSeeds.slice(0, 5))
      assert.equal(haGroupCheck(seed, undefined).violation, undefined, `seed ${seed} passes`);
  });
});
