// Each stage attempt of an application's shuffle is a cluster shuffle of its own: the mapping must give every
// (shuffle, attempt) its own id within the cluster's 31 bits, attempt 0 the application's id itself (so that the
// shuffle ids an application used before stage attempts existed do not change), and be undone by stageOf.
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import fc from 'fast-check';
import {
  clusterShuffleId,
  MAX_STAGE_ATTEMPT,
  rerunAdvice,
  SHUFFLE_ID_LIMIT,
  stageOf,
} from './stage-attempts.ts';

const shuffleIds = fc.integer({ min: 0, max: SHUFFLE_ID_LIMIT - 1 });
const attempts = fc.integer({ min: 0, max: MAX_STAGE_ATTEMPT });

describe('stage attempts as cluster shuffles', () => {
  it('map each (shuffle, attempt) to its own 31-bit id, undone by stageOf; attempt 0 keeps the id', () => {
    fc.assert(
      fc.property(shuffleIds, attempts, shuffleIds, attempts, (s1, a1, s2, a2) => {
        const id = clusterShuffleId(s1, a1);
        assert.ok(
          Number.isInteger(id) && id >= 0 && id <= 0x7fff_ffff,
          'Number.isInteger(id) && id >= 0 && id <= 0x7fff_ffff',
        );
        assert.deepEqual(stageOf(id), { shuffleId: s1, stageAttempt: a1 });
        assert.equal(clusterShuffleId(s2, a2) === id, s1 === s2 && a1 === a2);
        assert.equal(clusterShuffleId(s1, 0), s1);
      }),
    );
  });

  it('refuse ids and attempts outside their ranges, saying the range', () => {
    assert.throws(() => clusterShuffleId(SHUFFLE_ID_LIMIT, 0), /from 0 to 1048575, got 1048576/);
    assert.throws(() => clusterShuffleId(-1, 0), /shuffle id/);
    assert.throws(() => clusterShuffleId(1.5, 0), /shuffle id/);
    assert.throws(
      () => clusterShuffleId(0, MAX_STAGE_ATTEMPT + 1),
      /stage attempt is a whole number from 0 to 2047/,
    );
  });

  it('tell a reader whose data is lost which call to make, with the next attempt', () => {
    const advice = rerunAdvice(clusterShuffleId(7, 2));
    assert.match(advice, /shuffle 7 \(stage attempt 2\) is lost/);
    assert.match(advice, /application\.rerunMapStage\(7\)/);
    assert.match(advice, /client\.shuffle\(7, shape, \{ stageAttempt: 3 \}\)/);
  });
});
