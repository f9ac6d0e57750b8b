import assert from 'node:assert/strict';
import { after, describe, it } from 'node:test';
import fc from 'fast-check';
import { crc32, installCrc32, portableCrc32 } from '../../core/protocol/crc32.ts';
import { nativeChecksum, simdChecksumIfLoaded, useNativeChecksum, zlibChecksum } from './native-checksum.ts';

describe('the native checksum', () => {
  after(() => installCrc32(undefined));

  it('gives the values of the core’s portable CRC-32, for any bytes, range and previous value', () => {
    useNativeChecksum();
    fc.assert(
      fc.property(
        fc.uint8Array({ maxLength: 300 }),
        fc.nat({ max: 0xffffffff }),
        fc.nat(),
        fc.nat(),
        (bytes, previous, a, b) => {
          const start = bytes.length === 0 ? 0 : a % (bytes.length + 1);
          const end = start + (bytes.length === 0 ? 0 : b % (bytes.length - start + 1));
          assert.equal(crc32(bytes, previous, start, end), portableCrc32(bytes, previous, start, end));
        },
      ),
    );
  });

  it('loads the SIMD implementation on this platform, and it agrees with zlib and the portable loop', () => {
    const simd = simdChecksumIfLoaded();
    // CI runs on linux-x64, where @node-rs/crc32 ships a binary: falling back there would be a silent slowdown.
    if (process.platform === 'linux' && process.arch === 'x64') assert.equal(nativeChecksum, 'simd');
    if (simd === undefined) return;
    fc.assert(
      fc.property(
        fc.uint8Array({ maxLength: 70_000 }),
        fc.nat({ max: 0xffffffff }),
        fc.nat(),
        (bytes, previous, cut) => {
          const view = bytes.subarray(cut % (bytes.length + 1));
          const expected = portableCrc32(view, previous);
          assert.equal(simd(view, previous), expected);
          assert.equal(zlibChecksum(view, previous), expected);
        },
      ),
      { numRuns: 200 },
    );
  });

  it('is what crc32 uses once installed, and the portable loop again once removed', () => {
    const seen: number[] = [];
    installCrc32((bytes, previous) => {
      seen.push(bytes.length);
      return portableCrc32(bytes, previous);
    });
    const bytes = new Uint8Array([1, 2, 3, 4, 5]);
    assert.equal(crc32(bytes, 0, 1, 4), portableCrc32(bytes, 0, 1, 4));
    assert.deepEqual(seen, [3]);
    installCrc32(undefined);
    crc32(bytes);
    assert.deepEqual(seen, [3]);
  });
});
