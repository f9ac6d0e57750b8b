// Reads and leases on etcd, for the requests of the leadership machine (./etcd-requests.ts): a key, every key under a
// prefix at one revision, a lease granted or revoked. The campaign, the fenced writes and their batches are the
// core's (core/ha/leadership.ts, core/ha/key-layout.ts), served as etcd calls by ./etcd-requests.ts; nothing here
// decides anything about leadership.
import type { EtcdClient } from './etcd-client.ts';
import { RangeRequest_SortOrder, RangeRequest_SortTarget } from './proto/gen/etcd/etcdserverpb/rpc_pb.ts';
import type { KeyValue } from './proto/gen/etcd/mvccpb/kv_pb.ts';

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
}
