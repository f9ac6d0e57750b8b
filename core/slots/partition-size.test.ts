import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import fc from 'fast-check';
import { initialPartitionSize, updateEstimatedPartitionSize } from './partition-size.ts';

const MiB = 2 ** 20;
const GiB = 2 ** 30;
/** The reference's defaults (reference §2.3); svc reads them from conf. */
const DEFAULTS = { minSize: 8 * MiB, maxSize: 4 * GiB, initialSize: 64 * MiB };

const boundsArb = fc
  .tuple(
    fc.integer({ min: 1, max: 2 ** 40 }),
    fc.integer({ min: 0, max: 2 ** 40 }),
    fc.double({ min: 1, max: 2 ** 45, noNaN: true }),
  )
  .map(([minSize, spread, initialSize]) => ({ minSize, maxSize: minSize + spread, initialSize }));

const observationArb = fc.record({
  bytesWritten: fc.oneof(fc.double({ min: -1e3, max: 2 ** 50 }), fc.constantFrom(Number.NaN, Infinity)),
  fileCount: fc.oneof(fc.integer({ min: -5, max: 1e6 }), fc.constant(Number.NaN)),
});

describe('estimated partition size (contract section 8)', () => {
  it('is always within [minSize, maxSize], whatever was observed', () => {
    fc.assert(
      fc.property(boundsArb, fc.double({ noNaN: false }), observationArb, (bounds, current, observed) => {
        const next = updateEstimatedPartitionSize(current, observed, bounds);
        assert.ok(
          next >= bounds.minSize && next <= bounds.maxSize,
          `${next} outside ${JSON.stringify(bounds)}`,
        );
        assert.ok(Number.isInteger(next), `${next} is not a whole number of bytes`);
      }),
      { numRuns: 300 },
    );
  });

  it('is the average file size when that lies within the bounds', () => {
    // Sizes up to 1 TiB and 1000 files keep bytesWritten an exact integer (below 2^53).
    const smallBounds = boundsArb.filter((bounds) => bounds.maxSize <= 2 ** 40);
    fc.assert(
      fc.property(
        smallBounds,
        fc.integer({ min: 1, max: 1000 }),
        fc.double({ min: 0, max: 1, noNaN: true }),
        (bounds, files, at) => {
          const average = Math.floor(bounds.minSize + at * (bounds.maxSize - bounds.minSize));
          const next = updateEstimatedPartitionSize(
            bounds.minSize,
            { bytesWritten: average * files, fileCount: files },
            bounds,
          );
          assert.equal(next, average);
        },
      ),
    );
  });

  it('clamps with the reference defaults: 8 MiB below, 4 GiB above', () => {
    assert.equal(
      updateEstimatedPartitionSize(64 * MiB, { bytesWritten: 1000, fileCount: 10 }, DEFAULTS),
      8 * MiB,
    );
    assert.equal(
      updateEstimatedPartitionSize(64 * MiB, { bytesWritten: 100 * GiB, fileCount: 2 }, DEFAULTS),
      4 * GiB,
    );
    assert.equal(
      updateEstimatedPartitionSize(64 * MiB, { bytesWritten: 3 * GiB, fileCount: 12 }, DEFAULTS),
      256 * MiB,
    );
  });

  it('starts at initialSize, itself clamped', () => {
    assert.equal(initialPartitionSize(DEFAULTS), 64 * MiB);
    assert.equal(initialPartitionSize({ ...DEFAULTS, initialSize: 1 }), 8 * MiB);
    assert.equal(initialPartitionSize({ ...DEFAULTS, initialSize: 16 * GiB }), 4 * GiB);
  });

  it('keeps the current estimate when no file was committed (the reference resets to initialSize)', () => {
    assert.equal(
      updateEstimatedPartitionSize(512 * MiB, { bytesWritten: 0, fileCount: 0 }, DEFAULTS),
      512 * MiB,
    );
    assert.equal(
      updateEstimatedPartitionSize(512 * MiB, { bytesWritten: -5, fileCount: 3 }, DEFAULTS),
      512 * MiB,
    );
  });

  it('refuses bounds that cannot hold an estimate, naming the key', () => {
    assert.throws(
      () => initialPartitionSize({ ...DEFAULTS, minSize: 0 }),
      /estimatedPartitionSize\.minSize must be a positive/,
    );
    assert.throws(
      () => updateEstimatedPartitionSize(1, { bytesWritten: 1, fileCount: 1 }, { ...DEFAULTS, maxSize: MiB }),
      /maxSize \(1048576\) must be at least minSize/,
    );
  });
});
