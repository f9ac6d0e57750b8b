import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import fc from 'fast-check';
import { encodeBatchFrame, FRAME_CRC_OFFSET, FRAME_HEADER_BYTES } from '../../core/protocol/batch-frame.ts';
import { portableCrc32 } from '../../core/protocol/crc32.ts';
import { BatchChecksumScanner, recallChecksum } from './batch-checksums.ts';
import { FRAME_KIND } from './frames.ts';
import { POOLED_BODY_MIN_BYTES, ReceiveBodies, SCRIBBLE_BYTE } from './receive-bodies.ts';
import { EAGER_BODY_BYTES, FrameReader } from './frame-reader.ts';
import { InPlaceFrameReader } from './in-place-reader.ts';
import { concatBytes, readAll } from './testing.ts';

const MiB = 1024 * 1024;

/** What a test does to the pool: lend a body, claim it, add a holder, let one go, or make it escape. */
type Step =
  | { readonly kind: 'take'; readonly length: number }
  | { readonly kind: 'claim' | 'hold' | 'release' | 'escape' | 'idle'; readonly pick: number };

const stepArb: fc.Arbitrary<Step> = fc.oneof(
  fc.record({
    kind: fc.constant('take' as const),
    length: fc.oneof(
      fc.integer({ min: POOLED_BODY_MIN_BYTES, max: 3 * MiB }),
      fc.integer({ min: 1, max: POOLED_BODY_MIN_BYTES - 1 }),
    ),
  }),
  fc.record({
    kind: fc.constantFrom('claim' as const, 'hold' as const, 'release' as const, 'escape' as const),
    pick: fc.nat(),
  }),
  fc.record({ kind: fc.constant('idle' as const), pick: fc.nat() }),
);

/** A lent body as the test sees it: its view, how many holders hold it, whether it was claimed or escaped. */
interface Modelled {
  readonly view: Uint8Array;
  holds: number;
  claimed: boolean;
  escaped: boolean;
}

describe('ReceiveBodies', () => {
  it('never lends a body while a holder still holds it, nor one that escaped or nobody claimed; keeps at most its bound', () => {
    fc.assert(
      fc.property(
        fc.array(stepArb, { maxLength: 120 }),
        fc.integer({ min: 2, max: 12 }),
        (steps, keptMiB) => {
          const keptBytes = keptMiB * MiB;
          const pool = new ReceiveBodies({ keptBytes });
          const bodies: Modelled[] = [];
          /** Buffers that may still be read: held, escaped, or dropped unclaimed (an unknown holder may have them). */
          const mayBeRead = (buffer: ArrayBufferLike): boolean =>
            bodies.some(
              (body) => body.view.buffer === buffer && (body.holds > 0 || body.escaped || !body.claimed),
            );
          for (const step of steps) {
            if (step.kind === 'take') {
              const view = pool.take(step.length);
              assert.equal(view.byteLength, step.length);
              // Small frames are fresh memory (maybe Node's shared pool), never the pool's.
              if (step.length < POOLED_BODY_MIN_BYTES) {
                assert.equal(pool.isLent(view), false);
                continue;
              }
              assert.equal(mayBeRead(view.buffer), false, 'a body lent while it may still be read');
              // The body given back earlier under this buffer is gone for good.
              for (let i = bodies.length - 1; i >= 0; i -= 1) {
                if (bodies[i]!.view.buffer === view.buffer) bodies.splice(i, 1);
              }
              bodies.push({ view, holds: 1, claimed: false, escaped: false });
            } else if (step.kind === 'idle') {
              pool.dropIdle();
            } else {
              const live = bodies.filter((body) => body.holds > 0);
              if (live.length === 0) continue;
              const body = live[step.pick % live.length]!;
              if (step.kind === 'claim') {
                if (pool.claim(body.view) && !body.escaped) body.claimed = true;
              } else if (step.kind === 'hold') {
                pool.hold(body.view);
                body.holds += 1;
              } else if (step.kind === 'release') {
                pool.release(body.view);
                body.holds -= 1;
              } else {
                pool.escape(body.view);
                body.escaped = true;
              }
            }
            assert.ok(pool.keptBytes <= keptBytes, `${pool.keptBytes} kept, bound ${keptBytes}`);
          }
        },
      ),
      { numRuns: 300 },
    );
  });

  it('lends a claimed body again once its last holder let go, and not before', () => {
    const pool = new ReceiveBodies();
    const first = pool.take(2 * MiB);
    assert.ok(pool.claim(first), 'a lent body can be claimed');
    pool.hold(first.subarray(100, 200)); // a holder of a slice of it
    pool.release(first); // the connection's hold
    const second = pool.take(2 * MiB);
    assert.notEqual(second.buffer, first.buffer, 'lent while a slice of it was held');
    pool.release(first.subarray(5)); // any view names the body
    const third = pool.take(2 * MiB - 1000);
    assert.equal(third.buffer, first.buffer);
    assert.deepEqual(pool.counts, { reused: 1, fresh: 2 });
  });

  it('lends fresh memory for small and huge frames, and never reuses an unclaimed body', () => {
    const pool = new ReceiveBodies();
    const small = pool.take(POOLED_BODY_MIN_BYTES - 1);
    assert.equal(pool.isLent(small), false);
    const huge = pool.take(EAGER_BODY_BYTES + 1);
    assert.equal(pool.isLent(huge), false);
    const unclaimed = pool.take(MiB);
    pool.release(unclaimed);
    assert.notEqual(pool.take(MiB).buffer, unclaimed.buffer);
    assert.equal(pool.keptBytes, 0);
  });

  it('lends nothing while its owner says it does not: fresh memory of exactly the length, kept bodies untouched', () => {
    let lends = true;
    const pool = new ReceiveBodies({ lends: () => lends });
    const kept = pool.take(MiB);
    pool.claim(kept);
    pool.release(kept);
    lends = false;
    const fresh = pool.take(MiB);
    assert.equal(pool.isLent(fresh), false);
    assert.notEqual(fresh.buffer, kept.buffer);
    assert.equal(fresh.byteLength, MiB);
    assert.equal(pool.keptBytes, MiB);
    lends = true;
    assert.equal(pool.take(MiB).buffer, kept.buffer);
  });

  it('scribbles over a body given back, in tests, and forgets the checksums remembered for it', () => {
    const pool = new ReceiveBodies({ scribble: true });
    const frame = encodeBatchFrame(
      { shuffleId: 1, mapId: 2, attemptId: 0, batchId: 3, partitionId: 4, epoch: 0 },
      new Uint8Array(100_000).fill(7),
    );
    const length = 5 + frame.byteLength;
    const body = pool.take(length);
    body[0] = FRAME_KIND.envelope;
    body.fill(0, 1, 5); // no control part: the payloads start at once
    body.set(frame, 5);
    new BatchChecksumScanner(body, portableCrc32).advance(length);
    const payload = (bytes: Uint8Array) => bytes.subarray(5 + FRAME_HEADER_BYTES, length);
    const headerCrc = portableCrc32(body.subarray(5, 5 + FRAME_CRC_OFFSET), 0);
    pool.claim(body);
    pool.release(body);
    assert.ok(
      body.every((byte) => byte === SCRIBBLE_BYTE),
      'the body given back is scribbled over',
    );
    const again = pool.take(length);
    assert.equal(again.buffer, body.buffer);
    // What was remembered for the old bytes must not answer for the new ones.
    assert.equal(recallChecksum(payload(again), headerCrc), undefined);
  });

  it('lets every free body go when none was taken since the last idle check', () => {
    const pool = new ReceiveBodies();
    const body = pool.take(MiB);
    pool.claim(body);
    pool.release(body);
    assert.equal(pool.keptBytes, MiB);
    pool.dropIdle(); // one was taken since start: kept
    assert.equal(pool.keptBytes, MiB);
    pool.dropIdle(); // none since: dropped
    assert.equal(pool.keptBytes, 0);
  });
});

describe('readers taking bodies from the pool', () => {
  /** A frame (length prefix included) of `length` body bytes, each byte its position modulo 251. */
  function frameOf(length: number): Uint8Array {
    const frame = new Uint8Array(4 + length);
    new DataView(frame.buffer).setUint32(0, length);
    for (let i = 0; i < length; i += 1) frame[4 + i] = i % 251;
    return frame;
  }

  it('an in-place reader reads a frame larger than its slab into a lent body, intact', () => {
    const pool = new ReceiveBodies();
    const reader = new InPlaceFrameReader(64 * MiB);
    reader.takeBodiesFrom(pool);
    const frames = [frameOf(1000), frameOf(2 * MiB), frameOf(3000)];
    const bodies = readAll(reader, concatBytes(frames), [65536, 4096, 1 << 20]);
    assert.deepEqual(
      bodies.map((body) => body.byteLength),
      [1000, 2 * MiB, 3000],
      'every frame is handed out',
    );
    assert.equal(pool.isLent(bodies[1]!), true, 'the large frame is a body of the pool');
    assert.equal(pool.isLent(bodies[0]!) || pool.isLent(bodies[2]!), false, 'small frames are slab views');
    assert.deepEqual(bodies[1], frames[1]!.subarray(4), 'the large body holds its frame');
  });

  it('a frame reader gathers a frame split across chunks into a lent body, intact', () => {
    const pool = new ReceiveBodies();
    const reader = new FrameReader(64 * MiB);
    reader.takeBodiesFrom(pool);
    const frame = frameOf(300 * 1024);
    const bodies = [
      ...reader.push(frame.subarray(0, 65536)),
      ...reader.push(frame.subarray(65536, 200_000)),
      ...reader.push(frame.subarray(200_000)),
    ];
    assert.equal(bodies.length, 1, 'one frame');
    assert.equal(pool.isLent(bodies[0]!), true, 'the gathered body is a body of the pool');
    assert.deepEqual(bodies[0], frame.subarray(4), 'the body holds its frame');
  });
});
