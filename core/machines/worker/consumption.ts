import { isDfsType, type AppId } from '../../domain/index.ts';
import type { AppConsumption } from '../../quota/index.ts';
import type { WorkerMachineState } from './state.ts';

/**
 * What each application holds in this worker's live partition files, for the heartbeat: the master sums the
 * workers' reports per user and decides quotas from them (core/quota). A file on a distributed tier counts as
 * hdfs, every other (local disks, memory) as disk. Applications in the order of their first shuffle.
 */
export function appConsumption(s: WorkerMachineState): AppConsumption[] {
  const byApp = new Map<AppId, { -readonly [K in keyof AppConsumption]: AppConsumption[K] }>();
  for (const shuffle of s.shuffles.values()) {
    let entry = byApp.get(shuffle.appId);
    for (const file of shuffle.files.values()) {
      if (entry === undefined) {
        entry = {
          appId: shuffle.appId,
          diskBytesWritten: 0,
          diskFileCount: 0,
          hdfsBytesWritten: 0,
          hdfsFileCount: 0,
        };
        byApp.set(shuffle.appId, entry);
      }
      if (isDfsType(file.file.tier)) {
        entry.hdfsBytesWritten += file.bytes;
        entry.hdfsFileCount += 1;
      } else {
        entry.diskBytesWritten += file.bytes;
        entry.diskFileCount += 1;
      }
    }
  }
  return [...byApp.values()];
}
