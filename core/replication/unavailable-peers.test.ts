import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import fc from 'fast-check';
import {
  isPeerUnavailable,
  liftForReserve,
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

  it('a reserve lifts exactly the marks of the peers it places, and keeps the others', () => {
    const peer = fc.constantFrom<string>('w1', 'w2', 'w3', 'w4', 'w5');
    fc.assert(
      fc.property(fc.array(fc.tuple(peer, fc.nat(10 ** 6))), fc.array(peer), (marks, placed) => {
        let peers: UnavailablePeers = new Map();
        for (const [key, since] of marks) peers = markPeerUnavailable(peers, key, since);
        const { peers: next, lifted } = liftForReserve(peers, placed);
        assert.deepEqual([...lifted].sort(), [...new Set(placed)].filter((key) => peers.has(key)).sort());
        for (const [key, since] of peers) {
          if (placed.includes(key)) assert.equal(next.has(key), false, `${key} lifted`);
          else assert.equal(next.get(key), since, `${key} kept with its time`);
        }
        assert.equal(next.size, peers.size - lifted.length);
        if (lifted.length === 0) assert.equal(next, peers, 'unchanged when nothing is lifted');
      }),
      { numRuns: 300 },
    );
  });
});
