import { createRequire } from 'node:module';
import { crc32 as zlibCrc32 } from 'node:zlib';
import { installCrc32, type Crc32Implementation } from '../../core/protocol/crc32.ts';
import type { Logger } from '../log.ts';
import { recallingChecksum } from '../wire/index.ts';

/** Which native CRC-32 a process checks batches with. */
export type NativeChecksum = 'simd' | 'zlib';

/**
 * node:zlib's CRC-32. zlib answers 0 for no bytes whatever the previous value (its "initial value" convention for
 * a null buffer); the CRC of nothing more is the previous value.
 */
export const zlibChecksum: Crc32Implementation = (bytes, previous) =>
  bytes.length === 0 ? previous : zlibCrc32(bytes, previous);

/** Where the SIMD CRC-32 comes from: its implementation, or why it is not used (the process then uses zlib's). */
export type SimdLoad =
  | { readonly kind: 'loaded'; readonly simd: Crc32Implementation }
  | { readonly kind: 'missing'; readonly reason: string };

type SimdModule = { crc32: (input: Uint8Array, initialState?: number) => number };

/**
 * @node-rs/crc32's CRC-32 (the crc32fast crate: PCLMULQDQ folding on x86-64, the CRC instructions on arm64),
 * shipped as a prebuilt binary per platform; missing where none loads (an unusual platform, a stripped install).
 * `load` requires the package (a parameter so that a test can make it fail).
 */
export function loadSimdChecksum(
  load: () => SimdModule = () => createRequire(import.meta.url)('@node-rs/crc32') as SimdModule,
): SimdLoad {
  try {
    const { crc32 } = load();
    const simd: Crc32Implementation = (bytes, previous) => crc32(bytes, previous);
    // Never trust a binary blindly: it must agree with zlib before it checks a single batch.
    const probe = new Uint8Array(1021).map((_, i) => (i * 131 + 7) & 0xff);
    if (
      simd(probe, 0x1234_5678) !== zlibChecksum(probe, 0x1234_5678) ||
      simd(probe.subarray(0, 0), 42) !== 42
    ) {
      return { kind: 'missing', reason: 'its values disagree with zlib’s' };
    }
    return { kind: 'loaded', simd };
  } catch (error) {
    return { kind: 'missing', reason: (error as Error).message.split('\n')[0]! };
  }
}

/**
 * Says once per process that batches are checked with zlib's CRC-32 because the SIMD one did not load: a silent
 * fallback would be a slowdown of the data path (about five times on the CRC) that nobody could explain.
 */
export function fallbackNotice(load: SimdLoad): (logger: Logger) => void {
  let said = load.kind === 'loaded';
  return (logger) => {
    if (said || load.kind === 'loaded') return;
    said = true;
    logger.warn(
      { event: 'checksum.fallback', implementation: 'zlib', reason: load.reason },
      `the native SIMD CRC-32 (@node-rs/crc32) did not load (${load.reason}): batches are checked with zlib’s, ` +
        'several times slower; logged once',
    );
  };
}

const simdLoad = loadSimdChecksum();
const simdChecksum = simdLoad.kind === 'loaded' ? simdLoad.simd : undefined;
const fastest = simdChecksum ?? zlibChecksum;
const reportFallback = fallbackNotice(simdLoad);

/** The native CRC-32 this process installs: the SIMD one where its binary loads, zlib's otherwise. */
export const nativeChecksum: NativeChecksum = simdChecksum === undefined ? 'zlib' : 'simd';

/**
 * The runtime's CRC-32: a native one with the same values as the core's portable loop (a property test pins all
 * three equal). Every batch is checked by its primary, its replica and its reader, so this is one of the largest
 * costs of the data path: at 64 KiB the SIMD one runs at about 20 GB/s on this machine, zlib's at about 4, the
 * portable loop at 0.6 (docs/performance.md). Values the connections computed as the bytes arrived (while they were
 * in the cache: runtime/wire/batch-checksums.ts) are taken instead of computed again. With `logger`, a fallback to
 * zlib's is said once per process.
 */
export function useNativeChecksum(logger?: Logger): void {
  installCrc32(recallingChecksum(fastest));
  if (logger !== undefined) reportFallback(logger);
}

/** CRC-32 of `bytes` with the fastest native implementation here (for the runtime's own checksums of records). */
export function nativeCrc32(bytes: Uint8Array, previous = 0): number {
  return fastest(bytes, previous);
}

/** The SIMD implementation when it loaded here (for tests that pin its values). */
export function simdChecksumIfLoaded(): Crc32Implementation | undefined {
  return simdChecksum;
}
