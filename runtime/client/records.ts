// Records for applications: a shuffle moves opaque byte arrays, and nearly every job needs the same two things on
// top: a key and a value in one record, and a partition chosen from the key. Both are defined here exactly (the
// byte layout, the hash), so that an application in another language can produce and read the same records.
import { SvcArgumentError } from './errors.ts';

/** Turns values into bytes and back. `decode(encode(v))` gives `v` again. */
export interface Codec<T> {
  encode(value: T): Uint8Array;
  decode(bytes: Uint8Array): T;
}

const textEncoder = new TextEncoder();
const textDecoder = new TextDecoder('utf-8', { fatal: true });

/** Strings as UTF-8. Decoding bytes that are not UTF-8 throws. */
export const utf8: Codec<string> = {
  encode: (value) => textEncoder.encode(value),
  decode: (bytes) => textDecoder.decode(bytes),
};

/** Bytes as they are (decoding gives a view, not a copy). */
export const bytes: Codec<Uint8Array> = {
  encode: (value) => value,
  decode: (value) => value,
};

/** Whole numbers from 0 to 2^32 - 1, as 4 big-endian bytes. */
export const uint32: Codec<number> = {
  encode(value) {
    if (!(Number.isInteger(value) && value >= 0 && value <= 0xffff_ffff)) {
      throw new SvcArgumentError(`uint32 encodes whole numbers from 0 to 4294967295, got ${String(value)}`);
    }
    const out = new Uint8Array(4);
    new DataView(out.buffer).setUint32(0, value);
    return out;
  },
  decode(value) {
    if (value.byteLength !== 4) throw new SvcArgumentError(`a uint32 is 4 bytes, got ${value.byteLength}`);
    return new DataView(value.buffer, value.byteOffset, 4).getUint32(0);
  },
};

/** Any JSON value, as its UTF-8 JSON text. */
export function json<T>(): Codec<T> {
  return {
    encode: (value) => textEncoder.encode(JSON.stringify(value)),
    decode: (value) => JSON.parse(textDecoder.decode(value)) as T,
  };
}

/** Bytes of a key/value record's length prefix. */
export const KEY_LENGTH_BYTES = 4;

/**
 * A key and a value in one record: `[key length: uint32 big-endian][key bytes][value bytes]`. The value runs to the
 * record's end (a shuffle keeps each record's length, so it needs no prefix of its own).
 */
export interface KeyValueCodec<K, V> {
  encode(key: K, value: V): Uint8Array;
  decode(record: Uint8Array): { key: K; value: V };
  /** The record's key bytes (a view, nothing decoded): what `hashPartitioner` hashes. */
  keyBytes(record: Uint8Array): Uint8Array;
  /** The record's value bytes (a view). */
  valueBytes(record: Uint8Array): Uint8Array;
}

export function keyValue<K, V>(keyCodec: Codec<K>, valueCodec: Codec<V>): KeyValueCodec<K, V> {
  const keyBytes = (record: Uint8Array): Uint8Array => {
    const length = keyLength(record);
    return record.subarray(KEY_LENGTH_BYTES, KEY_LENGTH_BYTES + length);
  };
  const valueBytes = (record: Uint8Array): Uint8Array =>
    record.subarray(KEY_LENGTH_BYTES + keyLength(record));
  return {
    encode(key, value) {
      const k = keyCodec.encode(key);
      const v = valueCodec.encode(value);
      const record = new Uint8Array(KEY_LENGTH_BYTES + k.byteLength + v.byteLength);
      new DataView(record.buffer).setUint32(0, k.byteLength);
      record.set(k, KEY_LENGTH_BYTES);
      record.set(v, KEY_LENGTH_BYTES + k.byteLength);
      return record;
    },
    decode(record) {
      return { key: keyCodec.decode(keyBytes(record)), value: valueCodec.decode(valueBytes(record)) };
    },
    keyBytes,
    valueBytes,
  };
}

function keyLength(record: Uint8Array): number {
  if (record.byteLength < KEY_LENGTH_BYTES) {
    throw new SvcArgumentError(
      `a key/value record starts with a ${KEY_LENGTH_BYTES}-byte key length, got a record of ${record.byteLength} bytes`,
    );
  }
  const length = new DataView(record.buffer, record.byteOffset, KEY_LENGTH_BYTES).getUint32(0);
  if (length > record.byteLength - KEY_LENGTH_BYTES) {
    throw new SvcArgumentError(
      `a key/value record's key length says ${length} bytes, but only ${record.byteLength - KEY_LENGTH_BYTES} follow`,
    );
  }
  return length;
}

/**
 * MurmurHash3 x86 32-bit (Austin Appleby's reference `MurmurHash3_x86_32`) of `data` with `seed`, as an unsigned
 * 32-bit number. Chosen for partitioning because it is fast, spreads keys evenly, and has the same value in every
 * language's implementation (Spark's and Kafka's partitioners use the Murmur family too).
 */
export function murmur3(data: Uint8Array, seed = 0): number {
  const c1 = 0xcc9e2d51;
  const c2 = 0x1b873593;
  const length = data.byteLength;
  const blocks = length & ~3;
  let h = seed >>> 0;
  for (let i = 0; i < blocks; i += 4) {
    let k = data[i]! | (data[i + 1]! << 8) | (data[i + 2]! << 16) | (data[i + 3]! << 24);
    k = Math.imul(k, c1);
    k = (k << 15) | (k >>> 17);
    k = Math.imul(k, c2);
    h ^= k;
    h = (h << 13) | (h >>> 19);
    h = (Math.imul(h, 5) + 0xe6546b64) | 0;
  }
  const tail = length & 3;
  if (tail > 0) {
    let k = 0;
    if (tail === 3) k ^= data[blocks + 2]! << 16;
    if (tail >= 2) k ^= data[blocks + 1]! << 8;
    k ^= data[blocks]!;
    k = Math.imul(k, c1);
    k = (k << 15) | (k >>> 17);
    k = Math.imul(k, c2);
    h ^= k;
  }
  h ^= length;
  h ^= h >>> 16;
  h = Math.imul(h, 0x85ebca6b);
  h ^= h >>> 13;
  h = Math.imul(h, 0xc2b2ae35);
  h ^= h >>> 16;
  return h >>> 0;
}

/** Chooses a record's partition from its key. */
export interface Partitioner {
  readonly partitions: number;
  /** The partition of a key: its bytes, or a string (hashed as UTF-8). */
  partition(key: Uint8Array | string): number;
}

/**
 * `murmur3(key bytes, seed 0) mod partitions`: the same key always goes to the same partition, in every process and
 * every release (the hash is part of the library's interface and does not change).
 */
export function hashPartitioner(partitions: number): Partitioner {
  if (!(Number.isInteger(partitions) && partitions > 0)) {
    throw new SvcArgumentError(
      `a partitioner needs a positive whole number of partitions, got ${String(partitions)}`,
    );
  }
  return {
    partitions,
    partition(key) {
      const data = typeof key === 'string' ? textEncoder.encode(key) : key;
      if (!(data instanceof Uint8Array)) {
        throw new SvcArgumentError(`a partition key is a Uint8Array or a string, got ${typeof key}`);
      }
      return murmur3(data) % partitions;
    },
  };
}
