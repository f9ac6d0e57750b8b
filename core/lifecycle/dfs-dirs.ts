import { parseShuffleKey } from '../domain/index.ts';
import type { ApplicationRegistry } from './applications.ts';

/**
 * Which directories of the distributed tier the master removes (reference: checkAndCleanExpiredAppDirsOnDFS, every
 * `svc.master.dfs.expireDirs.timeout`): a shuffle's directory (`<appId>-<shuffleId>`, where workers write its DFS
 * files) whose application the master no longer has, expired or lost. Workers delete the files of the shuffles they
 * hold when those end; this removes what no worker will: the files of workers gone for good, and the directories
 * left behind. A name that is not a shuffle's directory is never touched.
 *
 * The driver lists the directory before it reads the registry: a directory listed exists only once its shuffle was
 * registered, so an application that is running is in the registry read after it.
 */
export function expiredDfsDirs(names: readonly string[], applications: ApplicationRegistry): string[] {
  return names.filter((name) => {
    let appId: string;
    try {
      appId = parseShuffleKey(name).appId;
    } catch {
      return false;
    }
    return !applications.apps.has(appId);
  });
}
