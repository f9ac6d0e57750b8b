import {
  availableTypesFrom,
  FILTER_EXCLUDED,
  lifecycleManagerConfigFrom,
  mapTaskConfigFrom,
  masterConfigFrom,
  reduceTaskConfigFrom,
  replicationFrom,
  stageRerunFrom,
  tiersKeyAt,
  workerConfigFrom,
} from '../../conf/machine-configs.ts';
import { resolveConfig, type ResolvedConfig } from '../../conf/resolve.ts';
import type { Role } from '../../conf/registry/spec.ts';
import type { StorageType, WorkerId } from '../../core/domain/index.ts';
import type { MapTaskConfig } from '../../core/machines/client/map-task.ts';
import type { ReduceTaskConfig } from '../../core/machines/client/reduce-task.ts';
import type { LifecycleManagerConfig } from '../../core/machines/lifecycle-manager/index.ts';
import type { MasterConfig } from '../../core/machines/master/index.ts';
import type { WorkerConfig } from '../../core/machines/worker/index.ts';
import type { PlantedBug } from '../../core/planted-bugs.ts';
import { masterNodeId } from '../../core/protocol/node-ids.ts';
import { CURRENT_RELEASE, isAtLeast, type Release } from '../../core/release/version.ts';
import type { BudgetMode } from '../../core/slots/index.ts';
import type { AppShape, ClusterShape, WorkerShape } from '../workload/shape.ts';
import { simApplicationSecret } from '../world/handshakes.ts';

/**
 * The simulator's side of machine configuration: each node's configuration resolved through conf/ as of its release
 * (cached), with the simulation's own settings (an application's shape, the scenario's master and worker
 * overrides) passed as ordinary configuration overrides, and the facts configuration does not hold (host, rack,
 * disks, what the seed drew) taken from the shapes. The translation from keys to machine fields is
 * conf/machine-configs.ts, shared with the runtime.
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

export interface MasterSettings {
  readonly release: Release;
  readonly dfs: boolean;
  readonly budgetMode: BudgetMode;
  /** Configuration keys the scenario sets (ClusterShape.masterOverrides). */
  readonly overrides?: Readonly<Record<string, string>>;
  readonly plantedBug?: PlantedBug;
}

export function masterConfig(settings: MasterSettings): MasterConfig {
  return masterConfigFrom(configFor(settings.release, 'master', settings.overrides), {
    dfs: settings.dfs,
    budgetMode: settings.budgetMode,
    ...(settings.plantedBug === undefined ? {} : { plantedBug: settings.plantedBug }),
  });
}

/** Worker ports: every simulated worker listens on the same ports of its own host. */
export function workerId(shape: WorkerShape): WorkerId {
  return { host: shape.host, rpcPort: 9091, pushPort: 9092, fetchPort: 9093, replicatePort: 9094 };
}

/** Files a simulated worker's reserve, commit or drop handles in one step (WorkerConfig.filesPerStep). */
export const SIM_FILES_PER_STEP = 4;

export function workerConfig(
  release: Release,
  shape: WorkerShape,
  cluster: ClusterShape,
  overrides: Readonly<Record<string, string>>,
  plantedBug?: PlantedBug,
): WorkerConfig {
  const config = workerConfigFrom(
    configFor(release, 'worker', overrides),
    configFor(CURRENT_RELEASE, 'worker', overrides),
    {
      id: workerId(shape),
      master: masterNodeId(0),
      networkLocation: shape.rack,
      disks: shape.disks,
      distributed: cluster.dfs ? ['HDFS'] : [],
      memoryCapacityBytes: shape.memoryBytes,
      // Drawn per seed (not read from svc.worker.memoryFileStorage.refuseImplicitMemory).
      refuseImplicitMemory: cluster.memoryGuard,
      ...(plantedBug === undefined ? {} : { plantedBug }),
    },
  );
  // The swarm's shuffles have at most 24 partitions: a step of 4 files takes their reserves, commits and drops
  // through the bounded steps a shuffle of 10,000 partitions takes at the default 256 (core/machines/worker).
  return { ...config, filesPerStep: SIM_FILES_PER_STEP };
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
    ...(app.push === undefined
      ? {}
      : {
          'svc.client.push.buffer.max.size': String(app.push.batchBytes),
          'svc.client.push.merge.maxSize': String(app.push.mergeBytes),
          'svc.client.push.maxInFlightPerPartition': String(app.push.window),
          // Room for two batches: the task pushes back on its application most of the time.
          ...(isAtLeast(app.clientRelease, '0.6.0')
            ? { 'svc.client.push.maxUnacknowledgedBytes': String(2 * app.push.batchBytes) }
            : {}),
        }),
    ...(app.fetchAhead === undefined ? {} : { 'svc.client.fetch.maxReqsInFlight': String(app.fetchAhead) }),
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

function clientConfWithAuth(app: AppShape): ResolvedConfig {
  return configFor(app.clientRelease, 'client', { ...clientOverrides(app), 'svc.auth.enabled': 'true' });
}

/** The application's storage types as its release reads them. */
export function availableTypesOf(app: AppShape): StorageType[] {
  return availableTypesFrom(clientConf(app));
}

export function replicationOf(app: AppShape): boolean {
  return replicationFrom(clientConf(app));
}

export function stageRerunOf(app: AppShape): boolean {
  return stageRerunFrom(clientConf(app));
}

/** `auth`: the cluster runs with application authentication on; the application then registers a secret. */
export function lifecycleManagerConfig(
  app: AppShape,
  plantedBug?: PlantedBug,
  auth = false,
): LifecycleManagerConfig {
  return lifecycleManagerConfigFrom(auth ? clientConfWithAuth(app) : clientConf(app), {
    appId: app.appId,
    user: 'sim',
    master: masterNodeId(0),
    ...(auth ? { secret: simApplicationSecret(app.appId) } : {}),
    ...(plantedBug === undefined ? {} : { plantedBug }),
  });
}

export function mapTaskConfig(
  app: AppShape,
  ids: { readonly shuffleId: number; readonly mapId: number; readonly attemptId: number },
  shape: { readonly numMappers: number; readonly numPartitions: number },
): MapTaskConfig {
  return mapTaskConfigFrom(clientConf(app), ids, shape, app.appId);
}

export function reduceTaskConfig(
  app: AppShape,
  ids: { readonly shuffleId: number; readonly partitionId: number },
  plantedBug?: PlantedBug,
): ReduceTaskConfig {
  return reduceTaskConfigFrom(clientConf(app), ids, app.appId, plantedBug);
}
