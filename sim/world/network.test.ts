import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import fc from 'fast-check';
import { replayRng } from '../../core/rng.ts';
import { CALM_NETWORK, Network } from './network.ts';

const nodes = ['m', 'w1', 'w2', 'w3', 'app'];

describe('Network partitions', () => {
  it('cut exactly the links between the two sides, both ways, until healed', () => {
    fc.assert(
      fc.property(
        fc.subarray(nodes, { minLength: 1 }),
        fc.oneof(fc.constant('rest' as const), fc.subarray(nodes)),
        (a, b) => {
          const network = new Network(replayRng([0.5]), CALM_NETWORK);
          const id = network.partition(a, b);
          for (const from of nodes) {
            for (const to of nodes) {
              const inA = (n: string) => a.includes(n);
              const inB = (n: string) => (b === 'rest' ? !a.includes(n) : b.includes(n));
              const expected = from !== to && ((inA(from) && inB(to)) || (inA(to) && inB(from)));
              assert.equal(network.blocked(from, to), expected, `${from}->${to}`);
              assert.equal(network.arrivals(from, to, 0).length, expected ? 0 : 1);
            }
          }
          network.heal(id);
          assert.ok(
            nodes.every((from) => nodes.every((to) => !network.blocked(from, to))),
            'nodes.every((from) => nodes.every((to) => !network.blocked(from, to)))',
          );
        },
      ),
      { numRuns: 150 },
    );
  });

  it('cut one way only the links from the first side to the second, until healed', () => {
    const side = fc.oneof(fc.constant('rest' as const), fc.subarray(nodes, { minLength: 1 }));
    fc.assert(
      fc.property(
        fc.tuple(side, side).filter(([from, to]) => from !== 'rest' || to !== 'rest'),
        ([from, to]) => {
          const network = new Network(replayRng([0.5]), CALM_NETWORK);
          const id = network.dropFromTo(from, to);
          const inFrom = (n: string) => (from === 'rest' ? !(to as string[]).includes(n) : from.includes(n));
          const inTo = (n: string) => (to === 'rest' ? !(from as string[]).includes(n) : to.includes(n));
          for (const a of nodes) {
            for (const b of nodes) {
              const expected = a !== b && inFrom(a) && inTo(b);
              assert.equal(network.blocked(a, b), expected, `${a}->${b}`);
              assert.equal(network.arrivals(a, b, 0).length, expected ? 0 : 1);
            }
          }
          network.heal(id);
          assert.ok(
            nodes.every((a) => nodes.every((b) => !network.blocked(a, b))),
            'every link is open once healed',
          );
        },
      ),
      { numRuns: 150 },
    );
  });

  it('heals one partition by id and leaves the others', () => {
    const network = new Network(replayRng([0.5]), CALM_NETWORK);
    const first = network.partition(['w1'], 'rest');
    network.partition(['w2'], ['m']);
    network.heal(first);
    assert.equal(network.blocked('w1', 'm'), false);
    assert.equal(network.blocked('m', 'w2'), true);
    network.heal();
    assert.equal(network.partitionCount, 0);
  });

  it('adds latency and jitter to every arrival', () => {
    const network = new Network(replayRng([0.5]), { ...CALM_NETWORK, latencyMs: 2, jitterMs: 1 });
    const [at] = network.arrivals('m', 'w1', 10);
    assert.ok(at !== undefined && at > 12, 'at !== undefined && at > 12');
  });
});
