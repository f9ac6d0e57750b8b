/**
 * The management interface (HTTP, /api/v1 and the legacy paths) of a master or worker process. The processes
 * (runtime/process/) start it with startManagement once their driver exists and close it when they stop.
 */
import { readFileSync } from 'node:fs';
import { createSecureContext } from 'node:tls';
import type { ResolvedConfig } from '../../conf/index.ts';
import type { HttpRole } from '../../core/release/legacy-endpoints.ts';
import type { Logger } from '../log.ts';
import { httpAuthFromConf, ManagementConfigError } from './auth.ts';
import {
  startManagementServer,
  type ManagementApi,
  type ManagementServer,
  type ManagementTls,
} from './server.ts';

export { masterApi, type MasterApiOptions } from './master-api.ts';
export { workerApi, type WorkerApiOptions } from './worker-api.ts';
export type { ManagementApi, ManagementServer } from './server.ts';
export { hashPassword, hashToken, ManagementConfigError } from './auth.ts';

/** The management interface could not listen where the configuration says (a port in use, a wrong host). */
export class ManagementListenError extends Error {}

/**
 * The certificate and key of HTTPS when `svc.<role>.http.ssl.enabled` (svc.ssl.certFile, keyFile, keyPassword);
 * undefined for plain HTTP. Throws ManagementConfigError naming the keys when they are missing or do not fit.
 */
export function managementTls(role: HttpRole, conf: ResolvedConfig): ManagementTls | undefined {
  const enabledKey = `svc.${role}.http.ssl.enabled`;
  if (!conf.getBoolean(enabledKey)) return undefined;
  const certFile = conf.optional('svc.ssl.certFile', 'getString');
  const keyFile = conf.optional('svc.ssl.keyFile', 'getString');
  if (certFile === undefined || keyFile === undefined) {
    throw new ManagementConfigError(
      `${enabledKey} is on: set svc.ssl.certFile and svc.ssl.keyFile (PEM) for the management interface's HTTPS`,
    );
  }
  const read = (key: string, file: string): Buffer => {
    try {
      return readFileSync(file);
    } catch (error) {
      throw new ManagementConfigError(
        `${key} ${file}: ${(error as NodeJS.ErrnoException).code ?? String(error)}`,
      );
    }
  };
  const passphrase = conf.optional('svc.ssl.keyPassword', 'getString');
  const tls: ManagementTls = {
    cert: read('svc.ssl.certFile', certFile),
    key: read('svc.ssl.keyFile', keyFile),
    ...(passphrase === undefined ? {} : { passphrase }),
  };
  try {
    createSecureContext(tls);
  } catch (error) {
    throw new ManagementConfigError(
      `${enabledKey}: svc.ssl.certFile, svc.ssl.keyFile, svc.ssl.keyPassword: ${(error as Error).message}`,
    );
  }
  return tls;
}

/**
 * Serves `api` on `svc.<role>.http.host:svc.<role>.http.port` (port 0: a free port; the returned address has the
 * bound one), over HTTPS when `svc.<role>.http.ssl.enabled`, with the authentication `svc.<role>.http.auth.*` asks
 * (./auth.ts). Throws ManagementConfigError for a TLS or authentication setting it cannot use, and
 * ManagementListenError naming the keys when it cannot listen.
 */
export async function startManagement(
  role: HttpRole,
  api: ManagementApi,
  conf: ResolvedConfig,
  logger: Logger,
): Promise<ManagementServer> {
  const hostKey = `svc.${role}.http.host`;
  const portKey = `svc.${role}.http.port`;
  const host = conf.getString(hostKey);
  const port = conf.getInt(portKey);
  let https: ManagementTls | undefined;
  let auth: ReturnType<typeof httpAuthFromConf>;
  try {
    https = managementTls(role, conf);
    auth = httpAuthFromConf(role, api.release, conf, logger);
  } catch (error) {
    api.close?.();
    throw error;
  }
  if (https !== undefined || auth !== undefined) {
    logger.info(
      {
        event: 'http.security',
        https: https !== undefined,
        schemes: auth?.settings.schemes ?? [],
        administers: auth?.settings.administers ?? [],
      },
      `management interface: ${https === undefined ? 'HTTP' : 'HTTPS'}, ` +
        (auth === undefined
          ? 'no authentication'
          : `authentication ${auth.settings.schemes.join(', ')}, administrators ` +
            `${auth.settings.administers.join(', ') || 'none'}`),
    );
  }
  try {
    return await startManagementServer({
      api,
      host,
      port,
      logger,
      ...(auth === undefined ? {} : { auth }),
      ...(https === undefined ? {} : { https }),
    });
  } catch (error) {
    api.close?.();
    throw new ManagementListenError(
      `${hostKey}/${portKey}: the management interface cannot listen on ${host}:${port}: ` +
        (error instanceof Error ? error.message : String(error)),
    );
  }
}
