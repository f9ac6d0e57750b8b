/** Keys of the worker: ports, disks and tiers, memory limits, splitting, shutdown, congestion control. */
import { STORAGE_TYPES } from '../../../core/domain/index.ts';
import { createFilePolicy, evictPolicy, rackPath, storageDirs } from '../checks.ts';
import { WORKER, compatibilityOnly, type KeySpec, type NoEffect } from '../spec.ts';
import { httpAuthKeys, httpTlsKeys } from './master.ts';

const PORT = { type: 'int', min: 0, max: 65535 } as const;
const RATIO = { type: 'double', min: 0, max: 1 } as const;
const TIERS_IN_ORDER = 'MEMORY,SSD,HDD,HDFS,S3,OSS';

function workerPort(service: string, what: string, effect?: NoEffect): KeySpec {
  return {
    key: `svc.worker.${service}.port`,
    ...PORT,
    default: '0',
    roles: WORKER,
    description: `Port of the worker's ${what} server (0: any free port; graceful shutdown needs a fixed one).`,
    ...(effect === undefined ? {} : { effect }),
  };
}

function watermark(level: 'low' | 'high', measure: string, key: string): KeySpec {
  const action =
    level === 'high'
      ? 'past it the worker answers pushes *_CONGESTED (the data is kept) and clients slow down'
      : 'the congestion ends once below it';
  return {
    key,
    type: 'bytes',
    default: 'unlimited',
    unlimited: true,
    dynamic: true,
    roles: WORKER,
    description: `Congestion control (with svc.worker.congestionControl.enabled): ${measure}; ${action}.`,
  };
}

/** `svc.worker.storage.baseDir.prefix` + `.number` describe the directories `<prefix>1` … `<prefix><number>`. */
function dirsFromBaseDir(read: (key: string) => unknown): string {
  const prefix = String(read('svc.worker.storage.baseDir.prefix'));
  const count = Number(read('svc.worker.storage.baseDir.number'));
  return Array.from({ length: count }, (_, index) => `${prefix}${index + 1}`).join(',');
}

export const WORKER_KEYS: readonly KeySpec[] = [
  {
    key: 'svc.worker.host',
    type: 'string',
    default: '<localhost>',
    roles: WORKER,
    description:
      'svc addition: host the worker binds its rpc, push, fetch and replicate ports to and advertises in its id ' +
      '(SVC_LOCAL_HOSTNAME takes priority over the file).',
  },
  {
    key: 'svc.worker.networkLocation',
    type: 'string',
    default: '/default-rack',
    since: '0.6.0',
    roles: WORKER,
    check: rackPath,
    description:
      'svc addition: the worker’s rack, sent with its registration; with svc.client.reserveSlots.rackaware.enabled ' +
      'a partition’s replica is placed on another rack than its primary, so that a rack cut off loses no data.',
  },
  workerPort('rpc', 'control-plane'),
  workerPort('push', 'push'),
  workerPort('fetch', 'fetch'),
  workerPort('replicate', 'replication'),
  workerPort(
    'internal',
    'internal',
    compatibilityOnly('svc has no internal port: masters and workers talk on the control-plane ports'),
  ),
  {
    key: 'svc.worker.http.host',
    type: 'string',
    default: '<localhost>',
    roles: WORKER,
    description: 'Host the worker’s management interface and metrics listen on.',
  },
  {
    key: 'svc.worker.http.port',
    ...PORT,
    default: '9096',
    roles: WORKER,
    description:
      'Port of the worker’s management interface and metrics, 1–65535; 0 is accepted on purpose and means any free ' +
      'port, printed in the worker’s "listening" line (LocalCluster starts nodes so).',
  },
  ...httpAuthKeys('worker'),
  ...httpTlsKeys('worker'),
  {
    key: 'svc.worker.register.timeout',
    type: 'time',
    default: '180s',
    roles: WORKER,
    description: 'How long a starting worker keeps trying to register with the master before it exits.',
  },
  {
    key: 'svc.worker.replicate.threads',
    type: 'int',
    default: '64',
    min: 1,
    roles: WORKER,
    effect: compatibilityOnly('svc runs each process on one event loop; thread counts do not apply'),
    description: 'Threads forwarding pushed data to replica workers.',
  },
  {
    key: 'svc.worker.replicate.fastFail.duration',
    type: 'time',
    default: '60s',
    roles: WORKER,
    description: 'How long a replica peer that could not be reached is failed at once instead of retried.',
  },
  {
    key: 'svc.worker.storage.dirs',
    type: 'list',
    check: storageDirs,
    legacy: {
      keys: ['svc.worker.storage.baseDir.prefix', 'svc.worker.storage.baseDir.number'],
      combine: dirsFromBaseDir,
    },
    roles: WORKER,
    description:
      'Local disk directories, each path[:capacity=SIZE][:disktype=HDD|SSD][:flushthread=N] (unset: no local disk).',
  },
  {
    key: 'svc.worker.storage.baseDir.prefix',
    type: 'string',
    default: '/mnt/disk',
    roles: WORKER,
    description: 'Directories <prefix>1 … <prefix>N are the worker’s disks (see svc.worker.storage.dirs).',
  },
  {
    key: 'svc.worker.storage.baseDir.number',
    type: 'int',
    default: '16',
    min: 1,
    roles: WORKER,
    description: 'Number N of directories <prefix>1 … <prefix>N (see svc.worker.storage.dirs).',
  },
  {
    key: 'svc.worker.storage.workingDir',
    type: 'string',
    roles: WORKER,
    description: 'Directory, relative to each disk, that shuffle files are written under.',
  },
  {
    key: 'svc.worker.storage.disk.reserve.size',
    type: 'bytes',
    default: '5g',
    roles: WORKER,
    description:
      'Space kept free on every disk’s filesystem: a disk’s usable space is the filesystem’s available space less ' +
      'this (and at most its capacity less what svc wrote there), refreshed every heartbeat; a disk with none left ' +
      'is not offered.',
  },
  {
    key: 'svc.worker.storage.disk.reserve.ratio',
    ...RATIO,
    roles: WORKER,
    description:
      'Share of every disk’s filesystem size kept free, when larger than the reserve size (unset: only the size ' +
      'applies).',
  },
  {
    key: 'svc.worker.storage.maxOpenFiles',
    type: 'int',
    default: '4096',
    min: 1,
    since: '0.6.0',
    roles: WORKER,
    description:
      'svc addition: the most partition files (local disks and the DFS directory together) a worker keeps open at ' +
      'once; past it the least recently used idle one is closed and opened again when next needed. Keep it well ' +
      'under the process’s descriptor limit (ulimit -n), which the connections share.',
  },
  {
    key: 'svc.worker.storage.expireDirs.timeout',
    type: 'time',
    default: '1h',
    roles: WORKER,
    description:
      'Time after a worker starts before it deletes the files an earlier run left on its local disks for shuffles the master no longer has.',
  },
  {
    key: 'svc.worker.storage.storagePolicy.createFilePolicy',
    type: 'list',
    values: STORAGE_TYPES,
    default: TIERS_IN_ORDER,
    check: createFilePolicy,
    since: '0.5.1',
    roles: WORKER,
    description: 'Tiers a new partition file is tried on, in order.',
  },
  {
    key: 'svc.worker.storage.storagePolicy.evictPolicy',
    type: 'string',
    default: TIERS_IN_ORDER,
    check: evictPolicy,
    since: '0.5.1',
    roles: WORKER,
    description: 'Per tier, the tiers its files are evicted to, in order (SRC,T1,T2|SRC2,…).',
  },
  {
    key: 'svc.worker.directMemoryRatioForMemoryFileStorage',
    ...RATIO,
    default: '0.0',
    since: '0.5.0',
    roles: WORKER,
    description: 'Share of the memory budget that the memory tier may hold (0: memory tier off).',
  },
  {
    key: 'svc.worker.memoryFileStorage.refuseImplicitMemory',
    type: 'boolean',
    default: 'false',
    since: '0.6.0',
    roles: WORKER,
    description:
      'svc addition: refuse the memory tier to a location that permits it only through mask 0 (a partition revived ' +
      'by a client before 0.6.0), so that such a file goes to the next tier instead.',
  },
  {
    key: 'svc.worker.memoryFileStorage.preTouch',
    type: 'boolean',
    default: 'true',
    since: '0.5.0',
    roles: WORKER,
    description:
      'svc addition: the memory tier (svc.worker.memory.size × svc.worker.directMemoryRatioForMemoryFileStorage) is ' +
      'allocated when the worker starts and pushed bytes are copied into it; true also writes every page of it ' +
      'then, as the JVM’s AlwaysPreTouch does, so that pushes into memory never wait for the kernel to fault ' +
      'pages in (the worker holds that memory from its start). false leaves the pages to be faulted in on first use.',
  },
  {
    key: 'svc.worker.memoryFileStorage.maxFileSize',
    type: 'bytes',
    default: '8m',
    since: '0.5.0',
    roles: WORKER,
    description: 'A partition file in memory larger than this is evicted to the next tier.',
  },
  {
    key: 'svc.worker.memoryFileStorage.evict.aggressiveMode.enabled',
    type: 'boolean',
    default: 'false',
    since: '0.5.0',
    roles: WORKER,
    effect: compatibilityOnly('memory files are evicted under memory pressure only'),
    description:
      'Whether memory files are evicted whenever pushes are paused, not only under memory pressure.',
  },
  {
    key: 'svc.worker.memoryFileStorage.evict.ratio',
    ...RATIO,
    default: '0.5',
    since: '0.5.0',
    roles: WORKER,
    description:
      'Memory files are evicted, largest first, once the memory tier holds this share of its budget.',
  },
  {
    key: 'svc.worker.memory.size',
    type: 'bytes',
    default: '1g',
    min: 0,
    roles: WORKER,
    description:
      'svc addition: the worker’s memory budget for data in flight and memory-tier files, the base of every ' +
      'svc.worker.directMemoryRatio* key (the reference uses the JVM’s maximum direct memory).',
  },
  {
    key: 'svc.worker.directMemoryRatioToPauseReceive',
    ...RATIO,
    default: '0.85',
    roles: WORKER,
    description: 'Share of the memory budget in use at which the worker stops accepting pushes.',
  },
  {
    key: 'svc.worker.directMemoryRatioToPauseReplicate',
    ...RATIO,
    default: '0.95',
    roles: WORKER,
    description:
      'Share of the memory budget in use at which the worker also stops accepting replicated data.',
  },
  {
    key: 'svc.worker.directMemoryRatioToResume',
    ...RATIO,
    roles: WORKER,
    description: 'Share of the memory budget in use below which a paused worker accepts data again.',
  },
  {
    key: 'svc.worker.directMemoryRatioForReadBuffer',
    ...RATIO,
    default: '0.1',
    roles: WORKER,
    description: 'Share of the memory budget for buffers serving fetches.',
  },
  {
    key: 'svc.worker.monitor.disk.enabled',
    type: 'boolean',
    default: 'true',
    roles: WORKER,
    description: 'Whether the worker checks its disks and stops using failing ones.',
  },
  {
    key: 'svc.worker.monitor.disk.check.interval',
    type: 'time',
    roles: WORKER,
    description: 'Interval between disk checks.',
  },
  {
    key: 'svc.worker.flusher.buffer.size',
    type: 'bytes',
    default: '256k',
    min: 1,
    roles: WORKER,
    effect: compatibilityOnly(
      'a worker queues each accepted push for its file as it arrives; there is no flush buffer to size',
    ),
    description: 'Data of a partition buffered in memory before it is written to its file.',
  },
  {
    key: 'svc.worker.commitFiles.timeout',
    type: 'time',
    default: '120s',
    roles: WORKER,
    effect: compatibilityOnly(
      'a commit waits for its files’ flushes; the client’s svc.rpc.askTimeout bounds the wait',
    ),
    description: 'Time allowed to commit a shuffle’s files when its stage ends.',
  },
  {
    key: 'svc.worker.commitFiles.threads',
    type: 'int',
    default: '32',
    min: 1,
    roles: WORKER,
    effect: compatibilityOnly('svc runs each process on one event loop; thread counts do not apply'),
    description: 'Threads committing files.',
  },
  {
    key: 'svc.worker.shuffle.partitionSplit.enabled',
    type: 'boolean',
    default: 'true',
    roles: WORKER,
    description:
      'Whether a partition file that grows too large is split (the client continues on a new location).',
  },
  {
    key: 'svc.worker.shuffle.partitionSplit.min',
    type: 'bytes',
    default: '1m',
    roles: WORKER,
    description: 'A partition file is split for a full disk only once it is larger than this.',
  },
  {
    key: 'svc.worker.shuffle.partitionSplit.max',
    type: 'bytes',
    default: '2g',
    min: 1,
    roles: WORKER,
    description: 'A soft split becomes a hard split once the file is larger than this.',
  },
  {
    key: 'svc.worker.writer.create.maxAttempts',
    type: 'int',
    default: '3',
    min: 1,
    roles: WORKER,
    description: 'Attempts to create a partition file before the reservation fails.',
  },
  {
    key: 'svc.worker.graceful.shutdown.enabled',
    type: 'boolean',
    default: 'false',
    roles: WORKER,
    description:
      'Whether a stopping worker waits for its partitions to be committed and keeps them for its restart.',
  },
  {
    key: 'svc.worker.graceful.shutdown.timeout',
    type: 'time',
    default: '600s',
    roles: WORKER,
    effect: compatibilityOnly(
      'a graceful shutdown is bounded by svc.worker.graceful.shutdown.checkSlotsFinished.timeout',
    ),
    description: 'Longest a graceful shutdown may take.',
  },
  {
    key: 'svc.worker.graceful.shutdown.checkSlotsFinished.interval',
    type: 'time',
    default: '1s',
    roles: WORKER,
    description: 'Graceful shutdown: interval of checks whether every partition is committed.',
  },
  {
    key: 'svc.worker.graceful.shutdown.checkSlotsFinished.timeout',
    type: 'time',
    default: '480s',
    roles: WORKER,
    description: 'Graceful shutdown: longest wait for every partition to be committed.',
  },
  {
    key: 'svc.worker.graceful.shutdown.recoverPath',
    type: 'string',
    default: '<tmp>/recover',
    roles: WORKER,
    description: 'Directory of the recovery store that a gracefully stopped worker restarts from.',
  },
  {
    key: 'svc.worker.graceful.shutdown.recoverDbBackend',
    type: 'enum',
    values: ['ROCKSDB', 'LEVELDB'],
    roles: WORKER,
    description: 'Storage engine of the recovery store.',
  },
  {
    key: 'svc.worker.graceful.shutdown.saveCommittedFileInfo.interval',
    type: 'time',
    default: '5s',
    roles: WORKER,
    effect: compatibilityOnly(
      'a worker records each commit in the recovery store before it answers the commit',
    ),
    description: 'Interval at which committed files are recorded in the recovery store.',
  },
  {
    key: 'svc.worker.graceful.shutdown.saveCommittedFileInfo.sync',
    type: 'boolean',
    default: 'false',
    roles: WORKER,
    effect: compatibilityOnly(
      'a worker records each commit in the recovery store before it answers the commit',
    ),
    description: 'Whether each record in the recovery store is synced to disk.',
  },
  {
    key: 'svc.worker.decommission.forceExitTimeout',
    type: 'time',
    default: '6h',
    roles: WORKER,
    description: 'Longest a decommissioning worker waits for its shuffles to end before it exits.',
  },
  {
    key: 'svc.worker.decommission.checkInterval',
    type: 'time',
    default: '30s',
    roles: WORKER,
    description: 'Interval at which a decommissioning worker checks whether its shuffles have ended.',
  },
  {
    key: 'svc.worker.auth.secretCache.expiry',
    type: 'time',
    default: '60s',
    since: '0.6.0',
    roles: WORKER,
    description:
      'svc addition: how long a worker trusts an application’s secret it learnt from the master (svc.auth.enabled) ' +
      'before it asks again; a secret the master no longer holds (the application unregistered, or registered ' +
      'again with another) opens no new connection after this long.',
  },
  {
    key: 'svc.worker.activeConnection.max',
    type: 'int',
    min: 1,
    roles: WORKER,
    effect: compatibilityOnly('svc’s workers do not report a highly-loaded state by connection count'),
    description: 'Connections above which the worker reports itself as highly loaded (unset: no limit).',
  },
  {
    key: 'svc.worker.userResourceConsumption.update.interval',
    type: 'time',
    default: '30s',
    roles: WORKER,
    effect: compatibilityOnly('svc’s workers report their current usage in every heartbeat'),
    description: 'Interval at which the worker recomputed per-user resource use.',
  },
  {
    key: 'svc.worker.congestionControl.enabled',
    type: 'boolean',
    default: 'false',
    roles: WORKER,
    description:
      'Whether the worker answers pushes *_CONGESTED, so that their clients slow down, when its disk buffer or ' +
      'produce speed, or a user’s, passes the high watermarks (docs/operations.md, Congestion control).',
  },
  {
    key: 'svc.worker.congestionControl.sample.time.window',
    type: 'time',
    default: '10s',
    min: 1,
    since: '0.3.0',
    roles: WORKER,
    description: 'Congestion control: the window produce and consume speeds are measured over.',
  },
  {
    key: 'svc.worker.congestionControl.check.interval',
    type: 'time',
    default: '10ms',
    min: 1,
    since: '0.3.2',
    roles: WORKER,
    description:
      'Congestion control: how often the worker compares its disk buffer and speeds with the watermarks while data ' +
      'flows or congestion lasts.',
  },
  watermark('low', 'data buffered for disks', 'svc.worker.congestionControl.diskBuffer.low.watermark'),
  watermark('high', 'data buffered for disks', 'svc.worker.congestionControl.diskBuffer.high.watermark'),
  watermark(
    'low',
    'bytes per second pushed by one user',
    'svc.worker.congestionControl.userProduceSpeed.low.watermark',
  ),
  watermark(
    'high',
    'bytes per second pushed by one user',
    'svc.worker.congestionControl.userProduceSpeed.high.watermark',
  ),
  watermark(
    'low',
    'bytes per second pushed to the worker',
    'svc.worker.congestionControl.workerProduceSpeed.low.watermark',
  ),
  watermark(
    'high',
    'bytes per second pushed to the worker',
    'svc.worker.congestionControl.workerProduceSpeed.high.watermark',
  ),
];
