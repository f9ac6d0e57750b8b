import {
  assembleDurable,
  compareText,
  MASTER_STATE_PREFIX,
  type KeyWrite,
} from '../machines/master/layout.ts';
import type { MasterDurableState } from '../machines/master/state.ts';
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
 * The master's durable state in etcd: the master machine's own layout (core/machines/master/layout.ts: meta,
 * workers/<section>/<worker>, apps/<app>, shuffles/<app>/<shuffle>) under the group's state prefix instead of
 * MASTER_STATE_PREFIX, written as the keys each step changed, in fenced compare-and-swap transactions that stay
 * inside etcd's limits.
 */
export { assembleDurable, durableLayout, LAYOUT_VERSION } from '../machines/master/layout.ts';

/** The etcd key of one of the master's keys (under MASTER_STATE_PREFIX); throws for a key outside its state. */
export function storeKeyOf(statePrefix: string, masterKey: string): string {
  if (!masterKey.startsWith(MASTER_STATE_PREFIX))
    throw new RangeError(`the master persisted ${masterKey}, which a group does not store`);
  return statePrefix + masterKey.slice(MASTER_STATE_PREFIX.length);
}

/** The master's writes of one persist (or a group of them), as etcd keys; a later write of a key wins. */
export function storeChanges(statePrefix: string, writes: Iterable<KeyWrite>): Map<string, string | null> {
  const changes = new Map<string, string | null>();
  for (const { key, value } of writes) changes.set(storeKeyOf(statePrefix, key), value);
  return changes;
}

/** What turns `before` into `after` (two whole layouts): for tests and the simulator's minimal master. */
export function changesBetween(
  before: ReadonlyMap<string, string>,
  after: ReadonlyMap<string, string>,
): Map<string, string | null> {
  const changes = new Map<string, string | null>();
  for (const [key, value] of after) if (before.get(key) !== value) changes.set(key, value);
  for (const key of before.keys()) if (!after.has(key)) changes.set(key, null);
  return changes;
}

/**
 * What a master that becomes leader starts from: the keys read from the store, under MASTER_STATE_PREFIX as the
 * master machine's `start` input takes them (the restart path: the same restore, the same fresh timeouts for every
 * worker and application). Assembled once here so that a state no master can read is refused before acting.
 */
export function recoveredForMaster(
  prefix: string,
  keys: Iterable<{ readonly key: string; readonly value: string }>,
  empty: MasterDurableState,
): ReadonlyMap<string, string> {
  const list = [...keys].filter(({ key }) => key.startsWith(prefix));
  assembleDurable(prefix, list, empty);
  return new Map(list.map(({ key, value }) => [MASTER_STATE_PREFIX + key.slice(prefix.length), value]));
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
 * The transactions that apply `changes` (a value for each key written, null for each deleted) to the store from
 * what the leader knows (`known`: each key with the revision it last read or wrote): a put for each key whose value
 * differs, a delete for each known key deleted, each conditioned on the key's known revision (compare-and-swap) and
 * on the leader's `fence`. Each transaction holds at most
 * `limits.maxOps` compares and ops and `limits.maxBytes`. Puts go first, parents before children, then deletes,
 * children before parents, so that after any prefix of the transactions no shuffle is left without its
 * application. `fence` undefined: unfenced (only the planted bug `ha-unfenced-writes` asks for that).
 */
export function planWrites(
  prefix: string,
  known: ReadonlyMap<string, KnownKey>,
  changes: ReadonlyMap<string, string | null>,
  fence: Fence | undefined,
  limits: TxnLimits = DEFAULT_TXN_LIMITS,
): WritePlan {
  const puts: TxnOp[] = [];
  const deletes: TxnOp[] = [];
  for (const [key, value] of changes) {
    if (value === null) {
      if (known.has(key)) deletes.push({ kind: 'delete', key });
    } else if (known.get(key)?.value !== value) puts.push({ kind: 'put', key, value });
  }
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
