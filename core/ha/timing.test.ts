import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import fc from 'fast-check';
import { actingDeadline, DEFAULT_HA_TIMING, timingProblems, type HaTiming } from './timing.ts';

const timing: fc.Arbitrary<HaTiming> = fc.record({
  leaseTtlMs: fc.integer({ min: 1_000, max: 60_000 }),
  keepAliveIntervalMs: fc.integer({ min: 50, max: 10_000 }),
  clockDrift: fc.double({ min: 0, max: 0.2, noNaN: true }),
  stepDownMarginMs: fc.integer({ min: 0, max: 5_000 }),
  campaignRetryMs: fc.integer({ min: 1, max: 5_000 }),
});

describe('the acting window', () => {
  it('ends, in real time, at least the margin before the earliest end of the lease, whatever the clock rates within the drift', () => {
    fc.assert(
      fc.property(
        timing,
        fc.double({ min: -1, max: 1, noNaN: true }),
        fc.double({ min: -1, max: 1, noNaN: true }),
        fc.integer({ min: 0, max: 1_000_000 }),
        fc.integer({ min: 0, max: 5_000 }),
        (t, leaderSkew, storeSkew, sentAtReal, transit) => {
          fc.pre(timingProblems(t).length === 0);
          const leaderRate = 1 + leaderSkew * t.clockDrift;
          const storeRate = 1 + storeSkew * t.clockDrift;
          // The leader's clock reads sentAt when it sends at real time sentAtReal; it stops when it reads the deadline.
          const sentAt = 123_456;
          const deadline = actingDeadline(sentAt, t.leaseTtlMs, t);
          const stopReal = sentAtReal + (deadline - sentAt) / leaderRate;
          // The store renews on receipt (transit later) for the TTL on its own clock.
          const expiryReal = sentAtReal + transit + t.leaseTtlMs / storeRate;
          assert.ok(
            stopReal + t.stepDownMarginMs <= expiryReal + 1e-6,
            `stop ${stopReal} + margin ${t.stepDownMarginMs} > expiry ${expiryReal}`,
          );
        },
      ),
    );
  });

  it('the defaults are usable and serve a new leader within 10 s of the old one’s death', () => {
    assert.deepEqual(timingProblems(DEFAULT_HA_TIMING), []);
    // A SIGKILLed leader's lease ends at most a TTL after its last renewal; the next keeps its own lease alive and
    // is answered by the election at once.
    assert.ok(DEFAULT_HA_TIMING.leaseTtlMs * (1 + DEFAULT_HA_TIMING.clockDrift) < 10_000, 'TTL under 10 s');
  });

  it('refuses a lease that leaves no room to miss a keep-alive, saying what to change', () => {
    const problems = timingProblems({ ...DEFAULT_HA_TIMING, keepAliveIntervalMs: 4_000 });
    assert.equal(problems.length, 1);
    assert.match(problems[0]!, /lengthen the lease or renew more often/);
    assert.match(timingProblems({ ...DEFAULT_HA_TIMING, clockDrift: 0.7 }).join(), /clockDrift/);
  });
});
