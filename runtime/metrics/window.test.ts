import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import fc from 'fast-check';
import { QUANTILES, quantileOf, SlidingWindow, snapshotOf } from './window.ts';

const value = fc.double({ min: -1e9, max: 1e9, noNaN: true });

describe('the sliding window of a timer', () => {
  it('property: holds the last `size` values in order and counts every one', () => {
    fc.assert(
      fc.property(fc.integer({ min: 1, max: 20 }), fc.array(value, { maxLength: 60 }), (size, values) => {
        const window = new SlidingWindow(size);
        for (const v of values) window.record(v);
        assert.deepEqual(window.samples(), values.slice(-size));
        assert.equal(window.count, values.length);
        assert.equal(window.snapshot().count, values.length);
      }),
    );
  });

  it('refuses a window of no sample', () => {
    assert.throws(() => new SlidingWindow(0), /at least one sample/);
    assert.throws(() => new SlidingWindow(1.5), /at least one sample/);
  });
});

describe('the statistics of a window (reference section 10.1)', () => {
  it('property: min ≤ 50th ≤ 75th ≤ 95th ≤ 98th ≤ 99th ≤ 999th ≤ max, the mean between min and max', () => {
    fc.assert(
      fc.property(fc.array(value, { minLength: 1, maxLength: 200 }), (values) => {
        const s = snapshotOf(values);
        // A statistic is never -0 (below).
        assert.equal(s.min, Math.min(...values) + 0);
        assert.equal(s.max, Math.max(...values) + 0);
        const ordered = [s.min, ...QUANTILES.map((q) => s.quantiles[q.suffix]), s.max];
        for (let i = 1; i < ordered.length; i += 1)
          assert.ok(ordered[i - 1]! <= ordered[i]!, ordered.join(' '));
        assert.ok(
          s.mean >= s.min - 1e-6 && s.mean <= s.max + 1e-6,
          's.mean >= s.min - 1e-6 && s.mean <= s.max + 1e-6',
        );
      }),
    );
  });

  it('never reports -0, whose place among zeros would depend on the order (property seed 72680984)', () => {
    assert.deepEqual(snapshotOf([-0, 0]), snapshotOf([0, -0]));
    assert.ok(
      Object.is(snapshotOf([-0]).min, 0) && Object.is(snapshotOf([-0]).max, 0),
      'Object.is(snapshotOf([-0]).min, 0) && Object.is(snapshotOf([-0]).max, 0)',
    );
  });

  it('property: the order of the samples does not matter', () => {
    fc.assert(
      fc.property(fc.array(value, { maxLength: 50 }), fc.integer(), (values, seed) => {
        const shuffled = [...values].sort((a, b) => ((a * 31 + seed) % 7) - ((b * 31 + seed) % 7));
        assert.deepEqual(snapshotOf(shuffled), snapshotOf(values));
      }),
    );
  });

  it('property: a quantile grows with q and stays within the samples', () => {
    fc.assert(
      fc.property(
        fc.array(value, { minLength: 1, maxLength: 100 }),
        fc.double({ min: 0, max: 1, noNaN: true }),
        fc.double({ min: 0, max: 1, noNaN: true }),
        (values, a, b) => {
          const sorted = [...values].sort((x, y) => x - y);
          const [low, high] = a <= b ? [a, b] : [b, a];
          assert.ok(
            quantileOf(sorted, low) <= quantileOf(sorted, high),
            'quantileOf(sorted, low) <= quantileOf(sorted, high)',
          );
          assert.ok(quantileOf(sorted, low) >= sorted[0]!, 'quantileOf(sorted, low) >= sorted[0]!');
          assert.ok(quantileOf(sorted, high) <= sorted.at(-1)!, 'quantileOf(sorted, high) <= sorted.at(-1)!');
        },
      ),
    );
  });

  it('interpolates at q × (n + 1), clamped to the first and last value', () => {
    const oneToTen = [1, 2, 3, 4, 5, 6, 7, 8, 9, 10];
    assert.equal(quantileOf(oneToTen, 0.5), 5.5);
    assert.equal(quantileOf(oneToTen, 0.75), 8.25);
    assert.equal(quantileOf(oneToTen, 0.95), 10);
    assert.equal(quantileOf(oneToTen, 0.05), 1);
    assert.equal(quantileOf([4], 0.999), 4);
    const hundred = Array.from({ length: 100 }, (_, i) => i + 1);
    assert.equal(quantileOf(hundred, 0.5), 50.5);
    assert.ok(
      Math.abs(quantileOf(hundred, 0.99) - 99.99) < 1e-9,
      'Math.abs(quantileOf(hundred, 0.99) - 99.99) < 1e-9',
    );
  });

  it('an empty window is all zeros', () => {
    const s = snapshotOf([]);
    assert.deepEqual([s.count, s.min, s.max, s.mean], [0, 0, 0, 0]);
    for (const q of QUANTILES) assert.equal(s.quantiles[q.suffix], 0);
  });

  it('property: a window of one repeated value has that value for every statistic', () => {
    fc.assert(
      fc.property(value, fc.integer({ min: 1, max: 30 }), (v, n) => {
        const s = snapshotOf(Array.from({ length: n }, () => v));
        for (const stat of [s.min, s.max, s.mean, ...QUANTILES.map((q) => s.quantiles[q.suffix])]) {
          assert.ok(Math.abs(stat - v) <= Math.abs(v) * 1e-9, `${stat} vs ${v}`);
        }
      }),
    );
  });
});
