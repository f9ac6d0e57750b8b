/**
 * The records a simulated map attempt writes. Each record names where it came from, so that when a reducer's output
 * is wrong the checker can say exactly how: a record missing, read twice, from a losing attempt, or from another
 * partition. Records of different attempts of one map differ only in the attempt, as a re-executed deterministic
 * task's output would if it were tagged.
 */
export interface RecordOrigin {
  readonly appId: string;
  readonly shuffleId: number;
  readonly mapId: number;
  readonly attemptId: number;
  readonly partitionId: number;
  readonly index: number;
}

const encoder = new TextEncoder();
const decoder = new TextDecoder();

export function recordKey(origin: RecordOrigin): string {
  return `${origin.appId}/s${origin.shuffleId}/m${origin.mapId}/t${origin.attemptId}/p${origin.partitionId}/r${origin.index}`;
}

/** The records of one map attempt: `perPartition[p]` records for partition p, each padded to `recordBytes`. */
export function mapRecords(
  base: Omit<RecordOrigin, 'partitionId' | 'index'>,
  perPartition: readonly number[],
  recordBytes: number,
): Uint8Array[][] {
  // Built byte by byte rather than through padded strings: every map attempt of a run makes its records here, and
  // an ASCII key is copied character by character (a TextEncoder call per record was ≈ 1 % of a seed).
  const prefix = `${base.appId}/s${base.shuffleId}/m${base.mapId}/t${base.attemptId}/p`;
  return perPartition.map((count, partitionId) => {
    const records: Uint8Array[] = [];
    for (let index = 0; index < count; index += 1) {
      const key = `${prefix}${partitionId}/r${index}`;
      if (key.length >= recordBytes || !isAscii(key)) {
        const encoded = encoder.encode(key);
        if (encoded.length >= recordBytes) {
          records.push(encoded);
          continue;
        }
        const record = new Uint8Array(recordBytes).fill(PAD);
        record.set(encoded);
        record[encoded.length] = BAR;
        records.push(record);
        continue;
      }
      const record = new Uint8Array(recordBytes).fill(PAD);
      for (let i = 0; i < key.length; i += 1) record[i] = key.charCodeAt(i);
      record[key.length] = BAR;
      records.push(record);
    }
    return records;
  });
}

function isAscii(text: string): boolean {
  for (let i = 0; i < text.length; i += 1) if (text.charCodeAt(i) > 0x7f) return false;
  return true;
}

const PAD = 'x'.charCodeAt(0);
const BAR = '|'.charCodeAt(0);

/** The record's key (its origin), whatever its padding. */
export function keyOf(record: Uint8Array): string {
  const text = decoder.decode(record);
  const bar = text.indexOf('|');
  return bar < 0 ? text : text.slice(0, bar);
}

/**
 * Compares a reducer's output with the records it must hold, as multisets. Returns undefined when they match, or a
 * description of the first differences (at most a few of each kind, to keep the report readable).
 */
export function compareOutput(output: Iterable<Uint8Array>, expected: readonly string[]): string | undefined {
  const want = new Map<string, number>();
  for (const key of expected) want.set(key, (want.get(key) ?? 0) + 1);
  const extra: string[] = [];
  const duplicated: string[] = [];
  for (const record of output) {
    const key = keyOf(record);
    const left = want.get(key);
    if (left === undefined) extra.push(key);
    else if (left === 0) duplicated.push(key);
    else want.set(key, left - 1);
  }
  const missing = [...want].filter(([, left]) => left > 0).map(([key]) => key);
  if (extra.length + duplicated.length + missing.length === 0) return undefined;
  const part = (label: string, keys: string[]) =>
    keys.length === 0
      ? []
      : [`${keys.length} ${label} (${keys.slice(0, 3).join(', ')}${keys.length > 3 ? ', …' : ''})`];
  return [
    ...part('missing', missing),
    ...part('read more than once', duplicated),
    ...part('not expected (losing attempt or another partition)', extra),
  ].join('; ');
}
