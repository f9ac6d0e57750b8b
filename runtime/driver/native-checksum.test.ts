import assert from 'node:assert/strict';
import { after, describe, it } from 'node:test';
import fc from 'fast-check';
import { crc32, installCrc32, NATIVE_MIN_BYTES, portableCrc32 } from '../../core/protocol/crc32.ts';
import { Writable } from 'node:stream';
import { createLogger } from '../log.ts';
import {
  fallbackNotice,
  loadSimdChecksum,
  nativeChecksum,
  simdChecksumIfLoaded,
  useNativeChecksum,
  zlibChecksum,
} from './native-checksum.ts';

/** A logger whose JSON lines are kept. */
function capturingLogger(): { logger: ReturnType<typeof createLogger>; lines: Record<string, unknown>[] } {
  const lines: Record<string, unknown>[] = [];
  const sink = new Writable({
    write(chunk: Buffer, _encoding, done) {
      for (const line of chunk.toString().split('\n').filter(Boolean)) {
        lines.push(JSON.parse(line) as Record<string, unknown>);
      }
      done();
    },
  });
  return { logger: createLogger('info', { role: 'test' }, sink), lines };
}

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
    const bytes = new Uint8Array(NATIVE_MIN_BYTES + 2).map((_, i) => i);
    const end = NATIVE_MIN_BYTES + 1;
    assert.equal(crc32(bytes, 0, 1, end), portableCrc32(bytes, 0, 1, end));
    assert.deepEqual(seen, [NATIVE_MIN_BYTES]);
    // A range shorter than a native call pays for (a batch header) is computed by the portable loop.
    assert.equal(crc32(bytes, 7, 1, 4), portableCrc32(bytes, 7, 1, 4));
    assert.deepEqual(seen, [NATIVE_MIN_BYTES]);
    installCrc32(undefined);
    crc32(bytes);
    assert.deepEqual(seen, [NATIVE_MIN_BYTES]);
  });

  it('says once per process, with the reason, that it fell back to zlib’s; nothing when the SIMD one loaded', () => {
    const missing = loadSimdChecksum(() => {
      throw new Error("Cannot find module '@node-rs/crc32-linux-x64-gnu'\nRequire stack: …");
    });
    assert.deepEqual(missing, {
      kind: 'missing',
      reason: "Cannot find module '@node-rs/crc32-linux-x64-gnu'",
    });
    const wrong = loadSimdChecksum(() => ({ crc32: () => 7 }));
    assert.deepEqual(wrong, { kind: 'missing', reason: 'its values disagree with zlib’s' });

    const { logger, lines } = capturingLogger();
    const notice = fallbackNotice(missing);
    notice(logger);
    notice(logger);
    notice(logger);
    assert.equal(lines.length, 1, 'one line, however many machines start');
    assert.equal(lines[0]!.event, 'checksum.fallback');
    assert.equal(lines[0]!.level, 40);
    assert.match(String(lines[0]!.msg), /did not load \(Cannot find module.*zlib’s.*logged once/);

    const quiet = capturingLogger();
    fallbackNotice(
      loadSimdChecksum(() => ({ crc32: (bytes, previous) => zlibChecksum(bytes, previous ?? 0) })),
    )(quiet.logger);
    if (nativeChecksum === 'simd') useNativeChecksum(quiet.logger);
    assert.deepEqual(quiet.lines, []);
  });
});
