import assert from 'node:assert/strict';
import { afterEach, describe, it } from 'node:test';
import fc from 'fast-check';
import {
  decodeBatchFrame,
  encodeBatchFrame,
  FRAME_CRC_OFFSET,
  FRAME_HEADER_BYTES,
} from '../../core/protocol/batch-frame.ts';
import { installCrc32, portableCrc32, type Crc32Implementation } from '../../core/protocol/crc32.ts';
import { recallChecksum, recallingChecksum } from './batch-checksums.ts';
import { FRAME_KIND } from './frames.ts';
import { InPlaceFrameReader, SLAB_BYTES } from './in-place-reader.ts';
import { concatBytes, readAll } from './testing.ts';

const portable: Crc32Implementation = (bytes, previous) => portableCrc32(bytes, previous);

/** An envelope frame (length prefix included): kind, control length, `control`, then `payloads` back to back. */
function envelopeFrame(control: Uint8Array, payloads: readonly Uint8Array[]): Uint8Array {
  const payloadBytes = payloads.reduce((sum, payload) => sum + payload.byteLength, 0);
  const frame = new Uint8Array(4 + 5 + control.byteLength + payloadBytes);
  const view = new DataView(frame.buffer);
  view.setUint32(0, frame.byteLength - 4);
  frame[4] = FRAME_KIND.envelope;
  view.setUint32(5, control.byteLength);
  frame.set(control, 9);
  let at = 9 + control.byteLength;
  for (const payload of payloads) {
    frame.set(payload, at);
    at += payload.byteLength;
  }
  return frame;
}

function batch(batchId: number, length: number): Uint8Array {
  const payload = new Uint8Array(length).map((_, i) => (i * 31 + batchId) & 0xff);
  return encodeBatchFrame(
    { shuffleId: 1, mapId: 2, attemptId: 0, batchId, partitionId: 3, epoch: 0 },
    payload,
  );
}

/** Where each batch frame of an envelope body lies (payloads assumed to be batch frames only). */
function batchesOf(body: Uint8Array): { readonly header: Uint8Array; readonly payload: Uint8Array }[] {
  const out = [];
  let at = 5 + new DataView(body.buffer, body.byteOffset).getUint32(1);
  while (at < body.byteLength) {
    const length = new DataView(body.buffer, body.byteOffset + at).getUint32(32);
    out.push({
      header: body.subarray(at, at + FRAME_CRC_OFFSET),
      payload: body.subarray(at + FRAME_HEADER_BYTES, at + FRAME_HEADER_BYTES + length),
    });
    at += FRAME_HEADER_BYTES + length;
  }
  return out;
}

/** True when the body was read into a buffer of its own (a large frame), not into a slab. */
function ownBuffer(body: Uint8Array): boolean {
  return body.byteOffset === 0 && body.buffer.byteLength === body.byteLength;
}

describe('batch checksums while hot', () => {
  afterEach(() => installCrc32(undefined));

  it('remembers the CRC of every batch of a large frame, however the reads fall, and tells it once', () => {
    fc.assert(
      fc.property(
        fc.array(
          fc.record({
            control: fc.integer({ min: 0, max: 300 }),
            batches: fc.array(fc.integer({ min: 0, max: 96 * 1024 }), { minLength: 0, maxLength: 8 }),
          }),
          { minLength: 1, maxLength: 4 },
        ),
        fc.array(fc.integer({ min: 1, max: 2 * SLAB_BYTES }), { minLength: 1, maxLength: 6 }),
        (frames, sizes) => {
          const stream = frames.map(({ control, batches }) =>
            envelopeFrame(
              new Uint8Array(control).fill(0x53),
              batches.map((length, i) => batch(i, length)),
            ),
          );
          const reader = new InPlaceFrameReader(4 * SLAB_BYTES, portable);
          const bodies = readAll(reader, concatBytes(stream), sizes);
          assert.equal(bodies.length, frames.length);
          for (const body of bodies) {
            for (const { header, payload } of batchesOf(body)) {
              const headerCrc = portableCrc32(header);
              const expected = portableCrc32(payload, headerCrc);
              if (!ownBuffer(body)) {
                assert.equal(recallChecksum(payload, headerCrc), undefined, 'small frames are not scanned');
                continue;
              }
              assert.equal(recallChecksum(payload, headerCrc ^ 1), undefined, 'another previous value');
              if (payload.byteLength > 0) {
                assert.equal(
                  recallChecksum(payload.subarray(0, payload.byteLength - 1), headerCrc),
                  undefined,
                );
              }
              assert.equal(recallChecksum(payload, headerCrc), expected);
              assert.equal(recallChecksum(payload, headerCrc), undefined, 'told once');
            }
          }
        },
      ),
      { numRuns: 60 },
    );
  });

  it('recalls each batch in any order the checks come in, once', () => {
    fc.assert(
      fc.property(
        // Above a slab in all (a body of its own, the only kind scanned), below the reader's limit.
        fc.array(fc.integer({ min: 24 * 1024, max: 40 * 1024 }), { minLength: 12, maxLength: 24 }),
        fc.integer({ min: 512, max: SLAB_BYTES }),
        fc.func(fc.integer()),
        (lengths, readSize, rank) => {
          const reader = new InPlaceFrameReader(4 * SLAB_BYTES, portable);
          const frame = envelopeFrame(
            new Uint8Array(9),
            lengths.map((length, i) => batch(i, length)),
          );
          const [body] = readAll(reader, frame, [readSize]);
          assert.ok(body !== undefined && ownBuffer(body), 'one body of its own');
          const batches = batchesOf(body);
          const order = batches.map((_, i) => i).sort((a, b) => rank(a) - rank(b) || a - b);
          for (const i of order) {
            const { header, payload } = batches[i]!;
            const headerCrc = portableCrc32(header);
            assert.equal(recallChecksum(payload, headerCrc), portableCrc32(payload, headerCrc), `batch ${i}`);
          }
          for (const { header, payload } of batches)
            assert.equal(recallChecksum(payload, portableCrc32(header)), undefined, 'told once');
        },
      ),
      { numRuns: 100 },
    );
  });

  it('recalls the checksum of the bytes that arrived, so a damaged batch still fails its check', () => {
    const frames = [batch(0, 200 * 1024), batch(1, 100 * 1024)];
    frames[1]![FRAME_HEADER_BYTES + 7]! ^= 0x10; // damaged after its CRC was written
    const reader = new InPlaceFrameReader(4 * SLAB_BYTES, portable);
    const [body] = readAll(reader, envelopeFrame(new Uint8Array(12), frames), [70_000]);
    assert.ok(body !== undefined && ownBuffer(body), 'body !== undefined && ownBuffer(body)');
    let computed = 0;
    installCrc32(
      recallingChecksum((bytes, previous) => {
        computed += 1;
        return portableCrc32(bytes, previous);
      }),
    );
    const payloads = body.subarray(5 + 12);
    assert.equal(decodeBatchFrame(payloads.subarray(0, frames[0]!.byteLength)).ok, true);
    const damaged = decodeBatchFrame(payloads.subarray(frames[0]!.byteLength));
    assert.equal(damaged.ok ? undefined : damaged.error.problem, 'CRC_MISMATCH');
    // Nothing is computed natively at the check: every payload was checksummed as it arrived, and a header is
    // below NATIVE_MIN_BYTES.
    assert.equal(computed, 0);
  });

  it('stops at payloads that are not batch frames, and at frames that are not envelopes', () => {
    const junk = new Uint8Array(300 * 1024).fill(7);
    const good = batch(0, 1000);
    const reader = new InPlaceFrameReader(4 * SLAB_BYTES, portable);
    const notEnvelope = envelopeFrame(new Uint8Array(0), [good, junk]);
    notEnvelope[4] = FRAME_KIND.hello;
    const [afterJunk, hello] = readAll(
      reader,
      concatBytes([envelopeFrame(new Uint8Array(3), [junk, good]), notEnvelope]),
      [SLAB_BYTES],
    );
    assert.ok(
      afterJunk !== undefined && hello !== undefined && ownBuffer(afterJunk) && ownBuffer(hello),
      'afterJunk !== undefined && hello !== undefined && ownBuffer(afterJunk) && ownBuffer(hello)',
    );
    const tail = afterJunk.subarray(5 + 3 + junk.byteLength + FRAME_HEADER_BYTES);
    const crcOfHeader = portableCrc32(good.subarray(0, FRAME_CRC_OFFSET));
    assert.equal(recallChecksum(tail, crcOfHeader), undefined);
    assert.equal(
      recallChecksum(hello.subarray(5 + FRAME_HEADER_BYTES, 5 + 1000 + FRAME_HEADER_BYTES), crcOfHeader),
      undefined,
    );
  });
});
