import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import fc from 'fast-check';
import {
  backlogFull,
  backPressureDecision,
  backPressureLimitsFor,
  nextStallCheck,
  partialFrameLimitBytes,
  partialFramePauseBytes,
  partialFramesToShed,
  stalledFramesToShed,
  type PausedPorts,
} from './back-pressure.ts';

const limitsArb = fc
  .record({
    receive: fc.integer({ min: 1, max: 10_000 }),
    extra: fc.integer({ min: 0, max: 10_000 }),
    resumeShare: fc.integer({ min: 0, max: 999 }),
  })
  .map(({ receive, extra, resumeShare }) => ({
    pauseReceiveBytes: receive,
    pauseReplicateBytes: receive + extra,
    resumeBytes: Math.floor((receive * resumeShare) / 1_000),
  }));

const heldArb = fc.record({
  inFlightBytes: fc.integer({ min: 0, max: 30_000 }),
  partialFrameBytes: fc.integer({ min: 0, max: 30_000 }),
});

describe('backPressureDecision', () => {
  it('pauses on everything held, partly received frames up to the resume threshold, with hysteresis in between', () => {
    fc.assert(
      fc.property(limitsArb, fc.array(heldArb, { minLength: 1, maxLength: 40 }), (limits, steps) => {
        let paused: PausedPorts = { push: false, replicate: false };
        for (const held of steps) {
          const next = backPressureDecision(limits, held, paused);
          const total = held.inFlightBytes + Math.min(held.partialFrameBytes, limits.resumeBytes);
          if (total >= limits.pauseReplicateBytes) assert.deepEqual(next, { push: true, replicate: true });
          else if (total >= limits.pauseReceiveBytes) {
            assert.equal(next.push, true);
            assert.equal(next.replicate, paused.replicate, 'replication keeps its state below its threshold');
          } else if (total <= limits.resumeBytes) assert.deepEqual(next, { push: false, replicate: false });
          else assert.deepEqual(next, paused, 'between resume and pause nothing changes');
          // Replication never pauses while pushes are read: it is the more important of the two.
          assert.ok(!next.replicate || next.push, '!next.replicate || next.push');
          paused = next;
        }
      }),
    );
  });

  it('counts a byte of a partly received frame as a byte on its way to the disks, up to the resume threshold', () => {
    fc.assert(
      fc.property(limitsArb, heldArb, fc.boolean(), fc.boolean(), (limits, held, push, replicate) => {
        const paused = { push, replicate: replicate && push };
        const moved = {
          inFlightBytes: held.inFlightBytes + Math.min(held.partialFrameBytes, limits.resumeBytes),
          partialFrameBytes: 0,
        };
        assert.deepEqual(
          backPressureDecision(limits, held, paused),
          backPressureDecision(limits, moved, paused),
        );
      }),
    );
  });
});

describe('partly received frames', () => {
  it('without a pause threshold for them, never keep the ports paused on their own, however large', () => {
    fc.assert(
      fc.property(limitsArb, fc.nat(), fc.boolean(), (limits, partialFrameBytes, wasPaused) => {
        const paused = { push: wasPaused, replicate: wasPaused };
        const next = backPressureDecision(limits, { inFlightBytes: 0, partialFrameBytes }, paused);
        assert.deepEqual(next, { push: false, replicate: false });
      }),
    );
  });
});

describe('partialFramePauseBytes in the decision', () => {
  it('above it both ports pause; at or below it the decision is the one without it', () => {
    fc.assert(
      fc.property(
        limitsArb,
        fc.nat({ max: 30_000 }),
        heldArb,
        fc.boolean(),
        fc.boolean(),
        (limits, pauseBytes, held, push, replicate) => {
          const paused = { push, replicate: replicate && push };
          const next = backPressureDecision({ ...limits, partialFramePauseBytes: pauseBytes }, held, paused);
          if (held.partialFrameBytes > pauseBytes) assert.deepEqual(next, { push: true, replicate: true });
          else assert.deepEqual(next, backPressureDecision(limits, held, paused));
        },
      ),
    );
  });

  it('frames that come under way only at or below it, each at most one frame, never pass their limit', () => {
    fc.assert(
      fc.property(
        fc.integer({ min: 1, max: 5_000 }),
        fc.nat({ max: 20_000 }),
        // Each step: a frame of up to frameMax bytes asks to come under way, or the oldest under way arrives.
        fc.array(fc.oneof(fc.double({ min: 0, max: 1, noNaN: true }), fc.constant('arrive' as const)), {
          maxLength: 80,
        }),
        (frameMax, extra, steps) => {
          const limit = frameMax + extra;
          const pause = partialFramePauseBytes(limit, frameMax);
          const underWay: number[] = [];
          let total = 0;
          for (const step of steps) {
            if (step === 'arrive') total -= underWay.shift() ?? 0;
            else if (total <= pause) {
              const bytes = Math.max(1, Math.floor(step * frameMax));
              underWay.push(bytes);
              total += bytes;
            }
            assert.ok(total <= limit, `${total} bytes under way, limit ${limit}`);
          }
        },
      ),
    );
  });

  it('is one frame below the limit, never negative', () => {
    fc.assert(
      fc.property(fc.nat(), fc.nat(), (limit, frameMax) => {
        const pause = partialFramePauseBytes(limit, frameMax);
        assert.ok(pause >= 0, 'pause >= 0');
        assert.equal(pause, limit >= frameMax ? limit - frameMax : 0);
      }),
    );
  });
});

describe('stalledFramesToShed', () => {
  const holdersArb = fc.array(
    fc.record({ bytes: fc.integer({ min: 0, max: 1_000 }), ageMs: fc.nat({ max: 10_000 }) }),
    { maxLength: 30 },
  );

  it('gives up only stalled frames, the largest first, and only as many as needed to reach the pause threshold', () => {
    fc.assert(
      fc.property(
        holdersArb,
        fc.nat({ max: 20_000 }),
        fc.nat({ max: 10_000 }),
        (holders, pause, stalledMs) => {
          // Each holder's frame began `ageMs` before now.
          const now = 10_000;
          const frames = holders.map(({ bytes, ageMs }) => ({ bytes, since: now - ageMs }));
          const shed = stalledFramesToShed(frames, now, pause, stalledMs);
          const sum = (indices: readonly number[]): number =>
            indices.reduce((total, i) => total + holders[i]!.bytes, 0);
          const all = holders.map((_, i) => i);
          const kept = all.filter((i) => !shed.includes(i));
          const stalled = (i: number): boolean => holders[i]!.ageMs >= stalledMs && holders[i]!.bytes > 0;
          assert.equal(new Set(shed).size, shed.length, 'each once');
          for (const i of shed) assert.ok(stalled(i), `holder ${i} was under way for the stall time`);
          if (sum(all) <= pause) assert.deepEqual(shed, [], 'nothing while at or below the threshold');
          // Enough: the rest fit, or no stalled frame is left to give up.
          assert.ok(
            sum(kept) <= pause || kept.every((i) => !stalled(i)),
            'the rest fit, or none of them stalled',
          );
          // Minimal: without the last one given up, the rest would not fit.
          if (shed.length > 0)
            assert.ok(sum(kept) + holders[shed.at(-1)!]!.bytes > pause, 'no more than needed');
          // Largest first among the stalled.
          for (const k of kept.filter(stalled))
            for (const s of shed)
              assert.ok(holders[k]!.bytes <= holders[s]!.bytes, 'a larger stalled one was kept');
        },
      ),
    );
  });

  it('checks next when the oldest frame turns stalled, only while the frames are above the pause threshold', () => {
    fc.assert(
      fc.property(
        fc.array(fc.nat({ max: 1e9 }), { maxLength: 20 }),
        fc.nat({ max: 1e6 }),
        fc.nat({ max: 1_000 }),
        fc.nat({ max: 1_000 }),
        (sinces, stalledMs, total, pause) => {
          const at = nextStallCheck(total, sinces, pause, stalledMs);
          if (total <= pause || sinces.length === 0) assert.equal(at, undefined);
          else assert.equal(at, Math.min(...sinces) + stalledMs);
        },
      ),
    );
  });
});

describe('partialFramesToShed', () => {
  it('gives up the largest frames, and only as many as needed for the rest to fit', () => {
    fc.assert(
      fc.property(
        fc.array(fc.integer({ min: 1, max: 1_000 }), { maxLength: 30 }),
        fc.integer({ min: 0, max: 20_000 }),
        (held, limit) => {
          const shed = partialFramesToShed(held, limit);
          const total = (indices: readonly number[]): number => indices.reduce((sum, i) => sum + held[i]!, 0);
          const all = held.map((_, i) => i);
          const kept = all.filter((i) => !shed.includes(i));
          assert.equal(new Set(shed).size, shed.length, 'each once');
          assert.ok(total(kept) <= limit, 'the rest fit');
          // Minimal: without the last one shed, the rest would not fit.
          if (shed.length > 0)
            assert.ok(total(kept) + held[shed.at(-1)!]! > limit, 'total(kept) + held[shed.at(-1)!]! > limit');
          // Largest first: nothing kept is larger than anything shed.
          for (const k of kept) for (const s of shed) assert.ok(held[k]! <= held[s]!, 'held[k]! <= held[s]!');
        },
      ),
    );
  });
});

describe('backlogFull', () => {
  it('holds peers back from the bound until the backlog fell to half of it, whatever the order of changes', () => {
    fc.assert(
      fc.property(
        fc.integer({ min: 1, max: 5_000 }),
        fc.array(fc.integer({ min: 0, max: 10_000 }), { maxLength: 60 }),
        (limit, backlogs) => {
          let full = false;
          for (const backlog of backlogs) {
            const next = backlogFull(backlog, limit, full);
            if (backlog >= limit) assert.equal(next, true, 'full at the bound');
            else if (backlog <= limit / 2) assert.equal(next, false, 'drained at half of it');
            else assert.equal(next, full, 'in between nothing changes');
            full = next;
          }
        },
      ),
    );
  });
});

const ratioArb = fc.double({ min: 0, max: 1, noNaN: true });

describe('backPressureLimitsFor', () => {
  it('puts each threshold at its share of the budget in whole bytes, ordered as the ratios are', () => {
    fc.assert(
      fc.property(
        fc.integer({ min: 0, max: 2 ** 40 }),
        fc.tuple(ratioArb, ratioArb, ratioArb).map((ratios) => [...ratios].sort((a, b) => a - b)),
        (budget, [resume, pauseReceive, pauseReplicate]) => {
          const limits = backPressureLimitsFor(budget, {
            pauseReceive: pauseReceive!,
            pauseReplicate: pauseReplicate!,
            resume: resume!,
          });
          for (const [bytes, ratio] of [
            [limits.pauseReceiveBytes, pauseReceive!],
            [limits.pauseReplicateBytes, pauseReplicate!],
            [limits.resumeBytes, resume!],
          ] as const) {
            assert.ok(
              Number.isInteger(bytes) && bytes >= 0 && bytes <= budget,
              'whole bytes within the budget',
            );
            assert.ok(bytes <= budget * ratio && bytes > budget * ratio - 1, 'the share rounded down');
          }
          assert.ok(
            limits.resumeBytes <= limits.pauseReceiveBytes,
            'limits.resumeBytes <= limits.pauseReceiveBytes',
          );
          assert.ok(
            limits.pauseReceiveBytes <= limits.pauseReplicateBytes,
            'limits.pauseReceiveBytes <= limits.pauseReplicateBytes',
          );
        },
      ),
    );
  });
});

describe('partialFrameLimitBytes', () => {
  it('is the resume threshold, but never less than one whole frame', () => {
    fc.assert(
      fc.property(
        fc.integer({ min: 0, max: 2 ** 40 }),
        ratioArb,
        fc.integer({ min: 1, max: 2 ** 31 }),
        (budget, resume, frameMax) => {
          const limit = partialFrameLimitBytes(budget, resume, frameMax);
          const { resumeBytes } = backPressureLimitsFor(budget, {
            pauseReceive: 1,
            pauseReplicate: 1,
            resume,
          });
          assert.ok(limit >= frameMax, 'one whole frame always fits');
          assert.ok(limit >= resumeBytes, 'stalled frames may hold up to the resume threshold');
          assert.ok(limit === frameMax || limit === resumeBytes, 'and no more than the larger of the two');
        },
      ),
    );
  });
});
