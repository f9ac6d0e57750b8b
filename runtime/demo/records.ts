// The demo job's data: key/value records generated deterministically per map, and the per-partition facts a reader
// must end up with (count, order-independent checksum, distinct keys), computed from the generator alone.
import { createCipheriv, createHash } from 'node:crypto';
import { nativeCrc32 as crc32 } from '../driver/native-checksum.ts';

/** What the demo job writes. Every map's records depend only on the spec and the map id. */
export interface DatasetSpec {
  readonly seed: number;
  /** Records of the whole job: ⌊totalBytes / (keyBytes + valueBytes)⌋, spread evenly over the maps. */
  readonly totalBytes: number;
  readonly maps: number;
  readonly reduces: number;
  /** Bytes of each key (`k` and the key's number, zero-padded). */
  readonly keyBytes: number;
  readonly valueBytes: number;
  /** How many different keys the records use (the groups of the group-by). */
  readonly distinctKeys: number;
}

export const DATASET_LIMITS = {
  maxRecordBytes: 1 << 20,
  maxDistinctKeys: 1 << 24,
  maxPartitions: 1 << 16,
} as const;

/** Why a spec cannot be generated, or undefined when it can. */
export function datasetProblem(spec: DatasetSpec): string | undefined {
  const whole = (n: number, min: number) => Number.isSafeInteger(n) && n >= min;
  if (!whole(spec.seed, 0)) return `the seed must be a whole number ≥ 0, got ${spec.seed}`;
  if (!whole(spec.maps, 1)) return `maps must be a whole number ≥ 1, got ${spec.maps}`;
  if (!whole(spec.reduces, 1) || spec.reduces > DATASET_LIMITS.maxPartitions) {
    return `reduces must be a whole number from 1 to ${DATASET_LIMITS.maxPartitions}, got ${spec.reduces}`;
  }
  if (!whole(spec.distinctKeys, 1) || spec.distinctKeys > DATASET_LIMITS.maxDistinctKeys) {
    return `keys must be a whole number from 1 to ${DATASET_LIMITS.maxDistinctKeys}, got ${spec.distinctKeys}`;
  }
  const digits = String(spec.distinctKeys - 1).length;
  if (!whole(spec.keyBytes, 1 + digits)) {
    return `a key of ${spec.distinctKeys} different keys needs at least ${1 + digits} bytes, got ${spec.keyBytes}`;
  }
  if (!whole(spec.valueBytes, 0)) return `the value size must be a whole number ≥ 0, got ${spec.valueBytes}`;
  if (recordBytes(spec) > DATASET_LIMITS.maxRecordBytes) {
    return `a record (key + value) may have at most ${DATASET_LIMITS.maxRecordBytes} bytes, got ${recordBytes(spec)}`;
  }
  if (!whole(spec.totalBytes, 0)) return `the size must be a whole number of bytes, got ${spec.totalBytes}`;
  if (totalRecords(spec) < spec.maps) {
    return `${spec.totalBytes} bytes make ${totalRecords(spec)} records of ${recordBytes(spec)} bytes: fewer than one per map`;
  }
  return undefined;
}

export function recordBytes(spec: DatasetSpec): number {
  return spec.keyBytes + spec.valueBytes;
}

export function totalRecords(spec: DatasetSpec): number {
  return Math.floor(spec.totalBytes / recordBytes(spec));
}

/** Records map `mapId` writes: the total spread evenly, the first maps taking one more. */
export function recordsOfMap(spec: DatasetSpec, mapId: number): number {
  const total = totalRecords(spec);
  return Math.floor(total / spec.maps) + (mapId < total % spec.maps ? 1 : 0);
}

export function bytesOfMap(spec: DatasetSpec, mapId: number): number {
  return recordsOfMap(spec, mapId) * recordBytes(spec);
}

/**
 * A run of consecutive records of one map in one buffer: record i is `bytes.subarray(i * size, (i + 1) * size)`
 * (key first, then value) and goes to `partitions[i]`. Each chunk has a buffer of its own, so that its records may
 * be kept (a map writer holds them until it closes).
 */
export interface RecordChunk {
  readonly bytes: Buffer;
  readonly partitions: Uint32Array;
  readonly keys: Uint32Array;
  readonly count: number;
  readonly recordBytes: number;
}

/** The keys and their partitions, shared by every map of a spec. */
interface KeySpace {
  readonly table: Buffer;
  readonly partitionOf: Uint32Array;
}

const keySpaces = new Map<string, KeySpace>();

function keySpace(spec: DatasetSpec): KeySpace {
  const id = `${spec.distinctKeys}/${spec.keyBytes}/${spec.reduces}`;
  let space = keySpaces.get(id);
  if (space === undefined) {
    const table = Buffer.alloc(spec.distinctKeys * spec.keyBytes);
    const partitionOf = new Uint32Array(spec.distinctKeys);
    for (let k = 0; k < spec.distinctKeys; k += 1) {
      const at = k * spec.keyBytes;
      table.write(`k${String(k).padStart(spec.keyBytes - 1, '0')}`, at, spec.keyBytes, 'latin1');
      partitionOf[k] = partitionOfKey(table.subarray(at, at + spec.keyBytes), spec.reduces);
    }
    space = { table, partitionOf };
    if (keySpaces.size > 8) keySpaces.clear();
    keySpaces.set(id, space);
  }
  return space;
}

/** The partition of a key: its CRC32 modulo the number of reduces. */
export function partitionOfKey(key: Uint8Array, reduces: number): number {
  return crc32(key) % reduces;
}

const ZERO_IV = Buffer.alloc(16);
/** Records per chunk: about 1 MiB, at least one record. */
const CHUNK_BYTES = 1 << 20;
/** The generator's input: zeros, read and never written, so one buffer serves every chunk of every map. */
const ZEROS = Buffer.alloc(CHUNK_BYTES);

/** `length` zero bytes: a view of ZEROS when it is long enough (a chunk's records), else a buffer of their own. */
function zeros(length: number): Buffer {
  return length <= ZEROS.length ? ZEROS.subarray(0, length) : Buffer.alloc(length);
}

/**
 * Generates map `mapId`'s records in order, chunk by chunk. The bytes come from AES-128-CTR over zeros (a
 * counter-based generator: fast, and the same for the same seed and map on every machine); the first four bytes of
 * each record choose its key, which then overwrites them.
 */
export function generateMap(spec: DatasetSpec, mapId: number, onChunk: (chunk: RecordChunk) => void): void {
  for (const chunk of mapChunks(spec, mapId)) onChunk(chunk);
}

/** generateMap's chunks, one at a time as they are asked for: a map that waits for its writer holds one chunk. */
export function* mapChunks(spec: DatasetSpec, mapId: number): Generator<RecordChunk> {
  const size = recordBytes(spec);
  const { table, partitionOf } = keySpace(spec);
  const key = createHash('sha256').update(`svc-demo/${spec.seed}/${mapId}`).digest().subarray(0, 16);
  const cipher = createCipheriv('aes-128-ctr', key, ZERO_IV);
  const perChunk = Math.max(1, Math.floor(CHUNK_BYTES / size));
  let left = recordsOfMap(spec, mapId);
  const keyBytes = spec.keyBytes;
  while (left > 0) {
    const count = Math.min(perChunk, left);
    left -= count;
    // A record's first four bytes exist even for a 1-byte record: draw them past its end, in the chunk's own bytes.
    const bytes = cipher.update(zeros(count * size));
    const draws = size >= 4 ? bytes : cipher.update(zeros(count * 4));
    const drawStride = size >= 4 ? size : 4;
    const partitions = new Uint32Array(count);
    const keys = new Uint32Array(count);
    for (let i = 0, at = 0; i < count; i += 1, at += size) {
      const k = draws.readUInt32LE(i * drawStride) % spec.distinctKeys;
      // Byte by byte: a key is a few bytes, and a native copy's call cost more than the copy (a second per GiB).
      for (let b = 0, from = k * keyBytes; b < keyBytes; b += 1) bytes[at + b] = table[from + b]!;
      keys[i] = k;
      partitions[i] = partitionOf[k]!;
    }
    yield { bytes, partitions, keys, count, recordBytes: size };
  }
  cipher.final();
}

/** What one partition holds: record count, sum (mod 2^32) and xor of each record's CRC32, and distinct keys. */
export interface PartitionDigest {
  records: number;
  bytes: number;
  sum: number;
  xor: number;
  keys: number;
}

export function emptyDigest(): PartitionDigest {
  return { records: 0, bytes: 0, sum: 0, xor: 0, keys: 0 };
}

/** Adds one record to a digest (the distinct-key count is the caller's). */
export function addRecord(digest: PartitionDigest, record: Uint8Array): void {
  const crc = crc32(record);
  digest.records += 1;
  digest.bytes += record.byteLength;
  digest.sum = (digest.sum + crc) >>> 0;
  digest.xor = (digest.xor ^ crc) >>> 0;
}

export function sameDigest(a: PartitionDigest, b: PartitionDigest): boolean {
  return (
    a.records === b.records && a.bytes === b.bytes && a.sum === b.sum && a.xor === b.xor && a.keys === b.keys
  );
}

export function formatDigest(d: PartitionDigest): string {
  return `${d.records} records, ${d.bytes} bytes, ${d.keys} keys, crc sum ${d.sum.toString(16)} xor ${d.xor.toString(16)}`;
}

/**
 * The digest of every partition, computed by generating every map again (no data plane). `maps` narrows it to some
 * maps (tests); the distinct-key count is over those maps.
 */
export function expectedDigests(spec: DatasetSpec, maps?: readonly number[]): PartitionDigest[] {
  const digests = Array.from({ length: spec.reduces }, emptyDigest);
  const seen = new Uint8Array(spec.distinctKeys);
  for (const mapId of maps ?? Array.from({ length: spec.maps }, (_, m) => m)) {
    generateMap(spec, mapId, (chunk) => {
      for (let i = 0, at = 0; i < chunk.count; i += 1, at += chunk.recordBytes) {
        const digest = digests[chunk.partitions[i]!]!;
        addRecord(digest, chunk.bytes.subarray(at, at + chunk.recordBytes));
        const k = chunk.keys[i]!;
        if (seen[k] === 0) {
          seen[k] = 1;
          digest.keys += 1;
        }
      }
    });
  }
  return digests;
}

/**
 * The reduce side of the group-by: groups a partition's records by key (the first `keyBytes` bytes) and digests
 * them. Returns the digest and the largest group.
 */
export function groupAndDigest(
  records: Iterable<Uint8Array>,
  keyBytes: number,
): { digest: PartitionDigest; largestGroup: number } {
  const grouping = new Grouping(keyBytes);
  grouping.add(records);
  return grouping.finish();
}

/**
 * groupAndDigest fed piece by piece (a streaming reader's chunks): only the groups' counts are kept, never a record,
 * so that a reducer's memory does not grow with its partition's bytes.
 */
const EMPTY: Buffer<ArrayBufferLike> = Buffer.alloc(0);

export class Grouping {
  /** Groups of keys the generator makes (`k` and the key's number in digits), by that number. */
  private readonly numbered = new Map<number, number>();
  /** Groups of any other key (a record shorter than a key, or bytes the generator never writes), by its text. */
  private readonly named = new Map<string, number>();
  private readonly digest = emptyDigest();
  /** Whether keys of this length can be read as numbers exactly (at most 15 digits after the `k`). */
  private readonly numberable: boolean;

  constructor(private readonly keyBytes: number) {
    this.numberable = keyBytes >= 2 && keyBytes <= 16;
  }

  add(records: Iterable<Uint8Array>): void {
    const { numbered, named, digest, keyBytes, numberable } = this;
    // One Buffer per underlying memory, not one per record: a chunk's records are views of the same buffer, and a
    // Buffer made for each key cost as much as the grouping itself.
    let memory: ArrayBufferLike | undefined;
    let view = EMPTY;
    for (const record of records) {
      addRecord(digest, record);
      // The generator's keys are read as numbers, with no string made per record (half the reducer's grouping
      // time); a key of other bytes maps to its text. Both are one-to-one for keys of one length, and no key is
      // in both maps, so the groups are the same as by text.
      const number = numberable && record.byteLength >= keyBytes ? keyNumber(record, keyBytes) : -1;
      if (number >= 0) {
        numbered.set(number, (numbered.get(number) ?? 0) + 1);
        continue;
      }
      if (record.buffer !== memory) {
        memory = record.buffer;
        view = Buffer.from(memory);
      }
      const start = record.byteOffset;
      const key = view.toString('latin1', start, start + Math.min(keyBytes, record.byteLength));
      named.set(key, (named.get(key) ?? 0) + 1);
    }
  }

  finish(): { digest: PartitionDigest; largestGroup: number } {
    this.digest.keys = this.numbered.size + this.named.size;
    let largestGroup = 0;
    for (const count of this.numbered.values()) largestGroup = Math.max(largestGroup, count);
    for (const count of this.named.values()) largestGroup = Math.max(largestGroup, count);
    return { digest: this.digest, largestGroup };
  }
}

/** The number a generator's key (`k`, then `keyBytes - 1` decimal digits) names, or -1 for any other bytes. */
function keyNumber(record: Uint8Array, keyBytes: number): number {
  if (record[0] !== 0x6b) return -1; // 'k'
  let number = 0;
  for (let i = 1; i < keyBytes; i += 1) {
    const digit = record[i]! - 0x30;
    if (digit < 0 || digit > 9) return -1;
    number = number * 10 + digit;
  }
  return number;
}
