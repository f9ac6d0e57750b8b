import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import fc from 'fast-check';
import { interleaveRacks } from './racks.ts';

describe('interleaveRacks', () => {
  it('is a permutation that keeps each rack’s own order', () => {
    fc.assert(
      fc.property(fc.array(fc.nat(5), { maxLength: 60 }), (racks) => {
        const workers = racks.map((rack, id) => ({ id, rack: `/r${rack}` }));
        const ordered = interleaveRacks(workers);
        assert.deepEqual(
          [...ordered].sort((a, b) => a.id - b.id),
          workers,
        );
        for (const rack of new Set(racks)) {
          const ids = ordered.filter((w) => w.rack === `/r${rack}`).map((w) => w.id);
          assert.deepEqual(
            ids,
            [...ids].sort((a, b) => a - b),
          );
        }
      }),
    );
  });

  it('never puts two workers of one rack side by side while another rack still has workers left', () => {
    fc.assert(
      fc.property(fc.array(fc.nat(5), { maxLength: 60 }), (racks) => {
        const ordered = interleaveRacks(racks.map((rack, id) => ({ id, rack: `/r${rack}` })));
        for (let i = 1; i < ordered.length; i += 1) {
          if (ordered[i]!.rack !== ordered[i - 1]!.rack) continue;
          // Side by side on one rack: then every later worker is on that rack too (only the largest rack is left).
          assert.ok(
            ordered.slice(i).every((w) => w.rack === ordered[i]!.rack),
            `${ordered[i]!.rack} twice at ${i} while other racks remain`,
          );
        }
      }),
    );
  });

  it('takes the largest rack first, one worker from each rack in turn (reference generateRackAwareWorkers)', () => {
    const workers = [
      'h1r2',
      'h4r2',
      'h3r1',
      'h1r1',
      'h4r1',
      'h2r1',
      'h3r2',
      'h2r2',
      'h5r2',
      'h5r1',
      'h1r3',
    ].map((name) => ({ name, rack: name.slice(name.indexOf('r')) }));
    assert.deepEqual(
      interleaveRacks(workers).map((w) => w.name),
      ['h1r2', 'h3r1', 'h1r3', 'h4r2', 'h1r1', 'h3r2', 'h4r1', 'h2r2', 'h2r1', 'h5r2', 'h5r1'],
    );
  });
});
