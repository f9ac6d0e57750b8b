import type { ResolvedConfig } from '../../conf/index.ts';
import {
  congestionWatermarksFrom,
  PARTIAL_FRAME_LIMIT_KEYS,
  workerConfigFrom,
} from '../../conf/machine-configs.ts';
import { workerKey, type WorkerId } from '../../core/domain/worker.ts';
import { initialWorkerState, workerMachine } from '../../core/machines/worker/index.ts';
import type { ObservedDiskSpace } from '../../core/machines/effects.ts';
import { masterNodeId } from '../../core/protocol/node-ids.ts';
import { STALLED_FRAME_MS, type BackPressureLimits } from '../../core/storage/back-pressure.ts';
import { BackPressure } from '../driver/back-pressure.ts';
import { holdWhileBacklogFull } from '../driver/backlog.ts';
import { NodeDriver } from '../driver/node-driver.ts';
import { PushBodyHolds } from '../driver/push-body-holds.ts';
import { PauseReasons } from '../driver/pause-reasons.ts';
import { workerApi } from '../http/index.ts';
import { announce, type Logger } from '../log.ts';
import {
  envelopeObserver,
  partialFrameGivenUp,
  statfsDevices,
  type WorkerMetrics,
} from '../metrics/index.ts';
import { observeFilesystems, type DiskDirectory } from '../storage/filesystem-space.ts';
import { addressText, type Address } from '../transport/addresses.ts';
import { nodeNetwork, type NodeNetwork } from '../transport/node-network.ts';
import { ReceiveMemory } from '../transport/receive-memory.ts';
import { serverAdmission } from '../transport/release-admission.ts';
import { TransportConfigError } from '../transport/tls.ts';
import { ReceiveBodies } from '../wire/index.ts';
import { DynamicConfigRefresher } from './dynamic-config.ts';
import { AUTHENTICATION_FAILED, internalSecret, WorkerAuthentication } from './server-auth.ts';
import { metricsRoutes, ServerConfigError } from './server-config.ts';
import {
  serveManagement,
  ServerLifetime,
  workerMetrics,
  type RunningServer,
  type ServerTestHooks,
} from './server-parts.ts';
import {
  filesOnTiers,
  GRACEFUL_KEY,
  openRecoveryStore,
  RECOVER_BACKEND_KEY,
  RECOVER_PATH_KEY,
  workerStorage,
  workerTiers,
  type WorkerTiers,
} from './worker-storage.ts';

/** What a worker process runs with. */
export interface WorkerOptions {
  /**
   * The configuration the process runs on: as of the presented release, with the keys introduced later at their
   * current values (ResolvedConfig.withLaterKeysFrom; svc worker --release).
   */
  readonly conf: ResolvedConfig;
  /** What the worker shows peers and operators (svc worker --release), as a master's (master.ts). Default: `conf`. */
  readonly presented?: ResolvedConfig;
  /** The masters it registers with: one, or every member of a group, whose leader it follows. */
  readonly masters: readonly Address[];
  readonly logger: Logger;
  readonly testing?: ServerTestHooks;
}

/**
 * A worker process: the worker machine behind its rpc, push, fetch and replicate ports, partition files on its
 * tiers (memory, local disks, a DFS directory), its recovery store, and back-pressure on pushes.
 *
 * Built in order, each part from the ones before it: the tiers and the recovery store, the metrics, the network and
 * its ports (which name the worker), the storage and back-pressure, the driver, the management interface, and only
 * then the machine's start, which registers with the master. Starting is all or nothing: any failure before the
 * start closes what was opened and is a ServerConfigError naming the key to change (`svc worker` exits 2 with it),
 * so that the master never offers a worker that could not start.
 */
export async function runWorker(options: WorkerOptions): Promise<RunningServer> {
  const { conf, masters, logger, testing = {} } = options;
  const presented = options.presented ?? conf;
  const release = presented.release;
  const host = conf.getString('svc.worker.host');
  const tiers = workerTiers(conf, logger);
  const auth = new WorkerAuthentication({
    secret: internalSecret(conf, 'worker', logger),
    askTimeoutMs: conf.getDurationMs('svc.rpc.askTimeout'),
    expiryMs: conf.getDurationMs('svc.worker.auth.secretCache.expiry'),
  });
  const lifetime = new ServerLifetime({ role: 'worker', logger });
  try {
    const store = lifetime.keep(await openRecoveryStore(conf));
    const recovered = await store.load();
    const found = await filesOnTiers(tiers, logger);
    const metrics = lifetime.keep(
      workerMetrics({
        conf,
        release,
        devices: statfsDevices(
          tiers.disks.map((disk) => ({ mountPoint: disk.config.mountPoint, dir: disk.dir })),
        ),
      }),
    );
    const receiveMemory = new PartialFrameMemory(tiers, partialFrameGivenUp(metrics.metrics));
    lifetime.keep(receiveMemory.receiveMemory);
    const bodies = receiveBodies(tiers, logger, testing);
    lifetime.keep(bodies.idleDrop);
    const network = nodeNetwork({
      role: 'worker',
      release,
      nodeId: `worker@${host}`,
      masters,
      conf,
      presented,
      logger,
      admit: serverAdmission(release, testing.plantedBug),
      ...(auth.transportAuth === undefined ? {} : { auth: auth.transportAuth }),
      authenticationFailed: () => metrics.metrics?.onMetric(AUTHENTICATION_FAILED),
      written: (pieces) => {
        tiers.readBuffers.giveBack(pieces);
        bodies.holds.written(pieces);
      },
      receiveMemory: receiveMemory.receiveMemory,
      receiveBodies: bodies.pool,
      ...(testing.plantedBug === undefined ? {} : { plantedBug: testing.plantedBug }),
    });
    lifetime.keep(network.transport);
    // The node id is the worker's identity and names its ports: the servers must be bound before the machine exists.
    const ports = await listenDataPorts({ network, conf, host: testing.bindHost ?? host });
    const id: WorkerId = {
      host,
      rpcPort: ports.rpc,
      pushPort: ports.push,
      fetchPort: ports.fetch,
      replicatePort: ports.replicate,
    };
    const nodeId = workerKey(id);
    auth.serveAs({ nodeId, network });

    const storage = lifetime.keep(workerStorage({ conf, tiers, nodeId, metrics: metrics.metrics, logger }));
    // The memory budget and the driver's backlog both may stop reading a service (../driver/pause-reasons.ts).
    const pauses = new PauseReasons((service, paused) => network.transport.setPaused(service, paused));
    const backPressure = pushBackPressure({
      limits: tiers.memoryLimits.backPressure,
      pauses,
      metrics: metrics.metrics,
      logger,
      nodeId,
    });
    receiveMemory.countIn(backPressure);

    const envelopes = metrics.metrics === undefined ? undefined : envelopeObserver(metrics.metrics);
    // Keys added after the presented release fall back to the current release's configuration (`conf`).
    const machineConfig = workerConfigFrom(presented, conf, {
      id,
      master: masterNodeId(),
      networkLocation: conf.getString('svc.worker.networkLocation'),
      disks: tiers.disks.map((disk) => disk.config),
      distributed: tiers.dfsDir === undefined ? [] : ['HDFS'],
      memoryCapacityBytes: tiers.memoryCapacity,
      ...(testing.plantedBug === undefined ? {} : { plantedBug: testing.plantedBug }),
    });
    const driver = new NodeDriver(nodeId, workerMachine, initialWorkerState(machineConfig), release, {
      send: (envelope) => network.send(envelope),
      logger,
      storage,
      durable: store,
      durableStoreKind: 'recovery',
      ...(testing.plantedBug === undefined ? {} : { plantedBug: testing.plantedBug }),
      onExit: (code, reason) => void lifetime.shutdown(code, reason),
      onWriteBytes: (delta) => backPressure.change(delta),
      pushBodies: bodies.holds,
      onInputsFull: holdWhileBacklogFull(pauses, DATA_SERVICES, logger, nodeId),
      ...(metrics.metrics === undefined ? {} : { onMetric: metrics.metrics.onMetric }),
      ...(envelopes === undefined ? {} : { onReceive: envelopes.received, onSend: envelopes.sent }),
    });

    // The last port: a worker whose management interface cannot listen never registers with the master.
    const http = lifetime.keep(
      await serveManagement({
        role: 'worker',
        api: { ...workerApi({ driver, conf: presented }), ...metricsRoutes(conf, metrics.metrics) },
        conf,
        logger,
      }),
    );
    metrics.show({
      instance: `${host}:${http.address.port}`,
      state: () => driver.state,
      backlog: () => driver.backlog,
      connections: () => network.transport.acceptedConnections(),
    });

    // Every port listens: the machine starts, and registers with the master; the driver is the first part to stop.
    network.host.add(driver);
    driver.input({ kind: 'start', recovered, leftovers: found });
    lifetime.keep({ close: () => driver.stop() });
    lifetime.keep(
      observeDiskSpace({
        disks: tiers.disks.map((disk) => ({ mountPoint: disk.config.mountPoint, dir: disk.dir })),
        intervalMs: machineConfig.heartbeatIntervalMs,
        observed: (disks) => driver.input({ kind: 'diskSpace', disks }),
      }),
    );
    // The congestion watermarks are dynamic: with congestion control on, the store is reloaded as the master does.
    const dynamic =
      machineConfig.congestion === undefined
        ? undefined
        : DynamicConfigRefresher.of(presented, process.env, logger, {
            resolve: (config) => congestionWatermarksFrom(presented, config),
            apply: (watermarks) => driver.admin({ type: 'congestionWatermarks', watermarks }),
          });
    if (dynamic !== undefined) {
      lifetime.keep({ close: () => dynamic.close() });
      await dynamic.start();
    }
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
        master: masters.map(addressText).join(','),
        disks: tiers.disks.map((disk) => disk.dir),
        dfsDir: tiers.dfsDir,
        memoryCapacityBytes: tiers.memoryCapacity,
        recoveredKeys: recovered.size,
        recoveryStore: conf.getBoolean(GRACEFUL_KEY) ? conf.getString(RECOVER_PATH_KEY) : null,
        recoveryStoreBackend: conf.getBoolean(GRACEFUL_KEY) ? conf.getString(RECOVER_BACKEND_KEY) : null,
      },
      `worker ${nodeId} listening`,
    );
    return {
      nodeId,
      shutdown: lifetime.shutdown,
      stopped: lifetime.stopped,
      requestExit: () => driver.admin({ type: 'exit', exitType: 'NONE' }),
    };
  } catch (error) {
    await lifetime.abandon();
    if (error instanceof ServerConfigError || error instanceof TransportConfigError) throw error;
    throw new ServerConfigError(
      `the worker could not start (disks ${tiers.disks.map((disk) => disk.dir).join(', ') || 'none'}` +
        `${tiers.dfsDir === undefined ? '' : `, DFS ${tiers.dfsDir}`}): ${(error as Error).message}`,
    );
  }
}

const DATA_SERVICES = ['rpc', 'push', 'fetch', 'replicate'] as const;

/** How often free receive bodies are let go when none was taken meanwhile (an idle worker keeps none). */
const RECEIVE_BODIES_IDLE_MS = 30_000;

/**
 * The pool merged pushes are read into, lent again once the memory tier copied their batches and no write or
 * forward still reads them (docs/performance.md, "Fresh memory"), and the holds that say when. Test hooks
 * (ServerTestHooks.scribbleReturnedBodies) overwrite every body given back, so that a body returned too early
 * corrupts data visibly, and log `worker.receiveBodies.reused` once, when a body is first lent again.
 */
function receiveBodies(
  tiers: WorkerTiers,
  logger: Logger,
  testing: ServerTestHooks,
): { readonly pool: ReceiveBodies; readonly holds: PushBodyHolds; readonly idleDrop: { close(): void } } {
  const scribble = testing.scribbleReturnedBodies === true;
  const pool = new ReceiveBodies({
    scribble,
    ...(scribble
      ? {
          onFirstReuse: () =>
            logger.info({ event: 'worker.receiveBodies.reused' }, 'a receive body is lent again'),
        }
      : {}),
  });
  const timer = setInterval(() => pool.dropIdle(), RECEIVE_BODIES_IDLE_MS);
  timer.unref();
  return {
    pool,
    holds: new PushBodyHolds(pool, tiers.memoryPool !== undefined),
    idleDrop: { close: () => clearInterval(timer) },
  };
}

/**
 * Reads the local disks' filesystems every heartbeat interval and hands what they say to the machine, so that each
 * heartbeat reports the space they have now (core/storage/disk-space.ts). At most one read is in flight.
 */
function observeDiskSpace(options: {
  readonly disks: readonly DiskDirectory[];
  readonly intervalMs: number;
  readonly observed: (disks: ObservedDiskSpace[]) => void;
}): { close(): void } {
  const { disks, intervalMs, observed } = options;
  let closed = false;
  let reading = false;
  const timer = setInterval(() => {
    if (reading || disks.length === 0) return;
    reading = true;
    void observeFilesystems(disks).then((space) => {
      reading = false;
      if (!closed && space.length > 0) observed(space);
    });
  }, intervalMs);
  timer.unref();
  return {
    close() {
      closed = true;
      clearInterval(timer);
    },
  };
}

/** Binds the rpc, push, fetch and replicate ports; one that cannot listen is a configuration error naming its key. */
async function listenDataPorts(options: {
  readonly network: NodeNetwork;
  readonly conf: ResolvedConfig;
  readonly host: string;
}): Promise<Record<(typeof DATA_SERVICES)[number], number>> {
  const { network, conf, host } = options;
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
 * Partly received frames, counted in the memory budget. Together they may hold up to the resume threshold (one
 * whole frame at least); past it the largest are given up. One frame below it the data ports pause, so that the
 * frames under way arrive while new ones wait, and a frame under way for STALLED_FRAME_MS is then given up. They
 * count in the back-pressure too, from the moment it exists (`countIn`): it pauses the network's ports, so it is
 * built after the network this memory is part of.
 */
class PartialFrameMemory {
  readonly receiveMemory: ReceiveMemory;
  private backPressure: BackPressure | undefined;

  constructor(tiers: WorkerTiers, gaveUp: (cause: string) => void) {
    const pauseBytes = tiers.memoryLimits.backPressure.partialFramePauseBytes;
    this.receiveMemory = new ReceiveMemory({
      limitBytes: tiers.memoryLimits.partialFrameLimitBytes,
      limitKey: PARTIAL_FRAME_LIMIT_KEYS,
      changed: (bytes) => this.backPressure?.setPartialFrameBytes(bytes),
      gaveUp,
      ...(pauseBytes === undefined ? {} : { stalled: { pauseBytes, stalledMs: STALLED_FRAME_MS } }),
    });
  }

  countIn(backPressure: BackPressure): void {
    this.backPressure = backPressure;
    backPressure.setPartialFrameBytes(this.receiveMemory.totalBytes);
  }
}

/** Pauses reading pushes (and replicas) while the bytes in flight exceed the budget's ratios; resumes below. */
function pushBackPressure(options: {
  readonly limits: BackPressureLimits;
  readonly pauses: PauseReasons;
  readonly metrics: WorkerMetrics | undefined;
  readonly logger: Logger;
  readonly nodeId: string;
}): BackPressure {
  const { limits, pauses, metrics, logger, nodeId } = options;
  const backPressure: BackPressure = new BackPressure(limits, (service, paused) => {
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
  });
  return backPressure;
}
