import { readdirSync, type Dirent } from 'node:fs';
import path from 'node:path';

/** Lists a directory's entries; ENOENT when it is gone. */
export type ListDirectory = (dir: string) => Dirent[];

const listDirectory: ListDirectory = (dir) => readdirSync(dir, { withFileTypes: true });

/**
 * The files under `dir`, walked a directory at a time. The chaos soak and the tests of files left look while the
 * workers delete (they wait for them to), so a directory its parent listed may be gone when it is read:
 * `readdirSync`'s own recursion threw ENOENT then, and ended a CI soak whose every check had passed. A directory gone
 * meanwhile, or never there, holds no files.
 */
export function filesUnder(dir: string, list: ListDirectory = listDirectory): string[] {
  let entries: Dirent[];
  try {
    entries = list(dir);
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code === 'ENOENT') return [];
    throw error;
  }
  return entries.flatMap((entry) => {
    const child = path.join(dir, entry.name);
    if (entry.isDirectory()) return filesUnder(child, list);
    return entry.isFile() ? [child] : [];
  });
}
