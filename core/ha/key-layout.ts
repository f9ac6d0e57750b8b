import type { AppId, ShuffleId, WorkerId } from '../domain/index.ts';
import { workerKey } from '../domain/index.ts';
import {
  restoreApplications,
  restoreRegistry,
  snapshotApplications,
  snapshotRegistry,
  type ApplicationRegistrySnapshot,
  type WorkerRegistrySnapshot,
} from '../lifecycle/index.ts';
import {
  decodeDurableState,
  encodeDurableState,
  MASTER_STATE_KEY,
  type MasterDurableState,
} from '../machines/master/state.ts';
import { casCompare, fenceCompares, type Fence, type KnownKey } from './fencing.ts';
import {
  ETCD_MAX_REQUEST_BYTES,
  ETCD_MAX_TXN_OPS,
  utf8Length,
  type StoredKey,
  type Txn,
  type TxnOp,
} from './store.ts';

/**
 * The master's durable state as many small keys under one prefix, never one blob: a write touches only the keys
 * a step changed, every transaction stays inside etcd's limits, and a cluster of any size fits.
 *
 *   <prefix>meta                          version, estimated partition size, the unsampled bytes written
 *   <prefix>workers/<section>/<worker>    one entry of a worker registry section (registered, lost, stopped, ...)
 *   <prefix>apps/<app>                    an application: heartbeat, secret, hostname, user (not its shuffles)
 *   <prefix>shuffles/<app>/<shuffle>      one registered shuffle of the application
 *
 * Path segments are URI-encoded, so an id holding a `/` stays one segment. Entries come back in key order, not in
 * the order they were registered: round-robin placement restarts from the first worker after a failover.
 */
export const LAYOUT_VERSION = 1;

const WORKER_SECTIONS = [
  'workers',
  'lost',
  'stopped',
  'autoExcluded',
  'manuallyExcluded',
  'shutdown',
  'decommissioning',
  'events',
] as const;
type WorkerSection = (typeof WORKER_SECTIONS)[number];

interface Meta {
  readonly version: number;
  readonly estimatedPartitionSize: number;
  readonly writtenSinceSample: ApplicationRegistrySnapshot['writtenSinceSample'];
}

type AppEntry = Omit<ApplicationRegistrySnapshot['apps'][number], 'shuffles'>;

function idOfEntry(section: WorkerSection, entry: unknown): WorkerId {
  const record = entry as { readonly id?: WorkerId; readonly info?: { readonly id: WorkerId } };
  const id = section === 'lost' || section === 'stopped' ? record.info?.id : record.id;
  if (id === undefined) throw new RangeError(`a '${section}' entry has no worker id`);
  return id;
}

/** The keys and values that hold `durable` under `prefix`. */
export function durableLayout(prefix: string, durable: MasterDurableState): Map<string, string> {
  const layout = new Map<string, string>();
  const workers = snapshotRegistry(durable.workers);
  const apps = snapshotApplications(durable.applications);
  const meta: Meta = {
    version: LAYOUT_VERSION,
    estimatedPartitionSize: durable.estimatedPartitionSize,
    writtenSinceSample: apps.writtenSinceSample,
  };
  layout.set(`${prefix}meta`, JSON.stringify(meta));
  for (const section of WORKER_SECTIONS) {
    for (const entry of workers[section] ?? []) {
      const id = workerKey(idOfEntry(section, entry));
      layout.set(`${prefix}workers/${section}/${encodeURIComponent(id)}`, JSON.stringify(entry));
    }
  }
  for (const { shuffles, ...app } of apps.apps) {
    const appSegment = encodeURIComponent(app.appId);
    layout.set(`${prefix}apps/${appSegment}`, JSON.stringify(app));
    for (const shuffleId of shuffles) layout.set(`${prefix}shuffles/${appSegment}/${shuffleId}`, '{}');
  }
  return layout;
}

/** The layout of a value the master persisted (`persist{coordination}` of MASTER_STATE_KEY). */
export function layoutOfPersisted(prefix: string, value: string): Map<string, string> {
  return durableLayout(prefix, decodeDurableState(value));
}

function parseJson(key: string, value: string): unknown {
  try {
    return JSON.parse(value);
  } catch {
    throw new RangeError(`${key} is not JSON`);
  }
}

/**
 * Rebuilds the durable state from the keys under `prefix` (any order). Throws naming the first key that is wrong:
 * the master then refuses to lead rather than lead on a state it misread (an empty master would tell every worker
 * that its shuffles expired). No keys at all is a new cluster: the empty state.
 */
export function assembleDurable(
  prefix: string,
  keys: Iterable<{ readonly key: string; readonly value: string }>,
  empty: MasterDurableState,
): MasterDurableState {
  const sorted = [...keys]
    .filter(({ key }) => key.startsWith(prefix))
    .sort((a, b) => compareText(a.key, b.key));
  if (sorted.length === 0) return empty;
  let meta: Meta | undefined;
  const sections = new Map<WorkerSection, unknown[]>(WORKER_SECTIONS.map((s) => [s, []]));
  const apps = new Map<AppId, AppEntry>();
  const shuffles = new Map<AppId, ShuffleId[]>();
  for (const { key, value } of sorted) {
    const path = key.slice(prefix.length).split('/');
    const parsed = parseJson(key, value);
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
      shuffles.set(appId, [...(shuffles.get(appId) ?? []), Number(path[2])]);
    } else {
      throw new RangeError(`${key} is not a key of the master's state (layout version ${LAYOUT_VERSION})`);
    }
  }
  if (meta === undefined)
    throw new RangeError(`${prefix}meta is missing while other keys of the state exist`);
  if (meta.version !== LAYOUT_VERSION)
    throw new RangeError(
      `${prefix}meta has layout version ${meta.version}, this release reads ${LAYOUT_VERSION}`,
    );
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
  return {
    workers: restoreRegistry(workerSnapshot),
    applications: restoreApplications(appSnapshot),
    estimatedPartitionSize: meta.estimatedPartitionSize,
  };
}

/**
 * What a master that becomes leader starts from: the durable state read from the store, in the form the master
 * machine's `start` input takes after a restart (one value under MASTER_STATE_KEY). Leadership gained is a
 * restart: the same restore, the same fresh timeouts for every worker and application.
 */
export function recoveredForMaster(
  prefix: string,
  keys: Iterable<{ readonly key: string; readonly value: string }>,
  empty: MasterDurableState,
): ReadonlyMap<string, string> {
  const list = [...keys];
  if (!list.some(({ key }) => key.startsWith(prefix))) return new Map();
  return new Map([[MASTER_STATE_KEY, encodeDurableState(assembleDurable(prefix, list, empty))]]);
}

/** The bounds a transaction is planned within: etcd's defaults less room for the request's own framing. */
export interface TxnLimits {
  readonly maxOps: number;
  readonly maxBytes: number;
}

export const DEFAULT_TXN_LIMITS: TxnLimits = {
  maxOps: ETCD_MAX_TXN_OPS,
  maxBytes: ETCD_MAX_REQUEST_BYTES - 64 * 1024,
};

/** Bytes an op costs a request, counted generously: the key twice (op and compare), the value, framing. */
export function opBytes(op: TxnOp): number {
  return 2 * utf8Length(op.key) + (op.kind === 'put' ? utf8Length(op.value) : 0) + 32;
}

function fenceBytes(fence: Fence | undefined): number {
  return fence === undefined ? 0 : 2 * utf8Length(fence.key) + utf8Length(fence.lease) + 64;
}

/** Parents before children when writing, children before parents when deleting (see planWrites). */
function depth(prefix: string, key: string): number {
  const path = key.slice(prefix.length);
  if (path.startsWith('shuffles/')) return 2;
  if (path.startsWith('apps/')) return 1;
  return 0;
}

export type WritePlan =
  | { readonly kind: 'txns'; readonly txns: readonly Txn[] }
  | { readonly kind: 'oversized'; readonly key: string; readonly bytes: number };

/**
 * The transactions that take the store from what the leader knows (`known`: each key with the revision it last
 * read or wrote) to `next`: a put for each new or changed key, a delete for each gone one, each conditioned on the
 * key's known revision (compare-and-swap) and on the leader's `fence`. Each transaction holds at most
 * `limits.maxOps` compares and ops and `limits.maxBytes`. Puts go first, parents before children, then deletes,
 * children before parents, so that after any prefix of the transactions no shuffle is left without its
 * application. `fence` undefined: unfenced (only the planted bug `ha-unfenced-writes` asks for that).
 */
export function planWrites(
  prefix: string,
  known: ReadonlyMap<string, KnownKey>,
  next: ReadonlyMap<string, string>,
  fence: Fence | undefined,
  limits: TxnLimits = DEFAULT_TXN_LIMITS,
): WritePlan {
  const puts: TxnOp[] = [];
  for (const [key, value] of next) {
    if (known.get(key)?.value !== value) puts.push({ kind: 'put', key, value });
  }
  const deletes: TxnOp[] = [];
  for (const key of known.keys()) if (!next.has(key)) deletes.push({ kind: 'delete', key });
  puts.sort((a, b) => depth(prefix, a.key) - depth(prefix, b.key) || compareText(a.key, b.key));
  deletes.sort((a, b) => depth(prefix, b.key) - depth(prefix, a.key) || compareText(a.key, b.key));
  const fenceList = fence === undefined ? [] : fenceCompares(fence);
  const opsPerTxn = limits.maxOps - fenceList.length;
  const bytesPerTxn = limits.maxBytes - fenceBytes(fence);
  const txns: Txn[] = [];
  let ops: TxnOp[] = [];
  let bytes = 0;
  const flush = () => {
    if (ops.length === 0) return;
    txns.push({ fence: fenceList, compares: ops.map((op) => casCompare(op.key, known.get(op.key))), ops });
    ops = [];
    bytes = 0;
  };
  for (const op of [...puts, ...deletes]) {
    const cost = opBytes(op);
    if (cost > bytesPerTxn) return { kind: 'oversized', key: op.key, bytes: cost };
    if (ops.length + 1 > opsPerTxn || bytes + cost > bytesPerTxn) flush();
    ops.push(op);
    bytes += cost;
  }
  flush();
  return { kind: 'txns', txns };
}

/** What the leader knows after `txn` committed at `revision`. */
export function afterCommit(known: Map<string, KnownKey>, txn: Txn, revision: number): void {
  for (const op of txn.ops) {
    if (op.kind === 'put') known.set(op.key, { value: op.value, modRevision: revision });
    else known.delete(op.key);
  }
}

/** What the leader knows after reading its state (a `getPrefix` of the state prefix). */
export function knownFromRange(keys: readonly StoredKey[]): Map<string, KnownKey> {
  return new Map(keys.map((k) => [k.key, { value: k.value, modRevision: k.modRevision }]));
}

function compareText(a: string, b: string): number {
  return a < b ? -1 : a > b ? 1 : 0;
}
