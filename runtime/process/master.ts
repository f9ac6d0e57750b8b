import { masterConfigFrom } from '../../conf/machine-configs.ts';
import type { ResolvedConfig } from '../../conf/index.ts';
import { initialMasterState, masterMachine } from '../../core/machines/master/index.ts';
import { masterNodeId } from '../../core/protocol/node-ids.ts';
import { holdWhileBacklogFull } from '../driver/backlog.ts';
import { PauseReasons } from '../driver/pause-reasons.ts';
import { monotonicNow, NodeDriver } from '../driver/node-driver.ts';
import { masterApi, type ManagementServer } from '../http/index.ts';
import { announce, type Logger } from '../log.ts';
import { haSettingsFrom } from '../ha/ha-settings.ts';
import {
  openDurableStore,
  slowedForTests,
  type DbBackend,
  type DurableStore,
} from '../storage/durable-store.ts';
import { campaignForMaster } from './master-leadership.ts';
import { exitOnStopSignalsUntil } from './signals.ts';
import { serveFollowerHttp } from './not-leader-http.ts';
import { StoredStateReader } from './stored-state-reader.ts';
import { followerNode } from './follower-node.ts';
import type { MasterSelf } from '../http/projections/master.ts';
import { addressText, type Address } from '../transport/addresses.ts';
import { serverAdmission } from '../transport/release-admission.ts';
import { nodeNetwork } from '../transport/node-network.ts';
import { AUTHENTICATION_FAILED, internalSecret, MasterAuthentication } from './server-auth.ts';
import { ReceiveMemory } from '../transport/receive-memory.ts';
import { sweepExpiredDfsDirs } from './dfs-expiry.ts';
import { quotaSettingsFrom } from '../../conf/quota-settings.ts';
import { DynamicConfigRefresher } from './dynamic-config.ts';
import { metricsRoutes } from './server-config.ts';
import { partialFrameGivenUp } from '../metrics/index.ts';
import {
  masterMetrics,
  serveManagement,
  ServerLifetime,
  type RunningServer,
  type ServerTestHooks,
} from './server-parts.ts';

/**
 * How long a follower's management API answers reads from one range read of the group's state in etcd
 * (./stored-state-reader.ts): at most one read a second per follower, however many clients poll it.
 */
const FOLLOWER_READ_MAX_AGE_MS = 1_000;

/** What a master process runs with. */
export interface MasterOptions {
  /**
   * The configuration the process runs on: as of the presented release, with the keys introduced later at their
   * current values (ResolvedConfig.withLaterKeysFrom; svc master --release).
   */
  readonly conf: ResolvedConfig;
  /**
   * What the master shows peers and operators: its release in handshakes, the machine's configuration, legacy paths
   * and metric names (svc master --release). Default: `conf`.
   */
  readonly presented?: ResolvedConfig;
  readonly logger: Logger;
  readonly testing?: ServerTestHooks;
}

/**
 * A master process: the master machine on the control-plane port, its durable state in an embedded store under
 * `svc.master.state.dir`, so that a restarted master remembers what it offered and to whom.
 *
 * Built in order, each part from the ones before it: the store, the metrics, the network and its port, the driver,
 * the management interface, and only then the machine's start. A failed start closes what it opened.
 */
export async function runMaster(options: MasterOptions): Promise<RunningServer> {
  const { conf, logger, testing = {} } = options;
  const presented = options.presented ?? conf;
  const release = presented.release;
  const nodeId = masterNodeId();
  // An application's secret is the one the master's machine keeps; read when a connection claims it.
  const auth = new MasterAuthentication({ secret: internalSecret(conf, 'master', logger) });
  const lifetime = new ServerLifetime({ role: 'master', logger });
  try {
    const stateDir = conf.getString('svc.master.state.dir');
    const masterConfig = masterConfigFrom(presented, {
      dfs: conf.optional('svc.storage.hdfs.dir', 'getString') !== undefined,
      ...(testing.plantedBug === undefined ? {} : { plantedBug: testing.plantedBug }),
    });
    const ha = haSettingsFrom(conf);
    const metrics = lifetime.keep(masterMetrics({ conf, release }));
    const network = nodeNetwork({
      role: 'master',
      release,
      nodeId,
      conf,
      presented,
      logger,
      admit: serverAdmission(release, testing.plantedBug),
      ...(auth.transportAuth === undefined ? {} : { auth: auth.transportAuth }),
      authenticationFailed: () => metrics.metrics?.onMetric(AUTHENTICATION_FAILED),
      // A peer may not make the master hold more than this for frames it has begun to send.
      receiveMemory: new ReceiveMemory({
        limitBytes: conf.getBytes('svc.master.receive.maxPartialFrameBytes'),
        limitKey: 'svc.master.receive.maxPartialFrameBytes',
        gaveUp: partialFrameGivenUp(metrics.metrics),
      }),
      ...(testing.plantedBug === undefined ? {} : { plantedBug: testing.plantedBug }),
    });
    lifetime.keep(network.transport);
    let store: DurableStore;
    let notLeader: ManagementServer | undefined;
    let rpc: Address;
    let group: MasterSelf['group'];
    if (ha.enabled) {
      // In a group the state lives in etcd and only the leader runs the machine. Until this master is elected and
      // has loaded the state, its data port (the member's port) answers every request "not leader" with the leader
      // (./follower-node.ts), and its management port serves reads from etcd and answers writes 503 with the leader
      // (./not-leader-http.ts).
      const leadership = campaignForMaster({
        settings: ha,
        emptyState: initialMasterState(masterConfig).durable,
        logger,
        stop: (code, reason) => void lifetime.shutdown(code, reason),
      });
      group = () => leadership.group();
      store = lifetime.keep(leadership.store);
      exitOnStopSignalsUntil(logger, leadership.elected, () =>
        lifetime.shutdown(0, 'stopped before this master was elected'),
      );
      const member = ha.members.find((m) => m.id === ha.nodeId)!;
      rpc = await network.transport.listen('rpc', conf.getString('svc.master.host'), member.port);
      network.host.add(
        followerNode({
          nodeId,
          member: ha.nodeId!,
          leader: () => leadership.driver.leader,
          send: (envelope) => network.transport.send(envelope),
        }),
      );
      const refusedMetrics = metricsRoutes(conf, metrics.metrics).metrics;
      notLeader = lifetime.keep(
        await serveFollowerHttp({
          conf,
          presented,
          memberId: ha.nodeId!,
          leader: () => leadership.driver.leader,
          self: { nodeId, rpcAddress: addressText(rpc), group },
          reader: new StoredStateReader({
            list: () => leadership.readStoredState(),
            prefix: leadership.statePrefix,
            initial: initialMasterState(masterConfig),
            maxAgeMs: FOLLOWER_READ_MAX_AGE_MS,
            clock: monotonicNow,
          }),
          metricsPaths:
            refusedMetrics === undefined
              ? []
              : [...new Set([refusedMetrics.prometheusPath, '/metrics', refusedMetrics.jsonPath])],
          logger,
        }),
      );
      logger.info(
        { event: 'ha.notLeaderRpc', member: ha.nodeId, rpc },
        `master ${ha.nodeId} follows: its data port ${addressText(rpc)} answers "not leader" until it leads`,
      );
    } else {
      store = lifetime.keep(
        slowedForTests(
          await openDurableStore(conf.getString('svc.master.state.dbBackend') as DbBackend, stateDir),
          testing.durableWriteDelayMs,
        ),
      );
      rpc = await network.transport.listen(
        'rpc',
        conf.getString('svc.master.host'),
        conf.getInt('svc.master.port'),
      );
    }
    const recovered = await store.load();
    // Elected (in a group): the master machine takes the data port, the management API proper the management port.
    if (ha.enabled) network.host.remove(nodeId);
    await notLeader?.close();

    const driver = new NodeDriver(nodeId, masterMachine, initialMasterState(masterConfig), release, {
      send: (envelope) => network.transport.send(envelope),
      logger,
      durable: store,
      durableStoreKind: 'coordination',
      ...(testing.plantedBug === undefined ? {} : { plantedBug: testing.plantedBug }),
      onExit: (code, reason) => void lifetime.shutdown(code, reason),
      onInputsFull: holdWhileBacklogFull(
        new PauseReasons((service, paused) => network.transport.setPaused(service, paused)),
        ['rpc'],
        logger,
        nodeId,
      ),
      ...(metrics.metrics === undefined ? {} : { onMetric: metrics.metrics.onMetric }),
    });
    auth.readSecretsOf(driver);

    const http = lifetime.keep(
      await serveManagement({
        role: 'master',
        api: {
          ...masterApi({
            driver,
            conf: presented,
            self: { nodeId, rpcAddress: addressText(rpc), ...(group === undefined ? {} : { group }) },
          }),
          ...metricsRoutes(conf, metrics.metrics),
        },
        conf,
        logger,
      }),
    );
    metrics.show({
      instance: `${conf.getString('svc.master.host')}:${http.address.port}`,
      state: () => driver.state,
      backlog: () => driver.backlog,
      connections: () => network.transport.acceptedConnections(),
    });

    // Deposed while it built the master after its election (on a loaded machine that can outlast the lease; the chaos
    // soak saw it): the shutdown under way must win, or a master whose term is over would start and serve.
    if (lifetime.stopping) return { nodeId, shutdown: lifetime.shutdown, stopped: lifetime.stopped };
    // Every port listens: the machine starts, and the driver is the first part to stop.
    network.host.add(driver);
    driver.start(recovered);
    lifetime.keep({ close: () => driver.stop() });
    const dfsDir = conf.optional('svc.storage.hdfs.dir', 'getString');
    if (dfsDir !== undefined)
      lifetime.keep(
        sweepExpiredDfsDirs({
          dfsDir,
          intervalMs: conf.getDurationMs('svc.master.dfs.expireDirs.timeout'),
          applications: () => driver.state.durable.applications,
          logger,
        }),
      );
    // Quotas per tenant and user come from the dynamic configuration, reloaded without a restart.
    const dynamic = DynamicConfigRefresher.of(presented, process.env, logger, {
      resolve: (config) => quotaSettingsFrom(presented, config),
      apply: (settings) => driver.admin({ type: 'quotaSettings', settings }),
    });
    if (dynamic !== undefined) {
      lifetime.keep({ close: () => dynamic.close() });
      await dynamic.start();
    }
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
        ...(ha.enabled ? { haMember: ha.nodeId } : {}),
        recoveredKeys: recovered.size,
      },
      `master ${release} listening on ${addressText(rpc)}`,
    );
    return { nodeId, shutdown: lifetime.shutdown, stopped: lifetime.stopped };
  } catch (error) {
    await lifetime.abandon();
    throw error;
  }
}
