// How the demo writes sizes, times and rates.

export function mib(bytes: number): string {
  return `${(bytes / 2 ** 20).toFixed(1)} MiB`;
}

/** `1 GiB`, `256 MiB`, `8 KiB` when exact, else MiB with one decimal. */
export function size(bytes: number): string {
  for (const [unit, factor] of [
    ['GiB', 2 ** 30],
    ['MiB', 2 ** 20],
    ['KiB', 2 ** 10],
  ] as const) {
    if (bytes >= factor && bytes % factor === 0) return `${bytes / factor} ${unit}`;
  }
  return bytes >= 2 ** 20 ? mib(bytes) : `${bytes} B`;
}

export function seconds(ms: number): string {
  return `${(ms / 1000).toFixed(1)} s`;
}

export function throughput(bytes: number, ms: number): string {
  return ms > 0 ? `${(bytes / 2 ** 20 / (ms / 1000)).toFixed(1)} MiB/s` : '∞ MiB/s';
}
