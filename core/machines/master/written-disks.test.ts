import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import fc from 'fast-check';
import type { DiskInfo } from '../../domain/index.ts';
import { disksNeedWriting } from './written-disks.ts';

const ESTIMATE = 1000;

const disk = fc.record({
  mountPoint: fc.constantFrom('/d0', '/d1', '/d2'),
  type: fc.constantFrom('HDD' as const, 'SSD' as const),
  usableBytes: fc.integer({ min: 0, max: 10 * ESTIMATE }),
  totalBytes: fc.constant(10 * ESTIMATE),
  status: fc.constantFrom('HEALTHY' as const, 'HIGH_DISK_USAGE' as const),
  avgFlushTimeNs: fc.nat(),
  avgFetchTimeNs: fc.nat(),
  activeSlots: fc.nat({ max: 10 }),
  filesystemUsableBytes: fc.option(fc.integer({ min: 0, max: 10 * ESTIMATE }), { nil: undefined }),
});
const disks = fc.array(disk, { minLength: 1, maxLength: 3 });

/** The same disk with its numbers moved, but each budget (and everything else that counts) kept. */
function withinBudgets(d: DiskInfo, shift: number): DiskInfo {
  const within = (bytes: number) => Math.floor(bytes / ESTIMATE) * ESTIMATE + (shift % ESTIMATE);
  return {
    ...d,
    usableBytes: within(d.usableBytes),
    avgFlushTimeNs: d.avgFlushTimeNs + shift,
    activeSlots: d.activeSlots + 1,
    ...(d.filesystemUsableBytes === undefined
      ? {}
      : { filesystemUsableBytes: within(d.filesystemUsableBytes) }),
  };
}

describe('disksNeedWriting', () => {
  it('writes a worker whose entry this master never wrote', () => {
    fc.assert(fc.property(disks, (reported) => disksNeedWriting(undefined, reported, ESTIMATE)));
  });

  it('does not write numbers that moved within each disk’s budgets', () => {
    fc.assert(
      fc.property(disks, fc.nat({ max: 10 * ESTIMATE }), (written, shift) => {
        const reported = written.map((d) => withinBudgets(d, shift));
        assert.equal(disksNeedWriting(written, reported, ESTIMATE), false, 'the budgets are the same');
      }),
    );
  });

  it('writes when any disk’s budget, shared budget, status or mount point changed, or a disk came or went', () => {
    fc.assert(
      fc.property(
        disks,
        fc.nat(),
        fc.constantFrom('budget', 'shared', 'status', 'mount', 'added', 'removed'),
        (written, pick, change) => {
          const i = pick % written.length;
          const was = written[i]!;
          const changed: DiskInfo =
            change === 'budget'
              ? { ...was, usableBytes: was.usableBytes + ESTIMATE }
              : change === 'shared'
                ? { ...was, filesystemUsableBytes: (was.filesystemUsableBytes ?? -ESTIMATE) + ESTIMATE }
                : change === 'status'
                  ? { ...was, status: was.status === 'HEALTHY' ? 'HIGH_DISK_USAGE' : 'HEALTHY' }
                  : { ...was, mountPoint: `${was.mountPoint}x` };
          const reported =
            change === 'added'
              ? [...written, was]
              : change === 'removed'
                ? written.filter((_, j) => j !== i)
                : written.map((d, j) => (j === i ? changed : d));
          assert.equal(disksNeedWriting(written, reported, ESTIMATE), true, `${change} of disk ${i}`);
        },
      ),
    );
  });
});
