import type { AppId, ShuffleId, WorkerId, WorkerKey } from '../../domain/index.ts';
import { workerKey } from '../../domain/index.ts';
import {
  restoreApplications,
  restoreRegistry,
  type ApplicationRecord,
  type ApplicationRegistrySnapshot,
  type WorkerRegistry,
  type WorkerRegistrySnapshot,
} from '../../lifecycle/index.ts';
import { restoreBookings } from './bookings.ts';
import { parseStoredJson } from './stored-json.ts';
import type { MasterDurableState } from './state.ts';

/**
 * The master's durable state as many small keys under one prefix, never one blob, in both stores (the embedded
 * RocksDB/LevelDB store of a single master and etcd for a group): a step writes only the keys it changed, and a
 * cluster of any size fits etcd's transactions.
 *
 *   <prefix>meta                          layout version, estimated partition size, the unsampled bytes written
 *   <prefix>workers/<section>/<worker>    one entry of a worker registry section (registered, lost, stopped, ...)
 *   <prefix>apps/<app>                    an application: heartbeat, secret, hostname, user (not its shuffles)
 *   <prefix>shuffles/<app>/<shuffle>      one registered shuffle of the application
 *   <prefix>bookings/<id>/<part>          the slots one offer booked, up to 1,000 workers a part (./bookings.ts)
 *
 * Path segments are URI-encoded, so an id holding a `/` stays one segment. Entries come back in key order, not in
 * the order they were registered: round-robin placement restarts from the first worker after a restart.
 *
 * Version 2 added the bookings (version 1 rewrote each booked worker's entry instead); a store of version 1 reads
 * as version 2 without bookings, and its `meta` is rewritten at the start (./machine.ts), so that a release that
 * reads only version 1 refuses the store by its version rather than by a key it does not know.
 */
export const LAYOUT_VERSION = 2;
/** The layout versions this release restores. */
const READABLE_VERSIONS: readonly number[] = [1, LAYOUT_VERSION];

/** Where the master machine's keys live: the embedded store as is, a group's etcd under its own prefix instead. */
export const MASTER_STATE_PREFIX = 'master/state/';

export const WORKER_SECTIONS = [
  'workers',
  'lost',
  'stopped',
  'autoExcluded',
  'manuallyExcluded',
  'shutdown',
  'decommissioning',
  'events',
] as const satisfies readonly (keyof WorkerRegistry)[];
export type WorkerSection = (typeof WORKER_SECTIONS)[number];

interface Meta {
  readonly version: number;
  readonly estimatedPartitionSize: number;
  readonly writtenSinceSample: ApplicationRegistrySnapshot['writtenSinceSample'];
}

type AppEntry = Omit<ApplicationRegistrySnapshot['apps'][number], 'shuffles'>;

/** One write of the store: a null value deletes the key. */
export interface KeyWrite {
  readonly key: string;
  readonly value: string | null;
}

/** What a step changed, by entity: the workers, applications and bookings whose keys it rewrites, and whether `meta`. */
export interface Touched {
  readonly workers: Set<WorkerKey>;
  readonly apps: Set<AppId>;
  readonly bookings: Set<number>;
  meta: boolean;
}

export function nothingTouched(): Touched {
  return { workers: new Set(), apps: new Set(), bookings: new Set(), meta: false };
}

export function touchedAnything(touched: Touched): boolean {
  return touched.meta || touched.workers.size > 0 || touched.apps.size > 0 || touched.bookings.size > 0;
}

function idOfEntry(section: WorkerSection, entry: unknown): WorkerId {
  const record = entry as { readonly id?: WorkerId; readonly info?: { readonly id: WorkerId } };
  const id = section === 'lost' || section === 'stopped' ? record.info?.id : record.id;
  if (id === undefined) throw new RangeError(`a '${section}' entry has no worker id`);
  return id;
}

export const metaKey = (prefix: string): string => `${prefix}meta`;
export const workerEntryKey = (prefix: string, section: WorkerSection, key: WorkerKey): string =>
  `${prefix}workers/${section}/${encodeURIComponent(key)}`;
export const appKey = (prefix: string, appId: AppId): string => `${prefix}apps/${encodeURIComponent(appId)}`;
export const shuffleEntryKey = (prefix: string, appId: AppId, shuffleId: ShuffleId): string =>
  `${prefix}shuffles/${encodeURIComponent(appId)}/${shuffleId}`;
export const bookingKey = (prefix: string, id: number, part: number): string =>
  `${prefix}bookings/${id}/${part}`;

/** The value of `meta` this release writes for `durable`. */
export function metaValue(durable: MasterDurableState): string {
  const meta: Meta = {
    version: LAYOUT_VERSION,
    estimatedPartitionSize: durable.estimatedPartitionSize,
    writtenSinceSample: durable.applications.writtenSinceSample,
  };
  return JSON.stringify(meta);
}

function appValue(appId: AppId, record: ApplicationRecord): string {
  const { shuffles: _keyedApart, ...rest } = record;
  const entry: AppEntry = { appId, ...rest };
  return JSON.stringify(entry);
}

const SHUFFLE_VALUE = '{}';

/** The keys and values that hold `durable` under `prefix`: O(state), for a restart's rewrite and for tests. */
export function durableLayout(prefix: string, durable: MasterDurableState): Map<string, string> {
  const layout = new Map<string, string>();
  layout.set(metaKey(prefix), metaValue(durable));
  for (const section of WORKER_SECTIONS) {
    const entries: ReadonlyMap<WorkerKey, unknown> = durable.workers[section];
    for (const [key, entry] of entries)
      layout.set(workerEntryKey(prefix, section, key), JSON.stringify(entry));
  }
  for (const [appId, record] of durable.applications.apps) {
    layout.set(appKey(prefix, appId), appValue(appId, record));
    for (const shuffleId of record.shuffles)
      layout.set(shuffleEntryKey(prefix, appId, shuffleId), SHUFFLE_VALUE);
  }
  for (const [id, booking] of durable.bookings)
    for (const [part, value] of booking.parts) layout.set(bookingKey(prefix, id, part), value);
  return layout;
}

/**
 * The writes that take the store from `before` to `after` for what a step `touched`, in O(what it touched): every
 * entry a touched worker or application has now is put (its content may have moved on in steps that wrote
 * nothing, a heartbeat's time and disks), every entry it had before and has no more is deleted. Which entries
 * exist is written by every step that changes it (the master persists every change of a worker's sections and of
 * an application's shuffles), so `before` holds the same entries as the store: only their content may lag.
 */
export function durableWrites(
  prefix: string,
  before: MasterDurableState,
  after: MasterDurableState,
  touched: Touched,
): KeyWrite[] {
  const writes: KeyWrite[] = [];
  if (
    touched.meta ||
    before.estimatedPartitionSize !== after.estimatedPartitionSize ||
    before.applications.writtenSinceSample !== after.applications.writtenSinceSample
  ) {
    writes.push({ key: metaKey(prefix), value: metaValue(after) });
  }
  for (const key of touched.workers) {
    for (const section of WORKER_SECTIONS) {
      const now: unknown = after.workers[section].get(key);
      if (now !== undefined) {
        writes.push({ key: workerEntryKey(prefix, section, key), value: JSON.stringify(now) });
      } else if (before.workers[section].has(key)) {
        writes.push({ key: workerEntryKey(prefix, section, key), value: null });
      }
    }
  }
  for (const appId of touched.apps) {
    const was = before.applications.apps.get(appId);
    const is = after.applications.apps.get(appId);
    if (is !== undefined) writes.push({ key: appKey(prefix, appId), value: appValue(appId, is) });
    else if (was !== undefined) writes.push({ key: appKey(prefix, appId), value: null });
    const kept = new Set(is?.shuffles ?? []);
    const had = new Set(was?.shuffles ?? []);
    for (const shuffleId of kept) {
      if (!had.has(shuffleId))
        writes.push({ key: shuffleEntryKey(prefix, appId, shuffleId), value: SHUFFLE_VALUE });
    }
    for (const shuffleId of had) {
      if (!kept.has(shuffleId)) writes.push({ key: shuffleEntryKey(prefix, appId, shuffleId), value: null });
    }
  }
  for (const id of touched.bookings) {
    const parts = after.bookings.get(id)?.parts ?? new Map<number, string>();
    for (const [part, value] of parts) writes.push({ key: bookingKey(prefix, id, part), value });
    for (const part of before.bookings.get(id)?.parts.keys() ?? []) {
      if (!parts.has(part)) writes.push({ key: bookingKey(prefix, id, part), value: null });
    }
  }
  return writes;
}

/** Whether `key` is one of the layout's under `prefix` (the embedded store holds other keys too). */
export function isLayoutKey(prefix: string, key: string): boolean {
  return key.startsWith(prefix);
}

/**
 * Rebuilds the durable state from the keys under `prefix` (any order; other keys are ignored). Throws naming the
 * first key that is wrong: the master then refuses to start rather than start on a state it misread (an empty master
 * would tell every worker that its shuffles expired). No keys at all is a new cluster: `empty`.
 */
export function assembleDurable(
  prefix: string,
  keys: Iterable<{ readonly key: string; readonly value: string }>,
  empty: MasterDurableState,
): MasterDurableState {
  const sorted = [...keys]
    .filter(({ key }) => isLayoutKey(prefix, key))
    .sort((a, b) => compareText(a.key, b.key));
  if (sorted.length === 0) return empty;
  let meta: Meta | undefined;
  const sections = new Map<WorkerSection, unknown[]>(WORKER_SECTIONS.map((s) => [s, []]));
  const apps = new Map<AppId, AppEntry>();
  const shuffles = new Map<AppId, ShuffleId[]>();
  const bookings = new Map<number, Map<number, { key: string; value: string }>>();
  for (const { key, value } of sorted) {
    const path = key.slice(prefix.length).split('/');
    if (path.length === 3 && path[0] === 'bookings' && /^\d+$/.test(path[1]!) && /^\d+$/.test(path[2]!)) {
      // Parsed by ./bookings.ts once the workers are known, to fold into them.
      const id = Number(path[1]);
      const parts = bookings.get(id) ?? new Map<number, { key: string; value: string }>();
      bookings.set(id, parts.set(Number(path[2]), { key, value }));
      continue;
    }
    const parsed = parseStoredJson(key, value);
    if (path.length === 1 && path[0] === 'meta') {
      meta = parsed as Meta;
    } else if (path.length === 3 && path[0] === 'workers' && sections.has(path[1] as WorkerSection)) {
      const section = path[1] as WorkerSection;
      if (workerKey(idOfEntry(section, parsed)) !== decodeURIComponent(path[2]!))
        throw new RangeError(`${key} holds another worker's entry`);
      sections.get(section)!.push(parsed);
    } else if (path.length === 2 && path[0] === 'apps') {
      const app = parsed as AppEntry;
      if (app.appId !== decodeURIComponent(path[1]!))
        throw new RangeError(`${key} holds another application`);
      apps.set(app.appId, app);
    } else if (path.length === 3 && path[0] === 'shuffles' && /^\d+$/.test(path[2]!)) {
      const appId = decodeURIComponent(path[1]!);
      const list = shuffles.get(appId);
      if (list === undefined) shuffles.set(appId, [Number(path[2])]);
      else list.push(Number(path[2]));
    } else {
      throw new RangeError(`${key} is not a key of the master's state (layout version ${LAYOUT_VERSION})`);
    }
  }
  if (meta === undefined)
    throw new RangeError(`${metaKey(prefix)} is missing while other keys of the state exist`);
  if (!READABLE_VERSIONS.includes(meta.version))
    throw new RangeError(
      `${metaKey(prefix)} has layout version ${meta.version}, this release reads ${READABLE_VERSIONS.join(' and ')}`,
    );
  if (meta.version === 1 && bookings.size > 0)
    throw new RangeError(`${prefix}bookings/ holds keys in a store of layout version 1`);
  for (const appId of shuffles.keys()) {
    if (!apps.has(appId))
      throw new RangeError(`${prefix}shuffles/${encodeURIComponent(appId)}/ has shuffles of no application`);
  }
  const workerSnapshot = Object.fromEntries([
    ['version', 1],
    ...[...sections].map(([section, entries]) => [section, entries]),
  ]) as unknown as WorkerRegistrySnapshot;
  const appSnapshot: ApplicationRegistrySnapshot = {
    version: 1,
    apps: [...apps.values()].map((app) => ({
      ...app,
      shuffles: (shuffles.get(app.appId) ?? []).sort((a, b) => a - b),
    })),
    writtenSinceSample: meta.writtenSinceSample,
  };
  const registry = restoreRegistry(workerSnapshot);
  const restored = restoreBookings(bookings, registry.workers);
  return {
    workers: { ...registry, workers: restored.workers },
    applications: restoreApplications(appSnapshot),
    estimatedPartitionSize: meta.estimatedPartitionSize,
    bookings: restored.bookings,
  };
}

export function compareText(a: string, b: string): number {
  return a < b ? -1 : a > b ? 1 : 0;
}
