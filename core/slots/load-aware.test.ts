import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import fc from 'fast-check';
import { checkLoadAwareSettings, groupRatios, loadAwareQuotas } from './load-aware.ts';
import type { LoadAwareDisk } from './load-aware.ts';
import type { LoadAwareSettings } from './types.ts';

const settingsArb: fc.Arbitrary<LoadAwareSettings> = fc.record({
  numDiskGroups: fc.integer({ min: 1, max: 6 }),
  diskGroupGradient: fc.double({ min: 0, max: 2, noNaN: true }),
  flushTimeWeight: fc.constantFrom(0, 1),
  fetchTimeWeight: fc.constantFrom(0, 1),
  activeSlotsWeight: fc.constantFrom(0, 1),
});

const diskArb: fc.Arbitrary<LoadAwareDisk> = fc.record({
  capacity: fc.nat(50),
  avgFlushTimeNs: fc.nat(1000),
  avgFetchTimeNs: fc.nat(1000),
  activeSlots: fc.nat(100),
});

const sum = (values: Iterable<number>): number => [...values].reduce((a, b) => a + b, 0);

describe('load-aware quotas', () => {
  it('group ratios sum to 1 and shrink by the gradient from the fastest group', () => {
    fc.assert(
      fc.property(
        fc.integer({ min: 1, max: 10 }),
        fc.double({ min: 0, max: 3, noNaN: true }),
        (groups, gradient) => {
          const ratios = groupRatios(groups, gradient);
          assert.ok(Math.abs(sum(ratios) - 1) < 1e-9, `ratios sum to ${sum(ratios)}`);
          for (let i = 1; i < groups; i += 1) {
            assert.ok(
              Math.abs(ratios[i - 1]! - ratios[i]! * (1 + gradient)) < 1e-9,
              `ratios ${ratios.join(', ')}`,
            );
          }
        },
      ),
    );
  });

  it('never exceeds a disk capacity or the total, and places the total when capacity allows', () => {
    fc.assert(
      fc.property(
        fc.array(diskArb, { maxLength: 30 }),
        fc.nat(400),
        settingsArb,
        (disks, total, settings) => {
          const quotas = loadAwareQuotas(disks, total, settings);
          disks.forEach((disk, i) =>
            assert.ok(
              quotas[i]! >= 0 && quotas[i]! <= disk.capacity,
              `disk ${i}: quota ${quotas[i]} of ${disk.capacity}`,
            ),
          );
          assert.ok(sum(quotas) <= total, `quotas sum to ${sum(quotas)} > ${total}`);
          if (disks.length > 0 && disks.every((disk) => disk.capacity >= total))
            assert.equal(sum(quotas), total);
        },
      ),
      { numRuns: 300 },
    );
  });

  it('gives a faster group at least as much as a slower one when capacity is plentiful', () => {
    fc.assert(
      fc.property(
        fc.array(fc.nat(1000), { minLength: 2, maxLength: 20 }),
        fc.integer({ min: 1, max: 500 }),
        fc.integer({ min: 1, max: 4 }),
        fc.double({ min: 0, max: 1, noNaN: true }),
        (fetchTimes, total, groups, gradient) => {
          const disks = fetchTimes.map((fetch) => ({
            capacity: 10_000,
            avgFlushTimeNs: 0,
            avgFetchTimeNs: fetch,
            activeSlots: 0,
          }));
          const settings = {
            numDiskGroups: groups,
            diskGroupGradient: gradient,
            flushTimeWeight: 0,
            fetchTimeWeight: 1,
            activeSlotsWeight: 0,
          };
          const quotas = loadAwareQuotas(disks, total, settings);
          const order = disks.map((_, i) => i).sort((a, b) => fetchTimes[a]! - fetchTimes[b]! || a - b);
          const size = Math.ceil(disks.length / groups);
          const perGroup = Array.from({ length: Math.ceil(disks.length / size) }, (_, g) =>
            sum(order.slice(g * size, (g + 1) * size).map((i) => quotas[i]!)),
          );
          for (let g = 1; g < perGroup.length; g += 1) {
            assert.ok(
              perGroup[g - 1]! >= perGroup[g]!,
              `group ${g - 1} got ${perGroup[g - 1]}, group ${g} ${perGroup[g]}`,
            );
          }
          // Within a group, disks differ by at most one.
          for (let g = 0; g < perGroup.length; g += 1) {
            const members = order.slice(g * size, (g + 1) * size).map((i) => quotas[i]!);
            assert.ok(Math.max(...members) - Math.min(...members) <= 1, `group ${g}: ${members.join(', ')}`);
          }
        },
      ),
      { numRuns: 200 },
    );
  });

  it('splits by (1 + gradient)^(groups − 1 − i): two groups split 1500 as 1000/500 (gradient 1), 900/600 (0.5)', () => {
    // The reference's developer docs attribute 1000/500 to gradient 0.5; its code (and this) gives 900/600 there.
    const disks = [10, 20].map((fetch) => ({
      capacity: 5000,
      avgFlushTimeNs: 0,
      avgFetchTimeNs: fetch,
      activeSlots: 0,
    }));
    const settings = (gradient: number): LoadAwareSettings => ({
      numDiskGroups: 2,
      diskGroupGradient: gradient,
      flushTimeWeight: 0,
      fetchTimeWeight: 1,
      activeSlotsWeight: 0,
    });
    assert.deepEqual([...loadAwareQuotas(disks, 1500, settings(1))], [1000, 500]);
    assert.deepEqual([...loadAwareQuotas(disks, 1500, settings(0.5))], [900, 600]);
  });

  it('carries a full group on to the next group exactly once (the reference adds an absorbed carry again)', () => {
    // Three single-disk groups, ratios 1/3 each: the fast disk takes 2 of its 4, the other 2 move on once.
    const disks = [
      { capacity: 2, avgFlushTimeNs: 0, avgFetchTimeNs: 1, activeSlots: 0 },
      { capacity: 100, avgFlushTimeNs: 0, avgFetchTimeNs: 2, activeSlots: 0 },
      { capacity: 100, avgFlushTimeNs: 0, avgFetchTimeNs: 3, activeSlots: 0 },
    ];
    const settings = {
      numDiskGroups: 3,
      diskGroupGradient: 0,
      flushTimeWeight: 0,
      fetchTimeWeight: 1,
      activeSlotsWeight: 0,
    };
    assert.deepEqual([...loadAwareQuotas(disks, 12, settings)], [2, 6, 4]);
  });

  it('refuses settings it cannot use, naming the key', () => {
    const good = {
      numDiskGroups: 5,
      diskGroupGradient: 0.1,
      flushTimeWeight: 0,
      fetchTimeWeight: 1,
      activeSlotsWeight: 0,
    };
    checkLoadAwareSettings(good);
    assert.throws(() => checkLoadAwareSettings({ ...good, numDiskGroups: 0 }), /loadAware\.numDiskGroups/);
    assert.throws(
      () => checkLoadAwareSettings({ ...good, diskGroupGradient: -1 }),
      /loadAware\.diskGroupGradient/,
    );
    assert.throws(
      () => checkLoadAwareSettings({ ...good, fetchTimeWeight: Number.NaN }),
      /loadAware\.fetchTimeWeight/,
    );
  });
});
