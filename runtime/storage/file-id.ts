import { IoFailure } from './io-error.ts';

/**
 * Checks that a file id is a canonical relative path (`<shuffleKey>/<fileName>` or a bare name) and returns its
 * segments. An id naming `..`, an absolute path or a NUL would reach outside its tier's directory; an empty or `.`
 * segment would give one file two ids, and the per-file ordering is keyed by id, so those are refused as well.
 */
export function fileIdSegments(id: string): string[] {
  if (!isPlainFileId(id)) throw unsafe(id);
  return id.split('/');
}

/**
 * Whether `fileIdSegments` accepts the id, in one pass that builds nothing: a memory-tier file needs the check but
 * not the segments, and a shuffle of 10,000 partitions creates 10,000 of them in one step.
 */
export function isPlainFileId(id: string): boolean {
  let segmentStart = 0;
  for (let i = 0; i <= id.length; i += 1) {
    const code = i === id.length ? SLASH : id.charCodeAt(i);
    if (code === NUL) return false;
    if (code !== SLASH) continue;
    const length = i - segmentStart;
    if (length === 0) return false; // empty id, leading `/`, `//` or a trailing `/`
    if (length <= 2 && id.charCodeAt(segmentStart) === DOT && (length === 1 || id.charCodeAt(i - 1) === DOT))
      return false; // `.` or `..`
    segmentStart = i + 1;
  }
  return true;
}

function unsafe(id: string): IoFailure {
  return new IoFailure(
    'IO_ERROR',
    `file id ${JSON.stringify(id)} is not a plain relative path inside its tier`,
  );
}

const NUL = 0;
const SLASH = 0x2f;
const DOT = 0x2e;
