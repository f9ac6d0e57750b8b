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
import { masterNodeId } from '../../core/protocol/node-ids.ts';
import { BackPressure } from '../driver/back-pressure.ts';
import { NodeDriver } from '../driver/node-driver.ts';
import { workerApi, type ManagementServer } from '../http/index.ts';
import { createMetrics, envelopeObserver, ioObserver, statfsDevices } from '../metrics/index.ts';
import { announce, type Logger } from '../log.ts';
import { openDurableStore, type DbBackend } from '../storage/durable-store.ts';
import { MAX_BLOCK, MemoryPool } from '../storage/memory-pool.ts';
import { TierStorage } from '../storage/tier-storage.ts';
import type { Address } from '../transport/addresses.ts';
import { serverAdmission } from './admission.ts';
import type { RunningServer } from './master.ts';
import { nodeNetwork } from './node-network.ts';
import { ApplicationSecrets } from './application-secrets.ts';
import { AUTHENTICATION_FAILED, internalSecret, serverPeerSecret } from './server-auth.ts';
import type { TransportAuth } from '../transport/authentication.ts';
import { ReceiveMemory } from '../transport/receive-memory.ts';
import {
  metricsOptions,
  metricsRoutes,
  optionalList,
  optionalString,
  serveManagement,
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

/**
 * A worker process: the worker machine behind its rpc, push, fetch and replicate ports, partition files on its
 * tiers (memory, local disks, a DFS directory), its recovery store, and back-pressure on pushes.
 */
export async function runWorker(
  conf: ResolvedConfig,
  master: Address,
  logger: Logger,
  presented: ResolvedConfig = conf,
): Promise<RunningServer> {
  // As the master's (master.ts): `conf` runs the process, `presented` is the release it shows.
  const release = presented.release;
  const disks = localDisks(conf);
  const dfsDir = optionalString(conf, 'svc.storage.hdfs.dir');
  if (dfsDir !== undefined) mkdirSync(dfsDir, { recursive: true });
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

  const host = conf.getString('svc.worker.host');
  // The node id is the worker's identity and names its ports: the servers must be bound before the machine exists.
  const secret = internalSecret(conf, 'worker', logger);
  // Applications' secrets come from the master, through a pseudo-node registered once the worker's id is known.
  let secrets: ApplicationSecrets | undefined;
  const auth: TransportAuth | undefined =
    secret === undefined
      ? undefined
      : {
          secret,
          principal: { kind: 'server' },
          expectedSecret: (hello, fresh) => {
            const server = serverPeerSecret(hello, secret);
            if (server !== undefined) return server;
            if (secrets === undefined) return { kind: 'refused', message: 'the worker is still starting' };
            return secrets.expected(hello.application ?? '', fresh);
          },
        };
  // The memory tier's bytes live in memory allocated now, once, and used again as files come and go: fresh memory
  // for every byte kept cost page faults and garbage collections (docs/performance.md).
  const memoryPool = memoryTierPool(
    memoryCapacity,
    conf.getBoolean('svc.worker.memoryFileStorage.preTouch'),
    logger,
  );
  // Chunks are served from buffers used again once written (docs/performance.md, item 4).
  const readBuffers = new ReadBuffers(
    Math.floor(memoryBudget * conf.getDouble('svc.worker.directMemoryRatioForReadBuffer')),
  );
  // Read by closures (the metrics instance label, shutdown) before the interface listens.
  let http: ManagementServer | undefined = undefined;
  const metrics = conf.getBoolean('svc.metrics.enabled')
    ? createMetrics({
        role: 'worker',
        ...metricsOptions(conf),
        release,
        // The bound port is known once the management interface listens; the label is read at each scrape.
        instance: () => `${host}:${http?.address.port ?? conf.getInt('svc.worker.http.port')}`,
        state: (): WorkerMachineState => driver.state,
        devices: statfsDevices(disks.map((disk) => ({ mountPoint: disk.config.mountPoint, dir: disk.dir }))),
      })
    : undefined;
  // Partly received frames count in the memory budget and its back-pressure (set up once the ports are bound).
  // Together they may hold up to the resume threshold (one whole frame at least), so that stalled ones never keep
  // the worker paused for long; past it the largest are given up.
  let partialFramesChanged: (bytes: number) => void = () => undefined;
  const receiveMemory = new ReceiveMemory({
    limitBytes: Math.max(
      Math.floor(memoryBudget * conf.getDouble('svc.worker.directMemoryRatioToResume')),
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
  const ports = {
    rpc: (await network.transport.listen('rpc', host, conf.getInt('svc.worker.rpc.port'))).port,
    push: (await network.transport.listen('push', host, conf.getInt('svc.worker.push.port'))).port,
    fetch: (await network.transport.listen('fetch', host, conf.getInt('svc.worker.fetch.port'))).port,
    replicate: (await network.transport.listen('replicate', host, conf.getInt('svc.worker.replicate.port')))
      .port,
  };
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

  const recoverPath = conf.getString('svc.worker.graceful.shutdown.recoverPath');
  const store = await openDurableStore(
    conf.getString('svc.worker.graceful.shutdown.recoverDbBackend') as DbBackend,
    recoverPath,
  );
  const recovered = await store.load();
  const envelopes = metrics === undefined ? undefined : envelopeObserver(metrics);
  const storage = new TierStorage({
    disks: disks.map((disk) => ({ mountPoint: disk.config.mountPoint, dir: disk.dir })),
    ...(dfsDir === undefined ? {} : { dfsDir }),
    onDiskFailed: (mountPoint, reason) =>
      logger.error(
        { event: 'worker.disk.failed', node: nodeId, mountPoint, reason },
        `disk ${mountPoint} failed: ${reason}`,
      ),
    ...(metrics === undefined ? {} : { onIoDone: ioObserver(metrics) }),
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
  const pauseAt = (key: string): number => Math.floor(memoryBudget * conf.getDouble(key));
  const backPressure = new BackPressure(
    {
      pauseReceiveBytes: pauseAt('svc.worker.directMemoryRatioToPauseReceive'),
      pauseReplicateBytes: pauseAt('svc.worker.directMemoryRatioToPauseReplicate'),
      resumeBytes: pauseAt('svc.worker.directMemoryRatioToResume'),
    },
    (service, paused) => {
      if (network.transport.isPaused(service) === paused) return;
      network.transport.setPaused(service, paused);
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
  partialFramesChanged = (bytes) => backPressure.setPartialFrameBytes(bytes);
  backPressure.setPartialFrameBytes(receiveMemory.totalBytes);

  let finish: (code: number) => void = () => undefined;
  const stopped = new Promise<number>((resolve) => (finish = resolve));
  let closing: Promise<void> | undefined;
  const shutdown = (code: number, reason: string): Promise<void> => {
    closing ??= (async () => {
      logger.info({ event: 'process.shutdown', node: nodeId, code, reason }, `worker stopping: ${reason}`);
      driver.stop();
      await http?.close();
      metrics?.close();
      await network.transport.close();
      await storage.close();
      await store.close();
      finish(code);
    })();
    return closing;
  };
  // Keys added after the presented release fall back to the current release's configuration.
  const current = conf;
  const driver = new NodeDriver(
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
      ...(metrics === undefined ? {} : { onMetric: metrics.onMetric }),
      ...(envelopes === undefined ? {} : { onReceive: envelopes.received, onSend: envelopes.sent }),
    },
  );
  network.host.add(driver);
  driver.start(recovered);
  http = await serveManagement(
    'worker',
    { ...workerApi({ driver, conf: presented }), ...metricsRoutes(conf, metrics) },
    conf,
    logger,
    shutdown,
  );
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
    },
    `worker ${nodeId} listening`,
  );
  return {
    nodeId,
    shutdown,
    stopped,
    requestExit: () => driver.admin({ type: 'exit', exitType: 'NONE' }),
  };
}
