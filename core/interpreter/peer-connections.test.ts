import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import fc from 'fast-check';
import { chooseConnection } from './peer-connections.ts';

const viewArb = fc.record({
  loads: fc.array(fc.nat({ max: 5 }), { maxLength: 4 }),
  wanted: fc.integer({ min: 1, max: 4 }),
  cursor: fc.nat({ max: 10 }),
  held: fc.option(fc.nat({ max: 4 }), { nil: undefined }),
});

describe('chooseConnection', () => {
  it('property: opens up to the wanted count, keeps a held connection, else picks one of the least loaded', () => {
    fc.assert(
      fc.property(viewArb, (view) => {
        const choice = chooseConnection(view);
        const count = view.loads.length + choice.open;
        assert.equal(choice.open, Math.max(0, view.wanted - view.loads.length));
        assert.ok(choice.index >= 0 && choice.index < count, 'the message goes on a connection of the pool');
        assert.ok(choice.cursor >= 0 && choice.cursor < count, 'the turn stays inside the pool');
        if (view.held !== undefined && view.held < view.loads.length) {
          assert.equal(choice.index, view.held, 'a node awaiting an answer keeps its connection');
          return;
        }
        const loads = [...view.loads, ...Array<number>(choice.open).fill(0)];
        assert.equal(loads[choice.index], Math.min(...loads), 'the least loaded connection carries it');
      }),
    );
  });

  it('spreads messages in turn over equally loaded connections, opening them all at once', () => {
    const first = chooseConnection({ loads: [], wanted: 2, cursor: 0 });
    assert.deepEqual(first, { open: 2, index: 0, cursor: 1 });
    const second = chooseConnection({ loads: [0, 0], wanted: 2, cursor: first.cursor });
    assert.deepEqual(second, { open: 0, index: 1, cursor: 0 });
    assert.equal(chooseConnection({ loads: [3, 1], wanted: 2, cursor: 0 }).index, 1);
  });

  it('replaces a connection that failed and keeps one when one is wanted', () => {
    assert.equal(chooseConnection({ loads: [4], wanted: 2, cursor: 1 }).open, 1);
    assert.deepEqual(chooseConnection({ loads: [7], wanted: 1, cursor: 0 }), {
      open: 0,
      index: 0,
      cursor: 0,
    });
  });
});
