/**
 * The readable record of a run: one line per event, each stamped with virtual time. Formatting costs more than
 * simulating, so lines are only built when tracing is on; counters (from metric and log effects) are always kept
 * because invariants and the summary read them.
 */
export class Trace {
  private readonly lines: string[] = [];
  readonly counters = new Map<string, number>();

  constructor(readonly enabled: boolean) {}

  /** Records a line; callers check `enabled` first when building `text` is not free. */
  line(time: number, node: string, text: string): void {
    if (this.enabled) this.lines.push(`${formatTime(time)} ${node.padEnd(14)} ${text}`);
  }

  count(name: string, by = 1): void {
    this.counters.set(name, (this.counters.get(name) ?? 0) + by);
  }

  set(name: string, value: number): void {
    this.counters.set(name, value);
  }

  text(): string {
    return this.lines.length === 0 ? '' : `${this.lines.join('\n')}\n`;
  }
}

/** `12.345s` style stamps of virtual time (ms) with fixed width, so traces line up and diff well. */
export function formatTime(ms: number): string {
  return `${(ms / 1000).toFixed(3).padStart(10)}s`;
}

/** Compact, stable rendering of a message or field set for the trace (keys in insertion order). */
export function describe(value: unknown, depth = 0): string {
  if (value === null || value === undefined) return String(value);
  if (typeof value === 'string') return JSON.stringify(value);
  if (typeof value === 'number' || typeof value === 'boolean' || typeof value === 'bigint')
    return String(value);
  if (value instanceof Uint8Array) return `<${value.length} bytes>`;
  if (depth >= 3) return '…';
  if (Array.isArray(value)) {
    const items = value.slice(0, 6).map((item) => describe(item, depth + 1));
    return `[${items.join(',')}${value.length > 6 ? `,…+${value.length - 6}` : ''}]`;
  }
  if (value instanceof Map) {
    return `Map(${value.size})`;
  }
  if (value instanceof Set) {
    return `Set(${value.size})`;
  }
  if (typeof value === 'object') {
    const entries = Object.entries(value as Record<string, unknown>)
      .filter(([, v]) => v !== undefined)
      .map(([k, v]) => `${k}=${describe(v, depth + 1)}`);
    return `{${entries.join(' ')}}`;
  }
  return typeof value;
}
