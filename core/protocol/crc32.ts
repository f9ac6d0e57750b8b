/**
 * CRC-32 (IEEE 802.3, reflected polynomial 0xEDB88320), the checksum zlib, gzip and PNG use, so that any tool can
 * check a frame. Hand-written because core/ may not import packages; slicing-by-8 (eight 256-entry tables, eight
 * bytes per round) because every batch is checked on its primary, its replica and its reader, and the byte-at-a-time
 * loop was the largest single cost of the push path.
 */
const TABLES: readonly Uint32Array[] = (() => {
  const tables = [...Array(8).keys()].map(() => new Uint32Array(256));
  const first = tables[0]!;
  for (let n = 0; n < 256; n += 1) {
    let c = n;
    for (let k = 0; k < 8; k += 1) c = c & 1 ? 0xedb88320 ^ (c >>> 1) : c >>> 1;
    first[n] = c >>> 0;
  }
  // Table k gives the CRC of a byte followed by k zero bytes.
  for (let k = 1; k < 8; k += 1) {
    const previous = tables[k - 1]!;
    const table = tables[k]!;
    for (let n = 0; n < 256; n += 1) table[n] = (previous[n]! >>> 8) ^ first[previous[n]! & 0xff]!;
  }
  return tables;
})();
const [T0, T1, T2, T3, T4, T5, T6, T7] = TABLES as [
  Uint32Array,
  Uint32Array,
  Uint32Array,
  Uint32Array,
  Uint32Array,
  Uint32Array,
  Uint32Array,
  Uint32Array,
];

/** A CRC-32 of this file's definition over a whole buffer, continuing from `previous` (as `crc32` below). */
export type Crc32Implementation = (bytes: Uint8Array, previous: number) => number;

let installed: Crc32Implementation | undefined;

/**
 * Lets a driver hand the core a native CRC-32 that gives the same values (the runtime installs node:zlib's, about
 * five times faster than the loop below; runtime/driver/native-checksum.test.ts pins the two equal). It changes
 * how fast a checksum is computed, never its value, so no decision depends on whether one is installed; the
 * simulator installs none. `undefined` goes back to the portable loop.
 */
export function installCrc32(implementation: Crc32Implementation | undefined): void {
  installed = implementation;
}

/**
 * Below this many bytes the portable loop is faster than a native call, which costs a view of the range and a call
 * across to native code (about 200 ns here, against 64 for the 28 bytes of a batch header, which every batch's
 * frame is checked over once per check, besides its payload).
 */
export const NATIVE_MIN_BYTES = 64;

/**
 * Continues a CRC over more bytes: `crc32(b, crc32(a))` equals `crc32(a ++ b)`, so a header and a payload can be
 * checked without copying them into one buffer.
 */
export function crc32(bytes: Uint8Array, previous = 0, start = 0, end = bytes.length): number {
  if (installed !== undefined && end - start >= NATIVE_MIN_BYTES) {
    return installed(start === 0 && end === bytes.length ? bytes : bytes.subarray(start, end), previous);
  }
  return portableCrc32(bytes, previous, start, end);
}

/** The portable implementation: slicing-by-8 in plain JavaScript. */
export function portableCrc32(bytes: Uint8Array, previous = 0, start = 0, end = bytes.length): number {
  let crc = (previous ^ 0xffffffff) >>> 0;
  const whole = end - ((end - start) % 8);
  let i = start;
  for (; i < whole; i += 8) {
    const low =
      (crc ^ (bytes[i]! | (bytes[i + 1]! << 8) | (bytes[i + 2]! << 16) | (bytes[i + 3]! << 24))) >>> 0;
    crc =
      T7[low & 0xff]! ^
      T6[(low >>> 8) & 0xff]! ^
      T5[(low >>> 16) & 0xff]! ^
      T4[low >>> 24]! ^
      T3[bytes[i + 4]!]! ^
      T2[bytes[i + 5]!]! ^
      T1[bytes[i + 6]!]! ^
      T0[bytes[i + 7]!]!;
  }
  for (; i < end; i += 1) crc = T0[(crc ^ bytes[i]!) & 0xff]! ^ (crc >>> 8);
  return (crc ^ 0xffffffff) >>> 0;
}
