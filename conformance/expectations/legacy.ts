// Contract section 4.4 as data: every legacy path, its role, and the rules over time (methods, form parameters,
// request media types, renames, removal). Where the contract states only a change, the state before it is the
// contract's own default: "GET unless stated", parameters in the query string, and "before: text/plain".
import { atLeast } from './releases.ts';
import type { Role } from './endpoints.ts';

export const FORM_MEDIA_TYPE = 'application/x-www-form-urlencoded';
export const TEXT_MEDIA_TYPE = 'text/plain';

/** The plain GET paths of 4.4 (the list under the table), with the role that serves each (tables 4.1 and 4.2). */
export const LEGACY_GET_PATHS: readonly { path: string; roles: readonly Role[] }[] = [
  { path: '/conf', roles: ['master', 'worker'] },
  { path: '/listDynamicConfigs', roles: ['master', 'worker'] },
  { path: '/threadDump', roles: ['master', 'worker'] },
  { path: '/applications', roles: ['master', 'worker'] },
  { path: '/hostnames', roles: ['master'] },
  { path: '/masterGroupInfo', roles: ['master'] },
  { path: '/workerInfo', roles: ['master', 'worker'] },
  { path: '/lostWorkers', roles: ['master'] },
  { path: '/shutdownWorkers', roles: ['master'] },
  { path: '/decommissionWorkers', roles: ['master'] },
  { path: '/workerEventInfo', roles: ['master'] },
  { path: '/listPartitionLocationInfo', roles: ['worker'] },
  { path: '/isRegistered', roles: ['worker'] },
  { path: '/isDecommissioning', roles: ['worker'] },
  { path: '/isShutdown', roles: ['worker'] },
  { path: '/unavailablePeers', roles: ['worker'] },
];

/** A path renamed at a release (4.4 table): the old name is served before, the new one from then on. */
export interface Rename {
  readonly roles: readonly Role[];
  readonly before: string;
  readonly after: string;
  readonly release: string;
}

export const LEGACY_RENAMES: readonly Rename[] = [
  { roles: ['master', 'worker'], before: '/shuffles', after: '/shuffle', release: '0.5.0' },
  { roles: ['master'], before: '/blacklistedWorkers', after: '/excludedWorkers', release: '0.3.0' },
];

/** 4.3: removed on master and worker since 0.6.0; the replacement is a metrics query. */
export const REMOVED_ENDPOINT = {
  path: '/listTopDiskUsedApps',
  roles: ['master', 'worker'] as Role[],
  release: '0.6.0',
};

/** The three commands of 4.4, with the release each became POST, took form parameters and changed media type. */
export interface LegacyCommand {
  readonly path: string;
  readonly role: Role;
  readonly params: readonly string[];
  /** From this release: method POST, parameters in the form body. */
  readonly postSince: string;
  /** From this release the request media type is `application/x-www-form-urlencoded` (before: `text/plain`). */
  readonly formMediaSince: string;
  /**
   * Parameters that make the command harmless: a worker no deployment has, an exit type no implementation has.
   * `echo` is the value a node that read the parameters names in its answer.
   */
  readonly probe: Readonly<Record<string, string>>;
  readonly echo: string;
}

export const LEGACY_COMMANDS: readonly LegacyCommand[] = [
  {
    path: '/exclude',
    role: 'master',
    params: ['add', 'remove'],
    postSince: '0.5.0',
    formMediaSince: '0.5.1',
    probe: { add: '127.0.0.1:1:1:1:1' },
    echo: '127.0.0.1:1:1:1:1',
  },
  {
    path: '/sendWorkerEvent',
    role: 'master',
    params: ['type', 'workers'],
    postSince: '0.5.1',
    formMediaSince: '0.5.1',
    probe: { type: 'NONE', workers: '127.0.0.1:1:1:1:1' },
    echo: '127.0.0.1:1:1:1:1',
  },
  {
    path: '/exit',
    role: 'worker',
    params: ['type'],
    postSince: '0.5.0',
    formMediaSince: '0.5.1',
    probe: { type: 'NOT_AN_EXIT_TYPE' },
    echo: 'NOT_AN_EXIT_TYPE',
  },
];

/** How a legacy command is called at `release`. */
export function commandAt(
  command: LegacyCommand,
  release: string,
): { method: 'GET' | 'POST'; form: boolean; mediaType: string } {
  const post = atLeast(release, command.postSince);
  return {
    method: post ? 'POST' : 'GET',
    form: post,
    mediaType: atLeast(release, command.formMediaSince) ? FORM_MEDIA_TYPE : TEXT_MEDIA_TYPE,
  };
}

/** The name a renamed path has at `release`, and the one it does not have. */
export function renameAt(rename: Rename, release: string): { served: string; notServed: string } {
  return atLeast(release, rename.release)
    ? { served: rename.after, notServed: rename.before }
    : { served: rename.before, notServed: rename.after };
}
