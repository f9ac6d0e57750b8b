// A master and a worker of the suite's own, for rules whose keys must be set on the servers to be judged (a quota,
// a host pattern, congestion watermarks): the suite never sets them on the deployment it checks. Both run the
// target's server command at the target's release; the cluster is ready once the worker says it registered.
import { masterUrlSchemeAt } from './expectations/other.ts';
import { excerpt } from './http.ts';
import { masterSettings, startServer, workerSettings, type Started } from './servers.ts';

/** Heartbeats every 500 ms, so that what a worker reports reaches the master at once. */
export const FAST_HEARTBEATS = 'svc.master.heartbeat.worker.timeout=2s';

export interface OwnCluster {
  readonly master: Started;
  readonly worker: Started;
  /** The master's client address, in the scheme of the release (`rss://` before 0.3.0). */
  readonly dataUrl: string;
  stop(): Promise<void>;
}

export interface OwnClusterSettings {
  readonly master?: readonly string[];
  readonly worker?: readonly string[];
}

export function masterDataUrl(master: Started, release: string): string {
  const rpc = master.line.rpc as { port?: number } | undefined;
  return `${masterUrlSchemeAt(release)}://127.0.0.1:${rpc?.port ?? 0}`;
}

/** Starts a master of `release` (with `settings.master`), or throws with its output when it does not listen. */
export async function startOwnMaster(
  command: readonly string[],
  release: string,
  dir: string,
  settings: readonly string[],
): Promise<Started> {
  const master = await startServer(
    command,
    'master',
    ['--release', release],
    [...masterSettings(dir), FAST_HEARTBEATS, ...settings],
  );
  if (master.kind === 'exited')
    throw new Error(`the suite's master did not start (exit ${master.code}): ${excerpt(master.output, 300)}`);
  return master;
}

/** Starts a worker of `release` against `masterUrl` (with `settings`); it may exit (a refused registration). */
export function startOwnWorker(
  command: readonly string[],
  release: string,
  dir: string,
  masterUrl: string,
  settings: readonly string[],
): ReturnType<typeof startServer> {
  return startServer(
    command,
    'worker',
    [masterUrl, '--release', release],
    [...workerSettings(dir), FAST_HEARTBEATS, ...settings],
  );
}

/** A master and one registered worker; everything started is stopped when it fails to come up. */
export async function startOwnCluster(
  command: readonly string[],
  release: string,
  dir: string,
  settings: OwnClusterSettings = {},
): Promise<OwnCluster> {
  const master = await startOwnMaster(command, release, `${dir}/master`, settings.master ?? []);
  const dataUrl = masterDataUrl(master, release);
  let worker: Started | undefined;
  try {
    const started = await startOwnWorker(command, release, `${dir}/worker`, dataUrl, settings.worker ?? []);
    if (started.kind === 'exited')
      throw new Error(
        `the suite's worker did not start (exit ${started.code}): ${excerpt(started.output, 300)}`,
      );
    worker = started;
    const registered = await worker.server.waitForLine((line) => line.includes('"worker.registered"'));
    if (registered === undefined)
      throw new Error(
        `the suite's worker exited before it registered: ${excerpt(worker.server.output.join('\n'), 300)}`,
      );
  } catch (error) {
    await worker?.server.stop();
    await master.server.stop();
    throw error;
  }
  const own = worker;
  return {
    master,
    worker: own,
    dataUrl,
    stop: async () => {
      await own.server.stop();
      await master.server.stop();
    },
  };
}
