import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import fc from 'fast-check';
import {
  DEFAULT_MAX_QUEUED_BYTES,
  defaultRouteIdleMs,
  portFull,
  sendPauseBytes,
  sendQueueVerdict,
} from './connection-limits.ts';

const maxArb = fc.integer({ min: 1, max: 2 * DEFAULT_MAX_QUEUED_BYTES });

describe('sendQueueVerdict', () => {
  it('property: closes exactly past the bound, pauses before it, and only grows more severe as bytes wait', () => {
    const severity = { ok: 0, pause: 1, close: 2 } as const;
    fc.assert(
      fc.property(maxArb, fc.nat(), fc.nat(), (max, a, b) => {
        const [less, more] = a <= b ? [a, b] : [b, a];
        assert.equal(sendQueueVerdict(more, max) === 'close', more > max);
        assert.ok(
          severity[sendQueueVerdict(less, max)] <= severity[sendQueueVerdict(more, max)],
          'severity[sendQueueVerdict(less, max)] <= severity[sendQueueVerdict(more, max)]',
        );
        // Reading pauses before the connection is cut off: at the bound itself it is paused, not closed.
        assert.equal(sendQueueVerdict(max, max), 'pause');
      }),
    );
  });

  it('property: pauses from half the bound, never later than two 8 MiB chunks', () => {
    fc.assert(
      fc.property(maxArb, (max) => {
        const pause = sendPauseBytes(max);
        assert.ok(
          pause <= max / 2 && pause <= 16 * 1024 * 1024,
          'pause <= max / 2 && pause <= 16 * 1024 * 1024',
        );
        assert.ok(
          pause === 16 * 1024 * 1024 || pause === Math.floor(max / 2),
          'pause === 16 * 1024 * 1024 || pause === Math.floor(max / 2)',
        );
        if (pause > 0) assert.equal(sendQueueVerdict(pause - 1, max), 'ok');
        assert.equal(sendQueueVerdict(pause, max), 'pause');
      }),
    );
  });

  it('pauses at 16 MiB and closes past 256 MiB with the defaults', () => {
    assert.equal(sendQueueVerdict(16 * 1024 * 1024 - 1, DEFAULT_MAX_QUEUED_BYTES), 'ok');
    assert.equal(sendQueueVerdict(16 * 1024 * 1024, DEFAULT_MAX_QUEUED_BYTES), 'pause');
    assert.equal(sendQueueVerdict(DEFAULT_MAX_QUEUED_BYTES + 1, DEFAULT_MAX_QUEUED_BYTES), 'close');
  });
});

describe('portFull', () => {
  it('property: refuses from the cap on, never without one', () => {
    fc.assert(
      fc.property(fc.nat(10_000), fc.nat(10_000), (open, cap) => {
        assert.equal(portFull(open, cap), open >= cap);
        assert.equal(portFull(open, undefined), false);
      }),
    );
  });
});

describe('defaultRouteIdleMs', () => {
  it('keeps a route for twice svc.network.timeout', () => {
    assert.equal(defaultRouteIdleMs(120_000), 240_000);
  });
});
