import type { MetricEffect } from '../metrics/registry.ts';
import { readFileSync } from 'node:fs';
import type { ResolvedConfig } from '../../conf/index.ts';
import type { Principal } from '../../core/machines/effects.ts';
import type { Logger } from '../log.ts';
import type { MasterState } from '../../core/machines/master/index.ts';
import type { NodeDriver } from '../driver/node-driver.ts';
import type { ExpectedSecret, TransportAuth } from '../transport/authentication.ts';
import type { NodeNetwork } from '../transport/node-network.ts';
import { ApplicationSecrets } from './application-secrets.ts';
import type { Hello } from '../wire/index.ts';
import { ServerConfigError } from './server-config.ts';

const SERVER: Principal = { kind: 'server' };

/**
 * The cluster's internal secret of a master or worker when application authentication is on (svc.auth.enabled):
 * `svc.auth.internal.secret`, or the first line of `svc.auth.internal.secretFile`. Undefined when authentication is
 * off; a server with it on and neither key set (or an unreadable or empty file) does not start. Warns when TLS is
 * off, since applications then register their secrets in clear.
 */
export function internalSecret(
  conf: ResolvedConfig,
  role: 'master' | 'worker',
  logger: Logger,
): string | undefined {
  if (!conf.getBoolean('svc.auth.enabled')) return undefined;
  let secret = conf.optional('svc.auth.internal.secret', 'getString');
  const file = conf.optional('svc.auth.internal.secretFile', 'getString');
  if (secret === undefined && file !== undefined) {
    let text: string;
    try {
      text = readFileSync(file, 'utf8');
    } catch (error) {
      throw new ServerConfigError(
        `svc.auth.internal.secretFile ${file}: ${(error as NodeJS.ErrnoException).code ?? String(error)}`,
      );
    }
    secret = text.split(/\r?\n/, 1)[0]!.trim();
    if (secret === '') {
      throw new ServerConfigError(
        `svc.auth.internal.secretFile ${file}: its first line is empty; it must hold the cluster's internal secret`,
      );
    }
  }
  if (secret === undefined) {
    throw new ServerConfigError(
      `svc.auth.enabled is on: a ${role} needs the cluster's internal secret, the same on every master and ` +
        'worker: set svc.auth.internal.secretFile (a file readable by the server only) or svc.auth.internal.secret',
    );
  }
  if (!conf.getBoolean('svc.ssl.enabled')) {
    logger.warn(
      { event: 'auth.withoutTls', role },
      'svc.auth.enabled is on and svc.ssl.enabled is off: applications register their secrets with the master ' +
        'in clear, and a peer that can read the network can take an application over; turn svc.ssl.enabled on',
    );
  }
  return secret;
}

/** What a server checks a hello of a master or worker against: the internal secret; the peer is then a server. */
export function serverPeerSecret(hello: Hello, secret: string): ExpectedSecret | undefined {
  if (hello.role === 'client') return undefined;
  return { kind: 'secret', secret, principal: SERVER };
}

/**
 * A peer that failed authentication in the handshake, counted with the core's own refusals (the transport's
 * `authenticationFailed`).
 */
export const AUTHENTICATION_FAILED: MetricEffect = {
  kind: 'metric',
  name: 'AuthenticationFailCount',
  op: 'inc',
  value: 1,
};

/**
 * With authentication on, whose secrets the master's connections must prove: a server's (the internal secret), or
 * an application's, the one the master's own state keeps (core) once the driver runs.
 */
export class MasterAuthentication {
  readonly transportAuth: TransportAuth | undefined;
  private driver: NodeDriver<MasterState> | undefined;

  constructor(options: { readonly secret: string | undefined }) {
    const { secret } = options;
    this.transportAuth =
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
              const known = this.applicationSecret(appId);
              // An application not registered yet proves its secret once it has registered it (its first request).
              return known === undefined
                ? { kind: 'later', principal }
                : { kind: 'secret', secret: known, principal };
            },
          };
  }

  /** From now, applications' secrets are those `driver`'s machine keeps. */
  readSecretsOf(driver: NodeDriver<MasterState>): void {
    this.driver = driver;
  }

  private applicationSecret(appId: string): string | undefined {
    return this.driver?.state.durable.applications.apps.get(appId)?.secret;
  }
}

/**
 * With authentication on, whose secrets the worker's connections must prove: a server's (the internal secret), or an
 * application's, asked from the master once the worker knows its id (`serveAs`); until then an application is
 * refused, as a worker still starting.
 */
export class WorkerAuthentication {
  readonly transportAuth: TransportAuth | undefined;
  private secrets: ApplicationSecrets | undefined;

  constructor(
    private readonly options: {
      readonly secret: string | undefined;
      /** svc.rpc.askTimeout: how long the master's answer is awaited. */
      readonly askTimeoutMs: number;
      /** svc.worker.auth.secretCache.expiry: how long a learnt secret is trusted. */
      readonly expiryMs: number;
    },
  ) {
    const { secret } = options;
    this.transportAuth =
      secret === undefined
        ? undefined
        : {
            secret,
            principal: { kind: 'server' },
            expectedSecret: (hello, fresh) => {
              const server = serverPeerSecret(hello, secret);
              if (server !== undefined) return server;
              if (this.secrets === undefined)
                return { kind: 'refused', message: 'the worker is still starting' };
              return this.secrets.expected(hello.application ?? '', fresh);
            },
          };
  }

  /** The worker is `nodeId` on `network`: applications' secrets are asked from a pseudo-node of its own there. */
  serveAs(worker: { readonly nodeId: string; readonly network: NodeNetwork }): void {
    if (this.transportAuth === undefined) return;
    const { network } = worker;
    this.secrets = new ApplicationSecrets({
      id: `${worker.nodeId}#application-secrets`,
      send: (envelope) => network.send(envelope),
      askTimeoutMs: this.options.askTimeoutMs,
      expiryMs: this.options.expiryMs,
    });
    network.host.add(this.secrets);
  }
}
