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
import type { RunningServer } from './master.ts';
import { nodeNetwork, type NodeNetwork } from '../transport/node-network.ts';
import { ApplicationSecrets } from './application-secrets.ts';
import { AUTHENTICATION_FAILED, internalSecret, serverPeerSecret } from './server-auth.ts';
import type { TransportAuth } from '../transport/authentication.ts';
import { ReceiveMemory } from '../transport/receive-memory.ts';
import { TransportConfigError } from '../transport/tls.ts';
import type { Release } from '../../core/release/version.ts';
import {
  metricsOptions,
  metricsRoutes,
  optionalList,
  optionalString,
  ServerConfigError,
} from './server-config.ts';

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
  const workingDir = optionalString(conf, 'svc.worker.storage.workingDir');
  return parseStorageDirs(optionalList(conf, DIRS_KEY)).map((entry) => {
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
  const dfsDir = optionalString(conf, 'svc.storage.hdfs.dir');
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
 * recovery DB), so that workers without it share no path; a store that cannot be opened (locked by another worker,
 * not writable) is a configuration error naming its path and key.
 */
async function openRecoveryStore(conf: ResolvedConfig): Promise<DurableStore> {
  if (!conf.getBoolean(GRACEFUL_KEY)) return volatileDurableStore();
  const recoverPath = conf.getString(RECOVER_PATH_KEY);
  const backend = conf.getString(RECOVER_BACKEND_KEY) as DbBackend;
  try {
    return await openDurableStore(backend, recoverPath);
  } catch (error) {
    throw new ServerConfigError(
      `${RECOVER_PATH_KEY}: the recovery store in ${recoverPath} (${RECOVER_BACKEND_KEY} ${backend}) cannot be ` +
        `opened: ${(error as Error).message}. Each worker with ${GRACEFUL_KEY} on needs a ${RECOVER_PATH_KEY} of ` +
        'its own (another worker on this host may hold this one)',
    );
  }
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
): Promise<RunningServer> {
  // As the master's (master.ts): `conf` runs the process, `presented` is the release it shows.
  const release = presented.release;
  const tiers = workerTiers(conf, logger);
  const { disks, dfsDir } = tiers;
  const store = await openRecoveryStore(conf);
  const opened: { close(): Promise<void> }[] = [store];
  try {
    return await startWorker(conf, presented, release, master, logger, tiers, store, opened);
  } catch (error) {
    for (const resource of opened.reverse()) await resource.close().catch(() => undefined);
    if (error instanceof ServerConfigError || error instanceof TransportConfigError) throw error;
    throw new ServerConfigError(
      `the worker could not start (disks ${disks.map((disk) => disk.dir).join(', ') || 'none'}` +
        `${dfsDir === undefined ? '' : `, DFS ${dfsDir}`}): ${(error as Error).message}`,
    );
  }
}

async function startWorker(
  conf: ResolvedConfig,
  presented: ResolvedConfig,
  release: Release,
  master: Address,
  logger: Logger,
  tiers: WorkerTiers,
  store: DurableStore,
  opened: { close(): Promise<void> }[],
): Promise<RunningServer> {
  const { disks, dfsDir, memoryCapacity, readBuffers } = tiers;
  const recovered = await store.load();
  const found = await filesOnDisks(disks, logger);

  const host = conf.getString('svc.worker.host');
  // Applications' secrets come from the master, through a pseudo-node registered once the worker's id is known.
  let secrets: ApplicationSecrets | undefined;
  const auth = workerAuth(internalSecret(conf, 'worker', logger), () => secrets);
  // Read by closures (the metrics instance label, shutdown) before the interface listens.
  let http: ManagementServer | undefined = undefined;
  let driver: NodeDriver<WorkerMachineState> | undefined = undefined;
  const metrics = conf.getBoolean('svc.metrics.enabled')
    ? createMetrics({
        role: 'worker',
        ...metricsOptions(conf),
        release,
        // The bound port is known once the management interface listens; the label is read at each scrape.
        instance: () => `${host}:${http?.address.port ?? conf.getInt('svc.worker.http.port')}`,
        state: (): WorkerMachineState => driver!.state,
        backlog: (): number => driver?.backlog ?? 0,
        devices: statfsDevices(disks.map((disk) => ({ mountPoint: disk.config.mountPoint, dir: disk.dir }))),
      })
    : undefined;
  if (metrics !== undefined) opened.push({ close: () => Promise.resolve(metrics.close()) });
  // Partly received frames count in the memory budget and its back-pressure (set up once the ports are bound).
  // Together they may hold up to the resume threshold (one whole frame at least), so that stalled ones never keep
  // the worker paused for long; past it the largest are given up.
  let partialFramesChanged: (bytes: number) => void = () => undefined;
  const receiveMemory = new ReceiveMemory({
    limitBytes: Math.max(
      Math.floor(tiers.memoryBudget * conf.getDouble('svc.worker.directMemoryRatioToResume')),
      conf.getBytes('svc.network.frame.maxSize'),
    ),
    limitKey:
      'svc.worker.memory.size × svc.worker.directMemoryRatioToResume, at least svc.network.frame.maxSize',
    changed: (bytes) => partialFramesChanged(bytes),
  });
  const network = nodeNetwork({
    role: 'worker',
    release,
    nodeId: `worker@${host}`,
    conf,
    logger,
    admit: serverAdmission(release),
    ...(auth === undefined ? {} : { auth }),
    authenticationFailed: () => metrics?.onMetric(AUTHENTICATION_FAILED),
    written: (pieces) => readBuffers.giveBack(pieces),
    receiveMemory,
  });
  opened.push(network.transport);
  // The node id is the worker's identity and names its ports: the servers must be bound before the machine exists.
  const ports = await listenDataPorts(network, conf, host);
  const id: WorkerId = {
    host,
    rpcPort: ports.rpc,
    pushPort: ports.push,
    fetchPort: ports.fetch,
    replicatePort: ports.replicate,
  };
  const nodeId = workerKey(id);
  network.addresses.set(masterNodeId(), master);
  if (auth !== undefined) {
    secrets = new ApplicationSecrets({
      id: `${nodeId}#application-secrets`,
      send: (envelope) => network.transport.send(envelope),
      askTimeoutMs: conf.getDurationMs('svc.rpc.askTimeout'),
    });
    network.host.add(secrets);
  }

  const storage = workerStorage(tiers, nodeId, metrics, logger);
  opened.push(storage);
  // The memory budget and the driver's backlog both may stop reading a service (./driver/pause-reasons.ts).
  const pauses = new PauseReasons((service, paused) => network.transport.setPaused(service, paused));
  const backPressure = pushBackPressure(conf, tiers.memoryBudget, pauses, metrics, logger, nodeId);
  partialFramesChanged = (bytes) => backPressure.setPartialFrameBytes(bytes);
  backPressure.setPartialFrameBytes(receiveMemory.totalBytes);

  let finish: (code: number) => void = () => undefined;
  const stopped = new Promise<number>((resolve) => (finish = resolve));
  let closing: Promise<void> | undefined;
  const shutdown = (code: number, reason: string): Promise<void> => {
    closing ??= (async () => {
      logger.info({ event: 'process.shutdown', node: nodeId, code, reason }, `worker stopping: ${reason}`);
      driver?.stop();
      await http?.close();
      metrics?.close();
      await network.transport.close();
      await storage.close();
      await store.close();
      finish(code);
    })();
    return closing;
  };
  const envelopes = metrics === undefined ? undefined : envelopeObserver(metrics);
  // Keys added after the presented release fall back to the current release's configuration.
  const current = conf;
  const worker = new NodeDriver(
    nodeId,
    workerMachine,
    initialWorkerState(
      workerConfigFrom(presented, current, {
        id,
        master: masterNodeId(),
        networkLocation: DEFAULT_RACK,
        disks: disks.map((disk) => disk.config),
        distributed: dfsDir === undefined ? [] : ['HDFS'],
        memoryCapacityBytes: memoryCapacity,
      }),
    ),
    release,
    {
      send: (envelope) => network.transport.send(envelope),
      logger,
      storage,
      durable: store,
      durableStoreKind: 'recovery',
      onExit: (code, reason) => void shutdown(code, reason),
      onWriteBytes: (delta) => backPressure.change(delta),
      onInputsFull: holdWhileBacklogFull(pauses, ['rpc', 'push', 'fetch', 'replicate'], logger, nodeId),
      ...(metrics === undefined ? {} : { onMetric: metrics.onMetric }),
      ...(envelopes === undefined ? {} : { onReceive: envelopes.received, onSend: envelopes.sent }),
    },
  );
  driver = worker;
  // The last port: a worker whose management interface cannot listen never registers with the master.
  http = await startManagement(
    'worker',
    { ...workerApi({ driver: worker, conf: presented }), ...metricsRoutes(conf, metrics) },
    conf,
    logger,
  ).catch((error: unknown) => {
    throw new ServerConfigError((error as Error).message);
  });
  opened.push(http);

  // Every port listens: the machine starts, and registers with the master.
  network.host.add(worker);
  worker.input({ kind: 'start', recovered, leftovers: found });
  // The line scripts and tests wait for: written whatever the log level (docs/operations.md, Readiness).
  announce(logger).info(
    {
      event: 'listening',
      role: 'worker',
      release,
      pid: process.pid,
      node: nodeId,
      host,
      ports,
      http: http.address,
      master: `${master.host}:${master.port}`,
      disks: disks.map((disk) => disk.dir),
      dfsDir,
      memoryCapacityBytes: memoryCapacity,
      recoveredKeys: recovered.size,
      recoveryStore: conf.getBoolean(GRACEFUL_KEY) ? conf.getString(RECOVER_PATH_KEY) : null,
    },
    `worker ${nodeId} listening`,
  );
  return {
    nodeId,
    shutdown,
    stopped,
    requestExit: () => worker.admin({ type: 'exit', exitType: 'NONE' }),
  };
}

/** Every partition file on the local disks, for the core to tell its own from an earlier run's leftovers. */
async function filesOnDisks(disks: readonly LocalDisk[], logger: Logger): Promise<FileRef[]> {
  const listed = await listDiskFiles(
    disks.map((disk) => ({ dir: disk.dir, mountPoint: disk.config.mountPoint, type: disk.config.type })),
  );
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
  tiers: WorkerTiers,
  nodeId: string,
  metrics: WorkerMetrics | undefined,
  logger: Logger,
): TierStorage {
  const { disks, dfsDir, memoryPool, readBuffers } = tiers;
  return new TierStorage({
    disks: disks.map((disk) => ({ mountPoint: disk.config.mountPoint, dir: disk.dir })),
    ...(dfsDir === undefined ? {} : { dfsDir }),
    onDiskFailed: (mountPoint, reason) =>
      logger.error(
        { event: 'worker.disk.failed', node: nodeId, mountPoint, reason },
        `disk ${mountPoint} failed: ${reason}`,
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
