// From the modules, not conf/index.ts: the barrel's YAML parser (dynamic configuration) is no client's dependency.
import { unprefixedConf } from '../../conf/engine-prefix.ts';
import { masterEndpoints, type MasterEndpointKeys } from '../../conf/master-url.ts';
import { resolveConfig, type ResolvedConfig } from '../../conf/resolve.ts';
import { parseFallbackPolicy, type FallbackPolicy } from '../../core/client/fallback.ts';
import { CURRENT_RELEASE, parseRelease, type Release } from '../../core/release/version.ts';
import type { Address } from '../transport/addresses.ts';
import type { Logger } from '../log.ts';
import { clientLogger, type ClientLogger } from './client-log.ts';
import { SvcArgumentError } from './errors.ts';

/** The application's secret (svc.auth.enabled), as a client's configuration carries it. */
const CLIENT_SECRET_KEY = 'svc.client.auth.secret';

/** Settings every client piece takes. */
export interface ClientOptions {
  /** The client release to behave as (0.2.0 to 0.6.0); default the current one. */
  readonly release?: string;
  /** Configuration keys, as an application sets them (the names its release knows; see docs/configuration.md). */
  readonly conf?: Readonly<Record<string, string>>;
  /**
   * The configuration prefix of the engine that hands its configuration over whole (a batch engine's, e.g.
   * `spark`): keys `<prefix>.svc.*` in `conf` are read as `svc.*`, and the engine's other `<prefix>.*` keys are
   * left to it. Absent: every key of `conf` is svc's.
   */
  readonly enginePrefix?: string;
  /**
   * Level of the library's own log lines; default `warn` (warnings and errors only). They go to `logger`, else to
   * stderr as JSON lines: never to the application's stdout.
   */
  readonly logLevel?: 'fatal' | 'error' | 'warn' | 'info' | 'debug' | 'silent';
  /** The application's logger (pino, or any object with pino-style `warn` and `error`; see ClientLogger). */
  readonly logger?: ClientLogger;
  /**
   * The application's secret when authentication is on (svc.auth.enabled; it overrides svc.client.auth.secret).
   * startApplication draws a random one when neither is set; an executor needs the application's
   * (`Application.secret`). Never logged.
   */
  readonly secret?: string;
}

/**
 * A client process's settings, resolved once from its ClientOptions: what every piece of the library (the
 * application, the executor's shuffle client, its map writers and partition readers, their network) takes.
 */
export interface ClientSettings {
  /** The client release it behaves as. */
  readonly release: Release;
  /** The configuration as that release reads it (conf/machine-configs.ts turns it into the machines' configs). */
  readonly conf: ResolvedConfig;
  /** The library's logger for this process (its own lines never go to the application's stdout). */
  readonly logger: Logger;
  /** svc.auth.enabled. */
  readonly authEnabled: boolean;
  /** The application's secret as given (`secret`, else svc.client.auth.secret); undefined when nothing sets it. */
  readonly secret: string | undefined;
  /** svc.rpc.askTimeout: how long a request to the lifecycle manager or the master is awaited. */
  readonly askTimeoutMs: number;
  /** svc.client.spark.shuffle.fallback.policy (ALWAYS when the deprecated forceFallback.enabled is true). */
  readonly fallbackPolicy: FallbackPolicy;
}

/**
 * Resolves a client's options once. `process` names the lifecycle manager or executor in the library's log lines.
 * Throws SvcClientError for a release it does not know or a configuration its release refuses: a key it does not
 * know is reported, not silently ignored, because an application that sets a key expects it to act.
 */
export function resolveClientSettings(
  options: ClientOptions,
  process: { readonly role: 'lifecycle-manager' | 'executor'; readonly node: string },
): ClientSettings {
  const release = clientRelease(options);
  const conf = clientConfig(release, options);
  return {
    release,
    conf,
    logger: clientLogger(
      options.logger,
      options.logLevel,
      process,
      conf.optional('svc.log.summary.interval', 'getDurationMs'),
    ),
    authEnabled: conf.getBoolean('svc.auth.enabled'),
    secret: options.secret ?? configuredSecret(conf),
    askTimeoutMs: conf.getDurationMs('svc.rpc.askTimeout'),
    fallbackPolicy: parseFallbackPolicy(conf.getString('svc.client.spark.shuffle.fallback.policy')) ?? 'AUTO',
  };
}

function clientRelease(options: ClientOptions): Release {
  try {
    return options.release === undefined ? CURRENT_RELEASE : parseRelease(options.release);
  } catch (error) {
    throw new SvcArgumentError(`release '${String(options.release)}': ${(error as Error).message}`);
  }
}

function clientConfig(release: Release, options: ClientOptions): ResolvedConfig {
  const given = engineConf(options);
  const overrides = options.secret === undefined ? given : { ...given, [CLIENT_SECRET_KEY]: options.secret };
  const conf = resolveConfig({ release, role: 'client', overrides });
  if (conf.errors.length > 0) {
    throw new SvcArgumentError(
      `the client configuration is invalid for release ${release}: ${conf.errors.map((e) => e.message).join('; ')}`,
    );
  }
  return conf;
}

/** The options' keys as svc reads them: those handed over under the engine's prefix too. */
function engineConf(options: ClientOptions): Readonly<Record<string, string>> {
  const conf = options.conf ?? {};
  if (options.enginePrefix === undefined) return conf;
  const handed = unprefixedConf(conf, options.enginePrefix);
  if (handed.conflicts.length > 0) {
    throw new SvcArgumentError(
      `set both as svc.* and as ${options.enginePrefix}.svc.*, to different values: ${handed.conflicts.join(', ')}; ` +
        'set each key once',
    );
  }
  return handed.conf;
}

/** `svc.client.auth.secret` when something sets it. */
function configuredSecret(conf: ResolvedConfig): string | undefined {
  if (!conf.has(CLIENT_SECRET_KEY)) return undefined;
  const value = conf.get(CLIENT_SECRET_KEY);
  return value === undefined || value === '' ? undefined : String(value);
}

/**
 * The masters of `text`: `svc://host:port` (the scheme of the client's release), every master of a group,
 * `svc://h1:p1,h2:p2,h3:p3`, or the same without the scheme; absent: the configuration's `svc.master.endpoints`.
 */
export function masterAddresses(
  text: string | undefined,
  conf: MasterEndpointKeys,
  release: Release,
): readonly Address[] {
  const urls = masterEndpoints(conf, text, release);
  if (!urls.ok) throw new SvcArgumentError(urls.message);
  return urls.masters;
}

/** `host:port` of a lifecycle manager, as `Application.lifecycleManager` gives it. */
export function parseHostPort(text: string, what: string): Address {
  const match = /^(.+):(\d+)$/.exec(text.trim());
  const port = Number(match?.[2]);
  if (match === null || !(port > 0 && port < 65536)) {
    throw new SvcArgumentError(`'${text}' is not the address of a ${what}; expected host:port`);
  }
  return { host: match[1]!.replace(/^\[(.*)\]$/, '$1'), port };
}
