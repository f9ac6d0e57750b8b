import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import fc from 'fast-check';
import {
  formatBytes,
  formatDurationMs,
  formatValue,
  parseBytes,
  parseDurationMs,
  parseValue,
  type Parsed,
} from './values.ts';

function valueOf<T>(parsed: Parsed<T>): T {
  assert.ok(parsed.ok, parsed.ok ? '' : parsed.expected);
  return parsed.value;
}

describe('byte sizes', () => {
  it('reads units as powers of 1024 and a bare number as bytes', () => {
    assert.equal(valueOf(parseBytes('64k')), 65536);
    assert.equal(valueOf(parseBytes('8m')), 8 * 2 ** 20);
    assert.equal(valueOf(parseBytes('1g')), 2 ** 30);
    assert.equal(valueOf(parseBytes('1G')), 2 ** 30);
    assert.equal(valueOf(parseBytes('64mb')), 64 * 2 ** 20);
    assert.equal(valueOf(parseBytes('2t')), 2 * 2 ** 40);
    assert.equal(valueOf(parseBytes('512')), 512);
    assert.equal(valueOf(parseBytes('0b')), 0);
  });

  it('refuses anything else, saying what is expected', () => {
    for (const text of ['', '1.5g', '-1k', '12 parsecs', 'k', '1kk', '10x']) {
      const parsed = parseBytes(text);
      assert.equal(parsed.ok, false, text);
      assert.match(parsed.ok ? '' : parsed.expected, /byte size/);
    }
  });

  it('writes a size in the largest exact unit and reads it back', () => {
    fc.assert(
      fc.property(
        fc.integer({ min: 0, max: 2 ** 40 }),
        fc.constantFrom(1, 2 ** 10, 2 ** 20, 2 ** 30),
        (n, unit) => {
          const bytes = n * unit;
          fc.pre(Number.isSafeInteger(bytes));
          assert.equal(valueOf(parseBytes(formatBytes(bytes))), bytes);
        },
      ),
    );
    assert.equal(formatBytes(65536), '64k');
    assert.equal(formatBytes(1000), '1000b');
  });
});

describe('durations', () => {
  it('reads ms, s, min (or m), h and d, and a bare number as milliseconds', () => {
    assert.equal(valueOf(parseDurationMs('500ms')), 500);
    assert.equal(valueOf(parseDurationMs('10s')), 10_000);
    assert.equal(valueOf(parseDurationMs('5min')), 300_000);
    assert.equal(valueOf(parseDurationMs('5m')), 300_000);
    assert.equal(valueOf(parseDurationMs('1h')), 3_600_000);
    assert.equal(valueOf(parseDurationMs('2d')), 172_800_000);
    assert.equal(valueOf(parseDurationMs('250')), 250);
  });

  it('refuses fractions, negatives and unknown units', () => {
    for (const text of ['1.5s', '-1s', '10 parsecs', 's', '1y'])
      assert.equal(parseDurationMs(text).ok, false, text);
  });

  it('round-trips through its written form', () => {
    fc.assert(
      fc.property(fc.integer({ min: 0, max: 10 ** 12 }), (ms) => {
        assert.equal(valueOf(parseDurationMs(formatDurationMs(ms))), ms);
      }),
    );
    assert.equal(formatDurationMs(300_000), '5min');
    assert.equal(formatDurationMs(1500), '1500ms');
  });
});

describe('parseValue by type', () => {
  it('reads ints, doubles and booleans strictly', () => {
    assert.equal(valueOf(parseValue('42', { type: 'int' })), 42);
    assert.equal(valueOf(parseValue(' -3 ', { type: 'int' })), -3);
    assert.equal(parseValue('4.2', { type: 'int' }).ok, false);
    assert.equal(valueOf(parseValue('0.7', { type: 'double' })), 0.7);
    assert.equal(valueOf(parseValue('1e3', { type: 'double' })), 1000);
    assert.equal(parseValue('seven', { type: 'double' }).ok, false);
    assert.equal(valueOf(parseValue('TRUE', { type: 'boolean' })), true);
    assert.equal(valueOf(parseValue('false', { type: 'boolean' })), false);
    assert.equal(parseValue('yes', { type: 'boolean' }).ok, false);
  });

  it('checks ranges and says which', () => {
    const parsed = parseValue('1.5', { type: 'double', min: 0, max: 1 });
    assert.equal(parsed.ok, false);
    assert.match(parsed.ok ? '' : parsed.expected, /from 0 to 1/);
    assert.equal(parseValue('0', { type: 'int', min: 1 }).ok, false);
  });

  it('matches enum names case-insensitively and returns the canonical name', () => {
    assert.equal(
      valueOf(parseValue('loadaware', { type: 'enum', values: ['ROUNDROBIN', 'LOADAWARE'] })),
      'LOADAWARE',
    );
    const refused = parseValue('random', { type: 'enum', values: ['ROUNDROBIN', 'LOADAWARE'] });
    assert.equal(refused.ok, false);
    assert.equal(refused.ok ? '' : refused.expected, 'one of ROUNDROBIN, LOADAWARE');
  });

  it('splits lists on commas, trimming and dropping empty items, and checks named items', () => {
    assert.deepEqual(valueOf(parseValue(' a, b ,,c ', { type: 'list' })), ['a', 'b', 'c']);
    assert.deepEqual(valueOf(parseValue('', { type: 'list' })), []);
    assert.deepEqual(valueOf(parseValue('hdd,ssd', { type: 'list', values: ['HDD', 'SSD'] })), [
      'HDD',
      'SSD',
    ]);
    assert.equal(parseValue('HDD,TAPE', { type: 'list', values: ['HDD', 'SSD'] }).ok, false);
  });

  it('reads unlimited (and Long.MAX_VALUE) as Infinity only where allowed', () => {
    assert.equal(
      valueOf(parseValue('unlimited', { type: 'bytes', unlimited: true })),
      Number.POSITIVE_INFINITY,
    );
    assert.equal(
      valueOf(parseValue('9223372036854775807', { type: 'int', unlimited: true })),
      Number.POSITIVE_INFINITY,
    );
    assert.equal(parseValue('unlimited', { type: 'bytes' }).ok, false);
    assert.equal(formatValue(Number.POSITIVE_INFINITY, 'bytes'), 'unlimited');
  });

  it('writes every parsed value so that it parses back to the same value', () => {
    const shapes = [
      { type: 'bytes' },
      { type: 'time' },
      { type: 'int' },
      { type: 'boolean' },
      { type: 'list' },
    ] as const;
    const texts = fc.oneof(
      fc.integer({ min: 0, max: 2 ** 32 }).map((n) => `${n}k`),
      fc.integer({ min: 0, max: 10 ** 9 }).map((n) => `${n}s`),
      fc.integer({ min: -(10 ** 9), max: 10 ** 9 }).map(String),
      fc.constantFrom('true', 'false'),
      fc.array(fc.stringMatching(/^[a-z0-9/]{1,8}$/), { maxLength: 5 }).map((items) => items.join(',')),
    );
    fc.assert(
      fc.property(fc.constantFrom(...shapes), texts, (shape, text) => {
        const parsed = parseValue(text, shape);
        if (!parsed.ok) return;
        assert.deepEqual(valueOf(parseValue(formatValue(parsed.value, shape.type), shape)), parsed.value);
      }),
    );
  });
});
