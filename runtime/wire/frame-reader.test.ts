import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { WireError } from './errors.ts';
import { FrameReader } from './frame-reader.ts';

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
  assert.ok(error instanceof WireError);
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
});
