// The releases the contract speaks of, and how the suite compares them. Written here, not imported from
// core/release: the suite is an independent oracle (conformance/README.md).

/** Every release the contract's history names (0.2.1 and 0.5.1 are patch releases the tables imply). */
export const CONTRACT_RELEASES = [
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
] as const;

/** `npm run conformance`: one cluster per minor release, 0.2.0 to 0.6.0. */
export const STANDARD_MATRIX = ['0.2.0', '0.3.2', '0.4.1', '0.5.1', '0.6.0'] as const;

/** CI's reduced matrix: the oldest release, the one that renamed most names, and the current one. */
export const REDUCED_MATRIX = ['0.2.0', '0.4.0', '0.6.0'] as const;

function parts(release: string): [number, number, number] {
  const match = /^(\d+)\.(\d+)(?:\.(\d+))?$/.exec(release.trim());
  if (match === null) throw new RangeError(`'${release}' is not a release (major.minor[.patch])`);
  return [Number(match[1]), Number(match[2]), Number(match[3] ?? 0)];
}

/** Negative, zero or positive as `a` is older than, the same as or newer than `b`. */
export function compareReleases(a: string, b: string): number {
  const [x, y] = [parts(a), parts(b)];
  for (let i = 0; i < 3; i += 1) if (x[i] !== y[i]) return (x[i] ?? 0) - (y[i] ?? 0);
  return 0;
}

export function atLeast(release: string, since: string): boolean {
  return compareReleases(release, since) >= 0;
}

/** `x.y.z` for `x.y` or `x.y.z`. */
export function normalRelease(release: string): string {
  return parts(release).join('.');
}
