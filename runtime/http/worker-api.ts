import type { ResolvedConfig } from '../../conf/index.ts';
import { parseExitType } from '../../core/lifecycle/index.ts';
import type { AdminCommand } from '../../core/machines/effects.ts';
import type { WorkerMachineState } from '../../core/machines/worker/index.ts';
import type { AdminAnswer } from '../driver/node-driver.ts';
import { commonLegacy, commonRoutes } from './common-api.ts';
import {
  booleanText,
  handleText,
  listText,
  partitionsText,
  workerInfoText,
  workerTimesText,
} from './legacy-text.ts';
import { parsedParam, runAdmin, type MachinePort } from './machine-port.ts';
import {
  exitCommand,
  unavailablePeersResponse,
  workerApplicationsResponse,
  workerDiskUse,
  workerInfoResponse,
  workerPartitionsResponse,
  workerShufflesResponse,
} from './projections/worker.ts';
import type { ManagementApi } from './server.ts';
import { EventLoopMonitor } from './thread-dump.ts';

export interface WorkerApiOptions {
  readonly driver: MachinePort<WorkerMachineState>;
  readonly conf: ResolvedConfig;
  readonly env?: Readonly<Record<string, string | undefined>>;
}

/** The worker's management interface (contract 4.2 and its legacy paths) over its running machine. */
export function workerApi(options: WorkerApiOptions): ManagementApi & { close(): void } {
  const { driver, conf } = options;
  const monitor = new EventLoopMonitor();
  const common = { role: 'worker' as const, conf, env: options.env ?? process.env, monitor };
  // The worker answers an exit before carrying it out (core/machines/worker/leaving.ts), even an immediate one.
  const exit = (command: AdminCommand): Promise<AdminAnswer> => runAdmin(driver, 'worker', command);

  return {
    role: 'worker',
    release: conf.release,
    close: () => monitor.close(),
    routes: [
      ...commonRoutes(common),
      { method: 'GET', path: '/api/v1/applications', handle: () => workerApplicationsResponse(driver.state) },
      { method: 'GET', path: '/api/v1/shuffles', handle: () => workerShufflesResponse(driver.state) },
      {
        method: 'GET',
        path: '/api/v1/shuffles/partitions',
        handle: () => workerPartitionsResponse(driver.state),
      },
      { method: 'GET', path: '/api/v1/workers', handle: () => workerInfoResponse(driver.state) },
      {
        method: 'GET',
        path: '/api/v1/workers/unavailable_peers',
        handle: () => unavailablePeersResponse(driver.state),
      },
      {
        method: 'POST',
        path: '/api/v1/workers/exit',
        handle: ({ body }) => exit(exitCommand(body as { type?: string } | undefined)),
      },
    ],
    legacy: {
      ...commonLegacy(common),
      '/applications': () => listText('Applications', workerApplicationsResponse(driver.state).applications),
      '/shuffles': () => listText('Shuffles', workerShufflesResponse(driver.state).shuffleIds),
      '/workerInfo': () => workerInfoText('Worker Info', workerInfoResponse(driver.state)),
      '/listPartitionLocationInfo': () =>
        partitionsText('Partition Location Info', workerPartitionsResponse(driver.state)),
      '/isRegistered': () => booleanText('Is Registered', workerInfoResponse(driver.state).isRegistered),
      '/isDecommissioning': () =>
        booleanText('Is Decommissioning', workerInfoResponse(driver.state).isDecommissioning),
      '/isShutdown': () => booleanText('Is Shutdown', workerInfoResponse(driver.state).isShutdown),
      '/unavailablePeers': () =>
        workerTimesText('Unavailable Peers', unavailablePeersResponse(driver.state).peers),
      '/exit': async (params) => {
        const type = parsedParam('type', params.type ?? '', parseExitType);
        return handleText('Worker Exit', await exit({ type: 'exit', exitType: type }));
      },
      '/listTopDiskUsedApps': () =>
        listText(
          'Top Disk Used Applications',
          workerDiskUse(driver.state).map((app) => `${app.appId.padEnd(40)}${app.bytes}`),
        ),
    },
  };
}
