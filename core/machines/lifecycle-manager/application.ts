import { applyMasterReport } from '../../client/index.ts';
import { workerKey, type ShuffleId } from '../../domain/index.ts';
import type { MessageOf } from '../../protocol/messages.ts';
import { cancelTimer, count, log, setTimer } from '../outbox.ts';
import { request, type Draft } from './draft.ts';

/**
 * The application's standing with the master: registration at start (retried until answered), then a heartbeat
 * every interval carrying what was committed since the last one, whose answer updates the workers to avoid.
 */
const HEARTBEAT_TIMER = 'heartbeat';
const REGISTER_RETRY_TIMER = 'register-retry';

export function registerApplication(d: Draft, attempt: number): void {
  const { appId, user, tenant, master, secret, hostname } = d.config;
  request(
    d,
    master,
    {
      type: 'RegisterApplication',
      appId,
      user,
      ...(d.config.authEnabled === true && secret !== undefined ? { secret } : {}),
      ...(hostname === undefined ? {} : { hostname }),
      ...(tenant === undefined ? {} : { tenant }),
    },
    { kind: 'registerApp' },
    attempt,
  );
}

/** The master's answer to RegisterApplication; returns true when the application is now registered. */
export function onApplicationAnswer(d: Draft, message: MessageOf<'StatusResponse'>): boolean {
  // The driver unregistered meanwhile: a late answer registers nothing again.
  if (d.app.status !== 'registering' && d.app.status !== 'unreachable') return false;
  if (message.status === 'SUCCESS') {
    const unreachableTries = d.app.status === 'unreachable' ? d.app.tries : undefined;
    d.app = { status: 'registered' };
    log(d.out, 'info', 'application registered', {
      appId: d.config.appId,
      release: d.config.release,
      ...(unreachableTries === undefined ? {} : { failedTriesSinceGivingUp: unreachableTries }),
    });
    setTimer(d.out, HEARTBEAT_TIMER, d.out.now + d.config.heartbeatIntervalMs);
    return true;
  }
  refuse(d, message.status, `the master refused application ${d.config.appId}: ${message.message}`);
  return false;
}

/**
 * The registration could not even reach the master (connection refused, no route). Before the application ever
 * registered that is a wrong master address, or a master that is down or restarting: try again after 1 s, 2 s, 4 s,
 * … and give up once one request timeout (`requestTimeoutMs`, svc.rpc.askTimeout) has passed since the first
 * failure, with a warning at every try. A wrong address is so reported after one timeout (60 s by default) instead
 * of after every try's timeout (3 min), and the warnings say what is wrong at once; a master restart shorter than
 * the timeout is waited out as before. Giving up is for now, not for good (`giveUpForNow`).
 */
export function onRegistrationUnreachable(d: Draft, why: string): void {
  if (d.app.status === 'unreachable') {
    tryAgainAtNextInterval(d, why);
    return;
  }
  const registering = d.app.status === 'registering' ? d.app : undefined;
  const since = registering?.unreachableSince ?? d.out.now;
  const tries = (registering?.unreachableTries ?? 0) + 1;
  const elapsedMs = d.out.now - since;
  const budgetMs = d.config.requestTimeoutMs;
  if (elapsedMs >= budgetMs) {
    giveUpForNow(
      d,
      `could not reach the master ${d.config.master} for ${Math.round(elapsedMs / 1_000)} s (${tries} tries; ` +
        `${why}); check the master's address (svc.master.endpoints) and that it is running`,
    );
    return;
  }
  const delayMs = Math.min(1_000 * 2 ** Math.min(tries - 1, 20), budgetMs - elapsedMs);
  log(d.out, 'warn', 'master unreachable; registering again later', {
    master: d.config.master,
    tries,
    delayMs,
    givesUpInMs: budgetMs - elapsedMs,
    why,
  });
  d.app = { status: 'registering', unreachableTries: tries, unreachableSince: since };
  setTimer(d.out, REGISTER_RETRY_TIMER, d.out.now + delayMs);
}

export function isRegisterRetryTimer(name: string): boolean {
  return name === REGISTER_RETRY_TIMER;
}

export function onRegisterRetryTimer(d: Draft): void {
  // A fresh request: the tries against timeouts (a master that is up but does not answer) count anew.
  const retrying =
    d.app.status === 'unreachable' ||
    (d.app.status === 'registering' && d.app.unreachableTries !== undefined);
  if (retrying) registerApplication(d, 1);
}

export function onApplicationUnanswered(d: Draft, attempt: number): void {
  if (d.app.status === 'unreachable') {
    tryAgainAtNextInterval(d, 'the master did not answer');
    return;
  }
  if (attempt < d.config.maxRequestAttempts) {
    registerApplication(d, attempt + 1);
    return;
  }
  giveUpForNow(
    d,
    `the master ${d.config.master} did not answer RegisterApplication after ${attempt} tries; check that it is ` +
      'running and reachable from the application',
  );
}

/**
 * The master was out of reach for a whole request timeout: tasks learn it at once (every shuffle fails with the
 * reason) instead of waiting, yet the cause may pass — a master restarting for longer than the timeout, a group of
 * masters between leaders whose members were down or named no leader when asked. So registration is tried again at
 * every heartbeat interval while the application runs, as its heartbeats would be; the first answer registers it.
 */
function giveUpForNow(d: Draft, message: string): void {
  d.app = { status: 'unreachable', code: 'REQUEST_FAILED', message, tries: 0 };
  log(d.out, 'error', 'application not registered', {
    appId: d.config.appId,
    status: 'REQUEST_FAILED',
    message,
    retriesEveryMs: d.config.heartbeatIntervalMs,
  });
  count(d.out, 'RegisterApplicationFailCount', 1, { status: 'REQUEST_FAILED' });
  setTimer(d.out, REGISTER_RETRY_TIMER, d.out.now + d.config.heartbeatIntervalMs);
}

function tryAgainAtNextInterval(d: Draft, why: string): void {
  if (d.app.status !== 'unreachable') return;
  const tries = d.app.tries + 1;
  d.app = { ...d.app, tries };
  log(d.out, 'warn', 'master still unreachable; registering again later', {
    master: d.config.master,
    tries,
    delayMs: d.config.heartbeatIntervalMs,
    why,
  });
  setTimer(d.out, REGISTER_RETRY_TIMER, d.out.now + d.config.heartbeatIntervalMs);
}

function refuse(d: Draft, code: MessageOf<'StatusResponse'>['status'], message: string): void {
  d.app = { status: 'refused', code, message };
  log(d.out, 'error', 'application not registered', { appId: d.config.appId, status: code, message });
  count(d.out, 'RegisterApplicationFailCount', 1, { status: code });
}

export function isHeartbeatTimer(name: string): boolean {
  return name === HEARTBEAT_TIMER;
}

/**
 * Sends the application heartbeat (its answer is the master's report on workers). `refresh`: sent now, out of turn,
 * because revives wait for a fresh report (revive.ts); the periodic timer restarts from now either way.
 */
export function sendHeartbeat(d: Draft, options: { readonly refresh?: boolean } = {}): void {
  if (d.app.status !== 'registered') return;
  setTimer(d.out, HEARTBEAT_TIMER, d.out.now + d.config.heartbeatIntervalMs);
  const { bytes, files } = d.unreported;
  request(
    d,
    d.config.master,
    {
      type: 'ApplicationHeartbeat',
      appId: d.config.appId,
      bytesWritten: bytes,
      fileCount: files,
      shuffleIds: shufflesTheMasterPlaced(d),
    },
    options.refresh === true ? { kind: 'heartbeat', refresh: true } : { kind: 'heartbeat' },
  );
  d.unreported = { bytes: 0, files: 0 };
}

/** Shuffles past their slot request: the master registered them when it placed their partitions. */
function shufflesTheMasterPlaced(d: Draft): ShuffleId[] {
  const placed: ShuffleId[] = [];
  for (const [id, shuffle] of d.shuffles)
    if (shuffle.phase !== 'awaiting-app' && shuffle.phase !== 'requesting-slots') placed.push(id);
  return placed;
}

/** The application ended: no more heartbeats (the master would otherwise register it again). */
export function stopHeartbeat(d: Draft): void {
  cancelTimer(d.out, HEARTBEAT_TIMER);
}

export function onHeartbeatAnswer(d: Draft, message: MessageOf<'ApplicationHeartbeatResponse'>): void {
  d.workers = applyMasterReport(
    d.workers,
    {
      excluded: message.excludedWorkers.map(workerKey),
      unknown: message.unknownWorkers.map(workerKey),
      shuttingDown: message.shuttingWorkers.map(workerKey),
    },
    d.out.now,
    d.config.excludedWorkerExpireMs,
  );
  // An older master sends no list: the shuffle's own workers stay the only candidates.
  if (message.availableWorkers !== undefined) {
    d.clusterWorkers = message.availableWorkers.map(({ worker, networkLocation }) => ({
      id: worker,
      networkLocation,
    }));
  }
}
