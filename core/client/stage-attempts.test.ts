// Each stage attempt of an application's shuffle is a cluster shuffle of its own: the mapping must give every
// (shuffle, attempt) its own id within the cluster's 31 bits, attempt 0 the application's id itself (so that the
// shuffle ids an application used before stage attempts existed do not change), and be undone by stageOf.
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import fc from 'fast-check';
import {
  clusterShuffleId,
  isShuffleId,
  isStageAttempt,
  MAX_STAGE_ATTEMPT,
  SHUFFLE_ID_LIMIT,
  stageOf,
} from './stage-attempts.ts';

const shuffleIds = fc.integer({ min: 0, max: SHUFFLE_ID_LIMIT - 1 });
const attempts = fc.integer({ min: 0, max: MAX_STAGE_ATTEMPT });
const stages = fc.record({ shuffleId: shuffleIds, stageAttempt: attempts });

describe('stage attempts as cluster shuffles', () => {
  it('map each (shuffle, attempt) to its own 31-bit id, undone by stageOf; attempt 0 keeps the id', () => {
    fc.assert(
      fc.property(stages, stages, (one, other) => {
        const id = clusterShuffleId(one);
        assert.ok(Number.isInteger(id) && id >= 0 && id <= 0x7fff_ffff, 'a non-negative 31-bit id');
        assert.deepEqual(stageOf(id), { ...one });
        assert.equal(
          clusterShuffleId(other) === id,
          one.shuffleId === other.shuffleId && one.stageAttempt === other.stageAttempt,
        );
        assert.equal(clusterShuffleId({ shuffleId: one.shuffleId, stageAttempt: 0 }), one.shuffleId);
        assert.equal(clusterShuffleId({ ...one }), id, 'the same stage always gets the same id');
      }),
    );
  });

  it('give every attempt of every shuffle a fresh id, whatever order the reruns come in', () => {
    fc.assert(
      fc.property(fc.array(fc.integer({ min: 0, max: 7 }), { maxLength: 200 }), (reruns) => {
        const attempt = new Map<number, number>();
        const seen = new Set<number>();
        for (const shuffleId of reruns) {
          const stageAttempt = attempt.get(shuffleId) ?? 0;
          attempt.set(shuffleId, stageAttempt + 1);
          const id = clusterShuffleId({ shuffleId, stageAttempt });
          assert.ok(!seen.has(id), `id ${id} registered twice`);
          seen.add(id);
        }
      }),
    );
  });

  it('tell the ranges: whole numbers, shuffle ids below 2^20, attempts up to 2047', () => {
    fc.assert(fc.property(shuffleIds, attempts, (s, a) => isShuffleId(s) && isStageAttempt(a)));
    for (const bad of [-1, SHUFFLE_ID_LIMIT, 1.5, Number.NaN, '1', undefined])
      assert.equal(isShuffleId(bad), false);
    for (const bad of [-1, MAX_STAGE_ATTEMPT + 1, 0.5, null]) assert.equal(isStageAttempt(bad), false);
  });
});
