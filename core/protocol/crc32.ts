/**
 * CRC-32 (IEEE 802.3, reflected polynomial 0xEDB88320), the checksum zlib, gzip and PNG use, so that any tool can
 * check a frame. Table-driven and hand-written because core/ may not import packages.
 */
const TABLE: Uint32Array = (() => {
  const table = new Uint32Array(256);
  for (let n = 0; n < 256; n += 1) {
    let c = n;
    for (let k = 0; k < 8; k += 1) c = c & 1 ? 0xedb88320 ^ (c >>> 1) : c >>> 1;
    table[n] = c >>> 0;
  }
  return table;
})();

/**
 * Continues a CRC over more bytes: `crc32(b, crc32(a))` equals `crc32(a ++ b)`, so a header and a payload can be
 * checked without copying them into one buffer.
 */
export function crc32(bytes: Uint8Array, previous = 0): number {
  let crc = (previous ^ 0xffffffff) >>> 0;
  for (let i = 0; i < bytes.length; i += 1) {
    crc = TABLE[(crc ^ bytes[i]!) & 0xff]! ^ (crc >>> 8);
  }
  return (crc ^ 0xffffffff) >>> 0;
}
