/**
 * The value forms of configuration keys: how a text value of each type is parsed, and how a parsed value is written
 * back. Parsing never guesses: a value that does not fit its type is refused with the form that was expected.
 */

export const VALUE_TYPES = ['bytes', 'time', 'int', 'double', 'boolean', 'string', 'enum', 'list'] as const;
export type ValueType = (typeof VALUE_TYPES)[number];

/** A parsed value: bytes and int are numbers, time is milliseconds, list is its items. */
export type ConfigValue = number | boolean | string | readonly string[];

export type Parsed<T> =
  { readonly ok: true; readonly value: T } | { readonly ok: false; readonly expected: string };

/** What a key accepts beyond its type. */
export interface ValueShape {
  readonly type: ValueType;
  /** The accepted names of an enum, or of each item of a list of names. Matched case-insensitively. */
  readonly values?: readonly string[];
  /** Smallest accepted number (int, double, bytes, time). */
  readonly min?: number;
  /** Largest accepted number (int, double). */
  readonly max?: number;
  /** Whether `unlimited` (or the reference's Long.MAX_VALUE) is accepted; it reads as Infinity. */
  readonly unlimited?: boolean;
}

/** The reference writes "no limit" as Java's Long.MAX_VALUE; it reads as `unlimited`. */
const JAVA_LONG_MAX = '9223372036854775807';

const BYTE_UNITS: Readonly<Record<string, number>> = {
  b: 1,
  k: 2 ** 10,
  kb: 2 ** 10,
  m: 2 ** 20,
  mb: 2 ** 20,
  g: 2 ** 30,
  gb: 2 ** 30,
  t: 2 ** 40,
  tb: 2 ** 40,
  p: 2 ** 50,
  pb: 2 ** 50,
};

const TIME_UNITS_MS: Readonly<Record<string, number>> = {
  ms: 1,
  s: 1000,
  m: 60_000,
  min: 60_000,
  h: 3_600_000,
  d: 86_400_000,
};

const ok = <T>(value: T): Parsed<T> => ({ ok: true, value });
const refused = <T>(expected: string): Parsed<T> => ({ ok: false, expected });

/** How a value of `shape` is written, for error messages and docs. */
export function expectedForm(shape: ValueShape): string {
  const limit = shape.unlimited ? ', or unlimited' : '';
  switch (shape.type) {
    case 'bytes':
      return `a byte size: a whole number with an optional unit b, k, m, g, t or p (for example 64k, 8m, 1g; a bare number is bytes)${limit}`;
    case 'time':
      return 'a duration: a whole number with a unit ms, s, min (or m), h or d (for example 500ms, 10s, 5min, 1h; a bare number is milliseconds)';
    case 'int':
      return `a whole number${rangeText(shape)}${limit}`;
    case 'double':
      return `a decimal number${rangeText(shape)}`;
    case 'boolean':
      return 'true or false';
    case 'string':
      return 'text';
    case 'enum':
      return `one of ${(shape.values ?? []).join(', ')}`;
    case 'list':
      return shape.values === undefined
        ? 'a comma-separated list'
        : `a comma-separated list of ${shape.values.join(', ')}`;
  }
}

function rangeText(shape: ValueShape): string {
  if (shape.min !== undefined && shape.max !== undefined) return ` from ${shape.min} to ${shape.max}`;
  if (shape.min !== undefined) return ` of at least ${shape.min}`;
  if (shape.max !== undefined) return ` of at most ${shape.max}`;
  return '';
}

/** Parses `text` as a value of `shape`. */
export function parseValue(text: string, shape: ValueShape): Parsed<ConfigValue> {
  const trimmed = text.trim();
  if (shape.unlimited && isUnlimited(trimmed)) return ok(Number.POSITIVE_INFINITY);
  const parsed = parseByType(trimmed, shape);
  if (!parsed.ok) return refused(expectedForm(shape));
  if (typeof parsed.value === 'number' && !withinRange(parsed.value, shape))
    return refused(expectedForm(shape));
  return parsed;
}

function isUnlimited(text: string): boolean {
  return text.toLowerCase() === 'unlimited' || text === JAVA_LONG_MAX;
}

function withinRange(value: number, shape: ValueShape): boolean {
  return (shape.min === undefined || value >= shape.min) && (shape.max === undefined || value <= shape.max);
}

function parseByType(text: string, shape: ValueShape): Parsed<ConfigValue> {
  switch (shape.type) {
    case 'bytes':
      return parseBytes(text);
    case 'time':
      return parseDurationMs(text);
    case 'int':
      return parseInteger(text);
    case 'double':
      return parseDecimal(text);
    case 'boolean':
      return parseBoolean(text);
    case 'string':
      return ok(text);
    case 'enum':
      return parseName(text, shape.values ?? []);
    case 'list':
      return parseList(text, shape.values);
  }
}

/** `64k` → 65536. Units are powers of 1024; a bare number is bytes. */
export function parseBytes(text: string): Parsed<number> {
  const match = /^(\d+)\s*([a-z]*)$/i.exec(text.trim());
  if (!match) return refused(expectedForm({ type: 'bytes' }));
  const factor = BYTE_UNITS[(match[2] ?? '').toLowerCase() || 'b'];
  if (factor === undefined) return refused(expectedForm({ type: 'bytes' }));
  return safeProduct(Number(match[1]), factor, 'bytes');
}

/** `5min` → 300000. A bare number is milliseconds. */
export function parseDurationMs(text: string): Parsed<number> {
  const match = /^(\d+)\s*([a-z]*)$/i.exec(text.trim());
  if (!match) return refused(expectedForm({ type: 'time' }));
  const factor = TIME_UNITS_MS[(match[2] ?? '').toLowerCase() || 'ms'];
  if (factor === undefined) return refused(expectedForm({ type: 'time' }));
  return safeProduct(Number(match[1]), factor, 'time');
}

function safeProduct(amount: number, factor: number, type: 'bytes' | 'time'): Parsed<number> {
  const value = amount * factor;
  return Number.isSafeInteger(value) ? ok(value) : refused(`${expectedForm({ type })}, below 2^53`);
}

function parseInteger(text: string): Parsed<number> {
  if (!/^[+-]?\d+$/.test(text)) return refused(expectedForm({ type: 'int' }));
  const value = Number(text);
  return Number.isSafeInteger(value) ? ok(value) : refused(expectedForm({ type: 'int' }));
}

function parseDecimal(text: string): Parsed<number> {
  if (!/^[+-]?(\d+\.?\d*|\.\d+)([eE][+-]?\d+)?$/.test(text)) return refused(expectedForm({ type: 'double' }));
  const value = Number(text);
  return Number.isFinite(value) ? ok(value) : refused(expectedForm({ type: 'double' }));
}

function parseBoolean(text: string): Parsed<boolean> {
  const lower = text.toLowerCase();
  if (lower === 'true') return ok(true);
  if (lower === 'false') return ok(false);
  return refused(expectedForm({ type: 'boolean' }));
}

function parseName(text: string, names: readonly string[]): Parsed<string> {
  const match = names.find((name) => name.toLowerCase() === text.toLowerCase());
  return match === undefined ? refused(expectedForm({ type: 'enum', values: names })) : ok(match);
}

function parseList(text: string, names: readonly string[] | undefined): Parsed<readonly string[]> {
  const items = text
    .split(',')
    .map((item) => item.trim())
    .filter((item) => item.length > 0);
  if (names === undefined) return ok(items);
  const canonical: string[] = [];
  for (const item of items) {
    const parsed = parseName(item, names);
    if (!parsed.ok) return refused(expectedForm({ type: 'list', values: names }));
    canonical.push(parsed.value);
  }
  return ok(canonical);
}

/** 65536 → `64k`: the largest unit that divides the size exactly. */
export function formatBytes(bytes: number): string {
  if (bytes === Number.POSITIVE_INFINITY) return 'unlimited';
  for (const unit of ['p', 't', 'g', 'm', 'k'] as const) {
    const factor = BYTE_UNITS[unit]!;
    if (bytes !== 0 && bytes % factor === 0) return `${bytes / factor}${unit}`;
  }
  return `${bytes}b`;
}

/** 300000 → `5min`: the largest unit that divides the duration exactly. */
export function formatDurationMs(ms: number): string {
  for (const unit of ['d', 'h', 'min', 's'] as const) {
    const factor = TIME_UNITS_MS[unit]!;
    if (ms !== 0 && ms % factor === 0) return `${ms / factor}${unit}`;
  }
  return `${ms}ms`;
}

/** Writes a parsed value the way a user would write it in a properties file. */
export function formatValue(value: ConfigValue, type: ValueType): string {
  if (Array.isArray(value)) return value.join(',');
  if (typeof value === 'number') {
    if (value === Number.POSITIVE_INFINITY) return 'unlimited';
    if (type === 'bytes') return formatBytes(value);
    if (type === 'time') return formatDurationMs(value);
  }
  return String(value);
}
