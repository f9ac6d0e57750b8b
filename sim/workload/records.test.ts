import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import fc from 'fast-check';
import { compareOutput, keyOf, mapRecords, recordKey } from './records.ts';

const base = { appId: 'app-1', shuffleId: 100, mapId: 3, attemptId: 1 };

describe('simulated records', () => {
  it('carry their origin, whatever their padding and whatever the characters of the application id', () => {
    fc.assert(
      fc.property(
        fc.array(fc.nat(5), { minLength: 1, maxLength: 6 }),
        fc.integer({ min: 1, max: 300 }),
        fc.constantFrom('app-1', 'app-é', 'приложение'),
        (counts, bytes, appId) => {
          const base = { appId, shuffleId: 100, mapId: 3, attemptId: 1 };
          const records = mapRecords(base, counts, bytes);
          counts.forEach((count, partitionId) => {
            assert.equal(records[partitionId]?.length, count);
            records[partitionId]?.forEach((record, index) => {
              assert.equal(keyOf(record), recordKey({ ...base, partitionId, index }));
              assert.ok(
                record.length >= Math.min(bytes, keyOf(record).length),
                'record.length >= Math.min(bytes, keyOf(record).length)',
              );
            });
          });
        },
      ),
      { numRuns: 100 },
    );
  });

  it('compare equal as multisets in any order, and name what is missing, doubled or foreign', () => {
    fc.assert(
      fc.property(fc.array(fc.nat(3), { minLength: 1, maxLength: 5 }), fc.nat(), (counts, shuffleSeed) => {
        const records = mapRecords(base, counts, 40).flat();
        const expected = records.map(keyOf);
        const shuffled = [...records].sort(
          (a, b) => ((keyOf(a).length * 31 + shuffleSeed) % 7) - ((keyOf(b).length * 17) % 5),
        );
        assert.equal(compareOutput(shuffled, expected), undefined);
        if (records.length === 0) return;
        assert.match(compareOutput(records.slice(1), expected) ?? '', /^1 missing/);
        assert.match(compareOutput([...records, records[0]!], expected) ?? '', /1 read more than once/);
        const loser = mapRecords({ ...base, attemptId: 0 }, counts, 40).flat();
        assert.match(
          compareOutput([...records, loser[0]!], expected) ?? '',
          /1 not expected \(losing attempt/,
        );
      }),
      { numRuns: 100 },
    );
  });
});
