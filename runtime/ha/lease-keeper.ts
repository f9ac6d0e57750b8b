// Keeps one etcd lease alive over a keep-alive stream and reports each renewal with the local time its request was
// sent: etcd counts the lease's time to live from when it received that request, so a holder that counts from when
// it sent it stops believing in the lease no later than etcd lets it expire.
import { create } from '@bufbuild/protobuf';
import type { EtcdClient } from './etcd-client.ts';
import { LeaseKeepAliveRequestSchema } from './proto/gen/etcd/etcdserverpb/rpc_pb.ts';

export interface LeaseKeeperEvents {
  /** etcd renewed the lease for `ttlSeconds`, counted from no earlier than `sentAtMs` (local clock). */
  renewed(ttlSeconds: number, sentAtMs: number): void;
  /** etcd answered that the lease no longer exists: it expired or was revoked. */
  expired(): void;
  /** The stream failed (etcd unreachable or restarting): it is opened again at the next renewal. */
  unreachable(reason: string): void;
}

export class LeaseKeeper {
  private stream: ReturnType<EtcdClient['keepAliveStream']> | undefined;
  private timer: NodeJS.Timeout | undefined;
  private readonly sentAt: number[] = [];
  private stopped = false;

  constructor(
    private readonly client: EtcdClient,
    readonly leaseId: bigint,
    private readonly intervalMs: number,
    private readonly events: LeaseKeeperEvents,
    private readonly now: () => number = Date.now,
  ) {}

  start(): void {
    this.renew();
    this.timer = setInterval(() => this.renew(), this.intervalMs);
  }

  stop(): void {
    this.stopped = true;
    clearInterval(this.timer);
    this.stream?.cancel();
    this.stream = undefined;
  }

  private renew(): void {
    if (this.stopped) return;
    const stream = this.stream ?? this.open();
    this.sentAt.push(this.now());
    stream.write(create(LeaseKeepAliveRequestSchema, { ID: this.leaseId }));
  }

  private open(): NonNullable<LeaseKeeper['stream']> {
    const stream = this.client.keepAliveStream();
    this.stream = stream;
    this.sentAt.length = 0;
    stream.on('data', (answer: { TTL: bigint }) => {
      if (this.stopped || this.stream !== stream) return;
      const sentAtMs = this.sentAt.shift() ?? this.now();
      if (answer.TTL <= 0n) {
        this.stop();
        this.events.expired();
      } else this.events.renewed(Number(answer.TTL), sentAtMs);
    });
    const broken = (reason: string): void => {
      if (this.stream !== stream) return;
      this.stream = undefined;
      if (!this.stopped) this.events.unreachable(reason);
    };
    stream.on('error', (error: Error) => broken(error.message));
    stream.on('end', () => broken('etcd ended the keep-alive stream'));
    return stream;
  }
}
