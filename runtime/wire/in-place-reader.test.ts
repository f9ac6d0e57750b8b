import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import fc from 'fast-check';
import { WireError } from './errors.ts';
import { EAGER_BODY_BYTES, HANDSHAKE_FRAME_BYTES, HANDSHAKE_LIMIT, frameLimit } from './frame-reader.ts';
import { InPlaceFrameReader, SLAB_BYTES } from './in-place-reader.ts';
import { concatBytes, readAll } from './testing.ts';

/** A frame: u32 big-endian length, then the body. */
function frame(body: Uint8Array): Uint8Array {
  const out = new Uint8Array(4 + body.byteLength);
  new DataView(out.buffer).setUint32(0, body.byteLength);
  out.set(body, 4);
  return out;
}

const bodyLength = fc.oneof(
  fc.integer({ min: 1, max: 64 }),
  fc.integer({ min: 1, max: 70 * 1024 }),
  fc.integer({ min: SLAB_BYTES / 2, max: SLAB_BYTES * 3 }),
);

describe('InPlaceFrameReader', () => {
  it('hands out every frame intact, in order, however the reads fall, and never writes over one handed out', () => {
    fc.assert(
      fc.property(
        fc.array(bodyLength, { minLength: 1, maxLength: 12 }),
        fc.array(fc.integer({ min: 1, max: 3 * SLAB_BYTES }), { minLength: 1, maxLength: 8 }),
        fc.integer({ min: 0, max: 255 }),
        (lengths, sizes, seed) => {
          const bodies = lengths.map((length, i) => new Uint8Array(length).fill((seed + i) % 256));
          const reader = new InPlaceFrameReader(4 * SLAB_BYTES);
          const out = readAll(reader, concatBytes(bodies.map(frame)), sizes);
          assert.equal(reader.buffered, 0);
          // Checked after the whole stream: a later read into a slab would have changed an earlier body.
          assert.equal(out.length, bodies.length);
          for (let i = 0; i < bodies.length; i += 1) assert.deepStrictEqual(out[i], bodies[i]);
        },
      ),
      { numRuns: 150 },
    );
  });

  it('reads the rest of a large frame directly into a buffer of the frame size', () => {
    const reader = new InPlaceFrameReader(1 << 24);
    const big = frame(new Uint8Array(4 * SLAB_BYTES).fill(9));
    const first = reader.region();
    first.set(big.subarray(0, 1000));
    assert.deepStrictEqual(reader.received(1000), []);
    assert.equal(reader.buffered, 1000);
    const rest = reader.region();
    assert.equal(rest.byteLength, big.byteLength - 1000, 'the read is offered exactly the rest of the frame');
    rest.set(big.subarray(1000));
    const [body] = reader.received(rest.byteLength);
    assert.ok(body !== undefined, 'body !== undefined');
    assert.equal(body.buffer, rest.buffer, 'the frame was read where it is handed out');
    assert.equal(body.byteLength, 4 * SLAB_BYTES);
    assert.equal(reader.buffered, 0);
  });

  it('hands out small frames as views of the slab they were read into', () => {
    const reader = new InPlaceFrameReader(1024);
    const region = reader.region();
    const stream = concatBytes([frame(Uint8Array.of(1, 2, 3)), frame(Uint8Array.of(4))]);
    region.set(stream);
    const bodies = reader.received(stream.byteLength);
    assert.deepStrictEqual(bodies, [Uint8Array.of(1, 2, 3), Uint8Array.of(4)]);
    for (const body of bodies) assert.equal(body.buffer, region.buffer);
  });

  it('refuses an oversized length as soon as its prefix is read, and an empty frame', () => {
    const reader = new InPlaceFrameReader(1024);
    reader.region().set(frame(new Uint8Array(1025)).subarray(0, 6));
    assert.throws(
      () => reader.received(6),
      (error: unknown) => error instanceof WireError && error.reason === 'oversized',
    );
    const empty = new InPlaceFrameReader(1024);
    empty.region().set([0, 0, 0, 0]);
    assert.throws(
      () => empty.received(4),
      (error: unknown) => error instanceof WireError && error.reason === 'malformed',
    );
  });

  it('before the handshake refuses a frame above a few KiB, and after it takes frames up to the full limit', () => {
    const reader = new InPlaceFrameReader(HANDSHAKE_LIMIT);
    const hello = frame(new Uint8Array(100).fill(1));
    assert.deepStrictEqual(readAll(reader, hello, [1000]), [new Uint8Array(100).fill(1)]);
    reader.setLimit(frameLimit(1 << 22));
    const large = new Uint8Array(1 << 20).fill(2);
    assert.deepStrictEqual(readAll(reader, frame(large), [SLAB_BYTES]), [large]);
    const early = new InPlaceFrameReader(HANDSHAKE_LIMIT);
    assert.throws(
      () => readAll(early, frame(new Uint8Array(HANDSHAKE_FRAME_BYTES + 1)), [SLAB_BYTES]),
      (error: unknown) => error instanceof WireError && /before the handshake/.test(error.message),
    );
  });

  it('allocates a large frame as its bytes arrive: a prefix alone makes it hold at most EAGER_BODY_BYTES', () => {
    const length = 2 * EAGER_BODY_BYTES + 9;
    const body = new Uint8Array(length);
    for (let i = 0; i < length; i += 1) body[i] = (i * 13) % 251;
    const stream = frame(body);
    const reader = new InPlaceFrameReader(4 * EAGER_BODY_BYTES);
    const out: Uint8Array[] = [];
    let at = 0;
    while (at < stream.byteLength) {
      const region = reader.region();
      const count = Math.min(region.byteLength, stream.byteLength - at, 3 << 20);
      region.set(stream.subarray(at, at + count));
      at += count;
      out.push(...reader.received(count));
      if (out.length === 0) {
        assert.ok(
          reader.held <= Math.max(EAGER_BODY_BYTES, 2 * reader.buffered),
          `held ${reader.held} at ${at}`,
        );
      }
    }
    assert.equal(out.length, 1);
    assert.ok(Buffer.from(out[0]!).equals(Buffer.from(body)), 'the grown body is intact');
    assert.equal(reader.held, 0);
  });
});
