/**
 * Releases of the contract. A node or client always has a release; behaviour that changed between releases is looked
 * up in the history tables of core/release/ by release, never decided by an `if` on a version elsewhere.
 */
export type Release = `${number}.${number}.${number}`;

/** Every release the contract documents, oldest first. */
export const KNOWN_RELEASES = [
  '0.2.0',
  '0.2.1',
  '0.3.0',
  '0.3.1',
  '0.3.2',
  '0.4.0',
  '0.4.1',
  '0.5.0',
  '0.5.1',
  '0.6.0',
] as const satisfies readonly Release[];

/** The release svc itself implements. */
export const CURRENT_RELEASE: Release = '0.6.0';

/** Parses `0.3`, `0.3.1` or `v0.3.1`; throws with the accepted form on anything else. */
export function parseRelease(text: string): Release {
  const match = /^v?(\d+)\.(\d+)(?:\.(\d+))?$/.exec(text.trim());
  if (!match)
    throw new RangeError(`'${text}' is not a release; expected major.minor[.patch], for example 0.5.1`);
  return `${Number(match[1])}.${Number(match[2])}.${Number(match[3] ?? 0)}`;
}

/**
 * Parsed releases, by their text. Releases are compared on every admitted message, so each is split once. Bounded,
 * because a release can arrive from the wire: past the bound, further releases are parsed afresh each time.
 */
const PARSED = new Map<Release, readonly [number, number, number]>();
const MAX_PARSED = 1_024;

function parts(release: Release): readonly [number, number, number] {
  const cached = PARSED.get(release);
  if (cached !== undefined) return cached;
  const [major, minor, patch] = release.split('.').map(Number);
  const parsed = [major ?? 0, minor ?? 0, patch ?? 0] as const;
  if (PARSED.size < MAX_PARSED) PARSED.set(release, parsed);
  return parsed;
}

/** Negative when a < b, zero when equal, positive when a > b. */
export function compareReleases(a: Release, b: Release): number {
  if (a === b) return 0;
  const pa = parts(a);
  const pb = parts(b);
  for (let i = 0; i < 3; i += 1) {
    const diff = pa[i]! - pb[i]!;
    if (diff !== 0) return diff;
  }
  return 0;
}

export function isAtLeast(release: Release, since: Release): boolean {
  return compareReleases(release, since) >= 0;
}

/** `0.5.1` → `0.5`: the line a release belongs to. */
export function releaseLine(release: Release): string {
  const [major, minor] = parts(release);
  return `${major}.${minor}`;
}
