import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import fc from 'fast-check';
import {
  backlogFull,
  backPressureDecision,
  backPressureLimitsFor,
  partialFrameLimitBytes,
  partialFramesToShed,
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

describe('stalled frames', () => {
  it('never keep the ports paused on their own, however large', () => {
    fc.assert(
      fc.property(limitsArb, fc.nat(), fc.boolean(), (limits, partialFrameBytes, wasPaused) => {
        const paused = { push: wasPaused, replicate: wasPaused };
        const next = backPressureDecision(limits, { inFlightBytes: 0, partialFrameBytes }, paused);
        assert.deepEqual(next, { push: false, replicate: false });
      }),
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
