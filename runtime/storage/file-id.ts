import { IoFailure } from './io-error.ts';

/**
 * Checks that a file id is a canonical relative path (`<shuffleKey>/<fileName>` or a bare name) and returns its
 * segments. An id naming `..`, an absolute path or a NUL would reach outside its tier's directory; an empty or `.`
 * segment would give one file two ids, and the per-file ordering is keyed by id, so those are refused as well.
 */
export function fileIdSegments(id: string): string[] {
  if (id.length === 0 || id.includes('\0') || id.startsWith('/')) throw unsafe(id);
  const segments = id.split('/');
  for (const segment of segments) {
    if (segment === '' || segment === '.' || segment === '..') throw unsafe(id);
  }
  return segments;
}

function unsafe(id: string): IoFailure {
  return new IoFailure(
    'IO_ERROR',
    `file id ${JSON.stringify(id)} is not a plain relative path inside its tier`,
  );
}
