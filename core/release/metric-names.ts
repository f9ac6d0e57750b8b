import { assertWithinHistory, OLDEST_RELEASE } from './timeline.ts';
import { isAtLeast, type Release } from './version.ts';

/** The roles whose metrics were renamed (contract section 9.4). */
export type MetricRole = 'master' | 'worker';

export interface MetricRename {
  readonly release: Release;
  readonly role: MetricRole;
  readonly before: string;
  readonly after: string;
}

/** Contract section 9.4, oldest first. */
export const METRIC_RENAMES: readonly MetricRename[] = [
  { release: '0.3.0', role: 'master', before: 'BlacklistedWorkerCount', after: 'ExcludedWorkerCount' },
  { release: '0.3.0', role: 'worker', before: 'MasterPushDataTime', after: 'PrimaryPushDataTime' },
  {
    release: '0.3.0',
    role: 'worker',
    before: 'MasterPushDataHandshakeTime',
    after: 'PrimaryPushDataHandshakeTime',
  },
  { release: '0.3.0', role: 'worker', before: 'MasterRegionStartTime', after: 'PrimaryRegionStartTime' },
  { release: '0.3.0', role: 'worker', before: 'MasterRegionFinishTime', after: 'PrimaryRegionFinishTime' },
  { release: '0.3.0', role: 'worker', before: 'SlavePushDataTime', after: 'ReplicaPushDataTime' },
  {
    release: '0.3.0',
    role: 'worker',
    before: 'SlavePushDataHandshakeTime',
    after: 'ReplicaPushDataHandshakeTime',
  },
  { release: '0.3.0', role: 'worker', before: 'SlaveRegionStartTime', after: 'ReplicaRegionStartTime' },
  { release: '0.3.0', role: 'worker', before: 'SlaveRegionFinishTime', after: 'ReplicaRegionFinishTime' },
  { release: '0.4.0', role: 'master', before: 'PartitionWritten', after: 'ActiveShuffleSize' },
  { release: '0.4.0', role: 'master', before: 'PartitionFileCount', after: 'ActiveShuffleFileCount' },
  { release: '0.5.0', role: 'master', before: 'LostWorkers', after: 'LostWorkerCount' },
  { release: '0.5.0', role: 'worker', before: 'ChunkStreamCount', after: 'ActiveChunkStreamCount' },
  { release: '0.5.0', role: 'worker', before: 'CreditStreamCount', after: 'ActiveCreditStreamCount' },
];

/** One name of a metric and the first release that used it. */
export interface MetricNameEra {
  readonly name: string;
  readonly since: Release;
}

/**
 * Every name the metric called `name` (current or any older name) has had on `role`, oldest first. A metric that
 * was never renamed has one era, its own name since the start of the history.
 */
export function metricNameHistory(name: string, role: MetricRole): readonly MetricNameEra[] {
  const renames = METRIC_RENAMES.filter((rename) => rename.role === role);
  let oldest = name;
  for (let previous = renames.find((r) => r.after === oldest); previous;) {
    oldest = previous.before;
    previous = renames.find((r) => r.after === oldest);
  }
  const eras: MetricNameEra[] = [{ name: oldest, since: OLDEST_RELEASE }];
  for (let next = renames.find((r) => r.before === oldest); next;) {
    eras.push({ name: next.after, since: next.release });
    const current = next.after;
    next = renames.find((r) => r.before === current);
  }
  return eras;
}

/**
 * The name of metric `name` on `role` as of `release`. `name` may be the current name or any older one; a metric
 * that was never renamed keeps its name. Example: metricName('LostWorkerCount', 'master', '0.4.0') is
 * 'LostWorkers'.
 */
export function metricName(name: string, role: MetricRole, release: Release): string {
  assertWithinHistory(release);
  let inEffect = name;
  for (const era of metricNameHistory(name, role)) {
    if (isAtLeast(release, era.since)) inEffect = era.name;
  }
  return inEffect;
}
