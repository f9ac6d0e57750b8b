import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import fc from 'fast-check';
import { assertWithinHistory, inEffectAt, OLDEST_RELEASE } from './timeline.ts';
import { compareReleases, KNOWN_RELEASES, type Release } from './version.ts';

const ROWS = [
  { since: '0.2.0', value: 'a' },
  { since: '0.4.0', value: 'b' },
  { since: '0.6.0', value: 'c' },
] as const satisfies readonly { since: Release; value: string }[];

describe('the row in effect at a release', () => {
  it('picks the newest row that is not after the release', () => {
    assert.equal(inEffectAt(ROWS, '0.2.0').value, 'a');
    assert.equal(inEffectAt(ROWS, '0.3.2').value, 'a');
    assert.equal(inEffectAt(ROWS, '0.4.0').value, 'b');
    assert.equal(inEffectAt(ROWS, '0.5.1').value, 'b');
    assert.equal(inEffectAt(ROWS, '0.6.0').value, 'c');
    assert.equal(inEffectAt(ROWS, '0.7.0').value, 'c');
  });

  it('refuses a release older than the history', () => {
    assert.equal(OLDEST_RELEASE, '0.2.0');
    assert.throws(
      () => inEffectAt(ROWS, '0.1.9'),
      new RangeError(
        'release 0.1.9 predates the release history, which starts at 0.2.0; svc does not know its rules ' +
          '(use 0.2.0 or later)',
      ),
    );
    assert.doesNotThrow(() => assertWithinHistory('0.2.0'));
  });

  it('property: the row found starts at or before the release, and no later row does', () => {
    fc.assert(
      fc.property(fc.constantFrom(...KNOWN_RELEASES), (release) => {
        const row = inEffectAt(ROWS, release);
        assert.ok(compareReleases(row.since, release) <= 0, 'compareReleases(row.since, release) <= 0');
        const later = ROWS.filter((candidate) => compareReleases(candidate.since, row.since) > 0);
        for (const candidate of later)
          assert.ok(
            compareReleases(candidate.since, release) > 0,
            'compareReleases(candidate.since, release) > 0',
          );
      }),
    );
  });
});
