import { ReadBuffers } from '../storage/read-buffers.ts';
import { mkdirSync, statfsSync } from 'node:fs';
import path from 'node:path';
import type { ResolvedConfig } from '../../conf/index.ts';
import { workerConfigFrom } from '../../conf/machine-configs.ts';
import { parseStorageDirs } from '../../conf/storage-dirs.ts';
import { DEFAULT_RACK, workerKey, type WorkerId } from '../../core/domain/worker.ts';
import type { WorkerDiskConfig } from '../../core/machines/worker/config.ts';
import {
  initialWorkerState,
  workerMachine,
  type WorkerMachineState,
} from '../../core/machines/worker/index.ts';
import type { FileRef } from '../../core/machines/effects.ts';
import { masterNodeId } from '../../core/protocol/node-ids.ts';
import { BackPressure } from '../driver/back-pressure.ts';
import { holdWhileBacklogFull } from '../driver/backlog.ts';
import { PauseReasons } from '../driver/pause-reasons.ts';
import { NodeDriver } from '../driver/node-driver.ts';
import { startManagement, workerApi, type ManagementServer } from '../http/index.ts';
import {
  createMetrics,
  envelopeObserver,
  ioObserver,
  statfsDevices,
  type WorkerMetrics,
} from '../metrics/index.ts';
import { announce, type Logger } from '../log.ts';
import {
  openDurableStore,
  volatileDurableStore,
  type DbBackend,
  type DurableStore,
} from '../storage/durable-store.ts';
import { listDiskFiles } from '../storage/leftover-files.ts';
import { MAX_BLOCK, MemoryPool } from '../storage/memory-pool.ts';
import { TierStorage } from '../storage/tier-storage.ts';
import type { Address } from '../transport/addresses.ts';
import { serverAdmission } from '../transport/release-admission.ts';
import type { RunningServer, ServerTestHooks } from './master.ts';
import { nodeNetwork, type NodeNetwork } from '../transport/node-network.ts';
import { ApplicationSecrets } from './application-secrets.ts';
import { AUTHENTICATION_FAILED, internalSecret, serverPeerSecret } from './server-auth.ts';
import type { TransportAuth } from '../transport/authentication.ts';
import { ReceiveMemory } from '../transport/receive-memory.ts';
import { TransportConfigError } from '../transport/tls.ts';
import type { Release } from '../../core/release/version.ts';
import { metricsOptions, metricsRoutes, ServerConfigError } from './server-config.ts';

const DIRS_KEY = 'svc.worker.storage.dirs';

interface LocalDisk {
  readonly config: WorkerDiskConfig;
  readonly dir: string;
}

/**
 * The memory tier's pool (runtime/storage/memory-pool.ts), allocated (and with `preTouch` written page by page) now,
 * or none when the memory tier is off or smaller than one block (its files then keep the buffers they are given).
 */
function memoryTierPool(capacityBytes: number, preTouch: boolean, logger: Logger): MemoryPool | undefined {
  if (capacityBytes < MAX_BLOCK) return undefined;
  const started = performance.now();
  const pool = new MemoryPool({ capacityBytes, preTouch });
  logger.info(
    {
      event: 'worker.memoryTier.allocated',
      bytes: pool.capacityBytes,
      preTouch,
      ms: Math.round(performance.now() - started),
    },
    `memory tier: ${(pool.capacityBytes / 2 ** 20).toFixed(0)} MiB allocated${preTouch ? ' and pre-touched' : ''}`,
  );
  return pool;
}

/** The worker's local disks from `svc.worker.storage.dirs`; a disk without a capacity gets its filesystem's size. */
function localDisks(conf: ResolvedConfig): LocalDisk[] {
  const workingDir = conf.optional('svc.worker.storage.workingDir', 'getString');
  return parseStorageDirs(conf.optional(DIRS_KEY, 'getList') ?? []).map((entry) => {
    const dir = workingDir === undefined ? entry.path : path.join(entry.path, workingDir);
    try {
      mkdirSync(dir, { recursive: true });
    } catch (error) {
      throw new ServerConfigError(`${DIRS_KEY}: cannot use ${dir}: ${(error as Error).message}`);
    }
    const fs = statfsSync(dir);
    return {
      dir,
      config: {
        mountPoint: entry.path,
        type: entry.diskType,
        capacityBytes: entry.capacityBytes ?? fs.blocks * fs.bsize,
      },
    };
  });
}

/** The worker's tiers and the memory they take, validated: at least one tier must be able to hold a file. */
interface WorkerTiers {
  readonly disks: readonly LocalDisk[];
  readonly dfsDir: string | undefined;
  readonly memoryBudget: number;
  readonly memoryCapacity: number;
  readonly memoryPool: MemoryPool | undefined;
  readonly readBuffers: ReadBuffers;
}

function workerTiers(conf: ResolvedConfig, logger: Logger): WorkerTiers {
  const disks = localDisks(conf);
  const dfsDir = conf.optional('svc.storage.hdfs.dir', 'getString');
  if (dfsDir !== undefined) {
    try {
      mkdirSync(dfsDir, { recursive: true });
    } catch (error) {
      throw new ServerConfigError(`svc.storage.hdfs.dir: cannot use ${dfsDir}: ${(error as Error).message}`);
    }
  }
  const memoryBudget = conf.getBytes('svc.worker.memory.size');
  const memoryCapacity = Math.floor(
    memoryBudget * conf.getDouble('svc.worker.directMemoryRatioForMemoryFileStorage'),
  );
  if (disks.length === 0 && dfsDir === undefined && memoryCapacity === 0) {
    throw new ServerConfigError(
      `the worker has no tier that can hold a partition file: set ${DIRS_KEY} (local disks), ` +
        'svc.storage.hdfs.dir (a distributed-filesystem directory) or ' +
        'svc.worker.directMemoryRatioForMemoryFileStorage above 0 (the memory tier)',
    );
  }
  return {
    disks,
    dfsDir,
    memoryBudget,
    memoryCapacity,
    // The memory tier's bytes live in memory allocated now, once, and used again as files come and go: fresh memory
    // for every byte kept cost page faults and garbage collections (docs/performance.md).
    memoryPool: memoryTierPool(
      memoryCapacity,
      conf.getBoolean('svc.worker.memoryFileStorage.preTouch'),
      logger,
    ),
    // Chunks are served from buffers used again once written (docs/performance.md, item 4).
    readBuffers: new ReadBuffers(
      Math.floor(memoryBudget * conf.getDouble('svc.worker.directMemoryRatioForReadBuffer')),
    ),
  };
}

const GRACEFUL_KEY = 'svc.worker.graceful.shutdown.enabled';
const RECOVER_PATH_KEY = 'svc.worker.graceful.shutdown.recoverPath';
const RECOVER_BACKEND_KEY = 'svc.worker.graceful.shutdown.recoverDbBackend';

/**
 * The recovery store, opened before any port listens: on disk only when graceful shutdown is on (as the reference's
 * recovery DB), so that workers without it share no path; a store that cannot be opened is a configuration error
 * naming its path, its key and the way out for the cause (recoveryStoreAdvice).
 */
async function openRecoveryStore(conf: ResolvedConfig): Promise<DurableStore> {
  if (!conf.getBoolean(GRACEFUL_KEY)) return volatileDurableStore();
  const recoverPath = conf.getString(RECOVER_PATH_KEY);
  const backend = conf.getString(RECOVER_BACKEND_KEY) as DbBackend;
  try {
    return await openDurableStore(backend, recoverPath);
  } catch (error) {
    const reason = (error as Error).message;
    throw new ServerConfigError(
      `${RECOVER_PATH_KEY}: the recovery store in ${recoverPath} (${RECOVER_BACKEND_KEY} ${backend}) cannot be ` +
        `opened: ${reason}. ${recoveryStoreAdvice(reason, recoverPath)}`,
    );
  }
}

/**
 * What the operator can do about a recovery store that does not open, by cause: held by another process, not
 * accessible, or unreadable (damaged, or written by the other backend: RocksDB reads a LevelDB store, LevelDB cannot
 * read a RocksDB one). Moving an unreadable store aside is safe: the worker then claims none of its earlier files,
 * which become leftovers (removed once their applications end), and applications recompute what they read there.
 */
function recoveryStoreAdvice(reason: string, recoverPath: string): string {
  if (/\block\b/i.test(reason)) {
    return (
      `Each worker with ${GRACEFUL_KEY} on needs a ${RECOVER_PATH_KEY} of its own (another worker on this host may ` +
      'hold this one)'
    );
  }
  if (/permission denied|EACCES|EPERM|read-only/i.test(reason)) {
    return `Make ${recoverPath} readable and writable by the worker's user, or set ${RECOVER_PATH_KEY} elsewhere`;
  }
  return (
    `The store is damaged or was written by another ${RECOVER_BACKEND_KEY} (LEVELDB cannot read a ROCKSDB store). ` +
    `Start the worker with the backend that wrote it, or move the store aside (mv ${recoverPath} ` +
    `${recoverPath}.unreadable) and start again: the worker then serves none of the partitions it held before ` +
    'and removes their files once their applications end (docs/operations.md, "Recovery store troubles")'
  );
}

const DATA_SERVICES = ['rpc', 'push', 'fetch', 'replicate'] as const;

/** Binds the rpc, push, fetch and replicate ports; one that cannot listen is a configuration error naming its key. */
async function listenDataPorts(
  network: NodeNetwork,
  conf: ResolvedConfig,
  host: string,
): Promise<Record<(typeof DATA_SERVICES)[number], number>> {
  const ports = { rpc: 0, push: 0, fetch: 0, replicate: 0 };
  for (const service of DATA_SERVICES) {
    const key = `svc.worker.${service}.port`;
    const port = conf.getInt(key);
    try {
      ports[service] = (await network.transport.listen(service, host, port)).port;
    } catch (error) {
      throw new ServerConfigError(
        `svc.worker.host/${key}: the ${service} port cannot listen on ${host}:${port}: ${(error as Error).message}` +
          (port === 0 ? '' : `; set ${key} to a free port, or 0 for any`),
      );
    }
  }
  return ports;
}

/**
 * With authentication on, whose secrets the worker's connections must prove: a server's (the internal secret) or an
 * application's, asked from the master through `secrets` once the worker's id is known.
 */
function workerAuth(
  secret: string | undefined,
  secrets: () => ApplicationSecrets | undefined,
): TransportAuth | undefined {
  if (secret === undefined) return undefined;
  return {
    secret,
    principal: { kind: 'server' },
    expectedSecret: (hello, fresh) => {
      const server = serverPeerSecret(hello, secret);
      if (server !== undefined) return server;
      const known = secrets();
      if (known === undefined) return { kind: 'refused', message: 'the worker is still starting' };
      return known.expected(hello.application ?? '', fresh);
    },
  };
}

/** Pauses reading pushes (and replicas) while the bytes in flight exceed the budget's ratios; resumes below. */
function pushBackPressure(
  conf: ResolvedConfig,
  memoryBudget: number,
  pauses: PauseReasons,
  metrics: WorkerMetrics | undefined,
  logger: Logger,
  nodeId: string,
): BackPressure {
  const pauseAt = (key: string): number => Math.floor(memoryBudget * conf.getDouble(key));
  const backPressure: BackPressure = new BackPressure(
    {
      pauseReceiveBytes: pauseAt('svc.worker.directMemoryRatioToPauseReceive'),
      pauseReplicateBytes: pauseAt('svc.worker.directMemoryRatioToPauseReplicate'),
      resumeBytes: pauseAt('svc.worker.directMemoryRatioToResume'),
    },
    (service, paused) => {
      if (pauses.isHeldBy('memory', service) === paused) return;
      pauses.hold('memory', service, paused);
      metrics?.observePause(service, paused);
      logger.info(
        {
          event: paused ? 'worker.backPressure.paused' : 'worker.backPressure.resumed',
          node: nodeId,
          service,
          bytesInFlight: backPressure.bytesInFlight,
          partialFrameBytes: backPressure.partialFrameBytes,
        },
        `${paused ? 'stopped' : 'resumed'} reading ${service} connections`,
      );
    },
  );
  return backPressure;
}

/**
 * A worker process: the worker machine behind its rpc, push, fetch and replicate ports, partition files on its
 * tiers (memory, local disks, a DFS directory), its recovery store, and back-pressure on pushes.
 *
 * Starting is all or nothing: the tiers and the recovery store first, then every port (rpc, push, fetch, replicate
 * and the management interface), and only then the machine, which registers with the master; any failure before
 * that closes what was opened and is a ServerConfigError naming the key to change (`svc worker` exits 2 with it),
 * so that the master never offers a worker that could not start.
 */
export async function runWorker(
  conf: ResolvedConfig,
  master: Address,
  logger: Logger,
  presented: ResolvedConfig = conf,
  testing: ServerTestHooks = {},
): Promise<RunningServer> {
  // As the master's (master.ts): `conf` runs the process, `presented` is the release it shows.
  const release = presented.release;
  const tiers = workerTiers(conf, logger);
  const { disks, dfsDir } = tiers;
  const store = await openRecoveryStore(conf);
  const opened: { close(): Promise<void> }[] = [store];
  try {
    return await startWorker(conf, presented, release, master, logger, tiers, store, opened, testing);
  } catch (error) {
    for (const resource of opened.reverse()) await resource.close().catch(() => undefined);
    if (error instanceof ServerConfigError || error instanceof TransportConfigError) throw error;
    throw new ServerConfigError(
      `the worker could not start (disks ${disks.map((disk) => disk.dir).join(', ') || 'none'}` +
        `${dfsDir === undefined ? '' : `, DFS ${dfsDir}`}): ${(error as Error).message}`,
    );
  }
}

/** What the worker's steps share: where it runs, and what they opened so far (closed in reverse on a failure). */
interface WorkerStart {
  readonly conf: ResolvedConfig;
  readonly presented: ResolvedConfig;
  readonly release: Release;
  readonly master: Address;
  readonly logger: Logger;
  readonly tiers: WorkerTiers;
  readonly store: DurableStore;
  readonly host: string;
  readonly opened: { close(): Promise<void> }[];
  /** Test-only hooks (runtime/testing/test-server.ts): a planted bug, a separate bind host. */
  readonly testing: ServerTestHooks;
}

/**
 * The worker's start after its tiers and recovery store: the network and its ports (which name the worker), the
 * storage and back-pressure, the machine's driver, the management interface, and only then the machine's start,
 * which registers with the master.
 */
async function startWorker(
  conf: ResolvedConfig,
  presented: ResolvedConfig,
  release: Release,
  master: Address,
  logger: Logger,
  tiers: WorkerTiers,
  store: DurableStore,
  opened: { close(): Promise<void> }[],
  testing: ServerTestHooks,
): Promise<RunningServer> {
  const host = conf.getString('svc.worker.host');
  const start: WorkerStart = {
    conf,
    presented,
    release,
    master,
    logger,
    tiers,
    store,
    host,
    opened,
    testing,
  };
  const recovered = await store.load();
  const found = await filesOnTiers(tiers, logger);
  // Read by closures (the metrics' instance label and state) before the interface listens and the driver exists.
  const late: LateParts = { http: undefined, driver: undefined };
  const metrics = workerMetrics(start, late);
  const { network, receiveMemory, secrets } = workerNetwork(start, metrics);
  // The node id is the worker's identity and names its ports: the servers must be bound before the machine exists.
  const ports = await listenDataPorts(network, conf, testing.bindHost ?? host);
  const id: WorkerId = {
    host,
    rpcPort: ports.rpc,
    pushPort: ports.push,
    fetchPort: ports.fetch,
    replicatePort: ports.replicate,
  };
  const nodeId = workerKey(id);
  network.addresses.set(masterNodeId(), master);
  secrets.register(nodeId);

  const storage = workerStorage(conf, tiers, nodeId, metrics, logger);
  opened.push(storage);
  // The memory budget and the driver's backlog both may stop reading a service (./driver/pause-reasons.ts).
  const pauses = new PauseReasons((service, paused) => network.transport.setPaused(service, paused));
  const backPressure = pushBackPressure(conf, tiers.memoryBudget, pauses, metrics, logger, nodeId);
  receiveMemory.countIn(backPressure);

  const stop = workerShutdown(nodeId, logger, () => [
    () => late.driver?.stop(),
    () => late.http?.close(),
    () => metrics?.close(),
    () => network.transport.close(),
    () => storage.close(),
    () => store.close(),
  ]);
  const driver = workerDriver(start, {
    id,
    nodeId,
    network,
    storage,
    backPressure,
    pauses,
    metrics,
    onExit: (code, reason) => void stop.shutdown(code, reason),
  });
  late.driver = driver;
  // The last port: a worker whose management interface cannot listen never registers with the master.
  const http = await startManagement(
    'worker',
    { ...workerApi({ driver, conf: presented }), ...metricsRoutes(conf, metrics) },
    conf,
    logger,
  ).catch((error: unknown) => {
    throw new ServerConfigError((error as Error).message);
  });
  late.http = http;
  opened.push(http);

  // Every port listens: the machine starts, and registers with the master.
  network.host.add(driver);
  driver.input({ kind: 'start', recovered, leftovers: found });
  announceWorker(start, { nodeId, ports, http: http.address, recoveredKeys: recovered.size });
  return {
    nodeId,
    shutdown: stop.shutdown,
    stopped: stop.stopped,
    requestExit: () => driver.admin({ type: 'exit', exitType: 'NONE' }),
  };
}

/** Parts that exist only later in the start, read by closures made earlier. */
interface LateParts {
  http: ManagementServer | undefined;
  driver: NodeDriver<WorkerMachineState> | undefined;
}

/** The worker's metrics (svc.metrics.enabled), or none; closed with the rest on a failed start. */
function workerMetrics(start: WorkerStart, late: LateParts): WorkerMetrics | undefined {
  const { conf, release, host, tiers, opened } = start;
  if (!conf.getBoolean('svc.metrics.enabled')) return undefined;
  const metrics = createMetrics({
    role: 'worker',
    ...metricsOptions(conf),
    release,
    // The bound port is known once the management interface listens; the label is read at each scrape.
    instance: () => `${host}:${late.http?.address.port ?? conf.getInt('svc.worker.http.port')}`,
    state: (): WorkerMachineState => late.driver!.state,
    backlog: (): number => late.driver?.backlog ?? 0,
    devices: statfsDevices(
      tiers.disks.map((disk) => ({ mountPoint: disk.config.mountPoint, dir: disk.dir })),
    ),
  });
  opened.push({ close: () => Promise.resolve(metrics.close()) });
  return metrics;
}

/** Partly received frames, counted against the memory budget, and in its back-pressure once that exists. */
interface WorkerReceiveMemory {
  readonly receiveMemory: ReceiveMemory;
  countIn(backPressure: BackPressure): void;
}

/**
 * The worker's network (not listening yet): its transport with the memory partly received frames may take, and
 * with authentication on, the applications' secrets it asks the master for once the worker's id is known.
 */
function workerNetwork(
  start: WorkerStart,
  metrics: WorkerMetrics | undefined,
): {
  network: NodeNetwork;
  receiveMemory: WorkerReceiveMemory;
  secrets: { register(nodeId: string): void };
} {
  const { conf, release, logger, host, tiers, opened, testing } = start;
  // Applications' secrets come from the master, through a pseudo-node registered once the worker's id is known.
  let secrets: ApplicationSecrets | undefined;
  const auth = workerAuth(internalSecret(conf, 'worker', logger), () => secrets);
  const receiveMemory = workerReceiveMemory(conf, tiers);
  const network = nodeNetwork({
    role: 'worker',
    release,
    nodeId: `worker@${host}`,
    conf,
    logger,
    admit: serverAdmission(release, testing.plantedBug),
    ...(auth === undefined ? {} : { auth }),
    authenticationFailed: () => metrics?.onMetric(AUTHENTICATION_FAILED),
    written: (pieces) => tiers.readBuffers.giveBack(pieces),
    receiveMemory: receiveMemory.receiveMemory,
  });
  opened.push(network.transport);
  const register = (nodeId: string): void => {
    if (auth === undefined) return;
    secrets = new ApplicationSecrets({
      id: `${nodeId}#application-secrets`,
      send: (envelope) => network.transport.send(envelope),
      askTimeoutMs: conf.getDurationMs('svc.rpc.askTimeout'),
      expiryMs: conf.getDurationMs('svc.worker.auth.secretCache.expiry'),
    });
    network.host.add(secrets);
  };
  return { network, receiveMemory, secrets: { register } };
}

/**
 * Partly received frames count in the memory budget and its back-pressure. Together they may hold up to the resume
 * threshold (one whole frame at least), so that stalled ones never keep the worker paused for long; past it the
 * largest are given up.
 */
function workerReceiveMemory(conf: ResolvedConfig, tiers: WorkerTiers): WorkerReceiveMemory {
  let changed: (bytes: number) => void = () => undefined;
  const receiveMemory = new ReceiveMemory({
    limitBytes: Math.max(
      Math.floor(tiers.memoryBudget * conf.getDouble('svc.worker.directMemoryRatioToResume')),
      conf.getBytes('svc.network.frame.maxSize'),
    ),
    limitKey:
      'svc.worker.memory.size × svc.worker.directMemoryRatioToResume, at least svc.network.frame.maxSize',
    changed: (bytes) => changed(bytes),
  });
  return {
    receiveMemory,
    countIn(backPressure: BackPressure): void {
      changed = (bytes) => backPressure.setPartialFrameBytes(bytes);
      backPressure.setPartialFrameBytes(receiveMemory.totalBytes);
    },
  };
}

/** Stopping the worker, once: each closer in turn (driver, interface, metrics, network, storage, store). */
function workerShutdown(
  nodeId: string,
  logger: Logger,
  closers: () => readonly (() => unknown)[],
): { shutdown: (code: number, reason: string) => Promise<void>; stopped: Promise<number> } {
  let finish: (code: number) => void = () => undefined;
  const stopped = new Promise<number>((resolve) => (finish = resolve));
  let closing: Promise<void> | undefined;
  const shutdown = (code: number, reason: string): Promise<void> => {
    closing ??= (async () => {
      logger.info({ event: 'process.shutdown', node: nodeId, code, reason }, `worker stopping: ${reason}`);
      for (const close of closers()) await close();
      finish(code);
    })();
    return closing;
  };
  return { shutdown, stopped };
}

/** The worker machine's driver over the bound network, the storage and the recovery store (not started yet). */
function workerDriver(
  start: WorkerStart,
  parts: {
    readonly id: WorkerId;
    readonly nodeId: string;
    readonly network: NodeNetwork;
    readonly storage: TierStorage;
    readonly backPressure: BackPressure;
    readonly pauses: PauseReasons;
    readonly metrics: WorkerMetrics | undefined;
    readonly onExit: (code: number, reason: string) => void;
  },
): NodeDriver<WorkerMachineState> {
  const { conf, presented, release, logger, tiers, store, testing } = start;
  const { id, nodeId, network, storage, backPressure, pauses, metrics, onExit } = parts;
  const envelopes = metrics === undefined ? undefined : envelopeObserver(metrics);
  // Keys added after the presented release fall back to the current release's configuration.
  const current = conf;
  return new NodeDriver(
    nodeId,
    workerMachine,
    initialWorkerState(
      workerConfigFrom(presented, current, {
        id,
        master: masterNodeId(),
        networkLocation: DEFAULT_RACK,
        disks: tiers.disks.map((disk) => disk.config),
        distributed: tiers.dfsDir === undefined ? [] : ['HDFS'],
        memoryCapacityBytes: tiers.memoryCapacity,
        ...(testing.plantedBug === undefined ? {} : { plantedBug: testing.plantedBug }),
      }),
    ),
    release,
    {
      send: (envelope) => network.transport.send(envelope),
      logger,
      storage,
      durable: store,
      durableStoreKind: 'recovery',
      onExit,
      onWriteBytes: (delta) => backPressure.change(delta),
      onInputsFull: holdWhileBacklogFull(pauses, ['rpc', 'push', 'fetch', 'replicate'], logger, nodeId),
      ...(metrics === undefined ? {} : { onMetric: metrics.onMetric }),
      ...(envelopes === undefined ? {} : { onReceive: envelopes.received, onSend: envelopes.sent }),
    },
  );
}

/** The line scripts and tests wait for: written whatever the log level (docs/operations.md, Readiness). */
function announceWorker(
  start: WorkerStart,
  bound: {
    readonly nodeId: string;
    readonly ports: Record<(typeof DATA_SERVICES)[number], number>;
    readonly http: ManagementServer['address'];
    readonly recoveredKeys: number;
  },
): void {
  const { conf, release, master, logger, host, tiers } = start;
  announce(logger).info(
    {
      event: 'listening',
      role: 'worker',
      release,
      pid: process.pid,
      node: bound.nodeId,
      host,
      ports: bound.ports,
      http: bound.http,
      master: `${master.host}:${master.port}`,
      disks: tiers.disks.map((disk) => disk.dir),
      dfsDir: tiers.dfsDir,
      memoryCapacityBytes: tiers.memoryCapacity,
      recoveredKeys: bound.recoveredKeys,
      recoveryStore: conf.getBoolean(GRACEFUL_KEY) ? conf.getString(RECOVER_PATH_KEY) : null,
    },
    `worker ${bound.nodeId} listening`,
  );
}

/**
 * Every partition file on the local disks and in the DFS directory, for the core to tell its own from an earlier
 * run's leftovers. The DFS directory is shared by the workers: a file another worker holds is named as a leftover too,
 * and is kept, like any, while the master knows its shuffle; once the shuffle ends its holder and this worker both
 * delete it (a delete of a missing file succeeds). That is what removes the DFS files of a worker killed mid-write.
 */
async function filesOnTiers(tiers: WorkerTiers, logger: Logger): Promise<FileRef[]> {
  const listed = await listDiskFiles([
    ...tiers.disks.map((disk) => ({
      dir: disk.dir,
      mountPoint: disk.config.mountPoint,
      type: disk.config.type,
    })),
    // Memory and DFS files have mount point '' (core/machines/effects.ts); HDFS, OSS and S3 share the directory.
    ...(tiers.dfsDir === undefined ? [] : [{ dir: tiers.dfsDir, mountPoint: '', type: 'HDFS' as const }]),
  ]);
  for (const { dir, reason } of listed.unreadable) {
    logger.warn(
      { event: 'worker.leftovers.unreadable', dir, reason },
      `cannot list ${dir} for files an earlier run left: ${reason}`,
    );
  }
  return listed.files;
}

/** The partition files on the worker's tiers, with the warnings and metrics of their failures. */
function workerStorage(
  conf: ResolvedConfig,
  tiers: WorkerTiers,
  nodeId: string,
  metrics: WorkerMetrics | undefined,
  logger: Logger,
): TierStorage {
  const { disks, dfsDir, memoryPool, readBuffers } = tiers;
  return new TierStorage({
    disks: disks.map((disk) => ({ mountPoint: disk.config.mountPoint, dir: disk.dir })),
    maxOpenFiles: conf.getInt('svc.worker.storage.maxOpenFiles'),
    ...(dfsDir === undefined ? {} : { dfsDir }),
    // The storage noticed the directory go: every operation on the disk fails from now, and the first one the core
    // sees fail marks the disk (its `worker.disk.failed` line, core/machines/worker/storage-view.ts).
    onDiskFailed: (mountPoint, reason) =>
      logger.warn(
        { event: 'worker.disk.directoryLost', node: nodeId, mountPoint, reason },
        `disk ${mountPoint}: ${reason}; its next operation fails and marks it failed`,
      ),
    ...(metrics === undefined ? {} : { onIoDone: ioObserver(metrics) }),
    onDeleteFailed: deleteFailureReporter(logger, nodeId, metrics),
    readBuffers,
    ...(memoryPool === undefined ? {} : { memoryPool }),
    onMemoryOverflow: (blockBytes) =>
      logger.warn(
        {
          event: 'worker.memoryTier.overflow',
          node: nodeId,
          blockBytes,
          poolBytes: memoryPool?.capacityBytes,
        },
        'the memory tier’s pool could not lend a block (fragmentation): memory files now also use heap memory ' +
          'beyond svc.worker.memory.size; logged once',
      ),
  });
}

/** A failed delete (runtime/storage): one warning line and DeleteFileFailCount, instead of nothing. */
function deleteFailureReporter(
  logger: Logger,
  nodeId: string,
  metrics: WorkerMetrics | undefined,
): (file: string, reason: string) => void {
  return (file, reason) => {
    logger.warn(
      { event: 'worker.deleteFile.failed', node: nodeId, file, reason },
      `could not delete ${file}: ${reason}`,
    );
    metrics?.onMetric({ kind: 'metric', name: 'DeleteFileFailCount', op: 'inc', value: 1 });
  };
}
