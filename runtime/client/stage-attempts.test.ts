// The library's side of stage attempts: the range errors in its own words, and the advice to a reader whose data
// is lost. The id scheme is proved in core/client/stage-attempts.test.ts.
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import {
  checkedClusterShuffleId,
  MAX_STAGE_ATTEMPT,
  rerunAdvice,
  SHUFFLE_ID_LIMIT,
} from './stage-attempts.ts';

describe('stage attempts in the client library', () => {
  it('refuse ids and attempts outside their ranges, saying the range', () => {
    assert.throws(() => checkedClusterShuffleId(SHUFFLE_ID_LIMIT, 0), /from 0 to 1048575, got 1048576/);
    assert.throws(() => checkedClusterShuffleId(-1, 0), /shuffle id/);
    assert.throws(() => checkedClusterShuffleId(1.5, 0), /shuffle id/);
    assert.throws(
      () => checkedClusterShuffleId(0, MAX_STAGE_ATTEMPT + 1),
      /stage attempt is a whole number from 0 to 2047/,
    );
    assert.equal(checkedClusterShuffleId(7, 2), 2 * SHUFFLE_ID_LIMIT + 7);
  });

  it('tell a reader whose data is lost which call to make, with the next attempt', () => {
    const advice = rerunAdvice(checkedClusterShuffleId(7, 2));
    assert.match(advice, /shuffle 7 \(stage attempt 2\) is lost/);
    assert.match(advice, /application\.rerunMapStage\(7\)/);
    assert.match(advice, /client\.shuffle\(7, shape, \{ stageAttempt: 3 \}\)/);
  });
});
