import { randomBytes } from 'node:crypto';
import { hostname } from 'node:os';
import { lifecycleManagerConfigFrom } from '../../conf/machine-configs.ts';
import {
  initialLifecycleManagerState,
  lifecycleManagerMachine,
  type LifecycleManagerState,
} from '../../core/machines/lifecycle-manager/index.ts';
import type { StatusCode } from '../../core/domain/status.ts';
import {
  cannotServeFrom,
  decideShuffle,
  decideWithoutAsking,
  type FallbackPolicy,
  type ShuffleDecision,
} from '../../core/client/fallback.ts';
import { driverNodeId, lifecycleManagerNodeId, masterNodeId } from '../../core/protocol/node-ids.ts';
import type { Release } from '../../core/release/version.ts';
import { NodeDriver } from '../driver/node-driver.ts';
import { clientNetwork } from './client-network.ts';
import { DriverNode } from './driver-node.ts';
import { addressText } from '../transport/addresses.ts';
import { masterAddresses, resolveClientSettings, type ClientOptions } from './client-config.ts';
import {
  ApplicationRefusedError,
  AuthenticationFailedError,
  ClientClosedError,
  ClientReleaseRefusedError,
  RequestFailedError,
  QuotaExceededError,
  ShuffleNotServedError,
  SvcClientError,
} from './errors.ts';
import type { ShuffleShape } from './shuffle-client.ts';
import {
  checkShuffleId,
  checkStageAttempt,
  checkedClusterShuffleId,
  type ShuffleStage,
} from './stage-attempts.ts';

export interface ApplicationOptions extends ClientOptions {
  /**
   * `svc://host:port` of the master (or `host:port`), or every master of a group, `svc://h1:p1,h2:p2,h3:p3`, whose
   * leader the lifecycle manager follows. Absent: `svc.master.endpoints` of the configuration.
   */
  readonly master?: string;
  /** Default: `app-<time>-<random>`. */
  readonly appId?: string;
  /** Who the application runs as, for quotas; default: `svc.identity.user-specific.userName` (tenant: `.tenant`). */
  readonly user?: string;
  /** Where the lifecycle manager listens for the application's executors; default 127.0.0.1, port 0 (any). */
  readonly host?: string;
  readonly port?: number;
}

/**
 * What `registerShuffle` decided (svc.client.spark.shuffle.fallback.policy): the shuffle runs on svc (its executors
 * write and read it through `client.shuffle`), or the engine runs it with its own shuffle, `reason` saying why.
 */
export type ShuffleRegistration =
  | { readonly kind: 'svc'; readonly shuffleId: number; readonly stageAttempt: number }
  | { readonly kind: 'fallback'; readonly shuffleId: number; readonly reason: string };

export interface Application {
  readonly appId: string;
  readonly release: Release;
  /** `host:port` that executors connect to (`connectExecutor({ lifecycleManager })`). */
  readonly lifecycleManager: string;
  /**
   * The application's secret when authentication is on (svc.auth.enabled): the one given (`secret`,
   * svc.client.auth.secret) or drawn at random. Hand it to the executors (`connectExecutor({ secret })`) the way
   * the application hands them its lifecycle manager's address, over a channel only they can read; never log it.
   * Undefined when authentication is off.
   */
  readonly secret: string | undefined;
  /**
   * Tells the cluster a shuffle's data is no longer needed (its current stage attempt's): workers delete its files.
   * Rejects with RequestFailedError when the lifecycle manager cannot be reached or does not answer within
   * svc.rpc.askTimeout.
   */
  unregisterShuffle(shuffleId: number): Promise<void>;
  /**
   * Reruns the map stage of a shuffle whose data is lost (a read failed with ReduceTaskFailedError `fetch-failure`):
   * the current stage attempt is released, and the next one starts empty. Hand the returned `stageAttempt` to the
   * executors, which run every map again through `client.shuffle(shuffleId, shape, { stageAttempt })` and read from
   * that handle. Tasks still running under the old attempt fail (their data no longer counts).
   */
  rerunMapStage(shuffleId: number): Promise<ShuffleStage>;
  /**
   * Registers a shuffle before its map tasks run, and says whether it runs on svc: with policy ALWAYS it answers
   * `fallback` without asking anything; otherwise the lifecycle manager registers it (slots offered and reserved on
   * the workers, which the map tasks then find ready), and when svc cannot serve it (no worker to offer, the release
   * refused, the user over quota) AUTO answers `fallback` and NEVER rejects with ShuffleNotServedError. Any other
   * failure rejects with SvcClientError (RequestFailedError when the lifecycle manager does not answer).
   */
  registerShuffle(shuffleId: number, shape: ShuffleShape): Promise<ShuffleRegistration>;
  /** The stage attempt a shuffle's executors write and read now: 0 until `rerunMapStage`. */
  stageAttempt(shuffleId: number): number;
  /**
   * Unregisters the application (every shuffle's files are released) and stops listening. Settles within
   * svc.rpc.askTimeout: when the master does not confirm the unregister in time it rejects with RequestFailedError,
   * the application being closed all the same. A second call waits for the first and resolves.
   */
  close(): Promise<void>;
  /** The lifecycle manager's state, for diagnostics (read only). */
  state(): LifecycleManagerState;
}

/**
 * Starts an application's lifecycle manager in this process (the driver side, as in Spark): it registers the
 * application with the master, then serves its executors on a port of its own. Resolves once the master accepted
 * the application; rejects with ClientReleaseRefusedError or ApplicationRefusedError otherwise.
 */
export async function startApplication(options: ApplicationOptions): Promise<Application> {
  const appId = options.appId ?? `app-${Date.now()}-${randomBytes(3).toString('hex')}`;
  const lmId = lifecycleManagerNodeId(appId);
  const client = resolveClientSettings(options, { role: 'lifecycle-manager', node: lmId });
  const { release, conf, logger } = client;
  const secret = client.authEnabled ? (client.secret ?? randomBytes(32).toString('base64url')) : undefined;
  const masters = masterAddresses(options.master, conf, release);
  const { network, refusal, authRefusal, connectFailure } = clientNetwork({
    nodeId: lmId,
    client,
    identity: { appId, ...(secret === undefined ? {} : { secret }), serves: true },
    masters,
  });
  const bound = await network.transport.listen('rpc', options.host ?? '127.0.0.1', options.port ?? 0);
  network.addresses.set(lmId, bound);

  const lm = new NodeDriver(
    lmId,
    lifecycleManagerMachine,
    initialLifecycleManagerState(
      lifecycleManagerConfigFrom(conf, {
        appId,
        ...(options.user === undefined ? {} : { user: options.user }),
        master: masterNodeId(),
        hostname: hostname(),
        ...(secret === undefined ? {} : { secret }),
      }),
    ),
    release,
    { send: (envelope) => network.send(envelope), logger },
  );
  network.host.add(lm);
  const { askTimeoutMs } = client;
  const driverNode = new DriverNode(driverNodeId(appId), lmId, {
    send: (envelope) => network.send(envelope),
    deadlineMs: askTimeoutMs,
    connectFailure,
  });
  network.host.add(driverNode);
  lm.start(new Map());
  const app = await lm.until((state) => (state.app.status === 'registering' ? undefined : state.app));
  if (app?.status !== 'registered') {
    lm.stop();
    await network.transport.close();
    throw app?.status === 'refused' || app?.status === 'unreachable'
      ? refusedError(app.code, app.message, refusal(), authRefusal(), connectFailure(), client.fallbackPolicy)
      : new SvcClientError(`application ${appId} stopped before the master answered its registration`);
  }

  let closing: Promise<void> | undefined;
  const close = async (): Promise<void> => {
    const deadline = Date.now() + askTimeoutMs;
    try {
      await driverNode.ask({ type: 'UnregisterApplication', appId });
      // The lifecycle manager forwards the unregister to the master: let that request finish, within the deadline.
      const confirmed = await lm.until(
        (state) => (state.requests.open.size === 0 ? true : undefined),
        Math.max(0, deadline - Date.now()),
      );
      const unconfirmed = [...lm.state.requests.open.values()].some(
        (open) => open.purpose.kind === 'unregisterApp',
      );
      // Releases of reserved copies a lost worker never answers are worth trying, not worth an error.
      if (confirmed === undefined && unconfirmed) {
        throw new RequestFailedError(
          'UnregisterApplication',
          `application ${appId} is closed here, but the master did not confirm its unregister within ` +
            `${askTimeoutMs} ms (svc.rpc.askTimeout)${lastFailure(connectFailure())}: the master keeps its ` +
            'shuffles, and the workers their files, until the application expires there ' +
            '(svc.master.heartbeat.application.timeout)',
        );
      }
    } finally {
      const reason = new ClientClosedError(`application ${appId} is closed`);
      driverNode.stop(reason);
      lm.stop();
      await network.transport.close();
    }
  };
  const stageAttempts = new Map<number, number>();
  return {
    appId,
    release,
    lifecycleManager: addressText(bound),
    secret,
    state: () => lm.state,
    async unregisterShuffle(shuffleId) {
      if (closing !== undefined) throw new ClientClosedError(`application ${appId} is closed`);
      const attempt = stageAttempts.get(shuffleId) ?? 0;
      await driverNode.ask({
        type: 'UnregisterShuffle',
        appId,
        shuffleId: checkedClusterShuffleId(shuffleId, attempt),
      });
    },
    async rerunMapStage(shuffleId) {
      if (closing !== undefined) throw new ClientClosedError(`application ${appId} is closed`);
      const attempt = stageAttempts.get(shuffleId) ?? 0;
      const next = attempt + 1;
      checkStageAttempt(next);
      // The abandoned attempt is released first: a late task of it is refused rather than counted.
      await driverNode.ask({
        type: 'UnregisterShuffle',
        appId,
        shuffleId: checkedClusterShuffleId(shuffleId, attempt),
      });
      stageAttempts.set(shuffleId, next);
      logger.warn(
        { event: 'stage.rerun', shuffleId, stageAttempt: next },
        `rerunning the map stage of shuffle ${shuffleId} as stage attempt ${next}`,
      );
      return { shuffleId, stageAttempt: next };
    },
    async registerShuffle(shuffleId, shape) {
      if (closing !== undefined) throw new ClientClosedError(`application ${appId} is closed`);
      const stageAttempt = stageAttempts.get(shuffleId) ?? 0;
      const clusterId = checkedClusterShuffleId(shuffleId, stageAttempt);
      const decided = decideWithoutAsking(client.fallbackPolicy);
      if (decided !== undefined) return registration(decided, shuffleId, stageAttempt);
      const answer = await driverNode.request({
        type: 'RegisterShuffle',
        appId,
        shuffleId: clusterId,
        numMappers: shape.maps,
        numPartitions: shape.partitions,
      });
      if (answer.type !== 'RegisterShuffleResponse') {
        throw new SvcClientError(`RegisterShuffle was answered with ${answer.type}`);
      }
      const served = answer.status === 'SUCCESS';
      const cause = served ? undefined : cannotServeFrom(answer.status, answer.message);
      if (!served && cause === undefined) {
        throw new SvcClientError(
          `RegisterShuffle of shuffle ${shuffleId} failed (${answer.status}): ${answer.message}`,
        );
      }
      const decision = decideShuffle(client.fallbackPolicy, cause);
      if (decision.kind === 'fallback') {
        logger.warn(
          { event: 'shuffle.fallback', shuffleId, reason: decision.reason },
          `shuffle ${shuffleId} falls back to the engine's own shuffle: ${decision.reason}`,
        );
      }
      return registration(decision, shuffleId, stageAttempt);
    },
    stageAttempt(shuffleId) {
      checkShuffleId(shuffleId);
      return stageAttempts.get(shuffleId) ?? 0;
    },
    close() {
      if (closing !== undefined) return closing.catch(() => undefined);
      closing = close();
      return closing;
    },
  };
}

/** A decision as `registerShuffle` answers it; NEVER's refusal as the error of its cause. */
function registration(
  decision: ShuffleDecision,
  shuffleId: number,
  stageAttempt: number,
): ShuffleRegistration {
  switch (decision.kind) {
    case 'svc':
      return { kind: 'svc', shuffleId, stageAttempt };
    case 'fallback':
      return { kind: 'fallback', shuffleId, reason: decision.reason };
    case 'fail':
      if (decision.cause.kind === 'quotaExceeded') throw new QuotaExceededError(decision.message);
      throw new ShuffleNotServedError(decision.cause.kind, decision.message);
  }
}

function lastFailure(connectFailure: string | undefined): string {
  return connectFailure === undefined ? '' : ` (the last connection failed: ${connectFailure})`;
}

function refusedError(
  code: StatusCode,
  message: string,
  refusal: string | undefined,
  authRefusal: string | undefined,
  connectFailure: string | undefined,
  policy: FallbackPolicy,
): SvcClientError {
  if (code === 'CLIENT_RELEASE_REFUSED') {
    const why = refusal ?? message;
    const decision = decideShuffle(policy, { kind: 'releaseRefused', message: why });
    return decision.kind === 'fallback'
      ? new ClientReleaseRefusedError(
          `${why}; the engine may run this application's shuffles with its own shuffle: ${decision.reason}`,
          decision.reason,
        )
      : new ClientReleaseRefusedError(why);
  }
  if (code === 'AUTHENTICATION_FAILED') {
    return new AuthenticationFailedError(
      `the master did not register the application (AUTHENTICATION_FAILED): ${authRefusal ?? message}`,
    );
  }
  return new ApplicationRefusedError(
    code,
    `the master did not register the application (${code}): ${message}. ` +
      (connectFailure === undefined
        ? 'Check that the master is reachable at the address given and running.'
        : `The last connection failed: ${connectFailure}.`),
  );
}
