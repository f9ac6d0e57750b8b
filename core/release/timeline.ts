import { compareReleases, KNOWN_RELEASES, type Release } from './version.ts';

/** The oldest release the history covers. Behaviour before it is unknown to svc, so lookups refuse it. */
export const OLDEST_RELEASE: Release = KNOWN_RELEASES[0];

/** A row of a history table that holds from `since` until the next row's `since`. */
export interface Since {
  readonly since: Release;
}

/**
 * The row of `rows` (oldest first, the first starting at OLDEST_RELEASE) in effect at `release`. A release after
 * the newest row gets the newest row: nothing changed since that svc knows of.
 */
export function inEffectAt<Rows extends readonly [Since, ...Since[]]>(
  rows: Rows,
  release: Release,
): Rows[number] {
  assertWithinHistory(release);
  let current: Rows[number] = rows[0];
  for (const row of rows) {
    if (compareReleases(row.since, release) <= 0) current = row;
  }
  return current;
}

/** Throws for a release older than the history, whose rules svc cannot know. */
export function assertWithinHistory(release: Release): void {
  if (compareReleases(release, OLDEST_RELEASE) < 0) {
    throw new RangeError(
      `release ${release} predates the release history, which starts at ${OLDEST_RELEASE}; ` +
        `svc does not know its rules (use ${OLDEST_RELEASE} or later)`,
    );
  }
}
