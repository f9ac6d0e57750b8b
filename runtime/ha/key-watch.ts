// A watch of one key (or a range of keys) from a revision on: its events, or one report that the watch broke (etcd unreachable, the watch
// not confirmed within the watch timeout, the revision compacted), after which the caller reads the key again.
import { create } from '@bufbuild/protobuf';
import type { EtcdClient } from './etcd-client.ts';
import { WatchRequestSchema } from './proto/gen/etcd/etcdserverpb/rpc_pb.ts';
import type { Event } from './proto/gen/etcd/mvccpb/kv_pb.ts';
import { bytesOf } from './etcd-store.ts';

export interface KeyWatchEvents {
  changed(events: readonly Event[]): void;
  broken(reason: string): void;
}

export class KeyWatch {
  private readonly stream: ReturnType<EtcdClient['watchStream']>;
  private timer: NodeJS.Timeout | undefined;
  private done = false;

  constructor(
    client: EtcdClient,
    key: string,
    startRevision: number,
    watchTimeoutMs: number,
    private readonly events: KeyWatchEvents,
    /** Watch every key from `key` up to this one (a prefix: prefixEnd); absent, `key` alone. */
    rangeEnd?: Uint8Array,
  ) {
    this.stream = client.watchStream();
    this.timer = setTimeout(
      () => this.fail(`etcd did not confirm the watch of ${key} within ${watchTimeoutMs} ms`),
      watchTimeoutMs,
    );
    this.stream.on(
      'data',
      (answer: { created: boolean; canceled: boolean; cancelReason: string; events: Event[] }) => {
        if (this.done) return;
        if (answer.created) clearTimeout(this.timer);
        if (answer.events.length > 0) this.events.changed(answer.events);
        if (answer.canceled)
          this.fail(`etcd cancelled the watch of ${key}: ${answer.cancelReason || 'no reason'}`);
      },
    );
    this.stream.on('error', (error: Error) => this.fail(error.message));
    this.stream.on('end', () => this.fail('etcd ended the watch stream'));
    this.stream.write(
      create(WatchRequestSchema, {
        requestUnion: {
          case: 'createRequest',
          value: {
            key: bytesOf(key),
            ...(rangeEnd === undefined ? {} : { rangeEnd }),
            startRevision: BigInt(startRevision),
            progressNotify: true,
          },
        },
      }),
    );
  }

  cancel(): void {
    this.done = true;
    clearTimeout(this.timer);
    this.stream.cancel();
  }

  private fail(reason: string): void {
    if (this.done) return;
    this.cancel();
    this.events.broken(reason);
  }
}
