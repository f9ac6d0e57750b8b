import type { SilentPeerSettings } from '../../core/interpreter/silent-peers.ts';
import { defaultRouteIdleMs } from '../../core/interpreter/connection-limits.ts';
import type { NodeId, Principal } from '../../core/machines/effects.ts';
import { initialMapTaskState, mapTaskMachine } from '../../core/machines/client/map-task.ts';
import { initialReduceTaskState, reduceTaskMachine } from '../../core/machines/client/reduce-task.ts';
import {
  initialLifecycleManagerState,
  lifecycleManagerMachine,
} from '../../core/machines/lifecycle-manager/index.ts';
import { initialMasterState, masterMachine, type MasterState } from '../../core/machines/master/index.ts';
import { initialWorkerState, workerMachine } from '../../core/machines/worker/index.ts';
import type { PlantedBug } from '../../core/planted-bugs.ts';
import {
  lifecycleManagerNodeId,
  mapTaskNodeId,
  masterNodeId,
  reduceTaskNodeId,
  workerNodeId,
} from '../../core/protocol/node-ids.ts';
import { admitClient } from '../../core/release/admission.ts';
import { CURRENT_RELEASE, type Release } from '../../core/release/version.ts';
import type { Rng } from '../../core/rng.ts';
import { workerMemoryLimitsFrom } from '../../conf/machine-configs.ts';
import type { FaultTopology } from '../faults/inject.ts';
import { scheduleStalledFrames } from '../faults/stalled-frames.ts';
import { calmFrom, type APP_PARTS, type FaultTargets, type Schedule } from '../faults/plan.ts';
import { admissionDecisions } from '../invariants/admission.ts';
import { quotaRespected } from '../invariants/quota.ts';
import { clusterGroup, drawsHaGroup } from './ha-share.ts';
import { acknowledgedSurvivesCrash } from '../invariants/durability.ts';
import {
  intrudersRefused,
  routesNotTaken,
  scheduleIntruders,
  scheduleRouteThefts,
} from '../invariants/isolation.ts';
import { diskBudgets } from '../invariants/budget.ts';
import { diskChargedForDiskFaults } from '../invariants/disk-charges.ts';
import { epochsIncrease, replicaPlacement } from '../invariants/locations.ts';
import { readableCopies } from '../invariants/lost-data.ts';
import { memoryUse } from '../invariants/memory.ts';
import { committedReads } from '../invariants/reads.ts';
import { survivesOneWorkerLoss, TaskFailures } from '../invariants/one-worker-loss.ts';
import { noSlotsOnUnavailable } from '../invariants/slots.ts';
import { unansweredRequestsFailed } from '../invariants/unanswered.ts';
import { congestionCounts, congestionOverrides } from './congestion.ts';
import type { Scenario, ScenarioRun } from './contract.ts';
import { Engine, type TaskFactory } from '../workload/engine.ts';
import { mapRecords } from '../workload/records.ts';
import type { AppShape, WorkloadShape } from '../workload/shape.ts';
import { chance, logUniform, pick, streamRng } from '../world/random.ts';
import type { World } from '../world/world.ts';
import {
  availableTypesOf,
  clientOverrides,
  configFor,
  lifecycleManagerConfig,
  mapTaskConfig,
  masterConfig,
  reduceTaskConfig,
  replicationOf,
  stageRerunOf,
  workerConfig,
  workerId,
} from './configs.ts';
import { rollingUpgrade } from './upgrade.ts';

/** Simulated connections prove what the real handshake would: servers the cluster secret, clients their application's. */
const SERVER_PRINCIPAL: Principal = { kind: 'server' };

function applicationPrincipal(app: AppShape): Principal {
  return { kind: 'application', appId: app.appId };
}

/** Set for the master and the workers alike: the workers' heartbeat interval is a quarter of it. */
const WORKER_HEARTBEAT_TIMEOUT = 'svc.master.heartbeat.worker.timeout';

/**
 * How long after the last fault every job must have finished (virtual time), from the defaults of the current
 * release. The slowest recovery the configuration allows is a chain: a worker asked to shut down gracefully during
 * the storm may drain until its deadline (svc.worker.graceful.shutdown.checkSlotsFinished.timeout, 480 s: it waits
 * for shuffles that cannot progress without it), and a client that failed to reach it meanwhile keeps it excluded for
 * svc.client.excludedWorker.expireTimeout (180 s) after that. Four more minutes cover noticing a lost worker (120 s
 * plus a check period), unanswered requests (svc.rpc.askTimeout, 60 s each) and the engine's retry backoff.
 * (A fixed ten minutes was shorter than that chain: swarm seed 4697.)
 */
const LIVENESS_BOUND_MS = (() => {
  const worker = configFor(CURRENT_RELEASE, 'worker');
  const client = configFor(CURRENT_RELEASE, 'client');
  return (
    worker.getDurationMs('svc.worker.graceful.shutdown.checkSlotsFinished.timeout') +
    client.getDurationMs('svc.client.excludedWorker.expireTimeout') +
    4 * 60_000
  );
})();

/** How long a worker shutting down gracefully may drain before it exits anyway. */
const GRACEFUL_DRAIN_MS = configFor(CURRENT_RELEASE, 'worker').getDurationMs(
  'svc.worker.graceful.shutdown.checkSlotsFinished.timeout',
);

/** How long a route to a node is kept after it last spoke, when no one sets it (core/interpreter). */
const ROUTE_IDLE_MS = defaultRouteIdleMs(
  configFor(CURRENT_RELEASE, 'worker').getDurationMs('svc.network.timeout'),
);

/**
 * The smallest svc.network.frame.maxSize the cluster's configuration allows, for clusters whose workers' budgets are
 * scaled down to the simulated data: the key must exceed svc.shuffle.chunk.size and every client's push buffer and
 * merge sizes (conf/registry/keys/common.ts). Twice the largest, so that a batch that overshoots its buffer by a
 * record, or a merge by a batch, still fits; at least the key's minimum.
 */
function smallestFrameMaxSize(chunkSize: string, apps: readonly AppShape[]): number {
  let largest = configFor(CURRENT_RELEASE, 'worker', { 'svc.shuffle.chunk.size': chunkSize }).getBytes(
    'svc.shuffle.chunk.size',
  );
  for (const app of apps) {
    const conf = configFor(app.clientRelease, 'client', clientOverrides(app));
    for (const key of ['svc.client.push.buffer.max.size', 'svc.client.push.merge.maxSize']) {
      largest = Math.max(largest, conf.optional(key, 'getBytes') ?? 0);
    }
  }
  return Math.max(1024, 2 * largest);
}

/** Stage attempts of one job the engine starts after the faults stopped before it calls the run a livelock. */
const MAX_STAGE_ATTEMPTS_AFTER_CALM = 4;

/**
 * The compute time of the application whose tasks take longest, as if it ran one task at a time (an upper bound
 * whatever its task slots): every map, every read of every reducer, and the pause before a re-read.
 */
function longestComputeMs(apps: readonly AppShape[]): number {
  const sum = (values: readonly number[] | undefined) => (values ?? []).reduce((total, ms) => total + ms, 0);
  let longest = 0;
  for (const app of apps) {
    let total = 0;
    for (const job of app.jobs) {
      const reads = job.rereadAfterMs === undefined ? 1 : 2;
      total += sum(job.mapComputeMs) + reads * sum(job.reduceComputeMs) + (job.rereadAfterMs ?? 0);
    }
    longest = Math.max(longest, total);
  }
  return longest;
}

/** Which faults a scenario's plan may draw (fault kinds added later are off in scenarios that replay old seeds). */
export type FaultOptions = Pick<
  FaultTargets,
  | 'diskFaults'
  | 'taskKills'
  | 'dfsFaults'
  | 'partitionSides'
  | 'descriptorFaults'
  | 'oneWayPartitions'
  | 'calmShare'
>;

/**
 * What a cluster scenario may leave out: the faults the plan draws (see FaultTargets); and what it may add: hostile
 * peers that stall large frames on the workers (sim/faults/stalled-frames.ts; default off: with budgets smaller
 * than a frame, one stalled frame pauses a worker until its deadline, which the swarm's invariants do not survive,
 * docs/simulation.md).
 */
export type ClusterOptions = FaultOptions & {
  readonly stalledFrames?: boolean;
  /** A share of the seeds runs the master as a group of masters failing over (sim/cluster/ha-share.ts; default off). */
  readonly haGroup?: boolean;
};

/** Visits of a peer that stalls frames on the workers, per run. */
const STALLED_FRAME_VISITS = 2;

/**
 * A cluster scenario: one master, workers with disks (and a DFS, memory tiers), applications of various client
 * releases running jobs through the compute-engine model, every invariant checker, and the fault topology. The
 * workload shape comes from `shape(rng)` (swarm-drawn or fixed); everything else is the same for every scenario,
 * but for the faults the plan may draw (`options`: the disk faults, whether executors are lost and whether the DFS
 * fails; default all).
 */
export function clusterScenario(
  name: string,
  shape: (rng: Rng) => WorkloadShape,
  options: ClusterOptions = {},
): Scenario {
  return {
    name,
    build(world, context) {
      return buildCluster(
        world,
        shape(streamRng(context.seed, 'workload')),
        context.seed,
        context.plantedBug,
        options,
      );
    },
  };
}

function buildCluster(
  world: World,
  workload: WorkloadShape,
  seed: number,
  plantedBug: PlantedBug | undefined,
  faultOptions: ClusterOptions,
): ScenarioRun {
  const { cluster, apps } = workload;
  const settings = streamRng(seed, 'settings');
  const master = masterNodeId(0);
  const budgetMode = chance(settings, 0.5) ? 'strict' : 'overcommit';
  const heartbeat: Record<string, string> =
    cluster.workerHeartbeatTimeout === undefined
      ? {}
      : { [WORKER_HEARTBEAT_TIMEOUT]: cluster.workerHeartbeatTimeout };
  const auth: Record<string, string> = cluster.auth === true ? { 'svc.auth.enabled': 'true' } : {};
  // With the default budget (1g) the simulated data never makes a worker pause; 30 % of clusters get budgets of
  // 256 B-16 KiB (a few of its writes), so that pushes and replicas wait for the disks, and the smallest frame limit
  // their clients allow, so that partly received frames may be given up. Drawn from a stream of its own: no other
  // draw moves.
  const pressure = streamRng(seed, 'back-pressure');
  const tightBudget = chance(pressure, 0.3) ? Math.round(logUniform(pressure, 256, 16_384)) : undefined;
  const chunkSize = pick(settings, ['1k', '4k', '8m']);
  const congestion = congestionOverrides(seed);
  const workerOverrides: Record<string, string> = {
    ...congestion,
    'svc.shuffle.chunk.size': chunkSize,
    ...(tightBudget === undefined
      ? {}
      : { 'svc.network.frame.maxSize': String(smallestFrameMaxSize(chunkSize, apps)) }),
    // Short enough that a restarted worker's leftover files are removed within a run (core/machines/worker/leftovers.ts).
    'svc.worker.storage.expireDirs.timeout': '1s',
    // Simulated workers keep a recovery store, as a runtime worker does only with graceful shutdown on.
    'svc.worker.graceful.shutdown.enabled': 'true',
    ...heartbeat,
    ...auth,
  };
  const quota: Record<string, string> =
    cluster.quota === undefined
      ? {}
      : {
          'svc.quota.user.diskBytesWritten': String(cluster.quota.diskBytes),
          'svc.quota.interruptShuffle.enabled': String(cluster.quota.interrupt),
          'svc.master.userResourceConsumption.update.interval': '1s',
        };
  const masterOverrides: Record<string, string> = {
    ...cluster.masterOverrides,
    ...heartbeat,
    ...auth,
    ...quota,
  };

  // Replies and messages to tasks travel on the core's reply routes, under the core's speaker rules.
  world.modelTransport({
    authenticated: cluster.auth === true,
    routeIdleMs: ROUTE_IDLE_MS,
    // Half the authenticated clusters trust a learnt secret for a second only (svc.worker.auth.secretCache.expiry),
    // so that workers' caches expire and ask the master again within a run. A stream of its own: no other draw moves.
    ...(cluster.auth === true && chance(streamRng(seed, 'handshakes'), 0.5)
      ? { secretCacheExpiryMs: 1_000 }
      : {}),
    ...(plantedBug === undefined ? {} : { plantedBug }),
    silentPeers: silentPeerSettings(seed),
  });
  const masterState = (release: Release) =>
    initialMasterState(
      masterConfig({
        release,
        dfs: cluster.dfs,
        budgetMode,
        overrides: masterOverrides,
        ...(plantedBug === undefined ? {} : { plantedBug }),
      }),
    );
  // A share of the swarm's seeds runs the cluster's master as a group of three (./ha-share.ts): the other processes
  // address `master`, which no node is, and follow its leader. Not with a rolling upgrade, which restarts one master.
  const haGroupRun = faultOptions.haGroup === true && cluster.upgrade === undefined && drawsHaGroup(seed);
  const group = haGroupRun
    ? clusterGroup(seed, master, masterState(cluster.serverRelease).durable, plantedBug)
    : undefined;
  for (const id of group?.members ?? [master]) {
    world.addNode({
      id,
      role: 'master',
      release: cluster.serverRelease,
      principal: SERVER_PRINCIPAL,
      machine: masterMachine,
      initialState: masterState,
    });
  }
  const groupObserver = group?.install(world);
  if (group === undefined) world.schedule(0, 'start master', (w) => w.start(master));

  // As of the release the workers present (a changed default, such as directMemoryRatioToResume, is theirs).
  const workerMemory = workerMemoryLimitsFrom(
    configFor(cluster.serverRelease, 'worker', workerOverrides).withLaterKeysFrom(
      configFor(CURRENT_RELEASE, 'worker', workerOverrides),
    ),
    tightBudget,
  );
  const workerNodes = new Map<string, NodeId>();
  cluster.workers.forEach((shape, index) => {
    const id = workerNodeId(workerId(shape));
    workerNodes.set(shape.token, id);
    world.addNode({
      id,
      role: 'worker',
      release: cluster.serverRelease,
      principal: SERVER_PRINCIPAL,
      machine: workerMachine,
      backPressure: {
        ...workerMemory.backPressure,
        ...(plantedBug === undefined ? {} : { plantedBug }),
      },
      partialFrames: { limitBytes: workerMemory.partialFrameLimitBytes },
      disks: shape.disks,
      dfs: cluster.dfs,
      initialState: (release) =>
        initialWorkerState(workerConfig(release, shape, cluster, workerOverrides, plantedBug)),
    });
    world.schedule(10 + index, `start worker ${shape.token}`, (w) => w.start(id));
  });

  const byAppId = new Map(apps.map((app) => [app.appId, app]));
  const stageRerun = new Map(apps.map((app) => [app.appId, stageRerunOf(app)]));
  const factory: TaskFactory = {
    mapTask(app, job, mapId, attemptId, registeredLocations) {
      const ids = { shuffleId: job.shuffleId, mapId, attemptId };
      return {
        id: mapTaskNodeId(app.appId, job.shuffleId, mapId, attemptId),
        role: 'map',
        addressless: true,
        release: app.clientRelease,
        principal: applicationPrincipal(app),
        machine: mapTaskMachine,
        initialState: () => {
          const config = mapTaskConfig(app, ids, job.shape);
          const known = registeredLocations();
          return initialMapTaskState(
            known === undefined ? config : { ...config, registeredLocations: known },
          );
        },
      };
    },
    mapRecords(app, job, mapId, attemptId) {
      return mapRecords(
        { appId: app.appId, shuffleId: job.shuffleId, mapId, attemptId },
        job.shape.records[mapId] ?? [],
        job.shape.recordBytes,
      );
    },
    reduceTask(app, job, partitionId, cachedFileGroup) {
      return {
        id: reduceTaskNodeId(app.appId, job.shuffleId, partitionId),
        role: 'reduce',
        addressless: true,
        release: app.clientRelease,
        principal: applicationPrincipal(app),
        machine: reduceTaskMachine,
        initialState: () => {
          const config = reduceTaskConfig(app, { shuffleId: job.shuffleId, partitionId }, plantedBug);
          const cached = cachedFileGroup();
          return initialReduceTaskState(
            // The new field first: a spread that adds a field takes V8's slow path (docs/core.md, Performance).
            cached === undefined ? config : { cachedFileGroup: cached, ...config },
          );
        },
      };
    },
  };

  let schedule: Schedule | undefined;
  const engine = new Engine(apps, factory, {
    stageRerun: (app) => stageRerun.get(app.appId) ?? false,
    // A group's failovers, as a master's crash, leave workers unable to learn a secret for a while.
    // A rolling upgrade loses data too: a worker whose graceful drain reaches its deadline restarts without what it
    // had not committed (swarm seed 39288: two workers, replication, a job that could take no slots meanwhile).
    dataLossPossible: () =>
      group !== undefined ||
      schedule === undefined ||
      cluster.upgrade !== undefined ||
      dataLossPossible(schedule),
    readableCopies,
    capacityLossPossible: () =>
      cluster.smallDisks === true || schedule === undefined || capacityLossPossible(schedule),
    expectedFailureAttempts: 3,
    maxStageAttemptsAfterCalm: MAX_STAGE_ATTEMPTS_AFTER_CALM,
    retryDelayMs: 1_000,
    speculationDelayMs: 20,
  });
  // New clients of a right-order upgrade start once every server runs the new release (startAt counts from then).
  const afterUpgrade = new Set(
    cluster.upgrade?.order === 'right' ? cluster.upgrade.newClients : ([] as readonly string[]),
  );
  const startAfterUpgrade = (w: World) => {
    for (const app of apps) {
      if (!afterUpgrade.has(app.token)) continue;
      const lm = lifecycleManagerNodeId(app.appId);
      const at = w.now + app.startAt;
      w.schedule(at, `start ${app.appId} (client ${app.clientRelease})`, (later) => later.start(lm));
      engine.startApp(w, app.token, at);
    }
  };
  for (const app of apps) {
    const lm = lifecycleManagerNodeId(app.appId);
    world.addNode({
      id: lm,
      role: 'lifecycle-manager',
      release: app.clientRelease,
      principal: applicationPrincipal(app),
      machine: lifecycleManagerMachine,
      initialState: () =>
        initialLifecycleManagerState(lifecycleManagerConfig(app, plantedBug, cluster.auth === true)),
    });
    engine.attach(lm, app.token);
    if (!afterUpgrade.has(app.token))
      world.schedule(app.startAt, `start ${app.appId} (client ${app.clientRelease})`, (w) => w.start(lm));
  }
  engine.start(world, afterUpgrade);

  const workerSet = new Set(workerNodes.values());
  // Drawn from a stream of its own, so that no other draw of the seed changes.
  if (cluster.auth === true) {
    scheduleIntruders(world, [...workerSet], streamRng(seed, 'intruders'), 4);
    scheduleRouteThefts(world, [...workerSet], streamRng(seed, 'intruders:routes'), 30);
    routesNotTaken(world);
  }
  const { stalledFrames, haGroup: _drawnAbove, ...planOptions } = faultOptions;
  if (stalledFrames === true) {
    // Drawn from a stream of its own, so that no other draw of the seed changes.
    const conf = configFor(CURRENT_RELEASE, 'worker', workerOverrides);
    scheduleStalledFrames(world, [...workerSet], streamRng(seed, 'stalled-frames'), STALLED_FRAME_VISITS, {
      frameMaxBytes: conf.getBytes('svc.network.frame.maxSize'),
      timeoutMs: conf.getDurationMs('svc.network.timeout'),
    });
  }
  const isWorker = (node: NodeId) => workerSet.has(node);
  const masters = new Set(group?.members ?? [master]);
  const isMaster = (node: NodeId) => masters.has(node);
  const memory = memoryUse({
    app: (appId) => {
      const app = byAppId.get(appId);
      return app && { release: app.clientRelease, memoryEnabled: availableTypesOf(app).includes('MEMORY') };
    },
    guardOn: () => cluster.memoryGuard,
  });

  const targets: FaultTargets = {
    workers: cluster.workers.map((w) => ({ token: w.token, mounts: w.disks.map((d) => d.mountPoint) })),
    // The group draws its own failovers (sim/ha/cluster-group.ts); the plan's master faults are the single master's.
    masters: group === undefined ? ['m0'] : [],
    apps: apps.map((a) => a.token),
    dfs: cluster.dfs,
    ...planOptions,
    ...(cluster.oneWorkerLoss === true ? { oneWorkerLoss: pushWindow(apps) } : {}),
  };
  const appGroups = new Map<string, (node: NodeId) => boolean>();
  for (const app of apps) {
    const parts = appParts(app);
    appGroups.set(app.token, (node) => parts.driver(node) || parts.executors(node));
    appGroups.set(`${app.token}.driver`, parts.driver);
    appGroups.set(`${app.token}.executors`, parts.executors);
  }
  const topology: FaultTopology = {
    node: (token) => (token === 'm0' ? master : workerNodes.get(token)),
    group: (token) => {
      const node = token === 'm0' ? master : workerNodes.get(token);
      return node === undefined ? appGroups.get(token) : (candidate) => candidate === node;
    },
    master: group === undefined ? master : () => group.leader(),
    supervised: new Set(group === undefined ? [master, ...workerSet] : workerSet),
    supervisorDelayMs: 1_000,
    killTask: (w, token, task) => engine.killTask(w, token, task),
  };

  const taskFailures = new TaskFailures();
  const budgets =
    budgetMode === 'strict'
      ? [diskBudgets(isMaster, (node) => (world.stateOf(node) as MasterState).durable.estimatedPartitionSize)]
      : [];
  const upgrade = cluster.upgrade;
  const upgrading = upgrade
    ? [rollingUpgrade(world, upgrade, master, [...workerSet], startAfterUpgrade)]
    : [];

  return {
    targets,
    topology,
    // Plus the tasks' own compute time, once for every stage attempt the engine allows after the faults; and, in a
    // rolling upgrade, one drain deadline for each worker after the first (LIVENESS_BOUND_MS holds one): the workers
    // restart one at a time, and each may drain until its deadline while a job needs it to take slots (swarm seed
    // 39288: two workers and replication, so no revive while one drains).
    livenessBoundMs:
      LIVENESS_BOUND_MS +
      (upgrade === undefined ? 0 : Math.max(0, workerSet.size - 1) * GRACEFUL_DRAIN_MS) +
      (1 + MAX_STAGE_ATTEMPTS_AFTER_CALM) * longestComputeMs(apps),
    observers: [
      engine,
      replicaPlacement(),
      epochsIncrease(),
      committedReads(isWorker),
      diskChargedForDiskFaults(isWorker),
      noSlotsOnUnavailable(
        isMaster,
        (node) => world.roleOf(node) === 'lifecycle-manager',
        (node) => (world.stateOf(node) as MasterState).config.workerHeartbeatTimeoutMs,
      ),
      memory,
      taskFailures,
      intrudersRefused(),
      acknowledgedSurvivesCrash(isMaster, isWorker),
      ...(groupObserver === undefined ? [] : [groupObserver]),
      unansweredRequestsFailed(),
      quotaRespected(isMaster),
      admissionDecisions(
        (node) => isMaster(node) || isWorker(node),
        (node) => CLIENT_ROLES.has(world.roleOf(node) ?? ''),
      ),
      ...budgets,
      ...upgrading,
    ],
    useSchedule(chosen) {
      schedule = chosen;
      engine.setCalmAt(Math.max(calmFrom(chosen), group?.calmAt ?? 0));
    },
    finished: () => engine.finished(),
    finalCheck() {
      // A group's failovers are faults beyond the one worker loss that invariant allows.
      const lossFailure =
        schedule === undefined || group !== undefined
          ? undefined
          : survivesOneWorkerLoss(schedule, cluster, engine.outcomes(), taskFailures, replicationOf);
      if (lossFailure !== undefined) return lossFailure;
      const lost = group?.finalCheck();
      if (lost !== undefined) return { invariant: 'ha-no-shuffle-lost', detail: lost };
      for (const { app, outcome } of engine.outcomes()) {
        const refused = outcome.kind === 'failed' && outcome.reason.startsWith('refused by admission');
        const expectation = expectedAdmission(app, cluster);
        if (expectation === undefined) continue;
        if (expectation.refused && outcome.kind === 'done') {
          return {
            invariant: 'admission',
            detail: `${app.appId} (client ${app.clientRelease}) finished its jobs, but ${expectation.why}`,
          };
        }
        if (!expectation.refused && refused) {
          return {
            invariant: 'admission',
            detail: `${app.appId} (client ${app.clientRelease}) was refused, but ${expectation.why}: ${outcome.reason}`,
          };
        }
      }
      return undefined;
    },
    report() {
      const notes: string[] = [];
      const counts: Record<string, number> = { apps: apps.length, workers: cluster.workers.length };
      for (const { app, outcome } of engine.outcomes()) {
        counts[`apps.${outcome.kind}`] = (counts[`apps.${outcome.kind}`] ?? 0) + 1;
        // Refused or stopped by a quota (svc.quota.*): expected, and counted apart so that a run shows it happens.
        if (outcome.kind === 'failed' && outcome.reason.startsWith('over quota'))
          counts['apps.overQuota'] = (counts['apps.overQuota'] ?? 0) + 1;
        if (outcome.kind === 'failed') {
          notes.push(`${app.appId} (client ${app.clientRelease}) failed: ${outcome.reason}`);
        }
      }
      const memoryWithoutEnabling = memory
        .findings()
        .map(
          (finding) =>
            `${finding.appId} (client ${finding.release}) had data in memory on ${finding.worker} without enabling MEMORY (contract rule 4): ${finding.file}, ${finding.how}`,
        );
      notes.push(...memoryWithoutEnabling);
      counts['memoryWithoutEnabling'] = memoryWithoutEnabling.length;
      // How many discrete faults struck before the run ended (it ends when every job has), i.e. while a job ran:
      // a fault drawn for after the workload tests nothing.
      const faults = schedule?.faults ?? [];
      if (group !== undefined) {
        counts['ha.groups'] = 1;
        counts['ha.terms'] = group.terms;
        counts['ha.faults'] = group.faults.length;
        for (const [name, value] of world.trace.counters)
          if (name.startsWith('ha.follow.')) counts[name] = value;
      }
      counts['faults'] = faults.length;
      counts['faults.struck'] = faults.filter((fault) => fault.at <= world.now).length;
      // What the workers' back-pressure did (sim/world/back-pressure.ts): arrivals held on paused ports, pauses
      // that partly received frames caused, and frames given up past their limit.
      for (const [name, value] of world.trace.counters) {
        if (name.startsWith('backPressure.') || name.startsWith('partialFrames.')) counts[name] = value;
        // What the handshakes did beyond accepting (sim/world/handshakes.ts): refusals, secret lookups, later proofs.
        if (name.startsWith('handshake.') && name !== 'handshake.accepted') counts[name] = value;
        // Peers given up on as silent, their pings and probes, and the requests failed at once meanwhile.
        if (name.startsWith('transport.silentPeer')) counts[name] = value;
        // Map tasks that started from their executor's locations and sent no RegisterShuffle.
        if (name === 'maps.locationsFromExecutor') counts[name] = value;
        // Reducers that waited for another reducer of their executor to ask for the file group, and did not ask.
        if (name === 'reduces.fileGroupWaited') counts[name] = value;
      }
      Object.assign(counts, congestionCounts(world.trace.counters, Object.keys(congestion).length > 0));
      notes.push(...engine.progress(world));
      return { notes, counts, memoryWithoutEnabling };
    },
  };
}

/**
 * When the first maps push: from the first application's start (its maps write at once, workload/shape.ts) until
 * well into its first job's pushes.
 */
function pushWindow(apps: readonly AppShape[]): { readonly from: number; readonly to: number } {
  const first = apps.reduce((a, b) => (b.startAt < a.startAt ? b : a));
  return { from: first.startAt + 50, to: first.startAt + 1_500 };
}

/** An application's driver (its lifecycle manager) and its executors (every map and reduce task), as groups. */
function appParts(app: AppShape): Record<(typeof APP_PARTS)[number], (node: NodeId) => boolean> {
  const lm = lifecycleManagerNodeId(app.appId);
  const maps = `map-${app.appId}-`;
  const reduces = `reduce-${app.appId}-`;
  return {
    driver: (node) => node === lm,
    executors: (node) => node.startsWith(maps) || node.startsWith(reduces),
  };
}

/**
 * Whether any fault of the schedule can make committed data unreadable, for a while or for good, and so explain a
 * fetch failure: lost messages, failed I/O, and any worker that is down or cut off (a graceful restart too: the
 * data survives it, but a reader that comes while the worker is away cannot fetch). Duplicates, reordering, slow
 * disks and operator exclusions cannot.
 */
function dataLossPossible(schedule: Schedule): boolean {
  const { knobs, faults } = schedule;
  if (knobs.ioError > 0 || knobs.noSpace > 0 || knobs.drop > 0) return true;
  return faults.some(
    (fault) => fault.kind !== 'exclude' && !(fault.kind === 'disk' && fault.fault === 'slow'),
  );
}

/** Whether the schedule decommissions a worker (one-way: see EngineOptions.capacityLossPossible). */
function capacityLossPossible(schedule: Schedule): boolean {
  return schedule.faults.some((fault) => fault.kind === 'event' && fault.event === 'Decommission');
}

const CLIENT_ROLES: ReadonlySet<string> = new Set(['lifecycle-manager', 'map', 'reduce']);

/**
 * Whether the servers must refuse an application (and why), for the end-of-run admission check; undefined when it
 * depends on timing (a client started before a rolling upgrade may reach old or upgraded servers — the message
 * checker judges each answer then).
 */
function expectedAdmission(
  app: AppShape,
  cluster: WorkloadShape['cluster'],
): { refused: boolean; why: string } | undefined {
  const upgrade = cluster.upgrade;
  if (upgrade && upgrade.newClients.includes(app.token)) {
    if (upgrade.order === 'wrong') return undefined;
    return { refused: false, why: `it started after every server was upgraded to ${upgrade.to}` };
  }
  const releases = upgrade ? [cluster.serverRelease, upgrade.to] : [cluster.serverRelease];
  for (const server of releases) {
    const admission = admitClient(server, app.clientRelease);
    if (!admission.admitted) return { refused: true, why: admission.message };
  }
  return { refused: false, why: `servers of ${releases.join(' and ')} admit client ${app.clientRelease}` };
}

/**
 * How soon a process gives up on a peer that owes answers and says nothing (core/interpreter/silent-peers.ts): a
 * ping after 0.5-2 s unheard, silent after 3-8 times that. A stream of its own: no other draw moves.
 */
function silentPeerSettings(seed: number): SilentPeerSettings {
  const rng = streamRng(seed, 'silence');
  const pingAfterMs = 500 + Math.floor(rng.next() * 1_500);
  return { pingAfterMs, silentAfterMs: pingAfterMs * (3 + Math.floor(rng.next() * 6)) };
}
