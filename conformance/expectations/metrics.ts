// Contract section 9.4 as data: each metric renamed, by role and release. The exported series is
// `metrics_<Name>_<Suffix>` (gauges `_Value`, counters and timers `_Count`, ...); the suite matches the name part.
import type { Role } from './endpoints.ts';

export interface MetricRename {
  readonly release: string;
  readonly role: Role;
  readonly before: string;
  readonly after: string;
}

export const METRIC_RENAMES: readonly MetricRename[] = [
  { release: '0.5.0', role: 'master', before: 'LostWorkers', after: 'LostWorkerCount' },
  { release: '0.5.0', role: 'worker', before: 'ChunkStreamCount', after: 'ActiveChunkStreamCount' },
  { release: '0.5.0', role: 'worker', before: 'CreditStreamCount', after: 'ActiveCreditStreamCount' },
  { release: '0.4.0', role: 'master', before: 'PartitionWritten', after: 'ActiveShuffleSize' },
  { release: '0.4.0', role: 'master', before: 'PartitionFileCount', after: 'ActiveShuffleFileCount' },
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
];

/** Where the deployment serves its Prometheus text, unless told otherwise (`--metrics-path`). */
export const DEFAULT_METRICS_PATH = '/metrics/prometheus';
