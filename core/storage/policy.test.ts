import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import fc from 'fast-check';
import { STORAGE_TYPES, type StorageType } from '../domain/index.ts';
import {
  DEFAULT_CREATE_FILE_POLICY,
  DEFAULT_EVICT_POLICY,
  parseCreateFilePolicy,
  parseEvictPolicy,
} from './policy.ts';

describe('parseCreateFilePolicy', () => {
  it('reads the default list and matches the documented default', () => {
    assert.deepEqual(parseCreateFilePolicy('MEMORY,SSD,HDD,HDFS,S3,OSS'), [
      'MEMORY',
      'SSD',
      'HDD',
      'HDFS',
      'S3',
      'OSS',
    ]);
    assert.deepEqual(DEFAULT_CREATE_FILE_POLICY, ['MEMORY', 'SSD', 'HDD', 'HDFS', 'S3', 'OSS']);
  });

  it('accepts any case and spaces', () => {
    assert.deepEqual(parseCreateFilePolicy(' ssd , Hdd '), ['SSD', 'HDD']);
  });

  it('refuses an empty list, naming the key', () => {
    assert.throws(() => parseCreateFilePolicy(' , '), /createFilePolicy is empty/);
  });

  it('refuses an unknown tier, naming it and the key', () => {
    assert.throws(
      () => parseCreateFilePolicy('SSD,TAPE'),
      /createFilePolicy = 'SSD,TAPE' is not valid: 'TAPE' is not a storage type/,
    );
  });

  it('refuses a repeated tier', () => {
    assert.throws(() => parseCreateFilePolicy('SSD,HDD,SSD'), /lists SSD twice/);
  });

  it('refuses MEMORY anywhere but first, because the tiers before it would never be tried', () => {
    assert.throws(() => parseCreateFilePolicy('SSD,MEMORY,HDD'), /lists MEMORY after other tiers/);
    assert.deepEqual(parseCreateFilePolicy('MEMORY,HDD'), ['MEMORY', 'HDD']);
  });

  it('round-trips any list of distinct tiers with MEMORY, if listed, first', () => {
    const orderArb = fc
      .uniqueArray(fc.constantFrom(...STORAGE_TYPES), { minLength: 1 })
      .map((order) =>
        order.includes('MEMORY') ? ['MEMORY' as const, ...order.filter((t) => t !== 'MEMORY')] : order,
      );
    fc.assert(
      fc.property(orderArb, (order) => {
        assert.deepEqual(parseCreateFilePolicy(order.join(',')), order);
      }),
      { numRuns: 200 },
    );
  });
});

describe('parseEvictPolicy', () => {
  it('reads the default and matches the documented default', () => {
    const parsed = parseEvictPolicy('MEMORY,SSD,HDD,HDFS,S3,OSS');
    assert.deepEqual([...parsed], [['MEMORY', ['SSD', 'HDD', 'HDFS', 'S3', 'OSS']]]);
    assert.deepEqual([...DEFAULT_EVICT_POLICY], [...parsed]);
  });

  it('reads several groups separated by |', () => {
    const parsed = parseEvictPolicy('MEMORY,SSD,HDD|SSD,HDFS');
    assert.deepEqual(
      [...parsed],
      [
        ['MEMORY', ['SSD', 'HDD']],
        ['SSD', ['HDFS']],
      ],
    );
  });

  it('refuses memory as a target', () => {
    assert.throws(() => parseEvictPolicy('SSD,MEMORY'), /evicts SSD to MEMORY/);
  });

  it('refuses a source that targets itself', () => {
    assert.throws(() => parseEvictPolicy('MEMORY,SSD|SSD,SSD,HDD'), /evicts SSD to SSD/);
  });

  it('refuses a group without targets, a repeated source and an empty policy', () => {
    assert.throws(() => parseEvictPolicy('MEMORY'), /group 'MEMORY' has no target tier/);
    assert.throws(() => parseEvictPolicy('MEMORY,SSD|MEMORY,HDD'), /lists source tier MEMORY twice/);
    assert.throws(() => parseEvictPolicy(' | '), /evictPolicy is empty/);
  });

  it('round-trips any valid policy', () => {
    const group = fc.constantFrom(...STORAGE_TYPES).chain((source) =>
      fc
        .uniqueArray(fc.constantFrom(...STORAGE_TYPES.filter((t) => t !== 'MEMORY' && t !== source)), {
          minLength: 1,
        })
        .map((targets) => [source, targets] as [StorageType, StorageType[]]),
    );
    fc.assert(
      fc.property(fc.uniqueArray(group, { minLength: 1, selector: ([source]) => source }), (groups) => {
        const text = groups.map(([source, targets]) => [source, ...targets].join(',')).join('|');
        assert.deepEqual([...parseEvictPolicy(text)], groups);
      }),
      { numRuns: 200 },
    );
  });
});
