import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { WireError } from './errors.ts';
import {
  EAGER_BODY_BYTES,
  FrameReader,
  frameLimit,
  HANDSHAKE_FRAME_BYTES,
  HANDSHAKE_LIMIT,
} from './frame-reader.ts';

/** A frame: u32 big-endian length, then the body. */
function frame(body: Uint8Array): Uint8Array {
  const out = new Uint8Array(4 + body.byteLength);
  new DataView(out.buffer).setUint32(0, body.byteLength);
  out.set(body, 4);
  return out;
}

function prefix(length: number): Uint8Array {
  const out = new Uint8Array(4);
  new DataView(out.buffer).setUint32(0, length);
  return out;
}

function isOversized(error: unknown): boolean {
  assert.ok(error instanceof WireError, 'error instanceof WireError');
  assert.equal(error.reason, 'oversized');
  assert.match(error.message, /svc\.network\.frame\.maxSize/);
  return true;
}

describe('FrameReader', () => {
  it('refuses an oversized length as soon as its prefix arrives, before buffering any of the frame', () => {
    const reader = new FrameReader(1024);
    assert.throws(() => reader.push(prefix(1025)), isOversized);
    // Also when the prefix itself arrives in pieces, and with the start of the body right behind it.
    const split = new FrameReader(1024);
    assert.deepStrictEqual(split.push(prefix(0xffff_ffff).subarray(0, 2)), []);
    assert.throws(() => split.push(prefix(0xffff_ffff).subarray(2)), isOversized);
    const withBody = new FrameReader(1024);
    assert.throws(() => withBody.push(new Uint8Array([...prefix(4096), 1, 2, 3])), isOversized);
  });

  it('accepts a frame of exactly the limit', () => {
    const reader = new FrameReader(8);
    const [body] = reader.push(frame(new Uint8Array(8).fill(7)));
    assert.deepStrictEqual(body, new Uint8Array(8).fill(7));
  });

  it('returns a body that lies within one chunk as a view of that chunk', () => {
    const reader = new FrameReader(1024);
    const chunk = new Uint8Array([...frame(Uint8Array.of(1, 2, 3)), ...frame(Uint8Array.of(4, 5))]);
    const bodies = reader.push(chunk);
    assert.equal(bodies.length, 2);
    for (const body of bodies) assert.equal(body.buffer, chunk.buffer);
    assert.deepStrictEqual(bodies, [Uint8Array.of(1, 2, 3), Uint8Array.of(4, 5)]);
    assert.equal(reader.buffered, 0);
  });

  it('gathers a body split across chunks, and holds back only the unfinished frame', () => {
    const reader = new FrameReader(1024);
    const stream = new Uint8Array([...frame(Uint8Array.of(1, 2, 3, 4)), ...frame(Uint8Array.of(5))]);
    assert.deepStrictEqual(reader.push(stream.subarray(0, 3)), []);
    assert.equal(reader.buffered, 3);
    assert.deepStrictEqual(reader.push(stream.subarray(3, 10)), [Uint8Array.of(1, 2, 3, 4)]);
    assert.equal(reader.buffered, 2);
    assert.deepStrictEqual(reader.push(stream.subarray(10)), [Uint8Array.of(5)]);
    assert.equal(reader.buffered, 0);
  });

  it('refuses an empty frame as malformed', () => {
    assert.throws(
      () => new FrameReader(1024).push(prefix(0)),
      (error: unknown) => error instanceof WireError && error.reason === 'malformed',
    );
  });

  it('before the handshake refuses a frame above a few KiB, naming that limit, and takes the full one after', () => {
    const reader = new FrameReader(HANDSHAKE_LIMIT);
    assert.throws(
      () => reader.push(prefix(HANDSHAKE_FRAME_BYTES + 1)),
      (error: unknown) =>
        error instanceof WireError &&
        error.reason === 'oversized' &&
        /before the handshake/.test(error.message),
    );
    const open = new FrameReader(HANDSHAKE_LIMIT);
    assert.equal(open.push(frame(new Uint8Array(HANDSHAKE_FRAME_BYTES))).length, 1);
    open.setLimit(frameLimit(1 << 20));
    assert.deepStrictEqual(open.push(frame(new Uint8Array(1 << 16).fill(3))), [
      new Uint8Array(1 << 16).fill(3),
    ]);
  });

  it('holds no more than what arrived (doubled) for a large frame, not what its prefix announces', () => {
    const length = 3 * EAGER_BODY_BYTES + 5;
    const reader = new FrameReader(4 * EAGER_BODY_BYTES);
    assert.deepStrictEqual(reader.push(new Uint8Array([...prefix(length), 1, 2, 3])), []);
    assert.equal(reader.held, EAGER_BODY_BYTES, 'a prefix makes the reader hold at most EAGER_BODY_BYTES');
    const body = new Uint8Array(length);
    for (let i = 0; i < length; i += 1) body[i] = (i * 7) % 251;
    body.set([1, 2, 3]);
    const out: Uint8Array[] = [];
    for (let at = 3; at < length; at += 1 << 20) {
      out.push(...reader.push(body.subarray(at, Math.min(length, at + (1 << 20)))));
      if (out.length === 0)
        assert.ok(
          reader.held <= Math.max(EAGER_BODY_BYTES, 2 * reader.buffered),
          'reader.held <= Math.max(EAGER_BODY_BYTES, 2 * reader.buffered)',
        );
    }
    assert.equal(out.length, 1);
    assert.ok(Buffer.from(out[0]!).equals(Buffer.from(body)), 'the grown body is intact');
    assert.equal(reader.held, 0);
  });
});
