import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import fc from 'fast-check';
import { DISK_STATUSES, STORAGE_TYPES } from '../domain/index.ts';
import { decideSplit, type SplitDecision, type SplitOptions, type SplitSubject } from './split.ts';
import type { WorkerStorage } from './tier-choice.ts';

const MiB = 1024 * 1024;
const GiB = 1024 * MiB;

const defaults: SplitOptions = {
  enabled: true,
  mode: 'SOFT',
  thresholdBytes: GiB,
  minBytes: MiB,
  maxBytes: 2 * GiB,
  maxMemoryFileBytes: 8 * MiB,
};

const healthy: WorkerStorage = {
  memory: { limitBytes: 100 * MiB, usedBytes: 0 },
  disks: [{ mountPoint: '/mnt/a', type: 'HDD', status: 'HEALTHY', usableBytes: 100 * GiB }],
  distributed: [],
};

const onDisk = (fileBytes: number, mode: 'PRIMARY' | 'REPLICA' = 'PRIMARY'): SplitSubject => ({
  tier: 'HDD',
  mountPoint: '/mnt/a',
  fileBytes,
  mode,
});

const SEVERITY: Record<SplitDecision, number> = { NO_SPLIT: 0, SOFT_SPLIT: 1, HARD_SPLIT: 2 };

describe('decideSplit', () => {
  it('never gets milder as the file grows', () => {
    const sizes = fc.integer({ min: 0, max: 4000 });
    fc.assert(
      fc.property(
        fc.record({
          enabled: fc.boolean(),
          mode: fc.constantFrom('SOFT' as const, 'HARD' as const),
          thresholdBytes: sizes,
          minBytes: sizes,
          maxBytes: sizes,
          maxMemoryFileBytes: sizes,
        }),
        fc.record({
          memory: fc.record({ limitBytes: sizes, usedBytes: sizes }),
          disks: fc.array(
            fc.record({
              mountPoint: fc.constantFrom('/mnt/a', '/mnt/b'),
              type: fc.constantFrom('HDD' as const, 'SSD' as const),
              status: fc.constantFrom(...DISK_STATUSES),
              usableBytes: fc.integer({ min: -5, max: 50 }),
            }),
            { maxLength: 2 },
          ),
          distributed: fc.subarray(['HDFS', 'OSS', 'S3'] as const),
        }),
        fc.constantFrom(...STORAGE_TYPES),
        fc.constantFrom('', '/mnt/a', '/mnt/b'),
        fc.constantFrom('PRIMARY' as const, 'REPLICA' as const),
        sizes,
        sizes,
        (options, worker, tier, mountPoint, mode, a, b) => {
          const [small, large] = a <= b ? [a, b] : [b, a];
          const before = decideSplit({ tier, mountPoint, mode, fileBytes: small }, worker, options).decision;
          const after = decideSplit({ tier, mountPoint, mode, fileBytes: large }, worker, options).decision;
          assert.ok(SEVERITY[before] <= SEVERITY[after], `${small} → ${before} but ${large} → ${after}`);
        },
      ),
      { numRuns: 300 },
    );
  });

  it('splits a primary past the threshold softly below the maximum and hard from it', () => {
    assert.equal(decideSplit(onDisk(GiB), healthy, defaults).decision, 'NO_SPLIT');
    assert.equal(decideSplit(onDisk(GiB + 1), healthy, defaults).decision, 'SOFT_SPLIT');
    assert.equal(decideSplit(onDisk(2 * GiB - 1), healthy, defaults).decision, 'SOFT_SPLIT');
    assert.equal(decideSplit(onDisk(2 * GiB), healthy, defaults).decision, 'HARD_SPLIT');
    assert.equal(decideSplit(onDisk(GiB + 1), healthy, { ...defaults, mode: 'HARD' }).decision, 'HARD_SPLIT');
  });

  it('leaves a replica alone past the threshold, and does nothing when splitting is off', () => {
    assert.equal(decideSplit(onDisk(GiB + 1, 'REPLICA'), healthy, defaults).decision, 'NO_SPLIT');
    assert.equal(decideSplit(onDisk(3 * GiB), healthy, { ...defaults, enabled: false }).decision, 'NO_SPLIT');
  });

  it('splits hard on a full disk once the file passes the minimum, for either copy', () => {
    const full: WorkerStorage = { ...healthy, disks: [{ ...healthy.disks[0]!, status: 'HIGH_DISK_USAGE' }] };
    assert.equal(decideSplit(onDisk(MiB), full, defaults).decision, 'NO_SPLIT');
    assert.equal(decideSplit(onDisk(MiB + 1), full, defaults).decision, 'HARD_SPLIT');
    assert.equal(decideSplit(onDisk(MiB + 1, 'REPLICA'), full, defaults).decision, 'HARD_SPLIT');
    const empty: WorkerStorage = { ...healthy, disks: [{ ...healthy.disks[0]!, usableBytes: 0 }] };
    assert.match(
      decideSplit(onDisk(MiB + 1), empty, defaults).reason,
      /disk \/mnt\/a is full \(HEALTHY, 0 usable bytes\)/,
    );
  });

  it('splits a memory file hard only when it can neither grow nor be evicted', () => {
    const memory = (fileBytes: number): SplitSubject => ({
      tier: 'MEMORY',
      mountPoint: '',
      fileBytes,
      mode: 'PRIMARY',
    });
    const memoryOnly: WorkerStorage = { ...healthy, disks: [] };
    assert.equal(decideSplit(memory(9 * MiB), healthy, defaults).decision, 'NO_SPLIT');
    assert.equal(decideSplit(memory(8 * MiB), memoryOnly, defaults).decision, 'NO_SPLIT');
    assert.equal(decideSplit(memory(8 * MiB + 1), memoryOnly, defaults).decision, 'HARD_SPLIT');
    const full: WorkerStorage = { ...memoryOnly, memory: { limitBytes: 100, usedBytes: 100 } };
    assert.equal(decideSplit(memory(10), full, defaults).decision, 'HARD_SPLIT');
  });

  it('never splits a distributed file for fullness', () => {
    const dfs: SplitSubject = { tier: 'HDFS', mountPoint: '', fileBytes: 100 * MiB, mode: 'PRIMARY' };
    assert.equal(decideSplit(dfs, { ...healthy, disks: [] }, defaults).decision, 'NO_SPLIT');
  });
});
