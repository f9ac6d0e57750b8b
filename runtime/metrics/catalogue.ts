import { metricName, type MetricRole } from '../../core/release/metric-names.ts';
import {
  PROMETHEUS_SUFFIXES,
  prometheusMetricName,
  type PrometheusSuffix,
} from '../../core/release/prometheus.ts';
import type { Release } from '../../core/release/version.ts';

/**
 * Every metric a master or worker process exports, under its current (0.6.0) name: what kind it is, where its value
 * comes from, its labels beyond the static ones (`role`, `instance`, `svc.metrics.extraLabels`), and what it
 * means. docs/metrics.md is this table in prose; a test holds the two together.
 *
 * Kinds render as reference section 10.1 says: a counter as `metrics_<name>_Count`, a gauge as
 * `metrics_<name>_Value`, a timer or histogram as Count (counter) plus Max, Mean, Min and the 50th … 999th
 * percentiles (gauges) over a sliding window; timers are in milliseconds.
 */
export type MetricKind = 'counter' | 'gauge' | 'timer' | 'histogram';

/**
 * - `machine`: a `metric` effect of the role's core machine (`onMetric`).
 * - `state`: computed at scrape time from the machine's state (./projections.ts).
 * - `driver`: observed by the process around the machine (`observe…` functions, statfs of the disks).
 * - `process`: the Node.js process itself (event loop, memory).
 */
export type MetricSource = 'machine' | 'state' | 'driver' | 'process';

export interface MetricSpec {
  readonly role: MetricRole;
  /** The current name; older releases render the name in effect then (core/release/metric-names.ts). */
  readonly name: string;
  readonly kind: MetricKind;
  readonly source: MetricSource;
  /** Labels of its own, besides role, instance and the extra labels. */
  readonly labels?: readonly string[];
  readonly help: string;
}

const master = (
  name: string,
  kind: MetricKind,
  source: MetricSource,
  help: string,
  labels?: readonly string[],
): MetricSpec => ({ role: 'master', name, kind, source, help, ...(labels ? { labels } : {}) });

const worker = (
  name: string,
  kind: MetricKind,
  source: MetricSource,
  help: string,
  labels?: readonly string[],
): MetricSpec => ({ role: 'worker', name, kind, source, help, ...(labels ? { labels } : {}) });

const APP = ['applicationId'] as const;
const MOUNT = ['mountpoint'] as const;
const SERVICE = ['service'] as const;
const CAUSE = ['cause'] as const;
const PARTIAL_FRAME_GIVEN_UP_HELP =
  'svc: connections closed to give back what a partly received frame held (`cause`): `receiveMemoryFull`, the ' +
  'largest past the limit on partly received frames; `frameStalled`, a frame under way for 5 s while they keep the ' +
  'data ports paused (a worker). Legitimate senders are paused, not closed: a rising count means a peer that stalls ' +
  'its frames, or a limit too small for the frames under way.';
const USER = ['tenantId', 'name'] as const;

/** The process gauges, the same on both roles. */
const PROCESS_GAUGES: readonly Omit<MetricSpec, 'role'>[] = [
  {
    name: 'ProcessEventLoopDelayP50Ms',
    kind: 'gauge',
    source: 'process',
    help: 'Median event-loop delay (ms) since the previous collection (perf_hooks.monitorEventLoopDelay).',
  },
  {
    name: 'ProcessEventLoopDelayP99Ms',
    kind: 'gauge',
    source: 'process',
    help: '99th percentile of the event-loop delay (ms) since the previous collection.',
  },
  {
    name: 'ProcessEventLoopDelayMaxMs',
    kind: 'gauge',
    source: 'process',
    help: 'Longest event-loop delay (ms) since the previous collection.',
  },
  {
    name: 'ProcessResidentMemoryBytes',
    kind: 'gauge',
    source: 'process',
    help: 'Resident set size of the process (bytes).',
  },
  {
    name: 'ProcessHeapUsedBytes',
    kind: 'gauge',
    source: 'process',
    help: 'V8 heap in use (bytes).',
  },
  {
    name: 'ProcessHeapTotalBytes',
    kind: 'gauge',
    source: 'process',
    help: 'V8 heap reserved (bytes).',
  },
  {
    name: 'ProcessExternalMemoryBytes',
    kind: 'gauge',
    source: 'process',
    help: 'Memory outside the V8 heap held by JavaScript objects, buffers included (bytes).',
  },
];

/** Gauges both roles compute from their state under the same name. */
const BOTH_STATE: readonly [string, string, string][] = [
  [
    'RegisteredShuffleCount',
    'Shuffles registered with the master (every shuffle of every running application).',
    'Shuffles this worker holds files of.',
  ],
  [
    'RunningApplicationCount',
    'Applications the master knows (heartbeating, not yet unregistered or expired).',
    'Applications this worker holds files of.',
  ],
];

export const METRIC_CATALOGUE: readonly MetricSpec[] = [
  // Master: the registry, from the state.
  master('WorkerCount', 'gauge', 'state', 'Registered workers, in any state.'),
  master(
    'LostWorkerCount',
    'gauge',
    'state',
    'Workers declared lost (missed heartbeats, or reported lost) and not registered again.',
  ),
  master(
    'ExcludedWorkerCount',
    'gauge',
    'state',
    'Excluded workers: automatically (unhealthy disks, high workload) or by an operator; a worker in both counts once.',
  ),
  master(
    'AvailableWorkerCount',
    'gauge',
    'state',
    'Workers the master may offer slots on (registered, Normal, no pending event, not excluded, not leaving).',
  ),
  master('ShutdownWorkerCount', 'gauge', 'state', 'Workers that reported a graceful shutdown in progress.'),
  master('DecommissionWorkerCount', 'gauge', 'state', 'Workers that reported they are decommissioning.'),
  ...BOTH_STATE.map(([name, help]) => master(name, 'gauge', 'state', help)),
  master(
    'PartitionSize',
    'gauge',
    'state',
    'Estimated size of a partition file (bytes), from the bytes and files applications committed.',
  ),
  master(
    'IsActiveMaster',
    'gauge',
    'state',
    '1 on the master that serves the cluster (svc runs one master: always 1).',
  ),
  master(
    'DeviceSvcTotalBytes',
    'gauge',
    'state',
    'Size of the filesystems of the local disks of every registered worker (bytes); a filesystem several workers of ' +
      'one host share counts once.',
  ),
  master(
    'DeviceSvcFreeBytes',
    'gauge',
    'state',
    'Usable space left on the healthy local disks of the available workers (bytes): each filesystem’s available ' +
      'space less the reserve, counted once where several workers of one host share it.',
  ),
  master(
    'ActiveShuffleSize',
    'gauge',
    'state',
    'Bytes of every live partition file in the cluster, as the workers last reported them (the usage quotas are decided from).',
  ),
  master(
    'ActiveShuffleFileCount',
    'gauge',
    'state',
    'Live partition files in the cluster, as the workers last reported them.',
  ),
  ...(
    [
      ['diskBytesWritten', 'Bytes of the user held in partition files on local disks (and memory).'],
      ['diskFileCount', 'Partition files of the user on local disks (and memory).'],
      ['hdfsBytesWritten', 'Bytes of the user held in partition files on a distributed filesystem.'],
      ['hdfsFileCount', 'Partition files of the user on a distributed filesystem.'],
    ] as const
  ).map(([name, help]) =>
    master(
      name,
      'gauge',
      'state',
      `${help} Only with svc.master.userResourceConsumption.metrics.enabled.`,
      USER,
    ),
  ),
  // Master: the machine's own counters.
  master(
    'RequestSlotsFailed',
    'counter',
    'machine',
    'RequestSlots requests that got no slots, by the status answered.',
    ['statusCode'],
  ),
  master(
    'ClientReleaseRefusedCount',
    'counter',
    'machine',
    'Client requests refused because of the client release.',
  ),
  master(
    'AuthenticationFailCount',
    'counter',
    'machine',
    'svc: peers refused because they did not prove the identity they need (svc.auth.enabled): at the handshake, and requests the core refuses.',
  ),
  master(
    'DriverBacklog',
    'gauge',
    'driver',
    'svc: inputs the node received and has not yet acted on (waiting for a step, or for a write of the durable store); past its bound (4,096) the process stops reading the connections that feed the node.',
  ),
  master(
    'ActiveConnectionCount',
    'gauge',
    'driver',
    'svc: connections accepted on the port that serves `service` and open (those peers opened to this process: svc.<module>.io.numConnectionsPerPeer each).',
    SERVICE,
  ),
  master('PartialFrameGivenUpCount', 'counter', 'driver', PARTIAL_FRAME_GIVEN_UP_HELP, CAUSE),

  // Worker: from the state.
  ...BOTH_STATE.map(([name, , help]) => worker(name, 'gauge', 'state', help)),
  worker(
    'ActiveSlotsCount',
    'gauge',
    'state',
    'Partition locations (slots) held and not yet committed or destroyed, on every tier.',
  ),
  worker('ActiveChunkStreamCount', 'gauge', 'state', 'Open read streams (OpenStream not yet released).'),
  worker(
    'ActiveShuffleSize',
    'gauge',
    'state',
    'Bytes of every partition file this worker holds, on any tier.',
  ),
  worker('ActiveShuffleFileCount', 'gauge', 'state', 'Partition files this worker holds, on any tier.'),
  worker('MemoryFileStorageSize', 'gauge', 'state', 'Bytes held by partition files in the memory tier.'),
  worker('MemoryStorageFileCount', 'gauge', 'state', 'Partition files in the memory tier.'),
  worker(
    'IsDecommissioningWorker',
    'gauge',
    'state',
    '1 while the worker decommissions (InDecommission, InDecommissionThenIdle), else 0.',
  ),
  worker(
    'IsHighWorkload',
    'gauge',
    'state',
    '1 while congestion control finds the disk buffer or the worker produce speed past its watermarks (the heartbeat reports high workload), else 0.',
  ),
  worker(
    'DiskBuffer',
    'gauge',
    'state',
    'Bytes of pushed batches accepted and not yet written by the disks (what the diskBuffer watermarks compare).',
  ),
  worker(
    'UserProduceSpeed',
    'gauge',
    'state',
    'Bytes per second an application pushed to this worker over the sample window, at the last congestion check.',
    APP,
  ),
  worker(
    'WorkerConsumeSpeed',
    'gauge',
    'state',
    'Bytes per second the disks wrote over the sample window, at the last congestion check.',
  ),
  worker(
    'PotentialConsumeSpeed',
    'gauge',
    'state',
    'WorkerConsumeSpeed divided by the active applications: the share above which an application is congested first.',
  ),
  worker(
    'DeviceSvcTotalBytes',
    'gauge',
    'state',
    'Capacity svc may use on the local disk (bytes, svc.worker.storage.dirs capacity, at most the filesystem’s size).',
    MOUNT,
  ),
  worker(
    'DeviceSvcFreeBytes',
    'gauge',
    'state',
    'Usable space left for new partition files on the local disk (bytes): the filesystem’s available space less ' +
      'svc.worker.storage.disk.reserve.size (or .ratio), at most its capacity minus what svc holds there.',
    MOUNT,
  ),
  worker(
    'diskBytesWritten',
    'gauge',
    'state',
    'Bytes of the application held in partition files on local disks (HDD, SSD).',
    APP,
  ),
  worker('diskFileCount', 'gauge', 'state', 'Partition files of the application on local disks.', APP),
  worker(
    'hdfsBytesWritten',
    'gauge',
    'state',
    'Bytes of the application held in partition files on a distributed filesystem (HDFS, OSS, S3).',
    APP,
  ),
  worker(
    'hdfsFileCount',
    'gauge',
    'state',
    'Partition files of the application on a distributed filesystem.',
    APP,
  ),
  // Worker: the driver's observations.
  worker(
    'DeviceOSTotalBytes',
    'gauge',
    'driver',
    'Size of the filesystem holding the disk directory (bytes, statfs).',
    MOUNT,
  ),
  worker(
    'DeviceOSFreeBytes',
    'gauge',
    'driver',
    'Free space of the filesystem holding the disk directory, for unprivileged users (bytes, statfs).',
    MOUNT,
  ),
  worker('PrimaryPushDataSize', 'counter', 'driver', 'Bytes of push payloads received as the primary copy.'),
  worker('ReplicaPushDataSize', 'counter', 'driver', 'Bytes of push payloads received as the replica copy.'),
  worker(
    'PrimaryPushDataTime',
    'timer',
    'driver',
    'From a push received as primary to its answer (ms), replication included.',
  ),
  worker('ReplicaPushDataTime', 'timer', 'driver', 'From a push received as replica to its answer (ms).'),
  worker(
    'FetchChunkTime',
    'timer',
    'driver',
    'Time to read one chunk served to a reader, from its read issued to its bytes (ms).',
  ),
  worker('FetchChunkSize', 'counter', 'driver', 'Bytes of chunks served to readers.'),
  worker('FetchChunkTransferSize', 'histogram', 'driver', 'Bytes per chunk served.'),
  worker(
    'FlushDataTime',
    'timer',
    'driver',
    'Time of one write or flush of a partition file on a disk or distributed tier (ms).',
  ),
  worker('LocalFlushCount', 'counter', 'driver', 'Writes of partition data to local disks.'),
  worker('LocalFlushSize', 'counter', 'driver', 'Bytes written to local disks.'),
  worker('HdfsFlushCount', 'counter', 'driver', 'Writes of partition data to HDFS.'),
  worker('HdfsFlushSize', 'counter', 'driver', 'Bytes written to HDFS.'),
  worker('OssFlushCount', 'counter', 'driver', 'Writes of partition data to OSS.'),
  worker('OssFlushSize', 'counter', 'driver', 'Bytes written to OSS.'),
  worker('S3FlushCount', 'counter', 'driver', 'Writes of partition data to S3.'),
  worker('S3FlushSize', 'counter', 'driver', 'Bytes written to S3.'),
  worker(
    'PausePushData',
    'counter',
    'driver',
    'Times the worker stopped reading push connections (back-pressure).',
  ),
  worker(
    'PausePushDataAndReplicate',
    'counter',
    'driver',
    'Times the worker stopped reading push and replication connections.',
  ),
  worker(
    'DriverBacklog',
    'gauge',
    'driver',
    'svc: inputs the node received and has not yet acted on (waiting for a step, or for a write of the durable store); past its bound (4,096) the process stops reading the connections that feed the node.',
  ),
  worker(
    'ActiveConnectionCount',
    'gauge',
    'driver',
    'svc: connections accepted on the port that serves `service` and open (those peers opened to this process: svc.<module>.io.numConnectionsPerPeer each).',
    SERVICE,
  ),
  worker('PartialFrameGivenUpCount', 'counter', 'driver', PARTIAL_FRAME_GIVEN_UP_HELP, CAUSE),
  worker('PausePushDataStatus', 'gauge', 'driver', '1 while push connections are paused, else 0.'),
  worker(
    'PausePushDataAndReplicateStatus',
    'gauge',
    'driver',
    '1 while replication connections are paused too, else 0.',
  ),
  worker('PausePushDataTime', 'gauge', 'driver', 'Total time push connections have been paused (ms).'),
  worker(
    'PausePushDataAndReplicateTime',
    'gauge',
    'driver',
    'Total time replication connections have been paused (ms).',
  ),
  // Worker: the machine's own counters (core/machines/worker).
  worker(
    'WriteDataSuccessCount',
    'counter',
    'machine',
    'Pushed batches written (soft splits and congestion answers included).',
  ),
  worker(
    'WriteDataFailCount',
    'counter',
    'machine',
    'Pushed batches this worker failed to write or refused (not counting hard splits).',
  ),
  worker(
    'WriteDataHardSplitCount',
    'counter',
    'machine',
    'Pushed batches answered HARD_SPLIT (file past its split threshold, disk full, or the worker leaving).',
  ),
  worker(
    'PushDataCongestedCount',
    'counter',
    'machine',
    'svc addition: pushed batches answered PUSH_DATA_SUCCESS_*_CONGESTED (written; their client slows down).',
  ),
  worker(
    'CongestionEpisodeCount',
    'counter',
    'machine',
    'svc addition: congestion episodes started (a watermark passed; one worker.congestion.started log line each).',
  ),
  worker(
    'ReplicateDataFailCount',
    'counter',
    'machine',
    'Batches whose replication failed, any cause (the sum of the five ReplicateData* causes).',
  ),
  worker('ReplicateDataWriteFailCount', 'counter', 'machine', 'Batches the replica failed to write.'),
  worker(
    'ReplicateDataCreateConnectionFailCount',
    'counter',
    'machine',
    'Batches not replicated because the replica could not be connected to.',
  ),
  worker(
    'ReplicateDataConnectionExceptionCount',
    'counter',
    'machine',
    'Batches not replicated because the connection to the replica broke.',
  ),
  worker(
    'ReplicateDataFailNonCriticalCauseCount',
    'counter',
    'machine',
    'Batches the replica refused for a non-critical cause.',
  ),
  worker('ReplicateDataTimeoutCount', 'counter', 'machine', 'Batches whose replica did not answer in time.'),
  worker('SlotsAllocated', 'counter', 'machine', 'Partition files created for ReserveSlots.'),
  worker(
    'ImplicitMemoryFileCount',
    'counter',
    'machine',
    'Memory-tier files given to a location whose storage mask permitted memory only implicitly.',
    APP,
  ),
  worker('CommitFilesFailCount', 'counter', 'machine', 'Partition files a CommitFiles could not commit.'),
  worker('EvictedFileCount', 'counter', 'machine', 'Memory-tier files moved to a disk.'),
  worker('OpenStreamSuccessCount', 'counter', 'machine', 'Read streams opened.'),
  worker('OpenStreamFailCount', 'counter', 'machine', 'OpenStream requests refused.'),
  worker('FetchChunkSuccessCount', 'counter', 'machine', 'Chunks served.'),
  worker('FetchChunkFailCount', 'counter', 'machine', 'Chunk requests that failed.'),
  worker(
    'RegisterWithMasterFailCount',
    'counter',
    'machine',
    'Registration attempts with the master that failed.',
  ),
  worker(
    'GracefulShutdownLostFileCount',
    'counter',
    'machine',
    'Committed memory files a graceful shutdown could not move to a disk.',
  ),
  worker(
    'ClientReleaseRefusedCount',
    'counter',
    'machine',
    'Client requests refused because of the client release.',
  ),
  worker(
    'LeftoverFilesRemovedCount',
    'counter',
    'machine',
    'svc: partition files an earlier run of the worker left on its disks, removed once the master no longer had their shuffles.',
  ),
  worker(
    'DeleteFileFailCount',
    'counter',
    'driver',
    'svc: partition files a delete left behind (permissions, an I/O error); each is also a warning line.',
  ),
  worker(
    'AuthenticationFailCount',
    'counter',
    'machine',
    'svc: peers refused because they did not prove the identity they need (svc.auth.enabled): at the handshake, and requests the core refuses.',
  ),
  ...PROCESS_GAUGES.map((spec) => ({ ...spec, role: 'master' as const })),
  ...PROCESS_GAUGES.map((spec) => ({ ...spec, role: 'worker' as const })),
];

/** The catalogue entry of `name` (its current name) on `role`, if svc documents it. */
export function specOf(role: MetricRole, name: string): MetricSpec | undefined {
  return SPECS.get(`${role}\n${name}`);
}

const SPECS = new Map(METRIC_CATALOGUE.map((spec) => [`${spec.role}\n${spec.name}`, spec]));

/** One Prometheus series family a metric renders: its name and its Prometheus type. */
export interface SeriesFamily {
  readonly suffix: PrometheusSuffix;
  readonly name: string;
  readonly type: 'counter' | 'gauge';
}

/**
 * The families metric `name` (current or older name) of `kind` renders on `role` for a server presenting
 * `release`: the name in effect at that release, normalised, with each suffix of its kind. Only the Count of a
 * timer or histogram is a counter; its statistics are gauges.
 */
export function seriesFamilies(
  role: MetricRole,
  release: Release,
  name: string,
  kind: MetricKind,
): readonly SeriesFamily[] {
  const inEffect = metricName(name, role, release);
  return PROMETHEUS_SUFFIXES[kind].map((suffix) => ({
    suffix,
    name: prometheusMetricName(inEffect, suffix),
    type: kind === 'gauge' || (kind !== 'counter' && suffix !== 'Count') ? 'gauge' : 'counter',
  }));
}
