import { existsSync, readFileSync } from 'node:fs';
import { formatProblem, resolveConfig, type ResolvedConfig, type Role } from '../../conf/index.ts';
import { assertWithinHistory } from '../../core/release/timeline.ts';
import { parseRelease, type Release } from '../../core/release/version.ts';
import { localPlatform } from '../platform.ts';
import type { MetricsRoutes } from '../http/server.ts';
import { parseExtraLabels, type ServerMetrics } from '../metrics/index.ts';

/** Where a server's settings come from, lowest precedence first: the properties file, the environment, flags. */
export interface ServerConfigSources {
  readonly confFile?: string;
  /** `key=value` pairs from `--conf`. */
  readonly conf?: readonly string[];
  /** `--release`: resolve as of this release instead of the current one. */
  readonly release?: string;
  /**
   * Accept keys the current release removed: set for a server presenting an older release once that release's own
   * configuration resolved without error (so it still reads them); nothing reads their values any more.
   */
  readonly acceptRemovedKeys?: boolean;
}

/** A configuration a server cannot start with; the message lists every problem, each with where it was set. */
export class ServerConfigError extends Error {}

export function parseConfPairs(pairs: readonly string[]): Record<string, string> {
  const overrides: Record<string, string> = {};
  for (const pair of pairs) {
    const separator = pair.indexOf('=');
    if (separator <= 0) throw new ServerConfigError(`--conf '${pair}' is not key=value`);
    overrides[pair.slice(0, separator).trim()] = pair.slice(separator + 1).trim();
  }
  return overrides;
}

/** Resolves a master's or worker's configuration through conf/, refusing to go on with any error. */
export function loadServerConfig(role: Role, sources: ServerConfigSources): ResolvedConfig {
  let fileText: string | undefined;
  if (sources.confFile !== undefined) {
    if (!existsSync(sources.confFile))
      throw new ServerConfigError(`--conf-file ${sources.confFile}: no such file`);
    fileText = readFileSync(sources.confFile, 'utf8');
  }
  let release: Release | undefined;
  if (sources.release !== undefined) {
    try {
      release = parseRelease(sources.release);
      assertWithinHistory(release);
    } catch (error) {
      throw new ServerConfigError(`--release: ${(error as Error).message}`);
    }
  }
  const conf = resolveConfig({
    role,
    ...(release === undefined ? {} : { release }),
    ...(fileText === undefined ? {} : { fileText, fileName: sources.confFile }),
    env: process.env,
    overrides: parseConfPairs(sources.conf ?? []),
    platform: localPlatform(),
  });
  const errors = conf.errors.filter(
    (problem) => !(problem.code === 'removed-key' && sources.acceptRemovedKeys === true),
  );
  if (errors.length > 0) {
    throw new ServerConfigError(
      `the ${role} configuration has ${errors.length} error(s):\n` +
        errors.map((problem) => `  ${formatProblem(problem)}`).join('\n'),
    );
  }
  return conf;
}

/** The metrics settings of a server (svc.metrics.*); a malformed extra label is a configuration error. */
export function metricsOptions(conf: ResolvedConfig): {
  readonly release: ResolvedConfig['release'];
  readonly extraLabels: Readonly<Record<string, string>>;
  readonly timerWindowSize: number;
  readonly sampleRate: number;
} {
  try {
    return {
      release: conf.release,
      extraLabels: parseExtraLabels(conf.optional('svc.metrics.extraLabels', 'getList') ?? []),
      timerWindowSize: conf.getInt('svc.metrics.timer.slidingWindow.size'),
      sampleRate: conf.getDouble('svc.metrics.sample.rate'),
    };
  } catch (error) {
    throw new ServerConfigError((error as Error).message);
  }
}

/** Where the management interface serves a server's metrics (absent: metrics are off). */
export function metricsRoutes(
  conf: ResolvedConfig,
  metrics: ServerMetrics | undefined,
): { readonly metrics?: MetricsRoutes } {
  if (metrics === undefined) return {};
  return {
    metrics: {
      metrics,
      prometheusPath: conf.getString('svc.metrics.prometheus.path'),
      jsonPath: conf.getString('svc.metrics.json.path'),
    },
  };
}
