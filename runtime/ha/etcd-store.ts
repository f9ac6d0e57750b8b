// The coordination store of a high-availability master group on etcd: leases, the campaign for the leader key, the
// leader key's watch, and fenced writes. A write of the leader is a transaction conditioned on the leader key still
// carrying the leader's lease and create revision, so that a deposed leader's late write is refused by etcd itself,
// whatever the deposed leader believes; each write may also be conditioned on its key's mod revision (compare and
// swap). Nothing here decides what a master does with an outcome: it reports it (docs/high-availability.md).
import { create, toBinary } from '@bufbuild/protobuf';
import type { EtcdClient } from './etcd-client.ts';
import {
  Compare_CompareResult,
  Compare_CompareTarget,
  CompareSchema,
  RangeRequest_SortOrder,
  RangeRequest_SortTarget,
  RequestOpSchema,
  TxnRequestSchema,
  type Compare,
  type RequestOp,
  type ResponseOp,
} from './proto/gen/etcd/etcdserverpb/rpc_pb.ts';
import type { KeyValue } from './proto/gen/etcd/mvccpb/kv_pb.ts';

/** etcd's default --max-txn-ops: the most compares, and the most operations of a branch, in one transaction. */
export const MAX_TXN_OPS = 128;
/** etcd's default --max-request-bytes (1.5 MiB): a larger request is refused whole. */
export const MAX_REQUEST_BYTES = 1.5 * 1024 * 1024;

const encoder = new TextEncoder();
const decoder = new TextDecoder();

export function bytesOf(text: string): Uint8Array {
  return encoder.encode(text);
}

export interface StoredValue {
  readonly key: string;
  readonly value: Uint8Array;
  /** The revision at which the key was last created: with the lease, what identifies one leader's tenure. */
  readonly createRevision: number;
  /** The revision of the key's last change: what a compare-and-swap is conditioned on. */
  readonly modRevision: number;
  readonly lease: bigint;
}

export function textOf(value: StoredValue): string {
  return decoder.decode(value.value);
}

function storedValue(kv: KeyValue): StoredValue {
  return {
    key: decoder.decode(kv.key),
    value: kv.value,
    createRevision: Number(kv.createRevision),
    modRevision: Number(kv.modRevision),
    lease: kv.lease,
  };
}

/** One tenure of a leader: the leader key as its campaign created it. */
export interface Leadership {
  readonly leaderKey: string;
  readonly nodeId: string;
  readonly lease: bigint;
  readonly createRevision: number;
}

/**
 * A write of the leader. `expectModRevision` conditions it on the key's mod revision as last read (0: the key must
 * not exist); absent, the write is conditioned on the leadership only.
 */
export type Write =
  | {
      readonly kind: 'put';
      readonly key: string;
      readonly value: Uint8Array;
      readonly expectModRevision?: number;
    }
  | { readonly kind: 'delete'; readonly key: string; readonly expectModRevision?: number };

export type WriteOutcome =
  /** Every batch applied; `revisions` holds each batch's revision in order. */
  | { readonly kind: 'written'; readonly revisions: readonly number[] }
  /** The leader key no longer carries this leadership: nothing of the batch was applied, nor any after it. */
  | { readonly kind: 'fenced'; readonly appliedBatches: number; readonly holder: StoredValue | undefined }
  /** A key's mod revision was not the one expected: nothing of the batch was applied, nor any after it. */
  | { readonly kind: 'conflict'; readonly appliedBatches: number };

export type CampaignOutcome =
  | { readonly kind: 'elected'; readonly leadership: Leadership }
  | { readonly kind: 'taken'; readonly holder: StoredValue; readonly revision: number };

/** The first key after every key starting with `prefix`: etcd's range end for a prefix. */
export function prefixEnd(prefix: string): Uint8Array {
  const end = bytesOf(prefix);
  for (let index = end.length - 1; index >= 0; index--) {
    if (end[index]! < 0xff) {
      end[index]! += 1;
      return end.slice(0, index + 1);
    }
  }
  return new Uint8Array([0]);
}

function compare(
  key: string,
  target: 'createRevision' | 'modRevision' | 'lease',
  value: number | bigint,
): Compare {
  const targets = {
    createRevision: Compare_CompareTarget.CREATE,
    modRevision: Compare_CompareTarget.MOD,
    lease: Compare_CompareTarget.LEASE,
  } as const;
  return create(CompareSchema, {
    key: bytesOf(key),
    result: Compare_CompareResult.EQUAL,
    target: targets[target],
    targetUnion: { case: target, value: BigInt(value) },
  });
}

/** The compares that hold only while `leadership` is the leader key's tenure. */
export function leadershipCompares(leadership: Leadership): Compare[] {
  return [
    compare(leadership.leaderKey, 'createRevision', leadership.createRevision),
    compare(leadership.leaderKey, 'lease', leadership.lease),
  ];
}

function writeOp(write: Write): RequestOp {
  return create(RequestOpSchema, {
    request:
      write.kind === 'put'
        ? { case: 'requestPut', value: { key: bytesOf(write.key), value: write.value } }
        : { case: 'requestDeleteRange', value: { key: bytesOf(write.key) } },
  });
}

function writeCompares(write: Write): Compare[] {
  return write.expectModRevision === undefined
    ? []
    : [compare(write.key, 'modRevision', write.expectModRevision)];
}

/** Upper bound of what a message adds to a transaction: its bytes, its field tag and its length prefix. */
function encodedSize(bytes: Uint8Array): number {
  return bytes.length + 1 + 5;
}

/**
 * Splits writes into transactions etcd accepts: at most MAX_TXN_OPS compares (the leadership's two included) and
 * operations each, and at most MAX_REQUEST_BYTES encoded. A write that alone exceeds the size is an error: the
 * master's state goes in as many small keys, never one blob.
 */
export function batchWrites(writes: readonly Write[], fixedCompares: readonly Compare[]): Write[][] {
  const fixedBytes =
    fixedCompares.reduce((sum, item) => sum + encodedSize(toBinary(CompareSchema, item)), 0) +
    // The failure branch's read of the leader key.
    64;
  const batches: Write[][] = [];
  let batch: Write[] = [];
  let compares = fixedCompares.length;
  let bytes = fixedBytes;
  for (const write of writes) {
    const ownCompares = writeCompares(write);
    const size =
      encodedSize(toBinary(RequestOpSchema, writeOp(write))) +
      ownCompares.reduce((sum, item) => sum + encodedSize(toBinary(CompareSchema, item)), 0);
    if (fixedBytes + size > MAX_REQUEST_BYTES) {
      throw new Error(
        `the write of ${write.key} takes ${size} bytes, more than one etcd request may carry (${MAX_REQUEST_BYTES})`,
      );
    }
    const full =
      batch.length + 1 > MAX_TXN_OPS ||
      compares + ownCompares.length > MAX_TXN_OPS ||
      bytes + size > MAX_REQUEST_BYTES;
    if (full && batch.length > 0) {
      batches.push(batch);
      batch = [];
      compares = fixedCompares.length;
      bytes = fixedBytes;
    }
    batch.push(write);
    compares += ownCompares.length;
    bytes += size;
  }
  if (batch.length > 0) batches.push(batch);
  return batches;
}

export interface Page {
  readonly values: readonly StoredValue[];
  /** The store's revision the values were read at. */
  readonly revision: number;
}

export class EtcdStore {
  constructor(readonly client: EtcdClient) {}

  /** The key's value, and the revision it was read at. */
  async get(key: string): Promise<{ readonly value: StoredValue | undefined; readonly revision: number }> {
    const answer = await this.client.kv.range({ key: bytesOf(key) });
    const kv = answer.kvs[0];
    return {
      value: kv === undefined ? undefined : storedValue(kv),
      revision: Number(answer.header?.revision ?? 0),
    };
  }

  /** Every key under `prefix`, read page by page at one revision (one consistent view, however many keys). */
  async list(prefix: string, pageSize = 1000): Promise<Page> {
    const end = prefixEnd(prefix);
    const values: StoredValue[] = [];
    let from = bytesOf(prefix);
    let revision = 0n;
    for (;;) {
      const answer = await this.client.kv.range({
        key: from,
        rangeEnd: end,
        limit: BigInt(pageSize),
        revision,
        sortOrder: RangeRequest_SortOrder.ASCEND,
        sortTarget: RangeRequest_SortTarget.KEY,
      });
      if (revision === 0n) revision = answer.header?.revision ?? 0n;
      values.push(...answer.kvs.map(storedValue));
      const last = answer.kvs.at(-1);
      if (!answer.more || last === undefined) break;
      from = new Uint8Array([...last.key, 0]);
    }
    return { values, revision: Number(revision) };
  }

  async grantLease(ttlSeconds: number): Promise<{ readonly id: bigint; readonly ttlSeconds: number }> {
    const answer = await this.client.lease.leaseGrant({ TTL: BigInt(ttlSeconds) });
    if (answer.error !== '') throw new Error(`etcd refused a lease: ${answer.error}`);
    return { id: answer.ID, ttlSeconds: Number(answer.TTL) };
  }

  async revokeLease(id: bigint): Promise<void> {
    await this.client.lease.leaseRevoke({ ID: id });
  }

  /**
   * Creates the leader key under `lease` unless it exists: the tenure that results is identified by the key's
   * create revision and the lease, both of which a later tenure changes.
   */
  async campaign(leaderKey: string, nodeId: string, lease: bigint): Promise<CampaignOutcome> {
    const key = bytesOf(leaderKey);
    const read: RequestOp = create(RequestOpSchema, { request: { case: 'requestRange', value: { key } } });
    const answer = await this.client.kv.txn({
      compare: [compare(leaderKey, 'createRevision', 0)],
      success: [
        create(RequestOpSchema, {
          request: { case: 'requestPut', value: { key, value: bytesOf(nodeId), lease } },
        }),
        read,
      ],
      failure: [read],
    });
    const holder = readOf(answer.responses.at(-1));
    const revision = Number(answer.header?.revision ?? 0);
    if (holder === undefined) {
      // The key expired between the compare and the read: impossible in one transaction, so a protocol error.
      throw new Error(`etcd answered the campaign for ${leaderKey} without the key`);
    }
    if (answer.succeeded) {
      return {
        kind: 'elected',
        leadership: { leaderKey, nodeId, lease, createRevision: holder.createRevision },
      };
    }
    return { kind: 'taken', holder, revision };
  }

  /** Deletes the leader key if it is still this tenure's, and revokes the lease: a successor need not wait. */
  async resign(leadership: Leadership): Promise<void> {
    await this.client.kv.txn({
      compare: leadershipCompares(leadership),
      success: [writeOp({ kind: 'delete', key: leadership.leaderKey })],
    });
    await this.revokeLease(leadership.lease);
  }

  /**
   * Applies `writes` as fenced transactions, batch after batch within etcd's limits; the first batch refused
   * (fenced or conflicting) stops the rest. Each batch is atomic; the writes as a whole are not, when they span
   * several batches, so a caller writes state whose partial application is a valid state (one key per worker,
   * application, shuffle).
   */
  async write(leadership: Leadership, writes: readonly Write[]): Promise<WriteOutcome> {
    const fence = leadershipCompares(leadership);
    const revisions: number[] = [];
    const readLeader = create(RequestOpSchema, {
      request: { case: 'requestRange', value: { key: bytesOf(leadership.leaderKey) } },
    });
    for (const batch of batchWrites(writes, fence)) {
      const request = create(TxnRequestSchema, {
        compare: [...fence, ...batch.flatMap(writeCompares)],
        success: batch.map(writeOp),
        failure: [readLeader],
      });
      const answer = await this.client.kv.txn(request);
      if (!answer.succeeded) {
        const holder = readOf(answer.responses[0]);
        const stillOurs =
          holder !== undefined &&
          holder.createRevision === leadership.createRevision &&
          holder.lease === leadership.lease;
        return stillOurs
          ? { kind: 'conflict', appliedBatches: revisions.length }
          : { kind: 'fenced', appliedBatches: revisions.length, holder };
      }
      revisions.push(Number(answer.header?.revision ?? 0));
    }
    return { kind: 'written', revisions };
  }
}

function readOf(response: ResponseOp | undefined): StoredValue | undefined {
  if (response?.response.case !== 'responseRange') return undefined;
  const kv = response.response.value.kvs[0];
  return kv === undefined ? undefined : storedValue(kv);
}
