/**
 * One run of a real Prometheus for the conformance suite: a temporary directory, a configuration that scrapes the
 * given metrics endpoints at a short interval, a port from 0 read back from its log, and its HTTP API. The top-50
 * check (checks/top50.ts) runs the contract's query through it. `stop()` always stops the process and removes the
 * directory.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { accessSync, constants, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { createInterface } from 'node:readline';

/** Where the suite looks for the binary: `SVC_PROMETHEUS`, else `prometheus` on the PATH (Debian's package). */
export function findPrometheus(explicit?: string): string | undefined {
  const candidates =
    explicit !== undefined
      ? [explicit]
      : process.env.SVC_PROMETHEUS !== undefined
        ? [process.env.SVC_PROMETHEUS]
        : (process.env.PATH ?? '').split(path.delimiter).map((dir) => path.join(dir, 'prometheus'));
  for (const candidate of candidates) {
    try {
      accessSync(candidate, constants.X_OK);
      return candidate;
    } catch {
      // not here
    }
  }
  return undefined;
}

/** One endpoint to scrape: `host:port` and the path of its Prometheus text. */
export interface ScrapeTarget {
  readonly hostPort: string;
  readonly metricsPath: string;
}

export interface PrometheusOptions {
  readonly binary: string;
  readonly targets: readonly ScrapeTarget[];
  /** Default 1s. */
  readonly scrapeInterval?: string;
  /** Basic credentials for every scrape, when the deployment's HTTP interface has authentication on. */
  readonly basicAuth?: { readonly user: string; readonly password: string };
  /** How long to wait for it to listen and be ready; default 120 s. */
  readonly startupMs?: number;
}

export interface InstantSample {
  readonly metric: Readonly<Record<string, string>>;
  readonly value: number;
}

export interface ScrapeState {
  readonly scrapeUrl: string;
  readonly health: string;
  readonly lastScrape: number;
  readonly lastError: string;
}

/** The configuration file: one job per metrics path, every target's own labels kept (honor_labels). */
export function prometheusConfig(
  targets: readonly ScrapeTarget[],
  scrapeInterval: string,
  basicAuth?: { readonly user: string; readonly password: string },
): string {
  const auth =
    basicAuth === undefined
      ? []
      : [
          '    basic_auth:',
          `      username: ${JSON.stringify(basicAuth.user)}`,
          `      password: ${JSON.stringify(basicAuth.password)}`,
        ];
  const byPath = new Map<string, string[]>();
  for (const target of targets)
    byPath.set(target.metricsPath, [...(byPath.get(target.metricsPath) ?? []), target.hostPort]);
  const jobs = [...byPath].map(([metricsPath, hosts], i) =>
    [
      `  - job_name: svc-${i}`,
      `    metrics_path: ${JSON.stringify(metricsPath)}`,
      '    honor_labels: true',
      ...auth,
      '    static_configs:',
      `      - targets: [${hosts.map((h) => JSON.stringify(h)).join(', ')}]`,
    ].join('\n'),
  );
  return [
    'global:',
    `  scrape_interval: ${scrapeInterval}`,
    `  scrape_timeout: ${scrapeInterval}`,
    'scrape_configs:',
    ...jobs,
    '',
  ].join('\n');
}

export class PrometheusRun {
  private exited = false;

  private constructor(
    private readonly child: ChildProcess,
    readonly dir: string,
    readonly url: string,
    private readonly exit: Promise<number | null>,
  ) {
    // A suite stopped by a signal or an uncaught error must not leave Prometheus running behind it.
    process.once('exit', this.killOnExit);
    void exit.then(() => {
      this.exited = true;
      process.off('exit', this.killOnExit);
    });
  }

  private readonly killOnExit = (): void => {
    this.child.kill('SIGKILL');
  };

  /** Starts Prometheus and resolves once it says it is ready; on any failure it is stopped and the error thrown. */
  static async start(options: PrometheusOptions): Promise<PrometheusRun> {
    const dir = mkdtempSync(path.join(tmpdir(), 'svc-conformance-prometheus-'));
    const config = path.join(dir, 'prometheus.yml');
    writeFileSync(
      config,
      prometheusConfig(options.targets, options.scrapeInterval ?? '1s', options.basicAuth),
    );
    const child = spawn(
      options.binary,
      [
        `--config.file=${config}`,
        `--storage.tsdb.path=${path.join(dir, 'data')}`,
        '--web.listen-address=127.0.0.1:0',
        '--log.level=info',
      ],
      { stdio: ['ignore', 'ignore', 'pipe'] },
    );
    const exit = new Promise<number | null>((resolve) => {
      child.once('exit', (code) => resolve(code));
      child.once('error', () => resolve(null));
    });
    const lines: string[] = [];
    let listening: string | undefined;
    let saidReady = false;
    const ready = new Promise<string>((resolve, reject) => {
      // A deadline, not a wait: readiness is the log line. Generous, as for the servers' own start (a loaded CI
      // machine can take long to start a Go binary and replay its empty WAL).
      const startupMs = options.startupMs ?? 120_000;
      const timer = setTimeout(
        () =>
          reject(
            new Error(
              `prometheus was not ready within ${startupMs} ms; its last lines:\n${lines.slice(-8).join('\n')}`,
            ),
          ),
        startupMs,
      );
      createInterface({ input: child.stderr }).on('line', (line) => {
        lines.push(line);
        if (lines.length > 40) lines.shift();
        // `address=127.0.0.1:0` is the flag; the "Listening on" line carries the port the system picked. Prometheus
        // writes it and its "ready" line from two goroutines, in either order: ready once both were seen.
        const bound = /msg="Listening on" address=(\S+)/.exec(line);
        if (bound !== null) listening = bound[1];
        if (line.includes('Server is ready to receive web requests')) saidReady = true;
        if (saidReady && listening !== undefined) {
          clearTimeout(timer);
          resolve(listening);
        }
      });
      void exit.then((code) => {
        clearTimeout(timer);
        reject(
          new Error(
            `prometheus exited (code ${String(code)}) before it was ready:\n${lines.slice(-8).join('\n')}`,
          ),
        );
      });
    });
    try {
      const address = await ready;
      return new PrometheusRun(child, dir, `http://${address}`, exit);
    } catch (error) {
      child.kill('SIGKILL');
      await exit;
      rmSync(dir, { recursive: true, force: true });
      throw error;
    }
  }

  /** An instant query through `/api/v1/query`; throws with Prometheus's own error on anything but success. */
  async query(promql: string): Promise<{ readonly request: string; readonly samples: InstantSample[] }> {
    const request = `${this.url}/api/v1/query?query=${encodeURIComponent(promql)}`;
    const response = await fetch(request, { signal: AbortSignal.timeout(10_000) });
    const body = (await response.json()) as {
      status: string;
      error?: string;
      data?: { resultType: string; result: { metric: Record<string, string>; value: [number, string] }[] };
    };
    if (body.status !== 'success' || body.data === undefined) {
      throw new Error(`GET ${request}: ${response.status} ${body.error ?? body.status}`);
    }
    if (body.data.resultType !== 'vector')
      throw new Error(`GET ${request}: a ${body.data.resultType}, not a vector`);
    return {
      request: `GET /api/v1/query?query=${promql}`,
      samples: body.data.result.map((r) => ({ metric: r.metric, value: Number(r.value[1]) })),
    };
  }

  /** Every scrape target's health and last scrape (ms since the epoch), from `/api/v1/targets`. */
  async targets(): Promise<ScrapeState[]> {
    const response = await fetch(`${this.url}/api/v1/targets?state=active`, {
      signal: AbortSignal.timeout(10_000),
    });
    const body = (await response.json()) as {
      data: { activeTargets: { scrapeUrl: string; health: string; lastScrape: string; lastError: string }[] };
    };
    return body.data.activeTargets.map((t) => ({
      scrapeUrl: t.scrapeUrl,
      health: t.health,
      lastScrape: Date.parse(t.lastScrape),
      lastError: t.lastError,
    }));
  }

  /**
   * Resolves once every target has been scraped successfully after `since` (ms since the epoch): the samples
   * Prometheus holds then reflect the state at `since` or later. Polls its targets API within `timeoutMs`.
   */
  async scrapedAfter(since: number, timeoutMs = 30_000): Promise<ScrapeState[]> {
    const deadline = Date.now() + timeoutMs;
    let states: ScrapeState[];
    for (;;) {
      states = await this.targets();
      if (states.length > 0 && states.every((s) => s.health === 'up' && s.lastScrape > since)) return states;
      if (this.exited) throw new Error('prometheus exited while the suite waited for a scrape');
      if (Date.now() > deadline) {
        throw new Error(
          `prometheus did not scrape every target within ${timeoutMs} ms: ` +
            states.map((s) => `${s.scrapeUrl} ${s.health} ${s.lastError}`).join('; '),
        );
      }
      // The targets API has no way to wait for the next scrape: ask again a short while later.
      await new Promise((resolve) => setTimeout(resolve, 200));
    }
  }

  /** Stops the process (SIGTERM, then SIGKILL after 10 s) and removes its directory. Safe to call twice. */
  async stop(): Promise<void> {
    if (!this.exited) {
      this.child.kill('SIGTERM');
      const killer = setTimeout(() => this.child.kill('SIGKILL'), 10_000);
      await this.exit;
      clearTimeout(killer);
    }
    rmSync(this.dir, { recursive: true, force: true });
  }

  /** Whether the process is still running (for the suite's tests). */
  get running(): boolean {
    return !this.exited;
  }

  get pid(): number | undefined {
    return this.child.pid;
  }
}
