import { crc32 as zlibCrc32 } from 'node:zlib';
import { installCrc32 } from '../../core/protocol/crc32.ts';

/**
 * The runtime's CRC-32: node:zlib's native one, same values as the core's portable loop (a property test pins them
 * equal) at several times its speed. Every batch is checked by its primary, its replica and its reader, so this is
 * one of the largest costs of the push path (docs/performance.md).
 */
export function useNativeChecksum(): void {
  // zlib answers 0 for no bytes whatever the previous value (its "initial value" convention for a null buffer);
  // the CRC of nothing more is the previous value.
  installCrc32((bytes, previous) => (bytes.length === 0 ? previous : zlibCrc32(bytes, previous)));
}
