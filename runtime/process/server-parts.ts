import type { ResolvedConfig } from '../../conf/index.ts';
import type { MasterState } from '../../core/machines/master/index.ts';
import type { WorkerMachineState } from '../../core/machines/worker/index.ts';
import type { PlantedBug } from '../../core/planted-bugs.ts';
import type { Release } from '../../core/release/version.ts';
import { startManagement, type ManagementApi, type ManagementServer } from '../http/index.ts';
import type { Logger } from '../log.ts';
import { createMetrics, type DeviceSpace, type MasterMetrics, type WorkerMetrics } from '../metrics/index.ts';
import { metricsOptions, ServerConfigError } from './server-config.ts';

// The parts both server processes (master.ts, worker.ts) are composed of, in the order they are built: the lifetime
// that closes what a start opened, the metrics, the management interface.

/**
 * What only tests may ask of a server: no configuration key reaches these, so no deployment can set them. They are
 * passed by the test-only entry `runtime/testing/test-server.ts` (excluded from the package).
 */
export interface ServerTestHooks {
  /** A deliberate bug of core/planted-bugs.ts in the machine's configuration (the chaos soak proves it bites). */
  readonly plantedBug?: PlantedBug;
  /**
   * A worker's data ports listen on this host while its id still names `svc.worker.host`: a fault proxy on the
   * named address then stands between the worker and every peer (runtime/cluster/fault-proxy.ts).
   */
  readonly bindHost?: string;
  /** Every write of the durable store waits this long before it starts: a slow disk (runtime/durable-ack.test.ts). */
  readonly durableWriteDelayMs?: number;
  /**
   * A worker overwrites every receive body given back to its pool, and logs the first reuse: a body returned while
   * a write or forward still reads it then corrupts data visibly (runtime/receive-bodies.test.ts).
   */
  readonly scribbleReturnedBodies?: boolean;
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

export type ServerRole = 'master' | 'worker';

interface Closable {
  close(): unknown;
}

/**
 * What a server process holds open, in the order its start opened it. A failed start closes it (`abandon`); a
 * running server stops once (`shutdown`, from a signal, an operator or the machine's exit effect): each part closes
 * in the reverse order of its opening, so that the driver, kept last, stops first and the stores close last.
 */
export class ServerLifetime {
  /** Resolves with the exit code once the server stopped. */
  readonly stopped: Promise<number>;
  private readonly closers: (() => unknown)[] = [];
  private readonly finish: (code: number) => void;
  private closing: Promise<void> | undefined;

  constructor(private readonly options: { readonly role: ServerRole; readonly logger: Logger }) {
    let finish: (code: number) => void = () => undefined;
    this.stopped = new Promise<number>((resolve) => (finish = resolve));
    this.finish = finish;
  }

  /**
   * Closes `part` with the rest, before whatever was kept earlier; at once when the server is already stopping (a
   * start still under way when a group's master was deposed must leave nothing open behind the shutdown).
   */
  keep<T extends Closable>(part: T): T {
    if (this.closing !== undefined) {
      void Promise.resolve()
        .then(() => part.close())
        .catch(() => undefined);
      return part;
    }
    this.closers.push(() => part.close());
    return part;
  }

  /** Whether the server has begun to stop: a start still under way must not begin to serve. */
  get stopping(): boolean {
    return this.closing !== undefined;
  }

  /** Stops the server once: closes every part, latest first, then resolves `stopped` with `code`. */
  readonly shutdown = (code: number, reason: string): Promise<void> => {
    this.closing ??= (async () => {
      const { role, logger } = this.options;
      logger.info({ event: 'process.shutdown', code, reason }, `${role} stopping: ${reason}`);
      for (const close of this.closers.toReversed()) await close();
      this.finish(code);
    })();
    return this.closing;
  };

  /** A start that failed: closes what it opened, latest first, whatever each close does. */
  async abandon(): Promise<void> {
    for (const close of this.closers.toReversed()) {
      try {
        await close();
      } catch {
        // The start's own error is what the operator must see.
      }
    }
  }
}

/** What a server's metrics read at every scrape, known once its driver exists and its interface listens. */
export interface ScrapedNode<S> {
  /** The `instance` label: `<host>:<bound http port>`. */
  readonly instance: string;
  readonly state: () => S;
  readonly backlog: () => number;
  /** Connections accepted on each port and open (the transport's). */
  readonly connections: () => readonly { readonly service: string; readonly count: number }[];
}

/**
 * A server's metrics (svc.metrics.enabled), or none: created first, since every other part counts into them. The
 * node they describe is shown to them (`show`) once the driver exists and the management interface listens, which
 * is before anything can scrape them.
 */
export interface MetricsPart<M, S> {
  readonly metrics: M | undefined;
  show(node: ScrapedNode<S>): void;
  close(): void;
}

export function masterMetrics(options: {
  readonly conf: ResolvedConfig;
  readonly release: Release;
}): MetricsPart<MasterMetrics, MasterState> {
  const { conf, release } = options;
  return metricsPart(conf, (node) =>
    createMetrics({
      role: 'master',
      ...metricsOptions(conf),
      release,
      userResourceMetrics: conf.getBoolean('svc.master.userResourceConsumption.metrics.enabled'),
      ...scrapedFrom(node),
    }),
  );
}

export function workerMetrics(options: {
  readonly conf: ResolvedConfig;
  readonly release: Release;
  /** The filesystems of the worker's disks (statfsDevices). */
  readonly devices: () => Promise<readonly DeviceSpace[]> | readonly DeviceSpace[];
}): MetricsPart<WorkerMetrics, WorkerMachineState> {
  const { conf, release, devices } = options;
  return metricsPart(conf, (node) =>
    createMetrics({ role: 'worker', ...metricsOptions(conf), release, devices, ...scrapedFrom(node) }),
  );
}

function metricsPart<M extends { close(): void }, S>(
  conf: ResolvedConfig,
  create: (node: () => ScrapedNode<S>) => M,
): MetricsPart<M, S> {
  let shown: ScrapedNode<S> | undefined;
  const node = (): ScrapedNode<S> => {
    if (shown === undefined) throw new Error('the metrics were collected before the server started');
    return shown;
  };
  const metrics = conf.getBoolean('svc.metrics.enabled') ? create(node) : undefined;
  return {
    metrics,
    show: (scraped) => {
      shown = scraped;
    },
    close: () => metrics?.close(),
  };
}

function scrapedFrom<S>(node: () => ScrapedNode<S>): {
  instance: () => string;
  state: () => S;
  backlog: () => number;
  connections: () => readonly { readonly service: string; readonly count: number }[];
} {
  return {
    instance: () => node().instance,
    state: () => node().state(),
    backlog: () => node().backlog(),
    connections: () => node().connections(),
  };
}

/**
 * Starts a server's management interface; one that cannot listen (a port in use, a wrong host) is a configuration
 * error naming the keys, as any other setting it cannot use (the start's lifetime then closes what it opened).
 */
export async function serveManagement(options: {
  readonly role: ServerRole;
  readonly api: ManagementApi;
  readonly conf: ResolvedConfig;
  readonly logger: Logger;
}): Promise<ManagementServer> {
  try {
    return await startManagement(options.role, options.api, options.conf, options.logger);
  } catch (error) {
    throw new ServerConfigError((error as Error).message);
  }
}
