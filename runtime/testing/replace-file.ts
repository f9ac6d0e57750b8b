import { renameSync, writeFileSync } from 'node:fs';

/**
 * Replaces a file a running server re-reads (its dynamic configuration) the way an operator should: written beside
 * it, then renamed over it, so that a read never sees it half-written.
 */
export function replaceFile(file: string, text: string): void {
  const next = `${file}.next`;
  writeFileSync(next, text);
  renameSync(next, file);
}
