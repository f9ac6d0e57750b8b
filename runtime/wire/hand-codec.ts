import { type BinaryReader, WireType } from '@bufbuild/protobuf/wire';

/**
 * What the hand-written codecs (./hot-codec.ts, ./slot-codec.ts) share: sizes, a writer into one exact-size buffer,
 * and the signal that leaves a message to the schema's codec. Every rule here is `toBinary`'s: a field at its proto3
 * default is not written, an int32 below zero takes ten bytes.
 */

export function reverse<T extends string>(table: Readonly<Record<T, number>>): readonly (T | undefined)[] {
  const names: (T | undefined)[] = [];
  for (const [name, number] of Object.entries(table) as [T, number][]) names[number] = name;
  return names;
}

/** Thrown inside this module when it leaves an envelope to the schema's codec; never escapes. */
export class NotHot extends Error {}
export const NOT_HOT = new NotHot();

export function wireNumber<T extends string>(table: Readonly<Record<T, number>>, name: T): number {
  const number = table[name] as number | undefined;
  if (number === undefined) throw NOT_HOT;
  return number;
}

const encoder = new TextEncoder();

/** A string's UTF-8 bytes (lone surrogates become U+FFFD, as TextEncoder and `toBinary` make them). */
export function utf8(text: string): Uint8Array | string {
  for (let i = 0; i < text.length; i += 1) if (text.charCodeAt(i) > 0x7f) return encoder.encode(text);
  return text; // ASCII: one byte per character, written as it is
}

export function checkInt32(value: number): void {
  if (!Number.isInteger(value) || value > 0x7fff_ffff || value < -0x8000_0000) throw NOT_HOT;
}

export function checkUint32(value: number): void {
  if (!Number.isInteger(value) || value > 0xffff_ffff || value < 0) throw NOT_HOT;
}

export function checkUint64(value: number): void {
  if (!Number.isSafeInteger(value) || value < 0) throw NOT_HOT;
}

export function varintSize(value: number): number {
  let size = 1;
  while (value >= 0x80) {
    value = Math.floor(value / 0x80);
    size += 1;
  }
  return size;
}

/** A negative int32 is written as its 64-bit two's complement: ten bytes. */
export function int32Size(value: number): number {
  checkInt32(value);
  return value < 0 ? 10 : varintSize(value);
}

export function int32FieldSize(value: number): number {
  const size = int32Size(value);
  return value === 0 ? 0 : 1 + size;
}

export function uint32FieldSize(value: number): number {
  checkUint32(value);
  return value === 0 ? 0 : 1 + varintSize(value);
}

export function bytesFieldSize(bytes: Uint8Array | string): number {
  const length = typeof bytes === 'string' ? bytes.length : bytes.byteLength;
  return length === 0 ? 0 : 1 + varintSize(length) + length;
}

/**
 * Control parts are cut from a shared slab: a typed array of more than 64 bytes is allocated outside V8's heap at
 * about a microsecond each, as long as encoding the whole message. Every byte of a cut is written before it is used.
 */
const SLAB_BYTES = 64 * 1024;
let slab = new Uint8Array(SLAB_BYTES);
let slabUsed = 0;

export function controlBytes(size: number): Uint8Array {
  if (size > SLAB_BYTES / 16) return new Uint8Array(size);
  if (slabUsed + size > SLAB_BYTES) {
    slab = new Uint8Array(SLAB_BYTES);
    slabUsed = 0;
  }
  const bytes = slab.subarray(slabUsed, slabUsed + size);
  slabUsed += size;
  return bytes;
}

export class Output {
  readonly bytes: Uint8Array;
  pos = 0;

  constructor(size: number) {
    this.bytes = controlBytes(size);
  }

  tag(field: number, type: WireType): void {
    this.varint((field << 3) | type);
  }

  varint(value: number): void {
    const bytes = this.bytes;
    while (value >= 0x80) {
      bytes[this.pos++] = (value % 0x80) | 0x80;
      value = Math.floor(value / 0x80);
    }
    bytes[this.pos++] = value;
  }

  int32(value: number): void {
    if (value >= 0) {
      this.varint(value);
      return;
    }
    // Sign-extended to 64 bits: the low 32 bits in five groups of seven, then 1s up to the tenth byte.
    let low = value >>> 0;
    const bytes = this.bytes;
    for (let i = 0; i < 4; i += 1) {
      bytes[this.pos++] = (low & 0x7f) | 0x80;
      low >>>= 7;
    }
    bytes[this.pos++] = low | 0x70 | 0x80; // bits 28-31, then four 1s of the high word
    for (let i = 0; i < 4; i += 1) bytes[this.pos++] = 0xff;
    bytes[this.pos++] = 0x01;
  }

  int32Field(field: number, value: number): void {
    if (value === 0) return;
    this.tag(field, WireType.Varint);
    this.int32(value);
  }

  uint32Field(field: number, value: number): void {
    if (value === 0) return;
    this.tag(field, WireType.Varint);
    this.varint(value);
  }

  /** A nested message's tag and length; its fields follow. */
  nested(field: number, size: number): void {
    this.tag(field, WireType.LengthDelimited);
    this.varint(size);
  }

  /** An int64/uint64 field known not to be negative (uint64FieldSize checked it); absent when 0. */
  uint64Field(field: number, value: number): void {
    if (value === 0) return;
    this.tag(field, WireType.Varint);
    this.varint(value);
  }

  varintField(field: number, value: number): void {
    this.tag(field, WireType.Varint);
    this.varint(value);
  }

  bytesField(field: number, value: Uint8Array | string): void {
    const length = typeof value === 'string' ? value.length : value.byteLength;
    if (length === 0) return;
    this.element(field, value);
  }

  /** A repeated string's element: written even when empty. */
  element(field: number, value: Uint8Array | string): void {
    const length = typeof value === 'string' ? value.length : value.byteLength;
    this.tag(field, WireType.LengthDelimited);
    this.varint(length);
    if (typeof value === 'string') {
      const bytes = this.bytes;
      for (let i = 0; i < length; i += 1) bytes[this.pos++] = value.charCodeAt(i);
    } else {
      this.bytes.set(value, this.pos);
      this.pos += length;
    }
  }
}

export function named<T extends string>(names: readonly (T | undefined)[], number: number): T {
  const name = names[number];
  if (name === undefined) throw NOT_HOT; // the schema's decoder names the field and the value it refuses
  return name;
}

/** A message body: its size, known before it is written (a nested message's length comes before it). */
export interface BodyWriter {
  readonly size: number;
  write(out: Output): void;
  /**
   * The body's last bytes, already encoded and shared (./file-group-codec.ts): counted in `size` but not written by
   * `write`; the frame carries them as a piece of their own instead of a copy.
   */
  readonly tail?: Uint8Array;
}

/** An int64 or uint64 field (not negative: a negative int64 is left to the schema's codec), absent when 0. */
export function uint64FieldSize(value: number): number {
  checkUint64(value);
  return value === 0 ? 0 : 1 + varintSize(value);
}

/** An element of a repeated string or a nested message: written even when empty, unlike a singular field. */
export function elementSize(length: number): number {
  return 1 + varintSize(length) + length;
}

export function textLength(text: Uint8Array | string): number {
  return typeof text === 'string' ? text.length : text.byteLength;
}

/**
 * A field's tag as one number, `field number << 3 | wire type`: what BinaryReader's `tag()` reads, with its checks,
 * without the pair it allocates. The hand decoders read about five tags per batch of a merged push (a worker
 * decoding 4 KiB batches made some 240 bytes of pairs per batch) and five per entry of a 10,000-entry message.
 */
export function readTag(reader: BinaryReader): number {
  const start = reader.pos;
  const tag = reader.uint32();
  const bytesRead = reader.pos - start;
  // tag() also refuses a fifth byte above 0x0f, which the reader's bytes would be needed for: such a tag reads as
  // the low 32 bits, names no field a hand decoder knows and is refused or skipped as an unknown one.
  if (bytesRead > 5) throw new Error('illegal tag: varint overflows uint32');
  if (tag >>> 3 === 0 || (tag & 7) > 5)
    throw new Error(`illegal tag: field no ${tag >>> 3} wire type ${tag & 7}`);
  return tag;
}

/** The wire type of a tag `readTag` read (its field number is `tag >>> 3`). */
export function wireTypeOf(tag: number): WireType {
  return tag & 7;
}
