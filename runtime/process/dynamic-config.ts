import { readFile } from 'node:fs/promises';
import { dynamicConfigPath, parseDynamicConfig, type DynamicConfig } from '../../conf/dynamic.ts';
import type { ResolvedConfig } from '../../conf/index.ts';
import { formatLocation } from '../../conf/problems.ts';
import { hasDynamicTag } from '../../core/release/config-changes.ts';
import type { Logger } from '../log.ts';

/** What a process takes from the store: `resolve` reads its settings out of it, `apply` hands them to its machine. */
export interface DynamicUse<Settings> {
  readonly resolve: (config: DynamicConfig) => Settings;
  readonly apply: (settings: Settings) => Promise<unknown>;
}

/**
 * A running server's dynamic configuration (FS store): `svc.dynamicConfig.store.fs.path` is read at start and
 * every `svc.dynamicConfig.refresh.interval`; the settings resolved from it (the master's quota limits per system,
 * tenant and user; a worker's congestion watermarks) go to the machine as data (`apply`), so that a changed value
 * takes effect without a restart, and only when it changed. A file that does not read or parse keeps the last good
 * values and is reported in one log line naming the file and the line, once per distinct content (not at every
 * refresh).
 */
export class DynamicConfigRefresher<Settings> {
  private timer: NodeJS.Timeout | undefined;
  private lastApplied: string | undefined;
  private lastProblem: string | undefined;
  private reading: Promise<void> | undefined;

  constructor(
    private readonly conf: ResolvedConfig,
    private readonly path: string,
    private readonly logger: Logger,
    private readonly use: DynamicUse<Settings>,
  ) {}

  /** The refresher the configuration asks for, or undefined when dynamic configuration is off (or has no file). */
  static of<Settings>(
    conf: ResolvedConfig,
    env: Readonly<Record<string, string | undefined>>,
    logger: Logger,
    use: DynamicUse<Settings>,
  ): DynamicConfigRefresher<Settings> | undefined {
    if (!hasDynamicTag(conf.release)) return undefined;
    if (conf.optional('svc.dynamicConfig.store.backend', 'getString') === undefined) return undefined;
    const path = dynamicConfigPath(conf, env);
    if (path === undefined) {
      logger.warn(
        { event: 'dynamicConfig.noFile' },
        'dynamic configuration is on (svc.dynamicConfig.store.backend) but has no file: set ' +
          'svc.dynamicConfig.store.fs.path (or SVC_CONF_DIR, where dynamicConfig.yaml is looked for)',
      );
      return undefined;
    }
    return new DynamicConfigRefresher(conf, path, logger, use);
  }

  /** Reads the file now, then every refresh interval. */
  async start(): Promise<void> {
    await this.refresh();
    const intervalMs = this.conf.getDurationMs('svc.dynamicConfig.refresh.interval');
    this.timer = setInterval(() => void this.refresh(), intervalMs);
    this.timer.unref();
  }

  close(): void {
    if (this.timer !== undefined) clearInterval(this.timer);
    this.timer = undefined;
  }

  /** One reload; a reload still running is not overlapped. */
  refresh(): Promise<void> {
    this.reading ??= this.reload().finally(() => {
      this.reading = undefined;
    });
    return this.reading;
  }

  private async reload(): Promise<void> {
    await this.readAndApply();
    this.logger.debug({ event: 'dynamicConfig.refreshed', file: this.path }, `read ${this.path}`);
  }

  private async readAndApply(): Promise<void> {
    let text: string;
    try {
      text = await readFile(this.path, 'utf8');
    } catch (error) {
      this.reject(
        `cannot read ${this.path}: ${(error as Error).message}`,
        `read:${(error as Error).message}`,
      );
      return;
    }
    const { config, problems } = parseDynamicConfig(text, {
      release: this.conf.release,
      fileName: this.path,
    });
    const error = problems.find((problem) => problem.severity === 'error');
    if (error !== undefined) {
      this.reject(`${formatLocation(error.where)}: ${error.message}`, `parse:${text}`);
      return;
    }
    this.take(config, text.trim() === '');
  }

  private take(config: DynamicConfig, empty: boolean): void {
    const settings = this.use.resolve(config);
    const fingerprint = JSON.stringify(settings, (_key, value: unknown) =>
      value instanceof Map ? [...(value as Map<unknown, unknown>)] : value === Infinity ? 'unlimited' : value,
    );
    if (fingerprint === this.lastApplied) {
      this.lastProblem = undefined;
      return;
    }
    if (empty && this.lastApplied !== undefined) {
      // An editor or `cat >` truncates before it writes: a read in between sees nothing. Taking that for "no values"
      // would lift every quota until the next read, so an empty file keeps the last good values; `[]` clears them.
      this.reject(
        `${this.path} is empty (a rewrite in place caught midway?); write \`[]\` to clear every value, ` +
          'and replace the file atomically (write a temporary file, then rename it over this one)',
        'empty',
      );
      return;
    }
    this.lastProblem = undefined;
    this.lastApplied = fingerprint;
    this.logger.info(
      {
        event: 'dynamicConfig.loaded',
        file: this.path,
        tenants: config.tenants.size,
        users: [...config.tenants.values()].reduce((sum, tenant) => sum + tenant.users.size, 0),
      },
      `dynamic configuration loaded from ${this.path}`,
    );
    void this.use.apply(settings).catch((error: unknown) => {
      this.logger.warn(
        { event: 'dynamicConfig.notApplied', file: this.path, reason: String(error) },
        `dynamic configuration from ${this.path} could not be applied: ${String(error)}`,
      );
    });
  }

  /** The file is bad: the last good values stay, and the problem is logged once for this content. */
  private reject(reason: string, fingerprint: string): void {
    if (fingerprint === this.lastProblem) return;
    this.lastProblem = fingerprint;
    this.logger.warn(
      { event: 'dynamicConfig.rejected', file: this.path, reason },
      `dynamic configuration not reloaded, keeping the last good values: ${reason}`,
    );
  }
}
