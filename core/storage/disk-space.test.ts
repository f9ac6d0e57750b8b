import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { filesystemTotals, reservedBytes, usableDiskBytes } from './disk-space.ts';

const GiB = 2 ** 30;

describe('a disk’s usable space', () => {
  it('is the filesystem’s available space less the reserve, at most the capacity less what svc wrote', () => {
    const space = { availableBytes: 77 * GiB, totalBytes: 252 * GiB };
    const reserve = { bytes: 5 * GiB };
    // The worker that reported 252 GiB usable: no capacity set, so the capacity is the filesystem's size.
    assert.equal(usableDiskBytes({ capacityBytes: 252 * GiB, usedBytes: 0, space, reserve }), 72 * GiB);
    assert.equal(
      usableDiskBytes({ capacityBytes: 10 * GiB, usedBytes: 4 * GiB, space, reserve }),
      6 * GiB,
      'the configured capacity still bounds it',
    );
    assert.equal(
      usableDiskBytes({
        capacityBytes: 252 * GiB,
        usedBytes: 0,
        space: { ...space, availableBytes: GiB },
        reserve,
      }),
      0,
      'never below 0',
    );
    assert.equal(
      usableDiskBytes({ capacityBytes: 100, usedBytes: 30, space: undefined, reserve }),
      70,
      'unobserved (the simulator): the capacity alone',
    );
  });

  it('keeps the larger of the reserve size and the reserve ratio of the filesystem’s size', () => {
    assert.equal(reservedBytes({ bytes: 5 * GiB }, 252 * GiB), 5 * GiB);
    assert.equal(reservedBytes({ bytes: 5 * GiB, ratio: 0.1 }, 100 * GiB), 10 * GiB);
    assert.equal(reservedBytes({ bytes: 5 * GiB, ratio: 0.01 }, 100 * GiB), 5 * GiB);
  });
});

describe('filesystem totals', () => {
  it('count a filesystem two workers of one host share once, and one of another host again', () => {
    const fs = { usableBytes: 72 * GiB, totalBytes: 252 * GiB, filesystem: '64769' };
    const totals = filesystemTotals([
      { host: 'a', disk: { mountPoint: '/w1', ...fs } },
      { host: 'a', disk: { mountPoint: '/w2', ...fs, usableBytes: 71 * GiB } },
      { host: 'b', disk: { mountPoint: '/w1', ...fs } },
      { host: 'b', disk: { mountPoint: '/x', usableBytes: GiB, totalBytes: 2 * GiB } },
    ]);
    assert.deepEqual(totals, {
      totalBytes: 252 * GiB * 2 + 2 * GiB,
      usableBytes: 72 * GiB * 2 + GiB,
      sharedDisks: 1,
    });
  });
});
