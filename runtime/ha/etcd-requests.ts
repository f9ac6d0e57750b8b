// Serves the leadership machine's store requests (core/ha/store.ts) with etcd: each request gets exactly one result,
// a failure included, so the machine never waits forever. Nothing here decides what a result means for leadership.
import { create } from '@bufbuild/protobuf';
import { status } from '@grpc/grpc-js';
import type {
  Compare as CoreCompare,
  StoreRequest,
  StoreResult,
  StoredKey,
  Txn,
} from '../../core/ha/store.ts';
import { compareHolds } from '../../core/ha/fencing.ts';
import { EtcdCallError, type EtcdClient } from './etcd-client.ts';
import { bytesOf, EtcdStore, prefixEnd, textOf, type StoredValue } from './etcd-store.ts';
import { KeyWatch } from './key-watch.ts';
import {
  Compare_CompareResult,
  Compare_CompareTarget,
  CompareSchema,
  LeaseKeepAliveRequestSchema,
  RangeRequest_SortOrder,
  RangeRequest_SortTarget,
  RequestOpSchema,
  type Compare,
  type RequestOp,
} from './proto/gen/etcd/etcdserverpb/rpc_pb.ts';

export interface EtcdRequestsOptions {
  readonly requestTimeoutMs: number;
  readonly watchTimeoutMs: number;
}

type Answer = (result: StoreResult) => void;

function storedKey(value: StoredValue): StoredKey {
  return {
    key: value.key,
    value: textOf(value),
    createRevision: value.createRevision,
    modRevision: value.modRevision,
    ...(value.lease === 0n ? {} : { lease: value.lease.toString() }),
  };
}

function etcdCompare(compare: CoreCompare): Compare {
  const target = {
    createRevision: Compare_CompareTarget.CREATE,
    modRevision: Compare_CompareTarget.MOD,
    lease: Compare_CompareTarget.LEASE,
  }[compare.target];
  return create(CompareSchema, {
    key: bytesOf(compare.key),
    result: Compare_CompareResult.EQUAL,
    target,
    targetUnion: { case: compare.target, value: BigInt(compare.equals) },
  });
}

function etcdOp(op: Txn['ops'][number]): RequestOp {
  return create(RequestOpSchema, {
    request:
      op.kind === 'put'
        ? { case: 'requestPut', value: { key: bytesOf(op.key), value: bytesOf(op.value) } }
        : { case: 'requestDeleteRange', value: { key: bytesOf(op.key) } },
  });
}

/** The failure a thrown error stands for: etcd out of reach or out of time, or a refusal told as such. */
function failed(op: number, error: unknown): StoreResult {
  const detail = error instanceof Error ? error.message : String(error);
  const timeout = error instanceof EtcdCallError && error.code === status.DEADLINE_EXCEEDED;
  return { kind: 'failed', op, failure: timeout ? 'timeout' : 'unavailable', detail };
}

/** The election key of a candidate holding `lease`: etcd's concurrency package names it the same way. */
export function electionKey(election: string, lease: string): string {
  return `${election}${BigInt(lease).toString(16)}`;
}

export class EtcdRequests {
  private readonly store: EtcdStore;
  /** Long-lived calls (campaign, observe) by op: cancelled when the driver closes. */
  private readonly longLived = new Map<number, () => void>();
  private closed = false;

  constructor(
    private readonly client: EtcdClient,
    private readonly options: EtcdRequestsOptions,
  ) {
    this.store = new EtcdStore(client);
  }

  serve(request: StoreRequest, answer: Answer): void {
    if (this.closed) return;
    const once = this.answerOnce(request.op, answer);
    const run = async (): Promise<StoreResult | undefined> => {
      switch (request.kind) {
        case 'leaseGrant': {
          const lease = await this.store.grantLease(Math.ceil(request.ttlMs / 1000));
          return {
            kind: 'leaseGranted',
            op: request.op,
            lease: lease.id.toString(),
            ttlMs: lease.ttlSeconds * 1000,
          };
        }
        case 'leaseKeepAlive':
          return this.keepAlive(request.op, request.lease);
        case 'leaseRevoke':
          try {
            await this.store.revokeLease(BigInt(request.lease));
          } catch (error) {
            // Already gone (NOT_FOUND) is what a revoke wants.
            if (error instanceof EtcdCallError && error.unreachable) throw error;
          }
          return { kind: 'revoked', op: request.op };
        case 'campaign':
          this.campaign(request, once);
          return undefined;
        case 'getPrefix': {
          const page = await this.store.list(request.prefix);
          return { kind: 'range', op: request.op, revision: page.revision, keys: page.values.map(storedKey) };
        }
        case 'txn':
          return this.txn(request.op, request.txn);
        case 'observe':
          this.observe(request.op, request.election, once);
          return undefined;
        case 'cancel':
          this.longLived.get(request.op)?.();
          return undefined;
      }
    };
    run().then(
      (result) => {
        if (result !== undefined) once(result);
      },
      (error: unknown) => once(failed(request.op, error)),
    );
  }

  /** Ends every long-lived call; no answer is given after this. */
  close(): void {
    this.closed = true;
    for (const end of [...this.longLived.values()]) end();
    this.longLived.clear();
  }

  private answerOnce(op: number, answer: Answer): Answer {
    let answered = false;
    return (result) => {
      if (answered || this.closed) return;
      if (result.kind !== 'leaderIs') answered = true;
      if (result.kind !== 'leaderIs') this.longLived.delete(op);
      answer(result);
    };
  }

  /** One keep-alive round trip on a stream of its own, within the request timeout. */
  private keepAlive(op: number, lease: string): Promise<StoreResult> {
    return new Promise((resolve) => {
      const stream = this.client.keepAliveStream();
      let done = false;
      const finish = (result: StoreResult): void => {
        if (done) return;
        done = true;
        clearTimeout(timer);
        stream.cancel();
        resolve(result);
      };
      const timer = setTimeout(
        () =>
          finish({
            kind: 'failed',
            op,
            failure: 'timeout',
            detail: `etcd did not answer a keep-alive within ${this.options.requestTimeoutMs} ms`,
          }),
        this.options.requestTimeoutMs,
      );
      stream.on('data', (answer: { TTL: bigint }) =>
        finish({ kind: 'keptAlive', op, lease, ttlMs: Math.max(0, Number(answer.TTL)) * 1000 }),
      );
      stream.on('error', (error: Error) => finish(failed(op, error)));
      stream.on('end', () =>
        finish({ kind: 'failed', op, failure: 'unavailable', detail: 'etcd ended the keep-alive stream' }),
      );
      stream.write(create(LeaseKeepAliveRequestSchema, { ID: BigInt(lease) }));
    });
  }

  private async txn(op: number, txn: Txn): Promise<StoreResult> {
    const fenceKey = txn.fence[0]?.key;
    const answer = await this.client.kv.txn({
      compare: [...txn.fence, ...txn.compares].map(etcdCompare),
      success: txn.ops.map(etcdOp),
      failure:
        fenceKey === undefined
          ? []
          : [
              create(RequestOpSchema, {
                request: { case: 'requestRange', value: { key: bytesOf(fenceKey) } },
              }),
            ],
    });
    const revision = Number(answer.header?.revision ?? 0);
    if (answer.succeeded) return { kind: 'committed', op, revision };
    const read = answer.responses[0]?.response;
    const kv = read?.case === 'responseRange' ? read.value.kvs[0] : undefined;
    const holder =
      kv === undefined
        ? undefined
        : storedKey({
            key: fenceKey ?? '',
            value: kv.value,
            createRevision: Number(kv.createRevision),
            modRevision: Number(kv.modRevision),
            lease: kv.lease,
          });
    const fenceHeld = txn.fence.every((compare) => compareHolds(compare, holder));
    return { kind: 'refused', op, fenceHeld, revision };
  }

  /** The oldest key of the election (the leader), and the revision it was read at. */
  private async leaderOf(election: string): Promise<{ leader: StoredKey | undefined; revision: number }> {
    const answer = await this.client.kv.range({
      key: bytesOf(election),
      rangeEnd: prefixEnd(election),
      limit: 1n,
      sortOrder: RangeRequest_SortOrder.ASCEND,
      sortTarget: RangeRequest_SortTarget.CREATE,
    });
    const kv = answer.kvs[0];
    return {
      leader:
        kv === undefined
          ? undefined
          : storedKey({
              key: new TextDecoder().decode(kv.key),
              value: kv.value,
              createRevision: Number(kv.createRevision),
              modRevision: Number(kv.modRevision),
              lease: kv.lease,
            }),
      revision: Number(answer.header?.revision ?? 0),
    };
  }

  /**
   * Calls `check` at once and again at every change under `prefix`, until `check` says it is done or the watch
   * breaks; registered as long-lived under `op`.
   */
  private follow(op: number, prefix: string, answer: Answer, check: () => Promise<'done' | 'more'>): void {
    let watch: KeyWatch | undefined;
    let ended = false;
    let checking: Promise<void> = Promise.resolve();
    const end = (): void => {
      ended = true;
      watch?.cancel();
      this.longLived.delete(op);
    };
    this.longLived.set(op, end);
    const recheck = (): void => {
      checking = checking.then(async () => {
        if (ended) return;
        try {
          if ((await check()) === 'done') end();
        } catch (error) {
          end();
          answer(failed(op, error));
        }
      });
    };
    const startWatch = (fromRevision: number): void => {
      if (ended) return;
      watch = new KeyWatch(
        this.client,
        prefix,
        fromRevision,
        this.options.watchTimeoutMs,
        {
          changed: () => recheck(),
          broken: (reason) => {
            if (ended) return;
            end();
            answer({ kind: 'failed', op, failure: 'unavailable', detail: reason });
          },
        },
        prefixEnd(prefix),
      );
    };
    void (async () => {
      try {
        const { revision } = await this.leaderOf(prefix);
        startWatch(revision + 1);
        recheck();
      } catch (error) {
        end();
        answer(failed(op, error));
      }
    })();
  }

  /** etcd's Election.Campaign: a key under the election on the lease, won once it is the oldest there. */
  private campaign(request: Extract<StoreRequest, { kind: 'campaign' }>, answer: Answer): void {
    const key = electionKey(request.election, request.lease);
    void (async () => {
      try {
        const bytes = bytesOf(key);
        await this.client.kv.txn({
          compare: [etcdCompare({ key, target: 'createRevision', equals: 0 })],
          success: [
            create(RequestOpSchema, {
              request: {
                case: 'requestPut',
                value: { key: bytes, value: bytesOf(request.value), lease: BigInt(request.lease) },
              },
            }),
          ],
          failure: [],
        });
      } catch (error) {
        answer(failed(request.op, error));
        return;
      }
      this.follow(request.op, request.election, answer, async () => {
        const own = await this.store.get(key);
        if (own.value === undefined) {
          answer({
            kind: 'failed',
            op: request.op,
            failure: 'unavailable',
            detail: `lease ${request.lease} ended: the campaign key ${key} is gone`,
          });
          return 'done';
        }
        const { leader } = await this.leaderOf(request.election);
        if (leader?.key !== key) return 'more';
        answer({ kind: 'campaignWon', op: request.op, key, revision: leader.createRevision });
        return 'done';
      });
    })();
  }

  /** etcd's Election.Observe: the leader's value now and at each change. */
  private observe(op: number, election: string, answer: Answer): void {
    let last: string | null | undefined;
    this.follow(op, election, answer, async () => {
      const { leader, revision } = await this.leaderOf(election);
      const value = leader?.value ?? null;
      if (value !== last) {
        last = value;
        answer({ kind: 'leaderIs', op, value, revision });
      }
      return 'more';
    });
  }
}
