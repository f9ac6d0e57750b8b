import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import fc from 'fast-check';
import { BackPressure } from './back-pressure.ts';

describe('back-pressure', () => {
  it('pauses pushes above the receive threshold, replication above the replicate one, and resumes both below resume', () => {
    fc.assert(
      fc.property(
        fc.integer({ min: 1, max: 1_000 }),
        fc.integer({ min: 1, max: 1_000 }),
        fc.integer({ min: 0, max: 999 }),
        fc.array(fc.integer({ min: -2_000, max: 2_000 }), { maxLength: 60 }),
        (receive, extra, resumeShare, deltas) => {
          const limits = {
            pauseReceiveBytes: receive,
            pauseReplicateBytes: receive + extra,
            resumeBytes: Math.floor((receive * resumeShare) / 1_000),
          };
          const paused = { push: false, replicate: false };
          const pressure = new BackPressure(limits, (service, value) => {
            paused[service] = value;
          });
          let held = 0;
          for (const raw of deltas) {
            const delta = Math.max(raw, -held); // bytes written never exceed bytes handed out
            const before = { ...paused };
            pressure.change(delta);
            held += delta;
            assert.equal(pressure.bytesInFlight, held);
            if (held >= limits.pauseReplicateBytes) assert.deepEqual(paused, { push: true, replicate: true });
            else if (held >= limits.pauseReceiveBytes) assert.equal(paused.push, true);
            else if (held <= limits.resumeBytes) assert.deepEqual(paused, { push: false, replicate: false });
            // Between resume and pause: hysteresis, nothing changes.
            else assert.deepEqual(paused, before);
          }
        },
      ),
    );
  });
});
