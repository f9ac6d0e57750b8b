import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import fc from 'fast-check';
import {
  isPeerUnavailable,
  markPeerUnavailable,
  purgeUnavailablePeers,
  type UnavailablePeers,
} from './unavailable-peers.ts';

describe('unavailable peers', () => {
  it('fails fast for exactly the window after a failure', () => {
    fc.assert(
      fc.property(
        fc.nat(10 ** 9),
        fc.integer({ min: 1, max: 10 ** 6 }),
        fc.nat(2 * 10 ** 6),
        (since, windowMs, elapsed) => {
          const peers = markPeerUnavailable(new Map(), 'w1', since);
          const now = since + elapsed;
          assert.equal(isPeerUnavailable(peers, 'w1', now, windowMs), elapsed < windowMs);
          assert.equal(isPeerUnavailable(peers, 'w2', now, windowMs), false);
          assert.equal(purgeUnavailablePeers(peers, now, windowMs).has('w1'), elapsed < windowMs);
        },
      ),
      { numRuns: 200 },
    );
  });

  it('restarts the window on a new failure and purges only expired peers', () => {
    let peers: UnavailablePeers = markPeerUnavailable(new Map(), 'a', 0);
    peers = markPeerUnavailable(peers, 'b', 30_000);
    peers = markPeerUnavailable(peers, 'a', 50_000);
    assert.equal(isPeerUnavailable(peers, 'a', 100_000, 60_000), true);
    const purged = purgeUnavailablePeers(peers, 90_000, 60_000);
    assert.deepEqual([...purged], [['a', 50_000]]);
    assert.equal(
      purgeUnavailablePeers(purged, 90_000, 60_000),
      purged,
      'nothing to purge returns the same map',
    );
  });
});
