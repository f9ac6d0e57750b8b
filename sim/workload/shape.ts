import { FILTER_EXCLUDED, readsKeyAt, tiersKeyAt, TIERS_KEY } from '../../conf/machine-configs.ts';
import type { StorageType } from '../../core/domain/index.ts';
import { admitClient } from '../../core/release/admission.ts';
import { oldestAcceptedClient } from '../../core/release/admission.ts';
import { isAtLeast, KNOWN_RELEASES, type Release } from '../../core/release/version.ts';
import type { Rng } from '../../core/rng.ts';
import { chance, logUniform, pick, uniform } from '../world/random.ts';
import type { DiskSpec } from '../world/storage.ts';

/**
 * The shape of one run's cluster and workload, as plain data drawn from the seed (swarm testing: small and large,
 * old and new clients, replication on and off, every tier) or fixed (the standard benchmark scenario).
 */
export interface ClusterShape {
  /** Release of masters and workers at the start. */
  readonly serverRelease: Release;
  readonly workers: readonly WorkerShape[];
  /** Whether the cluster has a distributed filesystem (HDFS) that workers write to. */
  readonly dfs: boolean;
  /** The worker-side memory guard: refuse memory to applications that did not enable it (see docs). */
  readonly memoryGuard: boolean;
  /** A rolling upgrade of the servers during the run, if any. */
  readonly upgrade?: UpgradeShape;
  /**
   * Master configuration the seed sets, as an operator writes it (`svc.master.slot.assign.policy: LOADAWARE`, ...),
   * resolved by conf/ for the master's release like any deployment's; unset keys keep that release's defaults.
   * Only keys every drawn server release knows are set.
   */
  readonly masterOverrides?: Readonly<Record<string, string>>;
  /**
   * Disks of 16 KiB–1 MiB (swarm): they may fill for good (a full disk takes no new file until its worker
   * restarts), so a job may end out of slots once the faults are over, as with a decommission.
   */
  readonly smallDisks?: boolean;
  /**
   * `svc.master.heartbeat.worker.timeout` for the master and the workers (which heartbeat four times per timeout);
   * undefined = the default (120 s). A short one makes crashed, cut-off or slow workers lost within a run.
   */
  readonly workerHeartbeatTimeout?: string;
  /**
   * Application authentication on (svc.auth.enabled) for servers and clients: every request's principal is
   * checked, so a legitimate message the rules would refuse shows as a stuck or failed job.
   */
  readonly auth?: boolean;
  /**
   * A small cluster (3 or 4 workers) whose applications all replicate, drawn for the fault plan to lose exactly one
   * worker while maps push (sim/faults/plan.ts, `oneWorkerLoss`): what replication exists to survive, checked by the
   * `survives-one-worker-loss` invariant.
   */
  readonly oneWorkerLoss?: boolean;
  /**
   * Quotas on (svc.quota.*, a 0.6.0 master): each user's disk bytes limited to a few kilobytes, so that some
   * applications' later shuffles are refused (QUOTA_EXCEEDED), and with `interrupt` running ones stopped.
   */
  readonly quota?: { readonly diskBytes: number; readonly interrupt: boolean };
}

export interface WorkerShape {
  /** `w<n>`: how fault schedules name the worker. */
  readonly token: string;
  readonly host: string;
  readonly rack: string;
  readonly disks: readonly DiskSpec[];
  /** Bytes of the memory tier; 0 turns it off. */
  readonly memoryBytes: number;
}

/**
 * A rolling upgrade to `to`, starting at `at`: one server at a time is shut down gracefully and started on the
 * new release. In the right order masters and workers go first and clients of the new release only start after;
 * in the wrong order the new clients start first and must be refused.
 */
export interface UpgradeShape {
  readonly to: Release;
  readonly at: number;
  /** Time between two servers' upgrades (one server at a time: the master, then each worker). */
  readonly gapMs: number;
  readonly order: 'right' | 'wrong';
  /**
   * Applications (tokens) on the new client release: started after the servers (right; their startAt then counts
   * from the end of the upgrade) or before (wrong).
   */
  readonly newClients: readonly string[];
}

export interface AppShape {
  /** `a<n>`: how fault schedules name the application (its lifecycle manager and all its tasks). */
  readonly token: string;
  readonly appId: string;
  readonly clientRelease: Release;
  /** `svc.client.push.replicate.enabled`; undefined = the default of the client's release. */
  readonly replicate?: boolean;
  /** `svc.storage.availableTypes` of the application. */
  readonly availableTypes: readonly StorageType[];
  /** `svc.client.spark.stageRerun.enabled`; undefined = the default of the client's release. */
  readonly stageRerun?: boolean;
  /** `svc.client.shuffle.partitionSplit.threshold`; undefined = the default (small values force splits). */
  readonly splitThresholdBytes?: number;
  /** `svc.client.shuffle.partitionSplit.mode`; undefined = the default (SOFT). */
  readonly splitMode?: 'SOFT' | 'HARD';
  /** `svc.client.reserveSlots.rackaware.enabled`; undefined = the default (off). */
  readonly rackAware?: boolean;
  /**
   * `svc.client.shuffle.register.filterExcludedWorker.enabled` (from 0.4.0); undefined = the default (off): whether
   * the client names the workers it excluded itself in RequestSlots, for the master to leave out.
   */
  readonly filterExcludedWorkers?: boolean;
  /**
   * `svc.client.application.heartbeatInterval`; undefined = the default. Short intervals let the lifecycle manager
   * learn of excluded and shutting workers while its jobs still revive.
   */
  readonly heartbeatIntervalMs?: number;
  /**
   * How map tasks cut and send their data: `svc.client.push.buffer.max.size` (batchBytes),
   * `svc.client.push.merge.maxSize` (mergeBytes) and `svc.client.push.maxInFlightPerPartition` (window).
   * Undefined: the defaults, under which the swarm's few small records make one batch per partition and map, so
   * that no partition ever has two batches in flight.
   */
  readonly push?: { readonly batchBytes: number; readonly mergeBytes: number; readonly window: number };
  /** `svc.client.fetch.maxReqsInFlight`: chunks a reducer fetches ahead of its consumer; undefined = the default. */
  readonly fetchAhead?: number;
  readonly startAt: number;
  /**
   * Tasks the application's executors run at once (executors × cores per executor); further tasks wait for a free
   * slot, in launch order. Undefined: every task runs at once.
   */
  readonly taskSlots?: number;
  /**
   * Task slots per executor (default 4, a common `spark.executor.cores`); only with taskSlots. Reduce tasks in one
   * executor share its shuffle client's file-group cache: one GetReducerFileGroup per shuffle per executor.
   */
  readonly executorCores?: number;
  /** Jobs run one after another; each writes one shuffle and reads it back. */
  readonly jobs: readonly JobShape[];
}

export interface JobShape {
  readonly numMappers: number;
  readonly numPartitions: number;
  /** Records each map writes to each partition: `records[map][partition]`. */
  readonly records: readonly (readonly number[])[];
  readonly recordBytes: number;
  /** Maps that run a second, speculative attempt. */
  readonly speculative: readonly number[];
  /**
   * When set, the shuffle is read a second time this long after the first read finished (a later job reusing the
   * map output), so that restarts and faults between commit and read get their chance.
   */
  readonly rereadAfterMs?: number;
  /**
   * How long each map computes its output before it writes it (reading its input, running the user's function),
   * ms, by map id; every attempt of a map does the same work. Undefined: no time at all.
   */
  readonly mapComputeMs?: readonly number[];
  /**
   * How long each reducer computes over the records it read before it ends (holding its task slot), ms, by
   * partition. Undefined: no time at all.
   */
  readonly reduceComputeMs?: readonly number[];
}

export interface WorkloadShape {
  readonly cluster: ClusterShape;
  readonly apps: readonly AppShape[];
}

const MiB = 1024 * 1024;
const GiB = 1024 * MiB;
const CLIENT_RELEASES: readonly Release[] = KNOWN_RELEASES.filter(
  (r) => isAtLeast(r, '0.2.0') && isAtLeast('0.6.0', r),
);

function workers(count: number, rng: Rng, options: { memory: boolean }): WorkerShape[] {
  const racks = Math.max(1, Math.min(4, Math.ceil(count / 3)));
  return [...Array(count).keys()].map((i) => {
    const diskCount = 1 + Math.floor(rng.next() * 3);
    const disks = [...Array(diskCount).keys()].map((d): DiskSpec => ({
      mountPoint: `/mnt/disk${d}`,
      type: chance(rng, 0.5) ? 'SSD' : 'HDD',
      capacityBytes: Math.round(uniform(rng, 4, 64)) * GiB,
    }));
    return {
      token: `w${i}`,
      host: `host${i}`,
      rack: `/rack${i % racks}`,
      disks,
      memoryBytes: options.memory ? 64 * MiB : 0,
    };
  });
}

function job(rng: Rng, maxMappers: number, maxPartitions: number): JobShape {
  const numMappers = 1 + Math.floor(rng.next() * maxMappers);
  const numPartitions = 1 + Math.floor(rng.next() * maxPartitions);
  const density = rng.next();
  const records = [...Array(numMappers).keys()].map(() =>
    [...Array(numPartitions).keys()].map(() => (chance(rng, density) ? 1 + Math.floor(rng.next() * 4) : 0)),
  );
  const speculative = [...Array(numMappers).keys()].filter(() => chance(rng, 0.2));
  const recordBytes = 16 + Math.floor(rng.next() * 200);
  const reread = chance(rng, 0.5) ? { rereadAfterMs: Math.round(uniform(rng, 500, 20_000)) } : {};
  return { numMappers, numPartitions, records, recordBytes, speculative, ...reread };
}

/**
 * Swarm: a workload shape drawn from the seed, from one tiny application to several busy ones. `policies: false`
 * draws the swarm as it was before it drew policies (rack skew, master and client policies, small disks and memory;
 * 22 November 2026): the seeds pinned before then replay the shapes that once failed.
 */
export function drawWorkload(rng: Rng, options: { readonly policies?: boolean } = {}): WorkloadShape {
  const dfs = chance(rng, 0.25);
  const memory = chance(rng, 0.4);
  const serverRelease: Release = chance(rng, 0.7)
    ? '0.6.0'
    : pick(
        rng,
        CLIENT_RELEASES.filter((r) => isAtLeast(r, '0.3.0')),
      );
  const workerCount = 2 + Math.floor(rng.next() * 9);
  const cluster: ClusterShape = {
    serverRelease,
    workers: workers(workerCount, rng, { memory }),
    dfs,
    memoryGuard: chance(rng, 0.3),
  };
  const appCount = 1 + Math.floor(rng.next() * 3);
  const apps = [...Array(appCount).keys()].map((i): AppShape => {
    // Mostly clients the servers admit; now and then one they must refuse.
    const admitted = CLIENT_RELEASES.filter((r) => admitClient(serverRelease, r).admitted);
    const clientRelease = chance(rng, 0.9) ? pick(rng, admitted) : pick(rng, CLIENT_RELEASES);
    const tiers: StorageType[][] = [['HDD'], ['SSD', 'HDD'], ['MEMORY', 'HDD']];
    if (dfs) tiers.push(['HDFS'], ['HDD', 'HDFS']);
    return {
      token: `a${i}`,
      appId: `app-${i}`,
      clientRelease,
      ...(chance(rng, 0.7) ? { replicate: chance(rng, 0.5) } : {}),
      availableTypes: pick(rng, tiers),
      ...(chance(rng, 0.3) ? { stageRerun: chance(rng, 0.5) } : {}),
      ...(chance(rng, 0.3) ? { splitThresholdBytes: Math.round(uniform(rng, 256, 4096)) } : {}),
      ...(chance(rng, 0.5) ? { heartbeatIntervalMs: pick(rng, [500, 1_000, 3_000]) } : {}),
      startAt: Math.round(uniform(rng, 0, 10_000)),
      jobs: [...Array(1 + Math.floor(rng.next() * 3)).keys()].map(() => job(rng, 6, 24)),
    };
  });
  // Drawn after everything else, so that the rest of a seed's shape is the one it drew before tasks took time.
  const timed = apps.map((app) => (chance(rng, 0.6) ? withTaskTimes(rng, app) : app));
  // Before the policies, clients older than 0.4.0 were given their tiers under a name they ignore: they used HDD.
  if (options.policies === false) return { cluster, apps: timed.map(withTiersAsBeforePolicies) };
  // Then the policies, last for the same reason: a seed drawn before they were keeps its cluster and workload.
  const policed = withMasterPolicies(rng, withRackSkew(rng, cluster));
  const policedApps = timed.map((app) => withClientPolicies(rng, app));
  const sized = withSmallMemory(rng, withSmallDisks(rng, policed));
  const dfsOnly = withoutLocalDisks(rng, { cluster: sized, apps: policedApps });
  // Drawn last of all (24 November 2026), so that every earlier part of a seed's shape stays what it was.
  const drawn = {
    cluster: withShortHeartbeatTimeout(rng, dfsOnly.cluster),
    apps: dfsOnly.apps.map((app) => withExclusionFilter(rng, app)),
  };
  // Drawn after that (25 November 2026), for the same reason.
  const authenticated = { ...drawn, cluster: withAuthentication(rng, drawn.cluster) };
  // And after that (26 November 2026).
  const pushed = { ...authenticated, apps: authenticated.apps.map((app) => withPushShape(rng, app)) };
  // And after that (27 November 2026).
  const readAhead = { ...pushed, apps: pushed.apps.map((app) => withFetchAhead(rng, app)) };
  // And after that (27 November 2026, later).
  const oneLoss = withOneWorkerLoss(rng, readAhead);
  // And after that (27 November 2026, issue 26).
  const upgraded = withRollingUpgrade(rng, oneLoss);
  // And after that (29 November 2026, issue 33).
  return { ...upgraded, cluster: withQuota(rng, upgraded.cluster) };
}

/**
 * Now and then quotas on a 0.6.0 cluster, with a per-user disk quota of 1-64 KiB: the simulated jobs write a few
 * kilobytes per shuffle, so some seeds refuse later shuffles and some never reach the limit. Not with one worker's
 * loss or an upgrade, whose invariants expect every application to complete.
 */
function withQuota(rng: Rng, cluster: ClusterShape): ClusterShape {
  if (!chance(rng, 0.25)) return cluster;
  if (
    !isAtLeast(cluster.serverRelease, '0.6.0') ||
    cluster.oneWorkerLoss === true ||
    cluster.upgrade !== undefined
  )
    return cluster;
  const diskBytes = Math.round(logUniform(rng, 1024, 64 * 1024));
  return { ...cluster, quota: { diskBytes, interrupt: chance(rng, 0.5) } };
}

/**
 * Now and then, on servers older than 0.6.0 whose applications' clients 0.6.0 still admits, the contract's rolling
 * upgrade while the jobs run: the master, then each worker restarted gracefully as 0.6.0 (sim/cluster/upgrade.ts),
 * the next one sometimes at once after the previous one is back (`gapMs` 0), before the applications' next report
 * from the master: the window in which a lifecycle manager's view of the restarted worker is stale (issue 26). Not
 * with a one-worker-loss cluster: a worker down for its upgrade plus the lost one is more than replication tolerates.
 */
function withRollingUpgrade(rng: Rng, workload: WorkloadShape): WorkloadShape {
  if (!chance(rng, 0.12)) return workload;
  const { cluster, apps } = workload;
  if (isAtLeast(cluster.serverRelease, '0.6.0') || cluster.oneWorkerLoss === true) return workload;
  // Clients both releases admit: one the old servers refuse could reach upgraded ones, and admission would then
  // depend on timing (the upgrade scenarios handle that case; the swarm keeps its verdicts exact).
  const admitted = (app: AppShape) =>
    admitClient(cluster.serverRelease, app.clientRelease).admitted &&
    admitClient('0.6.0', app.clientRelease).admitted;
  if (!apps.every(admitted)) return workload;
  return {
    cluster: {
      ...cluster,
      upgrade: {
        to: '0.6.0',
        at: Math.round(uniform(rng, 1_000, 8_000)),
        gapMs: pick(rng, [0, 300, 1_500, 3_000]),
        order: 'right',
        newClients: [],
      },
    },
    apps,
  };
}

/**
 * Half the applications read with a small read-ahead (1 to 3 chunks), so that reducers, which consume their chunks
 * over simulated time, wait for their consumer and fetch again (with the workers' small chunk sizes).
 */
function withFetchAhead(rng: Rng, app: AppShape): AppShape {
  if (!chance(rng, 0.5)) return app;
  return { ...app, fetchAhead: pick(rng, [1, 2, 3]) };
}

/**
 * Now and then a small cluster of 3 or 4 workers (the first ones drawn) whose applications all replicate (each keeps
 * its drawn client release, so that what was drawn for it stays valid; one its servers refuse is left out of the
 * invariant), on plain disks: the fault plan then loses exactly one worker while maps push, and every application must
 * complete (invariants/one-worker-loss.ts). Upgrades, small disks and small memory tiers are left out, so that
 * nothing but the lost worker can fail a job.
 */
function withOneWorkerLoss(rng: Rng, workload: WorkloadShape): WorkloadShape {
  if (!chance(rng, 0.15)) return workload;
  const count = chance(rng, 0.5) ? 3 : 4;
  const { cluster } = workload;
  // The small disks' partition size goes with them.
  const overrides =
    cluster.masterOverrides === undefined
      ? undefined
      : Object.fromEntries(
          Object.entries(cluster.masterOverrides).filter(
            ([key]) => key !== 'svc.master.estimatedPartitionSize.initialSize',
          ),
        );
  const small: ClusterShape = {
    serverRelease: cluster.serverRelease,
    workers: cluster.workers.slice(0, count).map((worker, i) => ({
      ...worker,
      rack: `/rack${i % 2}`,
      // Plain disks with room to spare: every worker can take any application's copies, so that capacity and
      // storage types never stand in for the lost worker (the invariant is about tolerating the loss).
      disks: worker.disks.map((disk): DiskSpec => ({
        ...disk,
        type: 'HDD',
        capacityBytes: Math.max(disk.capacityBytes, 64 * GiB),
      })),
      memoryBytes: worker.memoryBytes > 0 ? 64 * MiB : 0,
    })),
    dfs: cluster.dfs,
    memoryGuard: cluster.memoryGuard,
    ...(overrides === undefined ? {} : { masterOverrides: overrides }),
    ...(cluster.workerHeartbeatTimeout === undefined
      ? {}
      : { workerHeartbeatTimeout: cluster.workerHeartbeatTimeout }),
    ...(cluster.auth === undefined ? {} : { auth: cluster.auth }),
    oneWorkerLoss: true,
  };
  // Batches of a record or two, several of a partition in flight: a map's pushes last long enough to be cut.
  const batchBytes = pick(rng, [48, 96, 256]);
  const apps = workload.apps.map((app): AppShape => ({
    ...app,
    replicate: true,
    push: { batchBytes, mergeBytes: batchBytes, window: pick(rng, [1, 2, 4]) },
    // Maps one or two at a time that write at once: the pushes of the first job fill its first seconds.
    taskSlots: pick(rng, [1, 2]),
    jobs: app.jobs.map(({ mapComputeMs: _, ...job }) => ({
      ...job,
      records: job.records.map((row) => row.map((n) => (n === 0 ? 0 : n * 3))),
    })),
  }));
  return { cluster: small, apps };
}

/**
 * Half the applications push batches of a few records each, merged or not, with up to 8 of a partition in flight:
 * batches of one partition then race each other, fail and are pushed again out of order, and the readers must
 * still return each exactly once.
 */
function withPushShape(rng: Rng, app: AppShape): AppShape {
  if (!chance(rng, 0.5)) return app;
  const batchBytes = pick(rng, [48, 96, 256]);
  const mergeBytes = pick(rng, [batchBytes, 4 * batchBytes, 2 * MiB]);
  return { ...app, push: { batchBytes, mergeBytes, window: pick(rng, [1, 2, 3, 4, 8]) } };
}

/** Now and then application authentication on, so that every legitimate request is checked against its rule. */
function withAuthentication(rng: Rng, cluster: ClusterShape): ClusterShape {
  return chance(rng, 0.3) ? { ...cluster, auth: true } : cluster;
}

/**
 * Now and then a worker heartbeat timeout of seconds instead of two minutes, so that a worker that crashed, was cut
 * off or is just slow to answer is declared lost within the run and must register again: with the default no
 * fault lasts long enough (3,000 swarm seeds showed no worker lost by silence), and the master's lost-worker path,
 * the lifecycle managers' handling of unknown workers and the checks against offers to lost workers never ran.
 */
function withShortHeartbeatTimeout(rng: Rng, cluster: ClusterShape): ClusterShape {
  if (!chance(rng, 0.25)) return cluster;
  return { ...cluster, workerHeartbeatTimeout: pick(rng, ['3s', '6s', '12s', '30s']) };
}

/**
 * Now and then a client that names the workers it excluded itself in its RequestSlots (off by default), so that the
 * master's handling of that list is exercised and checked (no-slots-on-unavailable). The coin is drawn for every
 * application, so that the draws after it do not depend on the release; only clients that know the key get it.
 */
function withExclusionFilter(rng: Rng, app: AppShape): AppShape {
  const on = chance(rng, 0.3);
  return on && readsKeyAt(FILTER_EXCLUDED, app.clientRelease) ? { ...app, filterExcludedWorkers: true } : app;
}

/**
 * Now and then, when the cluster has a DFS, workers without local disks (a cloud deployment that keeps shuffle data
 * on HDFS only), and applications that list HDFS among their tiers, as such a cluster's clients are configured:
 * offers without disk budgets, replicas on a shared tier, and no disk faults to draw.
 */
function withoutLocalDisks(rng: Rng, workload: WorkloadShape): WorkloadShape {
  if (!workload.cluster.dfs || !chance(rng, 0.3)) return workload;
  const tiers: StorageType[][] = [['HDFS'], ['HDD', 'HDFS'], ['MEMORY', 'HDFS']];
  return {
    cluster: {
      ...workload.cluster,
      workers: workload.cluster.workers.map((worker) => ({ ...worker, disks: [] })),
    },
    apps: workload.apps.map((app) =>
      app.availableTypes.includes('HDFS') ? app : { ...app, availableTypes: pick(rng, tiers) },
    ),
  };
}

/**
 * Half the time a memory tier is on, a small one (4–128 KiB a worker instead of 64 MiB): writes then push it past
 * its eviction line and the worker must move its largest open files to a disk or the DFS while they are written.
 * At 64 MiB no seed's data came near the line, so eviction under memory pressure never ran.
 */
function withSmallMemory(rng: Rng, cluster: ClusterShape): ClusterShape {
  if (!cluster.workers.some((worker) => worker.memoryBytes > 0) || !chance(rng, 0.5)) return cluster;
  return {
    ...cluster,
    workers: cluster.workers.map((worker) => ({
      ...worker,
      memoryBytes: Math.round(logUniform(rng, 4 * 1024, 128 * 1024)),
    })),
  };
}

function withTiersAsBeforePolicies(app: AppShape): AppShape {
  return tiersKeyAt(app.clientRelease) === TIERS_KEY ? app : { ...app, availableTypes: ['HDD'] };
}

/**
 * Now and then disks of 16 KiB–1 MiB and a partition size assumed to be 4–64 KiB: disk budgets of a few to a few
 * hundred slots that offers use up, and disks that fill (NO_SPACE for real, not injected), so that the disk-budget
 * invariant and a full cluster are exercised; with the default sizes (GiBs, 64 MiB) budgets never bind here.
 */
function withSmallDisks(rng: Rng, cluster: ClusterShape): ClusterShape {
  if (!chance(rng, 0.2)) return cluster;
  const workers = cluster.workers.map((worker) => ({
    ...worker,
    disks: worker.disks.map((disk) => ({
      ...disk,
      capacityBytes: Math.round(logUniform(rng, 16 * 1024, MiB)),
    })),
  }));
  const overrides: Record<string, string> = {
    ...cluster.masterOverrides,
    'svc.master.estimatedPartitionSize.initialSize': pick(rng, ['4k', '16k', '64k']),
  };
  return { ...cluster, smallDisks: true, workers, masterOverrides: overrides };
}

/**
 * Now and then most workers on one rack, the rest on two others: rack-aware placement must then put replicas of the
 * crowded rack's primaries on the few other workers, or on the same rack once those are full.
 */
function withRackSkew(rng: Rng, cluster: ClusterShape): ClusterShape {
  if (!chance(rng, 0.3)) return cluster;
  return {
    ...cluster,
    workers: cluster.workers.map((worker) => ({
      ...worker,
      rack: chance(rng, 0.7) ? '/rack0' : pick(rng, ['/rack1', '/rack2']),
    })),
  };
}

/**
 * The master's policies beyond the defaults: load-aware slot assignment (disk groups by measured speed), and an
 * estimated partition size measured within the run instead of after 5 minutes (the default delay), so that disk
 * budgets follow what was written.
 */
function withMasterPolicies(rng: Rng, cluster: ClusterShape): ClusterShape {
  const overrides: Record<string, string> = {};
  if (chance(rng, 0.4)) {
    overrides['svc.master.slot.assign.policy'] = 'LOADAWARE';
    overrides['svc.master.slot.assign.loadAware.numDiskGroups'] = String(1 + Math.floor(rng.next() * 5));
    overrides['svc.master.slot.assign.loadAware.diskGroupGradient'] = pick(rng, ['0', '0.1', '0.5', '1']);
    overrides['svc.master.slot.assign.loadAware.flushTimeWeight'] = pick(rng, ['0', '0.5', '1']);
    overrides['svc.master.slot.assign.loadAware.fetchTimeWeight'] = pick(rng, ['0', '1', '2']);
  }
  if (chance(rng, 0.5)) {
    overrides['svc.master.estimatedPartitionSize.update.initialDelay'] = pick(rng, ['1s', '5s', '20s']);
    overrides['svc.master.estimatedPartitionSize.update.interval'] = pick(rng, ['2s', '10s', '30s']);
    // The bounds are newer than some servers (contract section 8); a small minimum lets tiny shuffles lower the
    // estimate.
    const minSize = 'svc.master.estimatedPartitionSize.minSize';
    if (readsKeyAt(minSize, cluster.serverRelease) && cluster.upgrade === undefined) {
      overrides[minSize] = pick(rng, ['1k', '64k', '1m']);
    }
  }
  return Object.keys(overrides).length === 0 ? cluster : { ...cluster, masterOverrides: overrides };
}

/** Client policies beyond the defaults: rack-aware replicas, and HARD split mode (with a small split threshold). */
function withClientPolicies(rng: Rng, app: AppShape): AppShape {
  const rackAware = chance(rng, 0.3) ? { rackAware: true } : {};
  const splitMode = chance(rng, 0.2) ? { splitMode: 'HARD' as const } : {};
  return { ...app, ...rackAware, ...splitMode };
}

/**
 * Tasks that take time, as a batch engine's do: a few executor slots, maps that compute for up to seconds before
 * they write, reducers that compute over what they read. Jobs then last long enough for faults to strike in the
 * middle of them; with instant tasks most jobs of a seed are over before its first fault.
 */
function withTaskTimes(rng: Rng, app: AppShape): AppShape {
  const slots = chance(rng, 0.8) ? { taskSlots: pick(rng, [1, 2, 4, 8, 16]) } : {};
  return {
    ...app,
    ...slots,
    jobs: app.jobs.map((job) => ({
      ...job,
      mapComputeMs: [...Array(job.numMappers).keys()].map(() => Math.round(logUniform(rng, 10, 4_000))),
      reduceComputeMs: [...Array(job.numPartitions).keys()].map(() => Math.round(logUniform(rng, 5, 1_500))),
    })),
  };
}

/**
 * The benchmark's standard scenario: 20 workers in 4 racks, 4 applications of the current release with
 * replication on, each one job of 200 partitions, run as a batch engine runs it: 16 task slots per application
 * (4 executors of 4 cores), maps that compute for 1–8 s before writing, reducers that compute for 0.1–1 s over what
 * they read (docs/simulation.md, "The compute engine").
 */
export function standardWorkload(rng: Rng): WorkloadShape {
  const cluster: ClusterShape = {
    serverRelease: '0.6.0',
    workers: workers(20, rng, { memory: false }),
    dfs: false,
    memoryGuard: false,
  };
  const apps = [...Array(4).keys()].map((i): AppShape => ({
    token: `a${i}`,
    appId: `app-${i}`,
    clientRelease: '0.6.0',
    replicate: true,
    availableTypes: ['HDD'],
    startAt: i * 200,
    jobs: [
      {
        numMappers: 4,
        numPartitions: 200,
        records: [...Array(4).keys()].map(() => [...Array(200).keys()].map(() => 1)),
        recordBytes: 64,
        speculative: [0],
        mapComputeMs: [...Array(4).keys()].map(() => Math.round(uniform(rng, 1_000, 8_000))),
        reduceComputeMs: [...Array(200).keys()].map(() => Math.round(uniform(rng, 100, 1_000))),
      },
    ],
    taskSlots: 16,
  }));
  return { cluster, apps };
}

/**
 * The `npm start` demo: a local cluster of three workers and one application with replication on, whose job writes
 * 8 maps × 24 partitions × 40 records of 1 KiB (7.5 MiB), with a speculative second attempt of one map.
 */
export function demoWorkload(rng: Rng): WorkloadShape {
  const cluster: ClusterShape = {
    serverRelease: '0.6.0',
    workers: workers(3, rng, { memory: false }),
    dfs: false,
    memoryGuard: false,
  };
  const app: AppShape = {
    token: 'a0',
    appId: 'demo',
    clientRelease: '0.6.0',
    replicate: true,
    availableTypes: ['HDD'],
    startAt: 0,
    jobs: [
      {
        numMappers: 8,
        numPartitions: 24,
        records: [...Array(8).keys()].map(() => [...Array(24).keys()].map(() => 40)),
        recordBytes: 1024,
        speculative: [3],
      },
    ],
  };
  return { cluster, apps: [app] };
}

/** Server releases a rolling upgrade starts from: every line that 0.6.0 clients of the old line can run against. */
const UPGRADE_FROM: readonly Release[] = ['0.3.0', '0.3.2', '0.4.0', '0.4.1', '0.5.0', '0.5.1'];

/**
 * A rolling upgrade of the servers to 0.6.0 while applications of the old release run, and applications of the new
 * release start: after every server was upgraded (the right order) or before (the wrong order, which admission
 * must refuse without harming anyone else's data).
 */
export function upgradeWorkload(order: 'right' | 'wrong') {
  return (rng: Rng): WorkloadShape => {
    const from = pick(rng, UPGRADE_FROM);
    // Three workers as often as any two other sizes: only there does a replicated revive need every other worker.
    const workerCount = pick(rng, [3, 3, 4, 5, 6, 7]);
    const at = Math.round(uniform(rng, 2_000, 6_000));
    // Sometimes the next server at once after the previous is back (issue 26: before the clients' next report).
    const gapMs = pick(rng, [0, 300, 1_000, 2_000, 3_000]);
    // Old applications compute as engines do (maps for up to seconds before they write), so that their jobs run
    // through the upgrade: a worker then goes while pushes are in flight, and the next one while the first is back.
    const oldApps = [...Array(2).keys()].map((i): AppShape =>
      withTaskTimes(rng, {
        token: `a${i}`,
        appId: `app-${i}`,
        // Old clients the upgraded servers will still admit (core/release decides which), usually the servers' own
        // release.
        clientRelease: chance(rng, 0.6)
          ? from
          : pick(
              rng,
              CLIENT_RELEASES.filter(
                (r) => isAtLeast(r, oldestAcceptedClient('0.6.0')) && isAtLeast(from, r),
              ),
            ),
        availableTypes: ['HDD'],
        // Replicated on small clusters too: a revive then needs two workers while one restarts.
        replicate: chance(rng, 0.5),
        startAt: Math.round(uniform(rng, 0, at)),
        jobs: [...Array(2 + Math.floor(rng.next() * 3)).keys()].map(() => job(rng, 4, 16)),
      }),
    );
    const newApps = [...Array(1 + Math.floor(rng.next() * 2)).keys()].map((i): AppShape => ({
      token: `a${oldApps.length + i}`,
      appId: `app-${oldApps.length + i}`,
      clientRelease: '0.6.0',
      availableTypes: ['HDD'],
      // In the right order, counted from the moment every server runs the new release (sim/cluster/upgrade.ts).
      startAt: order === 'right' ? Math.round(uniform(rng, 1_000, 5_000)) : Math.round(uniform(rng, 0, at)),
      jobs: [job(rng, 4, 16)],
    }));
    const memory = chance(rng, 0.5);
    return {
      cluster: {
        serverRelease: from,
        workers: workers(workerCount, rng, { memory }),
        dfs: false,
        memoryGuard: false,
        upgrade: { to: '0.6.0', at, gapMs, order, newClients: newApps.map((a) => a.token) },
      },
      apps: [...oldApps, ...newApps],
    };
  };
}
