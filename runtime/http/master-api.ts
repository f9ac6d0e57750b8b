import type { ResolvedConfig } from '../../conf/index.ts';
import { WORKER_EVENT_TYPES } from '../../core/domain/index.ts';
import { parseWorkerEventType } from '../../core/lifecycle/index.ts';
import type { MasterState } from '../../core/machines/master/index.ts';
import { monotonicNow } from '../driver/node-driver.ts';
import { commonLegacy, commonRoutes } from './common-api.ts';
import { HttpError } from './errors.ts';
import {
  applicationTimesText,
  handleText,
  listText,
  masterGroupText,
  workerEventsText,
  workerIdsText,
  workersText,
  workerTimesText,
} from './legacy-text.ts';
import { runAdmin, parsedParam, workerKeysParam, type MachinePort } from './machine-port.ts';
import {
  applicationsResponse,
  excludeCommand,
  hostnamesResponse,
  mastersResponse,
  shufflesResponse,
  workerEventCommand,
  workerEventsResponse,
  workersResponse,
  type MasterSelf,
  type WorkerIdBody,
} from './projections/master.ts';
import type { HandleResponse } from './projections/types.ts';
import type { ManagementApi } from './server.ts';
import { EventLoopMonitor } from './thread-dump.ts';

export interface MasterApiOptions {
  readonly driver: MachinePort<MasterState>;
  readonly conf: ResolvedConfig;
  readonly self: MasterSelf;
  /** The driver's clock (default: the runtime's), for the seconds since each worker's heartbeat. */
  readonly now?: () => number;
  readonly env?: Readonly<Record<string, string | undefined>>;
}

/** The master's management interface (contract 4.1 and its legacy paths) over its running machine. */
export function masterApi(options: MasterApiOptions): ManagementApi & { close(): void } {
  const { driver, conf, self } = options;
  const now = options.now ?? monotonicNow;
  const monitor = new EventLoopMonitor();
  const common = { role: 'master' as const, conf, env: options.env ?? process.env, monitor };
  const admin = async (command: Parameters<typeof runAdmin>[2]): Promise<HandleResponse> =>
    runAdmin(driver, 'master', command);

  return {
    role: 'master',
    release: conf.release,
    close: () => monitor.close(),
    routes: [
      ...commonRoutes(common),
      { method: 'GET', path: '/api/v1/applications', handle: () => applicationsResponse(driver.state) },
      {
        method: 'GET',
        path: '/api/v1/applications/hostnames',
        handle: () => hostnamesResponse(driver.state),
      },
      { method: 'GET', path: '/api/v1/shuffles', handle: () => shufflesResponse(driver.state) },
      { method: 'GET', path: '/api/v1/masters', handle: () => mastersResponse(self) },
      { method: 'GET', path: '/api/v1/workers', handle: () => workersResponse(driver.state, now()) },
      {
        method: 'POST',
        path: '/api/v1/workers/exclude',
        handle: ({ body }) =>
          admin(excludeCommand(body as { add?: readonly WorkerIdBody[]; remove?: readonly WorkerIdBody[] })),
      },
      {
        method: 'GET',
        path: '/api/v1/workers/events',
        handle: () => workerEventsResponse(driver.state, now()),
      },
      {
        method: 'POST',
        path: '/api/v1/workers/events',
        handle: ({ body }) =>
          admin(workerEventCommand(body as { eventType: string; workers: readonly WorkerIdBody[] })),
      },
    ],
    legacy: {
      ...commonLegacy(common),
      '/applications': () =>
        applicationTimesText('Applications', applicationsResponse(driver.state).applications),
      '/hostnames': () => listText('Hostnames', hostnamesResponse(driver.state).hostnames),
      '/shuffles': () => listText('Shuffles', shufflesResponse(driver.state).shuffleIds),
      '/masterGroupInfo': () => masterGroupText('Master Group Info', mastersResponse(self)),
      '/workerInfo': () => workersText('Workers', workersResponse(driver.state, now()).workers),
      '/lostWorkers': () =>
        workerTimesText('Lost Workers in Master', workersResponse(driver.state, now()).lostWorkers),
      '/blacklistedWorkers': () =>
        workerIdsText('Excluded Workers in Master', workersResponse(driver.state, now()).excludedWorkers),
      '/shutdownWorkers': () =>
        workerIdsText('Shutdown Workers in Master', workersResponse(driver.state, now()).shutdownWorkers),
      '/decommissionWorkers': () =>
        workerIdsText(
          'Decommission Workers in Master',
          workersResponse(driver.state, now()).decommissioningWorkers,
        ),
      '/workerEventInfo': () => workerEventsText('Worker Events', workerEventsResponse(driver.state, now())),
      '/exclude': async (params) => {
        const add = workerKeysParam('add', params.add);
        const remove = workerKeysParam('remove', params.remove);
        if (add.length + remove.length === 0) {
          throw new HttpError(
            400,
            'add or remove is required: comma-separated worker ids host:rpc:push:fetch:replicate',
          );
        }
        return handleText('Exclude Workers', await admin({ type: 'excludeWorkers', add, remove }));
      },
      '/sendWorkerEvent': async (params) => {
        if (params.type === undefined || params.type.trim() === '') {
          throw new HttpError(400, `type is required: one of ${WORKER_EVENT_TYPES.join(', ')}`);
        }
        const eventType = parsedParam('type', params.type, parseWorkerEventType);
        const workers = workerKeysParam('workers', params.workers);
        if (workers.length === 0) {
          throw new HttpError(
            400,
            'workers is required: comma-separated worker ids host:rpc:push:fetch:replicate',
          );
        }
        return handleText('Send Worker Event', await admin({ type: 'workerEvent', eventType, workers }));
      },
      '/listTopDiskUsedApps': () =>
        listText('Top Disk Used Applications', [
          '(the master keeps no disk use per application; ask each worker)',
        ]),
    },
  };
}
