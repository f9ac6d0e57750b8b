import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import fc from 'fast-check';
import {
  fullPushLimit,
  MAX_PUSH_PAUSE_MS,
  onCongestedPush,
  onPlainPushSuccess,
  pushPauseMs,
  type PushLimit,
} from './slow-start.ts';

describe('slow start (core/client/slow-start.ts)', () => {
  it('keeps the limit within 1..max: congestion never raises it, success never lowers it, pauses stay bounded', () => {
    fc.assert(
      fc.property(
        fc.integer({ min: 1, max: 16 }),
        fc.array(fc.boolean(), { maxLength: 200 }),
        (max, answers) => {
          let limit: PushLimit = fullPushLimit(max);
          for (const congested of answers) {
            const next = congested ? onCongestedPush(limit) : onPlainPushSuccess(limit, max);
            assert.ok(next.limit >= 1 && next.limit <= max, `limit ${next.limit} within 1..${max}`);
            if (congested) assert.ok(next.limit <= limit.limit, 'congestion never raises the limit');
            else assert.ok(next.limit >= limit.limit, 'success never lowers the limit');
            const pause = pushPauseMs(next, max);
            assert.ok(pause >= 0 && pause <= MAX_PUSH_PAUSE_MS, `pause ${pause} bounded`);
            if (next.limit >= max) assert.equal(pause, 0, 'no pause at the maximum');
            limit = next;
          }
        },
      ),
    );
  });

  it('returns to the maximum after enough plain successes, whatever the congestion before', () => {
    fc.assert(
      fc.property(fc.integer({ min: 1, max: 16 }), fc.integer({ min: 0, max: 20 }), (max, congestions) => {
        let limit = fullPushLimit(max);
        for (let i = 0; i < congestions; i += 1) limit = onCongestedPush(limit);
        for (let i = 0; i < max * max + 1; i += 1) limit = onPlainPushSuccess(limit, max);
        assert.deepEqual(limit.limit, max, 'back at the maximum');
      }),
    );
  });

  it('halves on congestion and pauses longer for each congested answer at a limit of 1 (the reference’s numbers)', () => {
    const max = 8;
    let limit = onCongestedPush(fullPushLimit(max));
    assert.equal(limit.limit, 4, 'halved');
    assert.equal(pushPauseMs(limit, max), 500 - 60 * 4, 'the pause shrinks as the limit grows');
    limit = onCongestedPush(onCongestedPush(limit));
    assert.equal(limit.limit, 1, '4 → 2 → 1');
    assert.equal(pushPauseMs(limit, max), 440, 'at 1 the pause starts at 440 ms');
    limit = onCongestedPush(limit);
    assert.equal(pushPauseMs(limit, max), 1_440, 'one more second per congested answer at 1');
    limit = onCongestedPush(limit);
    assert.equal(pushPauseMs(limit, max), MAX_PUSH_PAUSE_MS, 'at most the maximum pause');
    assert.equal(onPlainPushSuccess(limit, max).limit, 2, 'a plain success grows it again');
  });
});
