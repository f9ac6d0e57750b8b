import { quotaSettingsFrom } from './quota-settings.ts';
import { parseStorageTypes, type StorageType, type WorkerId } from '../core/domain/index.ts';
import { compileHostPolicy } from '../core/lifecycle/index.ts';
import type { NodeId } from '../core/machines/effects.ts';
import type { AskTimeout } from '../core/machines/client/ask-timeout.ts';
import type { MapTaskConfig } from '../core/machines/client/map-task.ts';
import type { ReduceTaskConfig } from '../core/machines/client/reduce-task.ts';
import type { LifecycleManagerConfig } from '../core/machines/lifecycle-manager/index.ts';
import type { MasterConfig } from '../core/machines/master/index.ts';
import type { WorkerConfig, WorkerDiskConfig } from '../core/machines/worker/index.ts';
import type { PlantedBug } from '../core/planted-bugs.ts';
import { lifecycleManagerNodeId } from '../core/protocol/node-ids.ts';
import { CURRENT_RELEASE, type Release } from '../core/release/version.ts';
import type { BudgetMode } from '../core/slots/index.ts';
import { clientPushTimeoutMs } from '../core/replication/index.ts';
import {
  backPressureLimitsFor,
  partialFrameLimitBytes,
  partialFramePauseBytes,
  type BackPressureLimits,
  type CongestionConfig,
  type CongestionWatermarks,
  DEFAULT_CREATE_FILE_POLICY,
  DEFAULT_EVICT_POLICY,
  parseCreateFilePolicy,
  parseEvictPolicy,
  type DiskReserve,
  type DistributedType,
} from '../core/storage/index.ts';
import { dynamicView, type DynamicConfig } from './dynamic-view.ts';
import { nameReadAt } from './registry/history.ts';
import { REGISTRY } from './registry/registry.ts';
import type { Role } from './registry/spec.ts';
import { resolveConfig, type ResolvedConfig } from './resolve.ts';

/**
 * The one translation from resolved configuration to the plain configurations the core's machines take, shared by
 * the simulator and the runtime. Each function takes a ResolvedConfig already resolved for the node's release and
 * role (so a 0.2 client gets replication on by default, a 0.5 master extraSlots 2 and no minWorkers) plus the facts
 * configuration does not hold (identities, disks, the master's node id). Nothing here decides behaviour; it only
 * translates keys into fields. Where the registry has no key for a field (the reference hard-codes the value), the
 * reference's constant is used and named (REFERENCE_CONSTANTS).
 */

/** The reference's hard-coded intervals and attempt counts (no configuration key exists for them). */
export const REFERENCE_CONSTANTS = {
  /** How often the master expires workers' unavailable-info entries. */
  workerUnavailableInfoCheckMs: 900_000,
  /** A worker's wait between two registration attempts. */
  registerRetryMs: 2_000,
  /** Attempts of a client request (lifecycle manager and tasks) before it gives up. */
  requestAttempts: 3,
  /** The lifecycle manager's retries of RequestSlots. */
  requestSlotsRetries: 1,
  /** A reduce task's wait between two file-group requests. */
  fileGroupRetryMs: 1_000,
  /** A reduce task's file-group requests before it gives up. */
  fileGroupAttempts: 1_000,
} as const;

/** A map task's budget of unacknowledged bytes for clients before `svc.client.push.maxUnacknowledgedBytes` (0.6.0). */
const MAP_TASK_BUDGET_BEFORE_KEY = 64 * 1024 * 1024;

/** The master's and client's worker limit before `svc.*.slot.assign.maxWorkers` existed: no limit. */
const UNLIMITED_WORKERS = 10_000;
/** A worker's attempts to create a file before `svc.worker.writer.create.maxAttempts` existed. */
const CREATE_FILE_ATTEMPTS_BEFORE_KEY = 2;
const MEMORY_MAX_FILE = 'svc.worker.memoryFileStorage.maxFileSize';
const MEMORY_EVICT_RATIO = 'svc.worker.memoryFileStorage.evict.ratio';
const REFUSE_IMPLICIT_MEMORY = 'svc.worker.memoryFileStorage.refuseImplicitMemory';
const BUDGET_MODE = 'svc.master.slot.assign.budgetMode';
/** The current name of the client's key asking the master not to offer slots on the workers it excluded. */
export const FILTER_EXCLUDED = 'svc.client.shuffle.register.filterExcludedWorker.enabled';
/** The current name of the client's storage tiers key. */
export const TIERS_KEY = 'svc.storage.availableTypes';

/**
 * The name a client of `release` reads its storage tiers under, from the configuration registry's history (older
 * releases know an older name, and a client ignores a key it does not know).
 */
/** Application authentication in the data plane, read by every role (docs/protocol.md, Authentication). */
export const AUTH_ENABLED = 'svc.auth.enabled';

export function tiersKeyAt(release: Release): string {
  return nameReadAt(REGISTRY.entry(TIERS_KEY).entry, release) ?? TIERS_KEY;
}

/** Whether a node of `release` reads `key` at all (under any name), from the configuration registry's history. */
export function readsKeyAt(key: string, release: Release): boolean {
  return nameReadAt(REGISTRY.entry(key).entry, release) !== undefined;
}

const currentDefaults = new Map<Role, ResolvedConfig>();

/** The defaults of the current release for `role` (nothing set): what stands in for a key a release lacks. */
function currentDefaultsOf(role: Role): ResolvedConfig {
  let conf = currentDefaults.get(role);
  if (conf === undefined) {
    conf = resolveConfig({ release: CURRENT_RELEASE, role });
    currentDefaults.set(role, conf);
  }
  return conf;
}

/** `svc.master.slot.assign.budgetMode` (since 0.6.0); before it, the master overcommitted as the reference does. */
export function budgetModeFrom(conf: ResolvedConfig): BudgetMode {
  const mode = conf.optional(BUDGET_MODE, 'getString');
  return mode?.toUpperCase() === 'STRICT' ? 'strict' : 'overcommit';
}

/** `svc.worker.memoryFileStorage.refuseImplicitMemory` (since 0.6.0); before it, a worker never refused. */
export function refuseImplicitMemoryFrom(conf: ResolvedConfig): boolean {
  return conf.optional(REFUSE_IMPLICIT_MEMORY, 'getBoolean') ?? false;
}

/** What the master's configuration does not hold. */
export interface MasterFacts {
  /** Whether a distributed filesystem is configured (a worker with only unhealthy local disks is still usable). */
  readonly dfs: boolean;
  /** Default: `svc.master.slot.assign.budgetMode` (budgetModeFrom); the simulator draws it per seed. */
  readonly budgetMode?: BudgetMode;
  readonly plantedBug?: PlantedBug;
}

export function masterConfigFrom(conf: ResolvedConfig, facts: MasterFacts): MasterConfig {
  const policy = conf.getString('svc.master.slot.assign.policy').toUpperCase();
  const minWorkers = conf.optional('svc.master.slot.assign.minWorkers', 'getInt');
  return {
    release: conf.release,
    authEnabled: conf.getBoolean(AUTH_ENABLED),
    hosts: compileHostPolicy({
      allow: conf.optional('svc.master.allowWorkerHostPattern', 'getString') ?? null,
      deny: conf.optional('svc.master.denyWorkerHostPattern', 'getString') ?? null,
    }),
    workerHeartbeatTimeoutMs: conf.getDurationMs('svc.master.heartbeat.worker.timeout'),
    applicationTimeoutMs: conf.getDurationMs('svc.master.heartbeat.application.timeout'),
    workerUnavailableInfo: {
      expireTimeoutMs: conf.getDurationMs('svc.master.workerUnavailableInfo.expireTimeout'),
      checkIntervalMs: REFERENCE_CONSTANTS.workerUnavailableInfoCheckMs,
    },
    partitionSize: {
      // Before 0.4.1 the estimate was not clamped (contract section 8).
      minSize: conf.optional('svc.master.estimatedPartitionSize.minSize', 'getBytes') ?? 1,
      maxSize:
        conf.optional('svc.master.estimatedPartitionSize.maxSize', 'getBytes') ?? Number.MAX_SAFE_INTEGER,
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
      budgetMode: facts.budgetMode ?? budgetModeFrom(conf),
      maxWorkers: conf.optional('svc.master.slot.assign.maxWorkers', 'getInt') ?? UNLIMITED_WORKERS,
      extraSlots: conf.getInt('svc.master.slot.assign.extraSlots'),
      ...(minWorkers === undefined ? {} : { minWorkers }),
    },
    exclusion: {
      unhealthyDiskRatioThreshold: conf.getDouble('svc.master.excludeWorker.unhealthyDiskRatioThreshold'),
      dfsConfigured: facts.dfs,
    },
    quota: {
      settings: quotaSettingsFrom(conf),
      updateIntervalMs: conf.getDurationMs('svc.master.userResourceConsumption.update.interval'),
    },
    ...(facts.plantedBug === undefined ? {} : { plantedBug: facts.plantedBug }),
  };
}

/** What a worker's configuration does not hold. */
export interface WorkerFacts {
  readonly id: WorkerId;
  /** The master's node id (masterNodeId()). */
  readonly master: NodeId;
  /** Rack of this worker, as the master's rack resolution would report it. */
  readonly networkLocation: string;
  readonly disks: readonly WorkerDiskConfig[];
  readonly distributed: readonly DistributedType[];
  /** Bytes the memory tier may hold; 0 turns it off. */
  readonly memoryCapacityBytes: number;
  /** Default: `svc.worker.memoryFileStorage.refuseImplicitMemory` (refuseImplicitMemoryFrom); the simulator draws it. */
  readonly refuseImplicitMemory?: boolean;
  readonly plantedBug?: PlantedBug;
}

/** A worker's memory limits, both shares of its memory budget: when it stops reading, and what partly received frames may hold. */
export interface WorkerMemoryLimits {
  readonly backPressure: BackPressureLimits;
  readonly partialFrameLimitBytes: number;
}

/** The keys behind `partialFrameLimitBytes`, for the message of a peer that exceeds it. */
export const PARTIAL_FRAME_LIMIT_KEYS =
  'svc.worker.memory.size × svc.worker.directMemoryRatioToResume, at least svc.network.frame.maxSize';

/**
 * A worker's memory limits from its configuration (as of the release it presents: ResolvedConfig.withLaterKeysFrom) and
 * its memory budget, by default `svc.worker.memory.size` (the simulator scales it down to its data).
 */
export function workerMemoryLimitsFrom(
  conf: ResolvedConfig,
  budgetBytes: number = conf.getBytes('svc.worker.memory.size'),
): WorkerMemoryLimits {
  const resume = conf.getDouble('svc.worker.directMemoryRatioToResume');
  const frameMaxBytes = conf.getBytes('svc.network.frame.maxSize');
  const partialLimit = partialFrameLimitBytes(budgetBytes, resume, frameMaxBytes);
  return {
    backPressure: {
      ...backPressureLimitsFor(budgetBytes, {
        pauseReceive: conf.getDouble('svc.worker.directMemoryRatioToPauseReceive'),
        pauseReplicate: conf.getDouble('svc.worker.directMemoryRatioToPauseReplicate'),
        resume,
      }),
      partialFramePauseBytes: partialFramePauseBytes(partialLimit, frameMaxBytes),
    },
    partialFrameLimitBytes: partialLimit,
  };
}

/**
 * `current` is the same configuration (same sources) resolved at CURRENT_RELEASE: keys introduced after the
 * worker's release name behaviour that existed without a key, and the current value stands in.
 */
export function workerConfigFrom(
  conf: ResolvedConfig,
  current: ResolvedConfig,
  facts: WorkerFacts,
): WorkerConfig {
  const heartbeatTimeout = conf.getDurationMs('svc.master.heartbeat.worker.timeout');
  const createText = conf.optional('svc.worker.storage.storagePolicy.createFilePolicy', 'getList')?.join(',');
  const evictText = conf.optional('svc.worker.storage.storagePolicy.evictPolicy', 'getString');
  return {
    release: conf.release,
    authEnabled: conf.getBoolean(AUTH_ENABLED),
    id: facts.id,
    master: facts.master,
    networkLocation: facts.networkLocation,
    disks: facts.disks,
    diskReserve: diskReserveFrom(conf),
    distributed: facts.distributed,
    memory: {
      capacityBytes: facts.memoryCapacityBytes,
      maxFileBytes: conf.optional(MEMORY_MAX_FILE, 'getBytes') ?? current.getBytes(MEMORY_MAX_FILE),
      evictRatio: conf.optional(MEMORY_EVICT_RATIO, 'getDouble') ?? current.getDouble(MEMORY_EVICT_RATIO),
      refuseImplicitMemory: facts.refuseImplicitMemory ?? refuseImplicitMemoryFrom(conf),
    },
    createFilePolicy: createText ? parseCreateFilePolicy(createText) : DEFAULT_CREATE_FILE_POLICY,
    evictPolicy: evictText ? parseEvictPolicy(evictText) : DEFAULT_EVICT_POLICY,
    createFileMaxAttempts:
      conf.optional('svc.worker.writer.create.maxAttempts', 'getInt') ?? CREATE_FILE_ATTEMPTS_BEFORE_KEY,
    chunkSizeBytes: conf.getBytes('svc.shuffle.chunk.size'),
    split: {
      enabled: conf.getBoolean('svc.worker.shuffle.partitionSplit.enabled'),
      minBytes: conf.getBytes('svc.worker.shuffle.partitionSplit.min'),
      maxBytes: conf.getBytes('svc.worker.shuffle.partitionSplit.max'),
    },
    // The reference heartbeats every quarter of the timeout.
    heartbeatIntervalMs: heartbeatTimeout / 4,
    register: {
      retryIntervalMs: REFERENCE_CONSTANTS.registerRetryMs,
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
    leftoverGraceMs: conf.getDurationMs('svc.worker.storage.expireDirs.timeout'),
    decommission: {
      checkIntervalMs: conf.getDurationMs('svc.worker.decommission.checkInterval'),
      forceExitTimeoutMs: conf.getDurationMs('svc.worker.decommission.forceExitTimeout'),
    },
    ...(conf.getBoolean('svc.worker.monitor.disk.enabled')
      ? { diskCheckIntervalMs: conf.getDurationMs('svc.worker.monitor.disk.check.interval') }
      : {}),
    ...(conf.getBoolean(CONGESTION_ENABLED) ? { congestion: congestionConfigFrom(conf, current) } : {}),
    ...(facts.plantedBug === undefined ? {} : { plantedBug: facts.plantedBug }),
  };
}

const CONGESTION_ENABLED = 'svc.worker.congestionControl.enabled';

/**
 * The watermarks of a worker's congestion control (unset: unlimited), through the dynamic configuration's SYSTEM
 * level when one is given (the keys are dynamic: a worker resolves them again at each reload of the store).
 */
export function congestionWatermarksFrom(
  conf: ResolvedConfig,
  dynamic?: DynamicConfig,
): CongestionWatermarks {
  const view = dynamic === undefined ? conf : dynamicView(conf, dynamic);
  const marks = (measure: string) => ({
    low: view.getBytes(`svc.worker.congestionControl.${measure}.low.watermark`),
    high: view.getBytes(`svc.worker.congestionControl.${measure}.high.watermark`),
  });
  return {
    diskBuffer: marks('diskBuffer'),
    userProduceSpeed: marks('userProduceSpeed'),
    workerProduceSpeed: marks('workerProduceSpeed'),
  };
}

/** The watermarks (unset: unlimited), the sample window and the check interval of a worker's congestion control. */
export function congestionConfigFrom(conf: ResolvedConfig, current: ResolvedConfig): CongestionConfig {
  // Both keys came after the watermarks (0.3.0 and 0.3.2): an older release uses today's defaults.
  const window = 'svc.worker.congestionControl.sample.time.window';
  const check = 'svc.worker.congestionControl.check.interval';
  return {
    ...congestionWatermarksFrom(conf),
    sampleWindowMs: conf.optional(window, 'getDurationMs') ?? current.getDurationMs(window),
    checkIntervalMs: conf.optional(check, 'getDurationMs') ?? current.getDurationMs(check),
  };
}

/** `svc.worker.storage.disk.reserve.size` and `.ratio` (unset: the size alone). */
export function diskReserveFrom(conf: ResolvedConfig): DiskReserve {
  const ratio = conf.optional('svc.worker.storage.disk.reserve.ratio', 'getDouble');
  return {
    bytes: conf.getBytes('svc.worker.storage.disk.reserve.size'),
    ...(ratio === undefined ? {} : { ratio }),
  };
}

/** The application's storage types as a client of the configuration's release reads them. */
export function availableTypesFrom(conf: ResolvedConfig): StorageType[] {
  return parseStorageTypes(conf.getList(TIERS_KEY).join(','));
}

/** Whether the client replicates what it pushes (`svc.client.push.replicate.enabled`, default by release). */
export function replicationFrom(conf: ResolvedConfig): boolean {
  return conf.getBoolean('svc.client.push.replicate.enabled');
}

/** Whether a fetch failure reruns the stage (`svc.client.spark.stageRerun.enabled`). */
export function stageRerunFrom(conf: ResolvedConfig): boolean {
  return conf.getBoolean('svc.client.spark.stageRerun.enabled');
}

/** What a lifecycle manager's configuration does not hold. */
export interface LifecycleManagerFacts {
  readonly appId: string;
  /** Who the application runs as; default: `svc.identity.user-specific.userName`. */
  readonly user?: string;
  /** The application's secret, registered with the master when svc.auth.enabled (the driver chooses it). */
  readonly secret?: string;
  /** The host the lifecycle manager runs on. */
  readonly hostname?: string;
  /** The master's node id (masterNodeId()). */
  readonly master: NodeId;
  readonly plantedBug?: PlantedBug;
}

export function lifecycleManagerConfigFrom(
  conf: ResolvedConfig,
  facts: LifecycleManagerFacts,
): LifecycleManagerConfig {
  const askTimeout = conf.getDurationMs('svc.rpc.askTimeout');
  return {
    release: conf.release,
    appId: facts.appId,
    user: facts.user ?? conf.getString('svc.identity.user-specific.userName'),
    tenant: conf.getString('svc.identity.user-specific.tenant'),
    authEnabled: conf.getBoolean(AUTH_ENABLED),
    ...(facts.secret === undefined ? {} : { secret: facts.secret }),
    ...(facts.hostname === undefined ? {} : { hostname: facts.hostname }),
    master: facts.master,
    replicate: replicationFrom(conf),
    rackAware: conf.getBoolean('svc.client.reserveSlots.rackaware.enabled'),
    availableTypes: availableTypesFrom(conf),
    maxWorkers: conf.optional('svc.client.slot.assign.maxWorkers', 'getInt') ?? UNLIMITED_WORKERS,
    split: {
      thresholdBytes: conf.getBytes('svc.client.shuffle.partitionSplit.threshold'),
      mode:
        conf.getString('svc.client.shuffle.partitionSplit.mode').toUpperCase() === 'HARD' ? 'HARD' : 'SOFT',
    },
    reviveBatchIntervalMs: conf.getDurationMs('svc.client.shuffle.batchHandleChangePartition.interval'),
    reserveMaxRetries: conf.getInt('svc.client.reserveSlots.maxRetries'),
    requestSlotsMaxRetries: REFERENCE_CONSTANTS.requestSlotsRetries,
    heartbeatIntervalMs: conf.getDurationMs('svc.client.application.heartbeatInterval'),
    requestTimeoutMs: askTimeout,
    maxRequestAttempts: REFERENCE_CONSTANTS.requestAttempts,
    fileGroupWaitMs: askTimeout / 2,
    excludePeerWorkerOnFailure: conf.getBoolean('svc.client.excludePeerWorkerOnFailure.enabled'),
    excludedWorkerExpireMs: conf.getDurationMs('svc.client.excludedWorker.expireTimeout'),
    // Before 0.4.0 the key did not exist: the current default stands in.
    filterExcludedWorkers:
      conf.optional(FILTER_EXCLUDED, 'getBoolean') ?? currentDefaultsOf('client').getBoolean(FILTER_EXCLUDED),
    ...(facts.plantedBug === undefined ? {} : { plantedBug: facts.plantedBug }),
  };
}

/** A map task's budget of unacknowledged bytes (MapTaskConfig.maxUnacknowledgedBytes). */
export function mapTaskBudgetOf(conf: ResolvedConfig): number {
  return conf.optional('svc.client.push.maxUnacknowledgedBytes', 'getBytes') ?? MAP_TASK_BUDGET_BEFORE_KEY;
}

export function mapTaskConfigFrom(
  conf: ResolvedConfig,
  ids: { readonly shuffleId: number; readonly mapId: number; readonly attemptId: number },
  shape: { readonly numMappers: number; readonly numPartitions: number },
  appId: string,
): MapTaskConfig {
  const askTimeout = conf.getDurationMs('svc.rpc.askTimeout');
  return {
    release: conf.release,
    appId,
    shuffleId: ids.shuffleId,
    mapId: ids.mapId,
    attemptId: ids.attemptId,
    numMappers: shape.numMappers,
    numPartitions: shape.numPartitions,
    lifecycleManager: lifecycleManagerNodeId(appId),
    batchSizeBytes: conf.getBytes('svc.client.push.buffer.max.size'),
    maxUnacknowledgedBytes: mapTaskBudgetOf(conf),
    mergeSizeBytes: conf.getBytes('svc.client.push.merge.maxSize'),
    maxInFlightPerPartition: conf.getInt('svc.client.push.maxInFlightPerPartition'),
    maxReviveRetries: conf.getInt('svc.client.push.revive.maxRetries'),
    pushTimeoutMs: clientPushTimeoutMs(askTimeout, replicationFrom(conf)),
    requestTimeoutMs: askTimeout,
    registerShuffleTimeout: clientAskTimeout(conf, 'registerShuffle'),
    requestPartitionTimeout: clientAskTimeout(conf, 'requestPartition'),
    maxRequestAttempts: REFERENCE_CONSTANTS.requestAttempts,
    excludeWorkerOnFailure: conf.getBoolean('svc.client.push.excludeWorkerOnFailure.enabled'),
  };
}

/** The asks of a task that have a timeout key of their own (svc.client.rpc.<ask>.askTimeout). */
export type ClientAsk = 'getReducerFileGroup' | 'registerShuffle' | 'requestPartition';

/**
 * An ask's own timeout, with the key its value came from: unset, it falls back as the client's release did (to
 * svc.<module>.io.connectionTimeout of the control plane before 0.4.1, to svc.rpc.askTimeout from 0.4.1).
 */
export function clientAskTimeout(conf: ResolvedConfig, request: ClientAsk): AskTimeout {
  const key = `svc.client.rpc.${request}.askTimeout`;
  const resolution = conf.resolution(key);
  const from =
    resolution.status === 'value' && resolution.origin.kind === 'fallback'
      ? ` from ${resolution.origin.key}`
      : '';
  return { ms: conf.getDurationMs(key), key: `${key}${from}` };
}

export function reduceTaskConfigFrom(
  conf: ResolvedConfig,
  ids: { readonly shuffleId: number; readonly partitionId: number },
  appId: string,
  plantedBug?: PlantedBug,
): ReduceTaskConfig {
  const askTimeout = conf.getDurationMs('svc.rpc.askTimeout');
  return {
    release: conf.release,
    appId,
    shuffleId: ids.shuffleId,
    partitionId: ids.partitionId,
    lifecycleManager: lifecycleManagerNodeId(appId),
    requestTimeoutMs: askTimeout,
    fileGroupTimeout: clientAskTimeout(conf, 'getReducerFileGroup'),
    maxRequestAttempts: REFERENCE_CONSTANTS.requestAttempts,
    fileGroupRetryIntervalMs: REFERENCE_CONSTANTS.fileGroupRetryMs,
    maxFileGroupAttempts: REFERENCE_CONSTANTS.fileGroupAttempts,
    fetchTimeoutMs: askTimeout,
    maxChunksAhead: conf.getInt('svc.client.fetch.maxReqsInFlight'),
    stageRerunEnabled: stageRerunFrom(conf),
    ...(plantedBug === undefined ? {} : { plantedBug }),
  };
}
