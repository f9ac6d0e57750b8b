// Parts of the summary a run of many seeds prints (sim/cli.ts), kept apart so that they can be tested.

/** Seeds whose applications used memory without enabling it that a summary names; the rest are counted. */
export const MEMORY_SEEDS_LISTED = 50;

/** The applications of one seed that used memory without enabling it, one line each. */
export interface SeedFindings {
  readonly seed: number;
  readonly lines: readonly string[];
}

/**
 * Adds `entry` to `kept`, which holds at most `most` entries, those of the lowest seeds, in seed order: results
 * arrive from a pool in an order of their own, and the summary should not depend on it.
 */
export function keepLowestSeeds<T extends { readonly seed: number }>(
  kept: T[],
  entry: T,
  most: number,
): void {
  const at = kept.findIndex((other) => other.seed > entry.seed);
  if (at < 0) {
    if (kept.length < most) kept.push(entry);
    return;
  }
  kept.splice(at, 0, entry);
  if (kept.length > most) kept.pop();
}

/**
 * The applications whose data went to memory without their enabling it (contract rule 4), by seed: what the
 * contract warns operators about, so a run names them rather than only counting them. A long run lists those of
 * its lowest seeds and counts the rest.
 */
export function describeMemoryFindings(found: readonly SeedFindings[], total: number): string[] {
  if (total === 0) return [];
  const shown = found.reduce((sum, entry) => sum + entry.lines.length, 0);
  return [
    `memory without enabling (contract rule 4, reported, not a failure): ${total} application(s)`,
    ...found.flatMap(({ seed, lines }) => lines.map((line) => `  seed ${seed}: ${line}`)),
    ...(shown < total
      ? [`  ... and ${total - shown} more in higher seeds (replay one with --seed N to see its notes)`]
      : []),
  ];
}
