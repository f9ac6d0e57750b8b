/**
 * The coordination store as data: what a master asks of it and what comes back. The runtime serves these requests
 * with etcd (runtime/ha/), the simulator with its model (sim/ha/coordination-model.ts); neither decides anything
 * about leadership, which is ./leadership.ts's alone.
 *
 * The vocabulary is etcd's v3 API reduced to what leadership needs: revisions are etcd's (one counter for the whole
 * store, raised by every write; a key's `createRevision` is the revision that created it, `modRevision` the one that
 * last wrote it, 0 when it does not exist), leases are etcd's (a TTL in seconds at the store, kept alive by the
 * holder; when it runs out every key attached to it is deleted), a transaction is etcd's `Txn` (compares, then the
 * operations if every compare held).
 */

/** A lease, as etcd numbers it (a 64-bit id, carried as a decimal string so no precision is lost). */
export type LeaseId = string;

/** One key as read, with its revisions (etcd's mvccpb.KeyValue, without version). */
export interface StoredKey {
  readonly key: string;
  readonly value: string;
  readonly createRevision: number;
  readonly modRevision: number;
  /** The lease the key is attached to; absent: none. */
  readonly lease?: LeaseId;
}

/**
 * A condition of a transaction, on one key (etcd's Compare with result EQUAL). `createRevision` 0 means the key
 * does not exist; a `lease` compare holds when the key exists and is attached to that lease.
 */
export type Compare =
  | { readonly key: string; readonly target: 'createRevision'; readonly equals: number }
  | { readonly key: string; readonly target: 'modRevision'; readonly equals: number }
  | { readonly key: string; readonly target: 'lease'; readonly equals: LeaseId };

/** An operation of a transaction's success branch. */
export type TxnOp =
  | { readonly kind: 'put'; readonly key: string; readonly value: string }
  | { readonly kind: 'delete'; readonly key: string };

/**
 * One transaction: every compare holds, then every op applies at one new revision; or nothing applies. `fence`
 * names the compares that make it a leader's write (./fencing.ts); the others are compare-and-swap on the data keys.
 * The executor reports which of the two failed, so a store serving it must also read the fence's key on failure
 * (etcd: a `get` of the fence key in the failure branch).
 */
export interface Txn {
  readonly fence: readonly Compare[];
  readonly compares: readonly Compare[];
  readonly ops: readonly TxnOp[];
}

/** What a master asks of the coordination store. Every request carries an `op` its result echoes. */
export type StoreRequest =
  /** A new lease of `ttlMs` (etcd: LeaseGrant; the store rounds up to whole seconds). */
  | { readonly kind: 'leaseGrant'; readonly op: number; readonly ttlMs: number }
  /** Renew a lease once (etcd: one LeaseKeepAlive round trip). */
  | { readonly kind: 'leaseKeepAlive'; readonly op: number; readonly lease: LeaseId }
  /** End a lease now, deleting its keys (etcd: LeaseRevoke): a leader that resigns lets the next one start at once. */
  | { readonly kind: 'leaseRevoke'; readonly op: number; readonly lease: LeaseId }
  /**
   * Wait to be leader under `election`, holding `lease`, announcing `value` (the member's id and address): answered
   * `campaignWon` once this candidate's key is the oldest of the election (etcd's concurrency.Election.Campaign),
   * which may take as long as the current leader's lease lives. A candidate whose lease ends is answered `failed`.
   */
  | {
      readonly kind: 'campaign';
      readonly op: number;
      readonly election: string;
      readonly lease: LeaseId;
      readonly value: string;
    }
  /** Every key under `prefix`, read at one revision (etcd: Range with a prefix). */
  | { readonly kind: 'getPrefix'; readonly op: number; readonly prefix: string }
  | { readonly kind: 'txn'; readonly op: number; readonly txn: Txn }
  /**
   * Report who leads `election` now and at every change, until cancelled (etcd: Election.Observe over a watch).
   * Followers use it to name the leader in their "not leader" answers.
   */
  | { readonly kind: 'observe'; readonly op: number; readonly election: string }
  | { readonly kind: 'cancel'; readonly op: number };

export type StoreRequestKind = StoreRequest['kind'];

/** Why a request got no answer: the store could not be reached in time (a timeout, a refused connection, no quorum). */
export type StoreFailure = 'unavailable' | 'timeout';

/** What comes back for a request, echoing its `op`. */
export type StoreResult =
  | { readonly kind: 'leaseGranted'; readonly op: number; readonly lease: LeaseId; readonly ttlMs: number }
  /** A keep-alive's answer: the lease's remaining TTL at the store; 0 when the lease no longer exists. */
  | { readonly kind: 'keptAlive'; readonly op: number; readonly lease: LeaseId; readonly ttlMs: number }
  | { readonly kind: 'revoked'; readonly op: number }
  /** Leader now: `key` is this candidate's election key, created at `revision`, attached to its lease. */
  | { readonly kind: 'campaignWon'; readonly op: number; readonly key: string; readonly revision: number }
  | {
      readonly kind: 'range';
      readonly op: number;
      readonly revision: number;
      readonly keys: readonly StoredKey[];
    }
  /** The transaction applied at `revision`. */
  | { readonly kind: 'committed'; readonly op: number; readonly revision: number }
  /**
   * The transaction did not apply: `fenceHeld` false when a fence compare failed (the writer no longer leads),
   * true when only a compare-and-swap on a data key failed (someone else wrote it).
   */
  | { readonly kind: 'refused'; readonly op: number; readonly fenceHeld: boolean; readonly revision: number }
  /** From an `observe`: the election's leader (its announced value) now, or none. */
  | {
      readonly kind: 'leaderIs';
      readonly op: number;
      readonly value: string | null;
      readonly revision: number;
    }
  | { readonly kind: 'failed'; readonly op: number; readonly failure: StoreFailure; readonly detail: string };

export type StoreResultKind = StoreResult['kind'];

/** etcd's default limits (--max-txn-ops, --max-request-bytes): a transaction never exceeds them. */
export const ETCD_MAX_TXN_OPS = 128;
export const ETCD_MAX_REQUEST_BYTES = 1.5 * 1024 * 1024;

/** The length of a string in UTF-8, as the store counts it (no TextEncoder: core uses no platform API). */
export function utf8Length(text: string): number {
  let bytes = 0;
  for (let i = 0; i < text.length; i += 1) {
    const code = text.charCodeAt(i);
    if (code < 0x80) bytes += 1;
    else if (code < 0x800) bytes += 2;
    else if (code >= 0xd800 && code <= 0xdbff && i + 1 < text.length) {
      const next = text.charCodeAt(i + 1);
      if (next >= 0xdc00 && next <= 0xdfff) {
        bytes += 4;
        i += 1;
      } else bytes += 3;
    } else bytes += 3;
  }
  return bytes;
}
