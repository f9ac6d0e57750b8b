// Contract section 9.4 as data: each metric renamed, by role and release. The exported series is
// `metrics_<Name>_<Suffix>` (gauges `_Value`, counters and timers `_Count`, ...); the suite matches the name part.
import type { Role } from './endpoints.ts';

export interface MetricRename {
  readonly release: string;
  readonly role: Role;
  readonly before: string;
  readonly after: string;
  /**
   * What the metric measures, where a deployment may lack it altogether: a row that finds neither name says why
   * (the map-partition metrics exist only where the map-partition type does).
   */
  readonly measures?: string;
}

const MAP_PARTITION =
  'the map-partition type (credit streams, regions, push handshakes); a deployment without that type has no source for it';

export const METRIC_RENAMES: readonly MetricRename[] = [
  { release: '0.5.0', role: 'master', before: 'LostWorkers', after: 'LostWorkerCount' },
  { release: '0.5.0', role: 'worker', before: 'ChunkStreamCount', after: 'ActiveChunkStreamCount' },
  {
    release: '0.5.0',
    role: 'worker',
    before: 'CreditStreamCount',
    after: 'ActiveCreditStreamCount',
    measures: MAP_PARTITION,
  },
  { release: '0.4.0', role: 'master', before: 'PartitionWritten', after: 'ActiveShuffleSize' },
  { release: '0.4.0', role: 'master', before: 'PartitionFileCount', after: 'ActiveShuffleFileCount' },
  { release: '0.3.0', role: 'master', before: 'BlacklistedWorkerCount', after: 'ExcludedWorkerCount' },
  { release: '0.3.0', role: 'worker', before: 'MasterPushDataTime', after: 'PrimaryPushDataTime' },
  {
    release: '0.3.0',
    role: 'worker',
    before: 'MasterPushDataHandshakeTime',
    after: 'PrimaryPushDataHandshakeTime',
    measures: MAP_PARTITION,
  },
  {
    release: '0.3.0',
    role: 'worker',
    before: 'MasterRegionStartTime',
    after: 'PrimaryRegionStartTime',
    measures: MAP_PARTITION,
  },
  {
    release: '0.3.0',
    role: 'worker',
    before: 'MasterRegionFinishTime',
    after: 'PrimaryRegionFinishTime',
    measures: MAP_PARTITION,
  },
  { release: '0.3.0', role: 'worker', before: 'SlavePushDataTime', after: 'ReplicaPushDataTime' },
  {
    release: '0.3.0',
    role: 'worker',
    before: 'SlavePushDataHandshakeTime',
    after: 'ReplicaPushDataHandshakeTime',
    measures: MAP_PARTITION,
  },
  {
    release: '0.3.0',
    role: 'worker',
    before: 'SlaveRegionStartTime',
    after: 'ReplicaRegionStartTime',
    measures: MAP_PARTITION,
  },
  {
    release: '0.3.0',
    role: 'worker',
    before: 'SlaveRegionFinishTime',
    after: 'ReplicaRegionFinishTime',
    measures: MAP_PARTITION,
  },
];

/** Where the deployment serves its Prometheus text, unless told otherwise (`--metrics-path`). */
export const DEFAULT_METRICS_PATH = '/metrics/prometheus';
