import { masterConfigFrom } from '../../conf/machine-configs.ts';
import type { ResolvedConfig } from '../../conf/index.ts';
import { initialMasterState, masterMachine, type MasterState } from '../../core/machines/master/index.ts';
import type { PlantedBug } from '../../core/planted-bugs.ts';
import { masterNodeId } from '../../core/protocol/node-ids.ts';
import { holdWhileBacklogFull } from '../driver/backlog.ts';
import { PauseReasons } from '../driver/pause-reasons.ts';
import { NodeDriver } from '../driver/node-driver.ts';
import { masterApi, type ManagementServer } from '../http/index.ts';
import { announce, type Logger } from '../log.ts';
import { createMetrics } from '../metrics/index.ts';
import { openDurableStore, type DbBackend } from '../storage/durable-store.ts';
import { addressText, type Address } from '../transport/addresses.ts';
import { serverAdmission } from '../transport/release-admission.ts';
import { nodeNetwork } from '../transport/node-network.ts';
import { AUTHENTICATION_FAILED, internalSecret, serverPeerSecret } from './server-auth.ts';
import type { TransportAuth } from '../transport/authentication.ts';
import { ReceiveMemory } from '../transport/receive-memory.ts';
import { metricsOptions, metricsRoutes, serveManagement } from './server-config.ts';

/**
 * What only tests may ask of a server: no configuration key reaches these, so no deployment can set them. They are
 * passed by the test-only entry `runtime/testing/test-server.ts` (excluded from the package).
 */
export interface ServerTestHooks {
  /** A deliberate bug of core/planted-bugs.ts in the machine's configuration (the chaos soak proves it bites). */
  readonly plantedBug?: PlantedBug;
  /**
   * A worker's data ports listen on this host while its id still names `svc.worker.host`: a fault proxy on the
   * named address then stands between the worker and every peer (runtime/chaos/fault-proxy.ts).
   */
  readonly bindHost?: string;
}

export interface RunningServer {
  readonly nodeId: string;
  /** Stops serving and closes the stores; resolves when everything is closed. */
  shutdown(code: number, reason: string): Promise<void>;
  /** Resolves with the exit code once the server stopped (by its own exit effect or by shutdown). */
  readonly stopped: Promise<number>;
  /** The role's own way of stopping (a worker's configured exit type); absent: stop at once. */
  requestExit?(): Promise<{ readonly success: boolean; readonly message: string }>;
}

/**
 * A master process: the master machine on the control-plane port, its durable state in an embedded store under
 * `svc.master.state.dir`, so that a restarted master remembers what it offered and to whom.
 */
export async function runMaster(
  conf: ResolvedConfig,
  logger: Logger,
  presented: ResolvedConfig = conf,
  testing: ServerTestHooks = {},
): Promise<RunningServer> {
  // `conf` (the current release's view) runs the process; `presented` is what it shows peers and operators: its
  // release in handshakes, the machine's configuration, legacy paths and metric names (svc master --release).
  const release = presented.release;
  const nodeId = masterNodeId();
  const secret = internalSecret(conf, 'master', logger);
  // An application's secret is the one the master's own state keeps (core); read when a connection claims it.
  const applicationSecret = (appId: string): string | undefined =>
    driver.state.durable.applications.apps.get(appId)?.secret;
  const auth: TransportAuth | undefined =
    secret === undefined
      ? undefined
      : {
          secret,
          principal: { kind: 'server' },
          expectedSecret: (hello) => {
            const server = serverPeerSecret(hello, secret);
            if (server !== undefined) return server;
            const appId = hello.application ?? '';
            const principal = { kind: 'application', appId } as const;
            const known = applicationSecret(appId);
            // An application not registered yet proves its secret once it has registered it (its first request).
            return known === undefined
              ? { kind: 'later', principal }
              : { kind: 'secret', secret: known, principal };
          },
        };
  // Read by closures (the metrics instance label, shutdown) before the interface listens.
  let http: ManagementServer | undefined = undefined;
  const metrics = conf.getBoolean('svc.metrics.enabled')
    ? createMetrics({
        role: 'master',
        ...metricsOptions(conf),
        release,
        instance: () =>
          `${conf.getString('svc.master.host')}:${http?.address.port ?? conf.getInt('svc.master.http.port')}`,
        state: (): MasterState => driver.state,
        backlog: (): number => driver.backlog,
      })
    : undefined;
  const network = nodeNetwork({
    role: 'master',
    release,
    nodeId,
    conf,
    logger,
    admit: serverAdmission(release, testing.plantedBug),
    ...(auth === undefined ? {} : { auth }),
    authenticationFailed: () => metrics?.onMetric(AUTHENTICATION_FAILED),
    // A peer may not make the master hold more than this for frames it has begun to send.
    receiveMemory: new ReceiveMemory({
      limitBytes: conf.getBytes('svc.master.receive.maxPartialFrameBytes'),
      limitKey: 'svc.master.receive.maxPartialFrameBytes',
    }),
  });
  const stateDir = conf.getString('svc.master.state.dir');
  const store = await openDurableStore(conf.getString('svc.master.state.dbBackend') as DbBackend, stateDir);
  const recovered = await store.load();
  const rpc: Address = await network.transport.listen(
    'rpc',
    conf.getString('svc.master.host'),
    conf.getInt('svc.master.port'),
  );

  let finish: (code: number) => void = () => undefined;
  const stopped = new Promise<number>((resolve) => (finish = resolve));
  let closing: Promise<void> | undefined;
  const shutdown = (code: number, reason: string): Promise<void> => {
    closing ??= (async () => {
      logger.info({ event: 'process.shutdown', code, reason }, `master stopping: ${reason}`);
      driver.stop();
      await http?.close();
      metrics?.close();
      await network.transport.close();
      await store.close();
      finish(code);
    })();
    return closing;
  };
  const driver = new NodeDriver(
    nodeId,
    masterMachine,
    initialMasterState(
      masterConfigFrom(presented, {
        dfs: conf.optional('svc.storage.hdfs.dir', 'getString') !== undefined,
        ...(testing.plantedBug === undefined ? {} : { plantedBug: testing.plantedBug }),
      }),
    ),
    release,
    {
      send: (envelope) => network.transport.send(envelope),
      logger,
      durable: store,
      durableStoreKind: 'coordination',
      onExit: (code, reason) => void shutdown(code, reason),
      onInputsFull: holdWhileBacklogFull(
        new PauseReasons((service, paused) => network.transport.setPaused(service, paused)),
        ['rpc'],
        logger,
        nodeId,
      ),
      ...(metrics === undefined ? {} : { onMetric: metrics.onMetric }),
    },
  );
  network.host.add(driver);
  driver.start(recovered);
  http = await serveManagement(
    'master',
    {
      ...masterApi({ driver, conf: presented, self: { nodeId, rpcAddress: addressText(rpc) } }),
      ...metricsRoutes(conf, metrics),
    },
    conf,
    logger,
    shutdown,
  );
  // The line scripts and tests wait for: written whatever the log level (docs/operations.md, Readiness).
  announce(logger).info(
    {
      event: 'listening',
      role: 'master',
      release,
      pid: process.pid,
      rpc,
      http: http.address,
      url: `svc://${addressText(rpc)}`,
      stateDir,
      recoveredKeys: recovered.size,
    },
    `master ${release} listening on ${addressText(rpc)}`,
  );
  return { nodeId, shutdown, stopped };
}
