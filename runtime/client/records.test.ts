// The application's record helpers: key/value records round-trip through their documented layout, and the hash
// partitioner is MurmurHash3 x86 32-bit exactly (published test vectors), deterministic and in range.
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import fc from 'fast-check';
import { SvcClientError } from './errors.ts';
import { bytes, hashPartitioner, json, keyValue, murmur3, uint32, utf8 } from './records.ts';

const text = new TextEncoder();

describe('key/value records', () => {
  it('give back the key and value they were made of, for any codec pair', () => {
    const strings = keyValue(utf8, utf8);
    const raw = keyValue(bytes, uint32);
    const objects = keyValue(uint32, json<{ n: number; tags: string[] }>());
    fc.assert(
      fc.property(
        fc.string({ unit: 'grapheme' }),
        fc.string({ unit: 'binary' }),
        fc.uint8Array({ maxLength: 64 }),
        fc.nat({ max: 0xffff_ffff }),
        fc.record({ n: fc.integer(), tags: fc.array(fc.string()) }, { noNullPrototype: true }),
        (key, value, keyBytes, number, object) => {
          assert.deepEqual(strings.decode(strings.encode(key, value)), { key, value });
          assert.deepEqual(raw.decode(raw.encode(keyBytes, number)), { key: keyBytes, value: number });
          assert.deepEqual(objects.decode(objects.encode(number, object)), { key: number, value: object });
        },
      ),
    );
  });

  it('have the documented layout: a 4-byte big-endian key length, the key, then the value', () => {
    const record = keyValue(utf8, utf8).encode('ab', 'xyz');
    assert.deepEqual([...record], [0, 0, 0, 2, 0x61, 0x62, 0x78, 0x79, 0x7a]);
  });

  it('are read in place inside a larger buffer (views, no copy)', () => {
    const codec = keyValue(utf8, bytes);
    fc.assert(
      fc.property(fc.uint8Array({ maxLength: 16 }), fc.string(), fc.uint8Array(), (before, key, value) => {
        const record = codec.encode(key, value);
        const buffer = new Uint8Array(before.byteLength + record.byteLength);
        buffer.set(before);
        buffer.set(record, before.byteLength);
        const view = buffer.subarray(before.byteLength);
        assert.equal(codec.decode(view).key, key);
        assert.deepEqual(codec.valueBytes(view), value);
        assert.equal(codec.keyBytes(view).buffer, buffer.buffer);
        assert.deepEqual(codec.keyBytes(view), text.encode(key));
      }),
    );
  });

  it('refuse a record shorter than its key length says', () => {
    const codec = keyValue(utf8, utf8);
    assert.throws(() => codec.decode(new Uint8Array([0, 0])), SvcClientError);
    assert.throws(
      () => codec.decode(new Uint8Array([0, 0, 0, 9, 1, 2])),
      /key length says 9 bytes, but only 2/,
    );
    assert.throws(() => uint32.encode(-1), /whole numbers from 0/);
    assert.throws(() => utf8.decode(new Uint8Array([0xff])), TypeError);
  });
});

describe('the hash partitioner', () => {
  it('is MurmurHash3 x86 32-bit (the published test vectors)', () => {
    assert.equal(murmur3(new Uint8Array(0), 0), 0);
    assert.equal(murmur3(new Uint8Array(0), 1), 0x514e28b7);
    assert.equal(murmur3(new Uint8Array(0), 0xffffffff), 0x81f16f39);
    assert.equal(murmur3(text.encode('test'), 0), 0xba6bd213);
    assert.equal(murmur3(text.encode('Hello, world!'), 0x9747b28c), 0x24884cba);
    assert.equal(murmur3(text.encode('The quick brown fox jumps over the lazy dog'), 0x9747b28c), 0x2fa826cd);
    assert.equal(murmur3(new Uint8Array([0x21, 0x43, 0x65]), 0), 0x7e4a8634);
    assert.equal(murmur3(new Uint8Array([0x21, 0x43]), 0), 0xa0f7b07a);
    assert.equal(murmur3(new Uint8Array([0x21]), 0), 0x72661cf4);
  });

  it('puts every key in range, the same key always in the same partition, a string as its UTF-8 bytes', () => {
    fc.assert(
      fc.property(fc.integer({ min: 1, max: 1000 }), fc.string({ unit: 'grapheme' }), (partitions, key) => {
        const partitioner = hashPartitioner(partitions);
        const p = partitioner.partition(key);
        assert.ok(
          Number.isInteger(p) && p >= 0 && p < partitions,
          'Number.isInteger(p) && p >= 0 && p < partitions',
        );
        assert.equal(hashPartitioner(partitions).partition(text.encode(key)), p);
        assert.equal(p, murmur3(text.encode(key)) % partitions);
      }),
    );
  });

  it('spreads similar keys evenly', () => {
    const partitioner = hashPartitioner(16);
    const counts = new Array<number>(16).fill(0);
    for (let i = 0; i < 16_000; i += 1) counts[partitioner.partition(`key-${i}`)]! += 1;
    for (const count of counts) assert.ok(count > 850 && count < 1150, `uneven spread: ${counts.join(' ')}`);
  });

  it('refuses a partition count that is not a positive whole number, and a key of another type', () => {
    assert.throws(() => hashPartitioner(0), SvcClientError);
    assert.throws(() => hashPartitioner(2.5), SvcClientError);
    assert.throws(() => hashPartitioner(4).partition(42 as unknown as string), /Uint8Array or a string/);
  });
});
