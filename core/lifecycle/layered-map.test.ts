import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import fc from 'fast-check';
import { LayeredMap } from './layered-map.ts';

type Step =
  | { readonly kind: 'set'; readonly key: number; readonly value: number }
  | { readonly kind: 'delete'; readonly key: number }
  | { readonly kind: 'iterate' };

// Few keys so that sets, deletes and re-adds of one key meet; many steps so that the layers fold many times.
const step: fc.Arbitrary<Step> = fc.oneof(
  {
    weight: 6,
    arbitrary: fc.record({ kind: fc.constant('set' as const), key: fc.nat(40), value: fc.nat() }),
  },
  { weight: 3, arbitrary: fc.record({ kind: fc.constant('delete' as const), key: fc.nat(40) }) },
  { weight: 1, arbitrary: fc.constant({ kind: 'iterate' as const }) },
);

function sameAs(layered: ReadonlyMap<number, number>, map: ReadonlyMap<number, number>): void {
  assert.equal(layered.size, map.size);
  assert.deepEqual([...layered], [...map]);
  assert.deepEqual([...layered.keys()], [...map.keys()]);
  assert.deepEqual([...layered.values()], [...map.values()]);
  for (let key = -1; key <= 41; key += 1) {
    assert.equal(layered.has(key), map.has(key), `has ${key}`);
    assert.equal(layered.get(key), map.get(key), `get ${key}`);
  }
}

describe('LayeredMap', () => {
  it('answers as a Map after the same sets and deletes, and every earlier value stays as it was', () => {
    fc.assert(
      fc.property(
        fc.array(fc.tuple(fc.nat(40), fc.nat()), { maxLength: 30 }),
        fc.array(step, { maxLength: 400 }),
        (start, steps) => {
          const map = new Map(start);
          let layered = LayeredMap.of(map);
          const history: [LayeredMap<number, number>, Map<number, number>][] = [[layered, new Map(map)]];
          for (const s of steps) {
            if (s.kind === 'set') {
              map.set(s.key, s.value);
              layered = layered.with(s.key, s.value);
            } else if (s.kind === 'delete') {
              map.delete(s.key);
              layered = layered.without(s.key);
            } else {
              sameAs(layered, map);
            }
            history.push([layered, new Map(map)]);
          }
          sameAs(layered, map);
          for (const [value, expected] of history) sameAs(value, expected);
        },
      ),
      { numRuns: 300 },
    );
  });

  it('copies a plain map it is given, so that a later change to it does not show', () => {
    const plain = new Map([[1, 1]]);
    const layered = LayeredMap.of(plain);
    plain.set(2, 2);
    assert.deepEqual([...layered], [[1, 1]]);
    assert.equal(LayeredMap.of(layered), layered);
  });

  it('forEach visits in order with the map itself', () => {
    const layered = LayeredMap.of(new Map([[1, 10]]))
      .with(2, 20)
      .without(1)
      .with(1, 11);
    const seen: [number, number][] = [];
    layered.forEach((value, key, map) => {
      assert.equal(map, layered);
      seen.push([key, value]);
    });
    assert.deepEqual(seen, [
      [2, 20],
      [1, 11],
    ]);
  });
});
