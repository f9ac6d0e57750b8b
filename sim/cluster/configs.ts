import { nameReadAt } from '../../conf/registry/history.ts';
import { REGISTRY } from '../../conf/registry/registry.ts';
import { resolveConfig, type ResolvedConfig } from '../../conf/resolve.ts';
import type { Role } from '../../conf/registry/spec.ts';
import { parseStorageTypes, type StorageType, type WorkerId } from '../../core/domain/index.ts';
import { ALLOW_ALL_HOSTS } from '../../core/lifecycle/index.ts';
import type { MapTaskConfig } from '../../core/machines/client/map-task.ts';
import type { ReduceTaskConfig } from '../../core/machines/client/reduce-task.ts';
import type { LifecycleManagerConfig } from '../../core/machines/lifecycle-manager/index.ts';
import type { MasterConfig } from '../../core/machines/master/index.ts';
import type { WorkerConfig } from '../../core/machines/worker/index.ts';
import type { PlantedBug } from '../../core/planted-bugs.ts';
import { lifecycleManagerNodeId, masterNodeId } from '../../core/protocol/node-ids.ts';
import { CURRENT_RELEASE, type Release } from '../../core/release/version.ts';
import type { BudgetMode } from '../../core/slots/index.ts';
import {
  DEFAULT_CREATE_FILE_POLICY,
  DEFAULT_EVICT_POLICY,
  parseCreateFilePolicy,
  parseEvictPolicy,
} from '../../core/storage/index.ts';
import type { AppShape, ClusterShape, WorkerShape } from '../workload/shape.ts';

/**
 * Machine configurations resolved the way a deployment resolves them: through conf/ as of the node's release (so a
 * 0.2 client gets replication on by default, a 0.5 master extraSlots 2 and no minWorkers), with the simulation's
 * own settings passed as ordinary configuration overrides. Nothing here decides behaviour; it only translates keys
 * into the plain fields the machines take. Where the registry has no key for a field (the reference hard-codes the
 * value), the reference's constant is used and named.
 */

const cache = new Map<string, ResolvedConfig>();

/** Resolving costs milliseconds (every key is resolved up front), so each distinct configuration is resolved once. */
export function configFor(
  release: Release,
  role: Role,
  overrides: Readonly<Record<string, string>> = {},
): ResolvedConfig {
  const key = `${release}|${role}|${JSON.stringify(overrides)}`;
  let conf = cache.get(key);
  if (conf === undefined) {
    conf = resolveConfig({ release, role, overrides });
    const errors = conf.errors;
    if (errors.length > 0) {
      throw new Error(
        `the simulator's ${role} configuration for release ${release} is invalid: ${errors.map((e) => e.message).join('; ')}`,
      );
    }
    cache.set(key, conf);
  }
  return conf;
}

function optional<T>(conf: ResolvedConfig, key: string, read: (key: string) => T): T | undefined {
  return conf.has(key) && conf.get(key) !== undefined ? read(key) : undefined;
}

/** The master's and client's worker limit before `svc.*.slot.assign.maxWorkers` existed: no limit. */
const UNLIMITED_WORKERS = 10_000;
const MEMORY_MAX_FILE = 'svc.worker.memoryFileStorage.maxFileSize';
const MEMORY_EVICT_RATIO = 'svc.worker.memoryFileStorage.evict.ratio';
export const FILTER_EXCLUDED = 'svc.client.shuffle.register.filterExcludedWorker.enabled';

/** The reference's hard-coded intervals (no configuration key exists for them). */
const REFERENCE = {
  workerUnavailableInfoCheckMs: 900_000,
  registerRetryMs: 2_000,
  requestAttempts: 3,
  requestSlotsRetries: 1,
  fileGroupRetryMs: 1_000,
  fileGroupAttempts: 1_000,
} as const;

export interface MasterSettings {
  readonly release: Release;
  readonly dfs: boolean;
  readonly budgetMode: BudgetMode;
  /** Configuration keys the scenario sets (ClusterShape.masterOverrides). */
  readonly overrides?: Readonly<Record<string, string>>;
  readonly plantedBug?: PlantedBug;
}

export function masterConfig(settings: MasterSettings): MasterConfig {
  const conf = configFor(settings.release, 'master', settings.overrides);
  const policy = conf.getString('svc.master.slot.assign.policy').toUpperCase();
  const minWorkers = optional(conf, 'svc.master.slot.assign.minWorkers', (k) => conf.getInt(k));
  return {
    release: settings.release,
    hosts: ALLOW_ALL_HOSTS,
    workerHeartbeatTimeoutMs: conf.getDurationMs('svc.master.heartbeat.worker.timeout'),
    applicationTimeoutMs: conf.getDurationMs('svc.master.heartbeat.application.timeout'),
    workerUnavailableInfo: {
      expireTimeoutMs: conf.getDurationMs('svc.master.workerUnavailableInfo.expireTimeout'),
      checkIntervalMs: REFERENCE.workerUnavailableInfoCheckMs,
    },
    partitionSize: {
      // Before 0.4.1 the estimate was not clamped (contract section 8).
      minSize: optional(conf, 'svc.master.estimatedPartitionSize.minSize', (k) => conf.getBytes(k)) ?? 1,
      maxSize:
        optional(conf, 'svc.master.estimatedPartitionSize.maxSize', (k) => conf.getBytes(k)) ??
        Number.MAX_SAFE_INTEGER,
      initialSize: conf.getBytes('svc.master.estimatedPartitionSize.initialSize'),
      updateInitialDelayMs: conf.getDurationMs('svc.master.estimatedPartitionSize.update.initialDelay'),
      updateIntervalMs: conf.getDurationMs('svc.master.estimatedPartitionSize.update.interval'),
    },
    slots: {
      policy:
        policy === 'LOADAWARE'
          ? {
              name: 'LOADAWARE',
              numDiskGroups: conf.getInt('svc.master.slot.assign.loadAware.numDiskGroups'),
              diskGroupGradient: conf.getDouble('svc.master.slot.assign.loadAware.diskGroupGradient'),
              flushTimeWeight: conf.getDouble('svc.master.slot.assign.loadAware.flushTimeWeight'),
              fetchTimeWeight: conf.getDouble('svc.master.slot.assign.loadAware.fetchTimeWeight'),
              activeSlotsWeight: 0,
            }
          : { name: 'ROUNDROBIN' },
      budgetMode: settings.budgetMode,
      maxWorkers:
        optional(conf, 'svc.master.slot.assign.maxWorkers', (k) => conf.getInt(k)) ?? UNLIMITED_WORKERS,
      extraSlots: conf.getInt('svc.master.slot.assign.extraSlots'),
      ...(minWorkers === undefined ? {} : { minWorkers }),
    },
    exclusion: {
      unhealthyDiskRatioThreshold: conf.getDouble('svc.master.excludeWorker.unhealthyDiskRatioThreshold'),
      dfsConfigured: settings.dfs,
    },
    ...(settings.plantedBug === undefined ? {} : { plantedBug: settings.plantedBug }),
  };
}

/** Worker ports: every simulated worker listens on the same ports of its own host. */
export function workerId(shape: WorkerShape): WorkerId {
  return { host: shape.host, rpcPort: 9091, pushPort: 9092, fetchPort: 9093, replicatePort: 9094 };
}

export function workerConfig(
  release: Release,
  shape: WorkerShape,
  cluster: ClusterShape,
  overrides: Readonly<Record<string, string>>,
  plantedBug?: PlantedBug,
): WorkerConfig {
  const conf = configFor(release, 'worker', overrides);
  // Keys introduced after `release` name behaviour that existed without a key: the current default stands in.
  const current = configFor(CURRENT_RELEASE, 'worker', overrides);
  const heartbeatTimeout = conf.getDurationMs('svc.master.heartbeat.worker.timeout');
  const createText = optional(conf, 'svc.worker.storage.storagePolicy.createFilePolicy', (k) =>
    conf.getList(k).join(','),
  );
  const evictText = optional(conf, 'svc.worker.storage.storagePolicy.evictPolicy', (k) => conf.getString(k));
  return {
    release,
    id: workerId(shape),
    master: masterNodeId(0),
    networkLocation: shape.rack,
    disks: shape.disks,
    distributed: cluster.dfs ? ['HDFS'] : [],
    memory: {
      capacityBytes: shape.memoryBytes,
      maxFileBytes:
        optional(conf, MEMORY_MAX_FILE, (k) => conf.getBytes(k)) ?? current.getBytes(MEMORY_MAX_FILE),
      evictRatio:
        optional(conf, MEMORY_EVICT_RATIO, (k) => conf.getDouble(k)) ?? current.getDouble(MEMORY_EVICT_RATIO),
      refuseImplicitMemory: cluster.memoryGuard,
    },
    createFilePolicy: createText ? parseCreateFilePolicy(createText) : DEFAULT_CREATE_FILE_POLICY,
    evictPolicy: evictText ? parseEvictPolicy(evictText) : DEFAULT_EVICT_POLICY,
    createFileMaxAttempts: optional(conf, 'svc.worker.writer.create.maxAttempts', (k) => conf.getInt(k)) ?? 2,
    chunkSizeBytes: conf.getBytes('svc.shuffle.chunk.size'),
    split: {
      enabled: conf.getBoolean('svc.worker.shuffle.partitionSplit.enabled'),
      minBytes: conf.getBytes('svc.worker.shuffle.partitionSplit.min'),
      maxBytes: conf.getBytes('svc.worker.shuffle.partitionSplit.max'),
    },
    // The reference heartbeats every quarter of the timeout.
    heartbeatIntervalMs: heartbeatTimeout / 4,
    register: {
      retryIntervalMs: REFERENCE.registerRetryMs,
      timeoutMs: conf.getDurationMs('svc.worker.register.timeout'),
    },
    masterRequestTimeoutMs: conf.getDurationMs('svc.rpc.askTimeout'),
    replicate: {
      timeoutMs: conf.getDurationMs('svc.rpc.askTimeout'),
      fastFailDurationMs: conf.getDurationMs('svc.worker.replicate.fastFail.duration'),
    },
    gracefulShutdown: {
      enabled: conf.getBoolean('svc.worker.graceful.shutdown.enabled'),
      checkIntervalMs: conf.getDurationMs('svc.worker.graceful.shutdown.checkSlotsFinished.interval'),
      timeoutMs: conf.getDurationMs('svc.worker.graceful.shutdown.checkSlotsFinished.timeout'),
    },
    decommission: {
      checkIntervalMs: conf.getDurationMs('svc.worker.decommission.checkInterval'),
      forceExitTimeoutMs: conf.getDurationMs('svc.worker.decommission.forceExitTimeout'),
    },
    ...(conf.getBoolean('svc.worker.monitor.disk.enabled')
      ? { diskCheckIntervalMs: conf.getDurationMs('svc.worker.monitor.disk.check.interval') }
      : {}),
    ...(plantedBug === undefined ? {} : { plantedBug }),
  };
}

/** The current name of the client's storage tiers key. */
export const TIERS_KEY = 'svc.storage.availableTypes';

/**
 * The name a client of `release` reads its storage tiers under, from the configuration registry's history (older
 * releases know an older name, and a client ignores a key it does not know).
 */
export function tiersKeyAt(release: Release): string {
  return nameReadAt(REGISTRY.entry(TIERS_KEY).entry, release) ?? TIERS_KEY;
}

/** Whether a node of `release` reads `key` at all (under any name), from the configuration registry's history. */
export function readsKeyAt(key: string, release: Release): boolean {
  return nameReadAt(REGISTRY.entry(key).entry, release) !== undefined;
}

/**
 * Client-side overrides an application's shape implies (left unset: the default of its release), each under the
 * name the client's release knows (until 22 November 2026 the swarm gave older clients the current name of the
 * tiers key, which they ignored, so they kept HDD).
 */
export function clientOverrides(app: AppShape): Record<string, string> {
  return {
    [tiersKeyAt(app.clientRelease)]: app.availableTypes.join(','),
    ...(app.replicate === undefined ? {} : { 'svc.client.push.replicate.enabled': String(app.replicate) }),
    ...(app.stageRerun === undefined
      ? {}
      : { 'svc.client.spark.stageRerun.enabled': String(app.stageRerun) }),
    ...(app.splitThresholdBytes === undefined
      ? {}
      : { 'svc.client.shuffle.partitionSplit.threshold': String(app.splitThresholdBytes) }),
    ...(app.heartbeatIntervalMs === undefined
      ? {}
      : { 'svc.client.application.heartbeatInterval': `${app.heartbeatIntervalMs}ms` }),
    ...(app.splitMode === undefined ? {} : { 'svc.client.shuffle.partitionSplit.mode': app.splitMode }),
    ...(app.rackAware === undefined
      ? {}
      : { 'svc.client.reserveSlots.rackaware.enabled': String(app.rackAware) }),
    ...(app.filterExcludedWorkers === undefined
      ? {}
      : { [FILTER_EXCLUDED]: String(app.filterExcludedWorkers) }),
  };
}

/** Per application (shapes are immutable): every task launch reads it, and building the cache key costs more. */
const clientConfs = new WeakMap<AppShape, ResolvedConfig>();

function clientConf(app: AppShape): ResolvedConfig {
  let conf = clientConfs.get(app);
  if (conf === undefined) {
    conf = configFor(app.clientRelease, 'client', clientOverrides(app));
    clientConfs.set(app, conf);
  }
  return conf;
}

/** The application's storage types as its release reads them. */
export function availableTypesOf(app: AppShape): StorageType[] {
  return parseStorageTypes(clientConf(app).getList('svc.storage.availableTypes').join(','));
}

export function replicationOf(app: AppShape): boolean {
  return clientConf(app).getBoolean('svc.client.push.replicate.enabled');
}

export function stageRerunOf(app: AppShape): boolean {
  return clientConf(app).getBoolean('svc.client.spark.stageRerun.enabled');
}

export function lifecycleManagerConfig(app: AppShape, plantedBug?: PlantedBug): LifecycleManagerConfig {
  const conf = clientConf(app);
  const askTimeout = conf.getDurationMs('svc.rpc.askTimeout');
  return {
    release: app.clientRelease,
    appId: app.appId,
    user: 'sim',
    master: masterNodeId(0),
    replicate: conf.getBoolean('svc.client.push.replicate.enabled'),
    rackAware: conf.getBoolean('svc.client.reserveSlots.rackaware.enabled'),
    availableTypes: availableTypesOf(app),
    maxWorkers:
      optional(conf, 'svc.client.slot.assign.maxWorkers', (k) => conf.getInt(k)) ?? UNLIMITED_WORKERS,
    split: {
      thresholdBytes: conf.getBytes('svc.client.shuffle.partitionSplit.threshold'),
      mode:
        conf.getString('svc.client.shuffle.partitionSplit.mode').toUpperCase() === 'HARD' ? 'HARD' : 'SOFT',
    },
    reviveBatchIntervalMs: conf.getDurationMs('svc.client.shuffle.batchHandleChangePartition.interval'),
    reserveMaxRetries: conf.getInt('svc.client.reserveSlots.maxRetries'),
    requestSlotsMaxRetries: REFERENCE.requestSlotsRetries,
    heartbeatIntervalMs: conf.getDurationMs('svc.client.application.heartbeatInterval'),
    requestTimeoutMs: askTimeout,
    maxRequestAttempts: REFERENCE.requestAttempts,
    fileGroupWaitMs: askTimeout / 2,
    excludePeerWorkerOnFailure: conf.getBoolean('svc.client.excludePeerWorkerOnFailure.enabled'),
    excludedWorkerExpireMs: conf.getDurationMs('svc.client.excludedWorker.expireTimeout'),
    // Before 0.4.0 the key did not exist: the current default stands in.
    filterExcludedWorkers:
      optional(conf, FILTER_EXCLUDED, (k) => conf.getBoolean(k)) ??
      configFor(CURRENT_RELEASE, 'client').getBoolean(FILTER_EXCLUDED),
    ...(plantedBug === undefined ? {} : { plantedBug }),
  };
}

export function mapTaskConfig(
  app: AppShape,
  ids: { readonly shuffleId: number; readonly mapId: number; readonly attemptId: number },
  shape: { readonly numMappers: number; readonly numPartitions: number },
  records: readonly (readonly Uint8Array[])[],
): MapTaskConfig {
  const conf = clientConf(app);
  const askTimeout = conf.getDurationMs('svc.rpc.askTimeout');
  return {
    release: app.clientRelease,
    appId: app.appId,
    shuffleId: ids.shuffleId,
    mapId: ids.mapId,
    attemptId: ids.attemptId,
    numMappers: shape.numMappers,
    numPartitions: shape.numPartitions,
    lifecycleManager: lifecycleManagerNodeId(app.appId),
    records,
    batchSizeBytes: conf.getBytes('svc.client.push.buffer.max.size'),
    maxReviveRetries: conf.getInt('svc.client.push.revive.maxRetries'),
    pushTimeoutMs: askTimeout,
    requestTimeoutMs: askTimeout,
    maxRequestAttempts: REFERENCE.requestAttempts,
    excludeWorkerOnFailure: conf.getBoolean('svc.client.push.excludeWorkerOnFailure.enabled'),
  };
}

export function reduceTaskConfig(
  app: AppShape,
  ids: { readonly shuffleId: number; readonly partitionId: number },
  plantedBug?: PlantedBug,
): ReduceTaskConfig {
  const conf = clientConf(app);
  const askTimeout = conf.getDurationMs('svc.rpc.askTimeout');
  return {
    release: app.clientRelease,
    appId: app.appId,
    shuffleId: ids.shuffleId,
    partitionId: ids.partitionId,
    lifecycleManager: lifecycleManagerNodeId(app.appId),
    requestTimeoutMs: askTimeout,
    maxRequestAttempts: REFERENCE.requestAttempts,
    fileGroupRetryIntervalMs: REFERENCE.fileGroupRetryMs,
    maxFileGroupAttempts: REFERENCE.fileGroupAttempts,
    fetchTimeoutMs: askTimeout,
    stageRerunEnabled: conf.getBoolean('svc.client.spark.stageRerun.enabled'),
    ...(plantedBug === undefined ? {} : { plantedBug }),
  };
}
