// The etcd v3 client of svc: the calls of runtime/ha/proto (etcd's own schema, generated with protoc-gen-es) over
// @grpc/grpc-js. Each call has a deadline (svc.master.ha.etcd.requestTimeout, after raft.client.rpc.request.timeout);
// nothing is retried here: a failed call is reported to the caller, which decides (docs/high-availability.md, "The
// etcd client").
import { create, fromBinary, toBinary, type DescMessage, type MessageShape } from '@bufbuild/protobuf';
import type { GenService, GenServiceMethods } from '@bufbuild/protobuf/codegenv2';
import * as grpc from '@grpc/grpc-js';
import { readFileSync } from 'node:fs';
import {
  Auth,
  KV,
  Lease,
  Maintenance,
  Watch,
  type LeaseKeepAliveRequestSchema,
  type LeaseKeepAliveResponseSchema,
  type WatchRequestSchema,
  type WatchResponseSchema,
} from './proto/gen/etcd/etcdserverpb/rpc_pb.ts';

export interface EtcdTls {
  /** PEM file of the authority that signed etcd's certificate. */
  readonly caFile?: string;
  /** PEM files of the client certificate and key, when etcd asks clients for one (--client-cert-auth). */
  readonly certFile?: string;
  readonly keyFile?: string;
}

export interface EtcdClientOptions {
  /** host:port of each etcd member; calls go to one, and move to the next when it is unreachable. */
  readonly endpoints: readonly string[];
  readonly requestTimeoutMs: number;
  readonly tls?: EtcdTls;
  /** etcd's own users (etcdctl user add): the token it returns goes with every call. */
  readonly user?: { readonly name: string; readonly password: string };
}

/** A call that etcd did not answer (unreachable, timed out) or refused; `code` is the gRPC status. */
export class EtcdCallError extends Error {
  override readonly name = 'EtcdCallError';
  constructor(
    readonly method: string,
    readonly code: grpc.status,
    details: string,
  ) {
    super(`etcd ${method}: ${grpc.status[code] ?? String(code)}: ${details}`);
  }

  /** Whether etcd could not be reached or did not answer in time (as opposed to a refusal). */
  get unreachable(): boolean {
    return this.code === grpc.status.UNAVAILABLE || this.code === grpc.status.DEADLINE_EXCEEDED;
  }
}

type ServiceOf<S> = S extends GenService<infer M> ? M : never;

function credentialsOf(tls: EtcdTls | undefined): grpc.ChannelCredentials {
  if (tls === undefined) return grpc.credentials.createInsecure();
  const read = (file: string | undefined): Buffer | null => (file === undefined ? null : readFileSync(file));
  return grpc.credentials.createSsl(read(tls.caFile), read(tls.keyFile), read(tls.certFile));
}

export class EtcdClient {
  private readonly channels: grpc.Client[];
  private current = 0;
  private token: string | undefined;

  constructor(private readonly options: EtcdClientOptions) {
    if (options.endpoints.length === 0) throw new Error('no etcd endpoint configured');
    const credentials = credentialsOf(options.tls);
    // grpc-js would otherwise wait minutes between reconnection attempts once an endpoint has failed a few times;
    // a master must notice etcd's return within about a lease.
    const channelOptions = {
      'grpc.initial_reconnect_backoff_ms': 100,
      'grpc.max_reconnect_backoff_ms': 1000,
      'grpc.keepalive_time_ms': 10_000,
      'grpc.keepalive_timeout_ms': 5_000,
      // A page of keys may exceed grpc's 4 MiB default; etcd sends up to its own limit.
      'grpc.max_receive_message_length': 256 * 1024 * 1024,
    };
    this.channels = options.endpoints.map(
      (endpoint) => new grpc.Client(endpoint, credentials, channelOptions),
    );
  }

  get endpoint(): string {
    return this.options.endpoints[this.current]!;
  }

  readonly kv = this.service(KV);
  readonly lease = this.service(Lease);
  readonly maintenance = this.service(Maintenance);

  /** The bidirectional keep-alive stream of leases (one per lease holder). */
  keepAliveStream(): grpc.ClientDuplexStream<
    MessageShape<typeof LeaseKeepAliveRequestSchema>,
    MessageShape<typeof LeaseKeepAliveResponseSchema>
  > {
    return this.stream(Lease.method.leaseKeepAlive, `/${Lease.typeName}/LeaseKeepAlive`);
  }

  /** The bidirectional watch stream (many watches may share one). */
  watchStream(): grpc.ClientDuplexStream<
    MessageShape<typeof WatchRequestSchema>,
    MessageShape<typeof WatchResponseSchema>
  > {
    return this.stream(Watch.method.watch, `/${Watch.typeName}/Watch`);
  }

  close(): void {
    for (const channel of this.channels) channel.close();
  }

  private service<S extends GenService<GenServiceMethods>>(
    service: S,
  ): {
    [K in keyof ServiceOf<S>]: (
      request: Partial<MessageShape<ServiceOf<S>[K]['input']>>,
    ) => Promise<MessageShape<ServiceOf<S>[K]['output']>>;
  } {
    const calls: Record<string, unknown> = {};
    for (const [name, method] of Object.entries(service.method)) {
      const path = `/${service.typeName}/${method.name}`;
      calls[name] = (request: object) => this.unary(path, method.input, method.output, request);
    }
    return calls as never;
  }

  private async unary<I extends DescMessage, O extends DescMessage>(
    path: string,
    input: I,
    output: O,
    request: object,
  ): Promise<MessageShape<O>> {
    const message = create(input, request as never);
    try {
      return await this.send(path, input, output, message, await this.metadata());
    } catch (error) {
      // etcd forgets tokens when it restarts; one new token, then the call again.
      if (error instanceof EtcdCallError && error.code === grpc.status.UNAUTHENTICATED && this.options.user) {
        this.token = undefined;
        return this.send(path, input, output, message, await this.metadata());
      }
      throw error;
    }
  }

  private send<I extends DescMessage, O extends DescMessage>(
    path: string,
    input: I,
    output: O,
    message: MessageShape<I>,
    metadata: grpc.Metadata,
  ): Promise<MessageShape<O>> {
    const channel = this.channels[this.current]!;
    return new Promise((resolve, reject) => {
      channel.makeUnaryRequest(
        path,
        (value: MessageShape<I>) => Buffer.from(toBinary(input, value)),
        (bytes: Buffer) => fromBinary(output, bytes),
        message,
        metadata,
        { deadline: Date.now() + this.options.requestTimeoutMs },
        (error, response) => {
          if (error !== null) {
            const failure = new EtcdCallError(path, error.code, error.details);
            if (failure.unreachable) this.current = (this.current + 1) % this.channels.length;
            reject(failure);
          } else resolve(response!);
        },
      );
    });
  }

  private stream<I extends DescMessage, O extends DescMessage>(
    method: { readonly input: I; readonly output: O },
    path: string,
  ): grpc.ClientDuplexStream<MessageShape<I>, MessageShape<O>> {
    const metadata = new grpc.Metadata();
    if (this.token !== undefined) metadata.set('token', this.token);
    const call = this.channels[this.current]!.makeBidiStreamRequest(
      path,
      (value: MessageShape<I>) => Buffer.from(toBinary(method.input, value)),
      (bytes: Buffer) => fromBinary(method.output, bytes),
      metadata,
    );
    // A stream opened on a token etcd forgot (restarted, or the token's TTL passed): the next call fetches a new one.
    call.on('error', (error: grpc.ServiceError) => {
      if (error.code === grpc.status.UNAUTHENTICATED && this.token === metadata.get('token')[0]) {
        this.token = undefined;
      }
    });
    return call;
  }

  /** The token of etcd's authentication, fetched once per client and again after etcd forgot it. */
  private async metadata(): Promise<grpc.Metadata> {
    const metadata = new grpc.Metadata();
    const user = this.options.user;
    if (user === undefined) return metadata;
    if (this.token === undefined) {
      const path = `/${Auth.typeName}/Authenticate`;
      const method = Auth.method.authenticate;
      const answer = await this.send(
        path,
        method.input,
        method.output,
        create(method.input, { name: user.name, password: user.password }),
        new grpc.Metadata(),
      );
      this.token = answer.token;
    }
    metadata.set('token', this.token);
    return metadata;
  }
}
