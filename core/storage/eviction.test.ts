import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import fc from 'fast-check';
import {
  hasPersistentStorage,
  isOverEvictLine,
  needsEvictionOnWrite,
  pickMemoryEvictions,
  type MemoryFile,
} from './eviction.ts';
import type { WorkerStorage } from './tier-choice.ts';

const withDisk: WorkerStorage = {
  memory: { limitBytes: 1000, usedBytes: 0 },
  disks: [{ mountPoint: '/mnt/a', type: 'HDD', status: 'HEALTHY', usableBytes: 10_000 }],
  distributed: [],
};
const memoryOnly: WorkerStorage = { ...withDisk, disks: [] };

describe('hasPersistentStorage', () => {
  it('needs a healthy local disk with room or a distributed tier', () => {
    assert.equal(hasPersistentStorage(withDisk), true);
    assert.equal(hasPersistentStorage(memoryOnly), false);
    assert.equal(hasPersistentStorage({ ...memoryOnly, distributed: ['S3'] }), true);
    assert.equal(
      hasPersistentStorage({ ...withDisk, disks: [{ ...withDisk.disks[0]!, status: 'IO_HANG' }] }),
      false,
    );
    assert.equal(
      hasPersistentStorage({ ...withDisk, disks: [{ ...withDisk.disks[0]!, usableBytes: 0 }] }),
      false,
    );
  });
});

describe('needsEvictionOnWrite', () => {
  it('evicts exactly when the write would take the file past the limit', () => {
    assert.equal(needsEvictionOnWrite(90, 10, 100, withDisk), false);
    assert.equal(needsEvictionOnWrite(90, 11, 100, withDisk), true);
  });

  it('never evicts when there is nowhere to evict to', () => {
    assert.equal(needsEvictionOnWrite(1000, 1000, 100, memoryOnly), false);
  });
});

const fileArb: fc.Arbitrary<MemoryFile[]> = fc
  .array(fc.record({ bytes: fc.integer({ min: 0, max: 400 }), committed: fc.boolean() }), { maxLength: 12 })
  .map((files) => files.map((file, index) => ({ id: `f${index}`, ...file })));

describe('pickMemoryEvictions', () => {
  it('chooses nothing below the evict line, so a caller may skip listing its files there', () => {
    fc.assert(
      fc.property(
        fileArb,
        fc.integer({ min: 0, max: 2000 }),
        fc.integer({ min: 0, max: 3000 }),
        fc.double({ min: 0, max: 1, noNaN: true }),
        (files, limitBytes, usedBytes, ratio) => {
          const worker = { ...withDisk, memory: { limitBytes, usedBytes } };
          if (!isOverEvictLine(limitBytes, usedBytes, ratio)) {
            assert.deepEqual(pickMemoryEvictions(files, worker, ratio), []);
          }
        },
      ),
    );
  });

  it('evicts the largest open files first, just until usage drops below the line', () => {
    fc.assert(
      fc.property(
        fileArb,
        fc.integer({ min: 1, max: 2000 }),
        fc.double({ min: 0, max: 1, noNaN: true }),
        (files, limitBytes, ratio) => {
          const usedBytes = files.reduce((sum, file) => sum + file.bytes, 0);
          const worker = { ...withDisk, memory: { limitBytes, usedBytes } };
          const chosen = pickMemoryEvictions(files, worker, ratio);
          const line = ratio * limitBytes;
          if (usedBytes < line) {
            assert.deepEqual(chosen, []);
            return;
          }
          const byId = new Map(files.map((file) => [file.id, file]));
          const picked = chosen.map((id) => byId.get(id)!);
          assert.ok(
            picked.every((file) => !file.committed),
            'a committed file was chosen',
          );
          assert.equal(new Set(chosen).size, chosen.length, 'a file was chosen twice');
          for (let i = 1; i < picked.length; i += 1)
            assert.ok(picked[i - 1]!.bytes >= picked[i]!.bytes, 'picked[i - 1]!.bytes >= picked[i]!.bytes');
          const open = files.filter((file) => !file.committed);
          const unpicked = open.filter((file) => !chosen.includes(file.id));
          for (const file of unpicked)
            assert.ok(
              file.bytes <= (picked.at(-1)?.bytes ?? Infinity),
              'file.bytes <= (picked.at(-1)?.bytes ?? Infinity)',
            );
          const after = usedBytes - picked.reduce((sum, file) => sum + file.bytes, 0);
          assert.ok(after < line || unpicked.length === 0, 'stopped while still above the line');
          const beforeLast = after + (picked.at(-1)?.bytes ?? 0);
          if (picked.length > 0) assert.ok(beforeLast >= line, 'evicted one file more than needed');
        },
      ),
      { numRuns: 300 },
    );
  });

  it('keeps input order among files of equal size, and does nothing without persistent storage', () => {
    const files: MemoryFile[] = [
      { id: 'a', bytes: 50, committed: false },
      { id: 'b', bytes: 80, committed: true },
      { id: 'c', bytes: 50, committed: false },
      { id: 'd', bytes: 10, committed: false },
    ];
    const worker = { ...withDisk, memory: { limitBytes: 200, usedBytes: 190 } };
    assert.deepEqual(pickMemoryEvictions(files, worker, 0.5), ['a', 'c']);
    assert.deepEqual(pickMemoryEvictions(files, { ...worker, disks: [] }, 0.5), []);
  });

  it('does nothing when memory storage is off', () => {
    const files: MemoryFile[] = [{ id: 'a', bytes: 50, committed: false }];
    assert.deepEqual(
      pickMemoryEvictions(files, { ...withDisk, memory: { limitBytes: 0, usedBytes: 50 } }, 0.5),
      [],
    );
  });
});
