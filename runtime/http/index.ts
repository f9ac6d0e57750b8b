/**
 * The management interface (HTTP, /api/v1 and the legacy paths) of a master or worker process. The processes
 * (runtime/process/) start it with startManagement once their driver exists and close it when they stop.
 */
import type { ResolvedConfig } from '../../conf/index.ts';
import type { HttpRole } from '../../core/release/legacy-endpoints.ts';
import type { Logger } from '../log.ts';
import { startManagementServer, type ManagementApi, type ManagementServer } from './server.ts';

export { masterApi, type MasterApiOptions } from './master-api.ts';
export { workerApi, type WorkerApiOptions } from './worker-api.ts';
export type { ManagementApi, ManagementServer } from './server.ts';

/** The management interface could not listen where the configuration says (a port in use, a wrong host). */
export class ManagementListenError extends Error {}

/**
 * Serves `api` on `svc.<role>.http.host:svc.<role>.http.port` (port 0: a free port; the returned address has the
 * bound one). Throws ManagementListenError naming the keys when it cannot listen.
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
  try {
    return await startManagementServer({ api, host, port, logger });
  } catch (error) {
    api.close?.();
    throw new ManagementListenError(
      `${hostKey}/${portKey}: the management interface cannot listen on ${host}:${port}: ` +
        (error instanceof Error ? error.message : String(error)),
    );
  }
}
