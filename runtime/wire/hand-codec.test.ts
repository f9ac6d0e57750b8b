import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { BinaryReader } from '@bufbuild/protobuf/wire';
import fc from 'fast-check';
import { readTag } from './hand-codec.ts';

/** What BinaryReader's own tag() makes of the bytes: the tag as one number and where it stops, or that it throws. */
function schemaTag(bytes: Uint8Array): { tag: number; pos: number } | 'throws' {
  const reader = new BinaryReader(bytes);
  try {
    const [fieldNo, wireType] = reader.tag();
    return { tag: fieldNo * 8 + wireType, pos: reader.pos };
  } catch {
    return 'throws';
  }
}

function handTag(bytes: Uint8Array): { tag: number; pos: number } | 'throws' {
  const reader = new BinaryReader(bytes);
  try {
    return { tag: readTag(reader), pos: reader.pos };
  } catch {
    return 'throws';
  }
}

describe('readTag', () => {
  it('reads every tag BinaryReader.tag() reads, to the same position, and refuses what it refuses', () => {
    // Varints of one to six bytes, the fifth's high bits aside (tag() looks at them, readTag does not: its doc).
    const varintBytes = fc
      .array(fc.integer({ min: 0, max: 255 }), { minLength: 1, maxLength: 7 })
      .filter(
        (bytes) => !(bytes.length >= 5 && bytes.slice(0, 4).every((b) => b >= 0x80) && bytes[4]! > 0x0f),
      );
    fc.assert(
      fc.property(varintBytes, (bytes) => {
        const input = Uint8Array.from(bytes);
        assert.deepEqual(handTag(input), schemaTag(input));
      }),
      { numRuns: 5000 },
    );
  });

  it('refuses field number 0 and the wire types 6 and 7, as the schema reader does', () => {
    for (const tag of [0, 2, 6, 7, 14, 15]) {
      const input = Uint8Array.of(tag);
      assert.equal(handTag(input), 'throws', `tag byte ${tag}`);
      assert.equal(schemaTag(input), 'throws', `tag byte ${tag}`);
    }
    assert.deepEqual(handTag(Uint8Array.of(0x2a)), { tag: 0x2a, pos: 1 }); // field 5, length-delimited
  });
});
