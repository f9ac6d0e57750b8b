import assert from 'node:assert/strict';
import type { InPlaceFrameReader } from './in-place-reader.ts';

/** Helpers of this folder's tests. */

/** The pieces' bytes one after another in one new buffer (a stream as a socket would deliver it). */
export function concatBytes(pieces: readonly Uint8Array[]): Uint8Array {
  const out = new Uint8Array(pieces.reduce((sum, piece) => sum + piece.byteLength, 0));
  let at = 0;
  for (const piece of pieces) {
    out.set(piece, at);
    at += piece.byteLength;
  }
  return out;
}

/** Feeds `stream` to the reader as a socket would: each read writes at most `sizes[i]` bytes into the region. */
export function readAll(
  reader: InPlaceFrameReader,
  stream: Uint8Array,
  sizes: readonly number[],
): Uint8Array[] {
  const bodies: Uint8Array[] = [];
  let at = 0;
  let turn = 0;
  while (at < stream.byteLength) {
    const region = reader.region();
    assert.ok(region.byteLength > 0, 'a region always has room');
    const count = Math.min(region.byteLength, stream.byteLength - at, sizes[turn++ % sizes.length]!);
    region.set(stream.subarray(at, at + count));
    at += count;
    bodies.push(...reader.received(count));
  }
  return bodies;
}
