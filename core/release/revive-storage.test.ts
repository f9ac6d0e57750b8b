import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import fc from 'fast-check';
import { isTypeAvailable, STORAGE_TYPES, type StorageType } from '../domain/index.ts';
import { reviveStorageBehaviour, reviveStorageInfo } from './revive-storage.ts';
import { compareReleases, KNOWN_RELEASES } from './version.ts';

const knownRelease = fc.constantFrom(...KNOWN_RELEASES);
const storageTypes = fc.uniqueArray(fc.constantFrom(...STORAGE_TYPES), { minLength: 1 });

describe('storage of a revived location (contract section 1, rules 3 and 4)', () => {
  it('the behaviour of each release', () => {
    assert.deepEqual(
      KNOWN_RELEASES.map((release) => [release, reviveStorageBehaviour(release)]),
      [
        ['0.2.0', 'memory-default-any-tier'],
        ['0.2.1', 'memory-default-any-tier'],
        ['0.3.0', 'memory-default-any-tier'],
        ['0.3.1', 'memory-default-any-tier'],
        ['0.3.2', 'memory-default-any-tier'],
        ['0.4.0', 'memory-default-any-tier'],
        ['0.4.1', 'memory-default-any-tier'],
        ['0.5.0', 'memory-default-any-tier'],
        ['0.5.1', 'memory-default-any-tier'],
        ['0.6.0', 'honour-available-types'],
      ],
    );
  });

  it('rule 4: a client before 0.6.0 revives onto MEMORY with mask 0, whatever the application enabled', () => {
    assert.deepEqual(reviveStorageInfo('0.5.1', ['HDD']), {
      type: 'MEMORY',
      mountPoint: '',
      availableTypes: 0,
    });
    assert.deepEqual(reviveStorageInfo('0.2.0', ['SSD', 'HDFS']), {
      type: 'MEMORY',
      mountPoint: '',
      availableTypes: 0,
    });
  });

  it('rule 3: a client from 0.6.0 honours svc.storage.availableTypes: its first type and its mask', () => {
    assert.deepEqual(reviveStorageInfo('0.6.0', ['HDD']), { type: 'HDD', mountPoint: '', availableTypes: 2 });
    assert.deepEqual(reviveStorageInfo('0.6.0', ['SSD', 'HDFS']), {
      type: 'SSD',
      mountPoint: '',
      availableTypes: 6,
    });
    assert.deepEqual(reviveStorageInfo('0.6.0', ['MEMORY', 'HDD']), {
      type: 'MEMORY',
      mountPoint: '',
      availableTypes: 3,
    });
    assert.deepEqual(reviveStorageInfo('0.6.0', ['S3']), { type: 'S3', mountPoint: '', availableTypes: 16 });
  });

  it('rule 3: an empty availableTypes list is an error that says what to set', () => {
    assert.throws(() => reviveStorageInfo('0.6.0', []), /svc\.storage\.availableTypes.*empty/);
  });

  it('a release older than the history throws', () => {
    assert.throws(() => reviveStorageInfo('0.1.0', ['HDD']), /predates the release history/);
  });

  it('property: from 0.6.0 memory is permitted exactly when the application listed it', () => {
    fc.assert(
      fc.property(knownRelease, storageTypes, (release, types: StorageType[]) => {
        const info = reviveStorageInfo(release, types);
        if (compareReleases(release, '0.6.0') >= 0) {
          assert.equal(info.type, types[0]);
          assert.equal(isTypeAvailable(info.availableTypes, 'MEMORY'), types.includes('MEMORY'));
          for (const type of types)
            assert.ok(
              isTypeAvailable(info.availableTypes, type),
              'isTypeAvailable(info.availableTypes, type)',
            );
        } else {
          assert.equal(info.type, 'MEMORY');
          for (const type of STORAGE_TYPES)
            assert.ok(
              isTypeAvailable(info.availableTypes, type),
              'isTypeAvailable(info.availableTypes, type)',
            );
        }
      }),
    );
  });
});
