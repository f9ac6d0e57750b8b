import type { ResolvedConfig } from '../../conf/index.ts';
import { WORKER_EVENT_TYPES } from '../../core/domain/index.ts';
import { parseWorkerEventType } from '../../core/lifecycle/index.ts';
import type { MasterState } from '../../core/machines/master/index.ts';
import { monotonicNow, type AdminAnswer } from '../driver/node-driver.ts';
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
import type { AdminCommand } from '../../core/machines/effects.ts';
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
import type { HandleResponse, WorkersResponse } from './projections/types.ts';
import type { FollowerServing, ManagementApi, SetHeader } from './server.ts';
import { EventLoopMonitor } from './thread-dump.ts';

/**
 * The state a read renders: the running machine's (a leader, a single master) or the group's as stored in etcd (a
 * follower, runtime/process/not-leader-http.ts).
 */
export interface MasterRead {
  readonly state: MasterState;
  /**
   * The driver's clock, for the seconds since each worker's heartbeat; undefined for a state read from the store,
   * whose heartbeat facts (ages, resource consumption) only the leader knows: they are left out.
   */
  readonly now: number | undefined;
  /** Headers the answer carries (a follower's X-Svc-Served-By with the etcd revision read). */
  readonly headers?: Readonly<Record<string, string>>;
}

/** What the master's routes read and command: one implementation of every route, whoever serves it. */
export interface MasterAccess {
  /** The state to render now; may throw an HttpError (a follower that cannot read etcd: 503). */
  read(): MasterRead | Promise<MasterRead>;
  admin(command: AdminCommand): Promise<AdminAnswer>;
  /** A follower of a group: how it says so and refuses writes (server.ts); absent on the leader. */
  readonly follower?: FollowerServing;
}

interface CommonMasterApiOptions {
  readonly conf: ResolvedConfig;
  readonly self: MasterSelf;
  readonly env?: Readonly<Record<string, string | undefined>>;
}

export type MasterApiOptions = CommonMasterApiOptions &
  (
    | {
        /** The running master machine (a leader, a single master). */
        readonly driver: MachinePort<MasterState>;
        /** The driver's clock (default: the runtime's), for the seconds since each worker's heartbeat. */
        readonly now?: () => number;
      }
    | {
        /** Another source of the state and of commands (a follower of a group). */
        readonly access: MasterAccess;
      }
  );

/** The running machine as the routes' access: its live state at the driver's clock, its commands. */
export function machineAccess(
  driver: MachinePort<MasterState>,
  now: () => number = monotonicNow,
): MasterAccess {
  return {
    read: () => ({ state: driver.state, now: now() }),
    admin: (command) => runAdmin(driver, 'master', command),
  };
}

/**
 * The master's management interface (contract 4.1 and its legacy paths) over its running machine, or over another
 * access to its state (a follower of a group reads the state stored in etcd): the same handlers either way.
 */
export function masterApi(options: MasterApiOptions): ManagementApi & { close(): void } {
  const { conf, self } = options;
  const access = 'access' in options ? options.access : machineAccess(options.driver, options.now);
  const monitor = new EventLoopMonitor();
  const common = { role: 'master' as const, conf, env: options.env ?? process.env, monitor };
  const admin = async (command: AdminCommand): Promise<HandleResponse> => access.admin(command);
  /** The state for one answer, its headers set on that answer. */
  const read = async (setHeader: SetHeader): Promise<MasterRead> => {
    const view = await access.read();
    for (const [name, value] of Object.entries(view.headers ?? {})) setHeader(name, value);
    return view;
  };
  const workers = async (setHeader: SetHeader): Promise<WorkersResponse> => {
    const { state, now } = await read(setHeader);
    return workersResponse(state, now);
  };

  return {
    role: 'master',
    release: conf.release,
    close: () => monitor.close(),
    ...(access.follower === undefined ? {} : { follower: access.follower }),
    routes: [
      ...commonRoutes(common),
      {
        method: 'GET',
        path: '/api/v1/applications',
        handle: async ({ setHeader }) => applicationsResponse((await read(setHeader)).state),
      },
      {
        method: 'GET',
        path: '/api/v1/applications/hostnames',
        handle: async ({ setHeader }) => hostnamesResponse((await read(setHeader)).state),
      },
      {
        method: 'GET',
        path: '/api/v1/shuffles',
        handle: async ({ setHeader }) => shufflesResponse((await read(setHeader)).state),
      },
      { method: 'GET', path: '/api/v1/masters', handle: () => mastersResponse(self) },
      {
        method: 'GET',
        path: '/api/v1/workers',
        handle: async ({ setHeader }) => {
          const { state, now } = await read(setHeader);
          return workersResponse(state, now);
        },
      },
      {
        method: 'POST',
        path: '/api/v1/workers/exclude',
        handle: ({ body }) =>
          admin(excludeCommand(body as { add?: readonly WorkerIdBody[]; remove?: readonly WorkerIdBody[] })),
      },
      {
        method: 'GET',
        path: '/api/v1/workers/events',
        handle: async ({ setHeader }) => {
          const { state, now } = await read(setHeader);
          return workerEventsResponse(state, now);
        },
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
      '/applications': async (_params, setHeader) =>
        applicationTimesText(
          'Applications',
          applicationsResponse((await read(setHeader)).state).applications,
        ),
      '/hostnames': async (_params, setHeader) =>
        listText('Hostnames', hostnamesResponse((await read(setHeader)).state).hostnames),
      '/shuffles': async (_params, setHeader) =>
        listText('Shuffles', shufflesResponse((await read(setHeader)).state).shuffleIds),
      '/masterGroupInfo': () => masterGroupText('Master Group Info', mastersResponse(self)),
      '/workerInfo': async (_params, setHeader) => workersText('Workers', (await workers(setHeader)).workers),
      '/lostWorkers': async (_params, setHeader) =>
        workerTimesText('Lost Workers in Master', (await workers(setHeader)).lostWorkers),
      '/blacklistedWorkers': async (_params, setHeader) =>
        workerIdsText('Excluded Workers in Master', (await workers(setHeader)).excludedWorkers),
      '/shutdownWorkers': async (_params, setHeader) =>
        workerIdsText('Shutdown Workers in Master', (await workers(setHeader)).shutdownWorkers),
      '/decommissionWorkers': async (_params, setHeader) =>
        workerIdsText('Decommission Workers in Master', (await workers(setHeader)).decommissioningWorkers),
      '/workerEventInfo': async (_params, setHeader) => {
        const { state, now } = await read(setHeader);
        return workerEventsText('Worker Events', workerEventsResponse(state, now));
      },
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
