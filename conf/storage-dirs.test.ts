import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { parseStorageDirs } from './storage-dirs.ts';

describe('parseStorageDirs', () => {
  it('reads a path with its options, and defaults to HDD without a capacity', () => {
    assert.deepEqual(parseStorageDirs(['/mnt/d1:capacity=2g:disktype=ssd', '/mnt/d2']), [
      { path: '/mnt/d1', diskType: 'SSD', capacityBytes: 2 * 1024 ** 3 },
      { path: '/mnt/d2', diskType: 'HDD' },
    ]);
  });

  it('refuses an unknown option or a bad size, naming the entry', () => {
    assert.throws(() => parseStorageDirs(['/a:speed=1']), /'\/a:speed=1': unknown option 'speed'/);
    assert.throws(() => parseStorageDirs(['/a:capacity=lots']), /capacity 'lots' is not a size/);
    assert.throws(() => parseStorageDirs(['/a:disktype=tape']), /disktype must be HDD or SSD/);
  });
});
