import { createServer, connect, type Server, type Socket } from 'node:net';

/**
 * A network fault a FaultProxy applies to every connection through it, open or new, until it is healed:
 * - `latency`: each chunk is forwarded `ms` later, in both directions, in order;
 * - `stall`: nothing is forwarded either way; the connections stay open and what was sent waits (TCP back-pressure
 *   holds it in the kernel's buffers) until the fault heals, as behind a frozen middlebox;
 * - `one-way-stall`: the same in one direction only (`to-target`: what the client sends; `to-client`: the answers);
 * - `cut`: every open connection is reset, and new ones are reset as soon as they are accepted.
 */
export type NetworkFault =
  | { readonly kind: 'latency'; readonly ms: number }
  | { readonly kind: 'stall' }
  | { readonly kind: 'one-way-stall'; readonly direction: 'to-target' | 'to-client' }
  | { readonly kind: 'cut' };

export interface FaultProxyOptions {
  /** Where the proxy listens; port 0 takes a free one (read it back from `port`). */
  readonly listenHost: string;
  readonly listenPort: number;
  /** What it forwards to; `'same'` forwards to the port the proxy listens on (a target started behind it later). */
  readonly targetHost: string;
  readonly targetPort: number | 'same';
}

/** One direction of a proxied connection: reads `from`, writes `to`, obeying the proxy's current fault. */
class Pipe {
  private readonly delayed: { due: number; chunk: Buffer }[] = [];
  private timer: NodeJS.Timeout | undefined;
  private stalled = false;

  constructor(
    private readonly from: Socket,
    private readonly to: Socket,
    private readonly latencyMs: () => number,
  ) {
    from.on('data', (chunk: Buffer) => this.onData(chunk));
    from.on('end', () => this.whenFlushed(() => to.end()));
    to.on('drain', () => {
      if (!this.stalled) from.resume();
    });
  }

  /** Starts forwarding, unless the fault in force stalls this direction. */
  start(): void {
    if (!this.stalled) this.from.resume();
  }

  /** Stops reading (and forwarding what is delayed) until `release`. */
  stall(): void {
    this.stalled = true;
    this.from.pause();
    if (this.timer !== undefined) clearTimeout(this.timer);
    this.timer = undefined;
  }

  release(): void {
    if (!this.stalled) return;
    this.stalled = false;
    this.flush();
    this.from.resume();
  }

  private onData(chunk: Buffer): void {
    const ms = this.latencyMs();
    if (ms <= 0 && this.delayed.length === 0 && !this.stalled) {
      if (!this.to.write(chunk)) this.from.pause();
      return;
    }
    this.delayed.push({ due: Date.now() + ms, chunk });
    this.flush();
  }

  private flush(): void {
    if (this.stalled || this.timer !== undefined) return;
    const now = Date.now();
    while (this.delayed.length > 0 && this.delayed[0]!.due <= now) {
      if (!this.to.write(this.delayed.shift()!.chunk)) this.from.pause();
    }
    const next = this.delayed[0];
    if (next !== undefined) {
      this.timer = setTimeout(() => {
        this.timer = undefined;
        this.flush();
        this.onFlushed?.();
      }, next.due - now);
    }
  }

  private onFlushed: (() => void) | undefined;

  private whenFlushed(then: () => void): void {
    if (this.delayed.length === 0) {
      then();
      return;
    }
    this.onFlushed = () => {
      if (this.delayed.length === 0) then();
    };
  }

  discard(): void {
    if (this.timer !== undefined) clearTimeout(this.timer);
    this.timer = undefined;
    this.delayed.length = 0;
  }
}

interface ProxiedConnection {
  readonly client: Socket;
  readonly target: Socket;
  readonly toTarget: Pipe;
  readonly toClient: Pipe;
}

/**
 * A TCP proxy that injects network faults between a peer and a server, for real-process tests and the chaos soak
 * (docs/chaos.md). Hand-written: no maintained Node library offers an in-process proxy with these faults (Toxiproxy
 * is a separate Go server). Every fault applies to the connections open when it is set and to those that come later;
 * `heal()` lets held bytes flow again, in order.
 */
export class FaultProxy {
  private readonly connections = new Set<ProxiedConnection>();
  private current: NetworkFault | undefined;
  /** Connections accepted since the start (a test's proof that traffic went through the proxy). */
  accepted = 0;
  /** Bytes forwarded to the target and back (counted when read, whether forwarded yet or not). */
  bytesToTarget = 0;
  bytesToClient = 0;

  private constructor(
    private readonly server: Server,
    readonly options: FaultProxyOptions,
    readonly port: number,
  ) {}

  static async start(options: FaultProxyOptions): Promise<FaultProxy> {
    const server = createServer({ pauseOnConnect: true });
    await new Promise<void>((resolve, reject) => {
      server.once('error', reject);
      server.listen({ host: options.listenHost, port: options.listenPort }, () => {
        server.off('error', reject);
        resolve();
      });
    });
    const address = server.address();
    if (address === null || typeof address === 'string')
      throw new Error('the fault proxy has no TCP address');
    const proxy = new FaultProxy(server, options, address.port);
    server.on('connection', (client) => proxy.accept(client));
    return proxy;
  }

  /** The port connections are forwarded to. */
  get targetPort(): number {
    return this.options.targetPort === 'same' ? this.port : this.options.targetPort;
  }

  /** The fault in force, if any. */
  get fault(): NetworkFault | undefined {
    return this.current;
  }

  /** Connections open through the proxy now. */
  get open(): number {
    return this.connections.size;
  }

  /** Applies `fault` from now on (replacing the one in force), to open and new connections alike. */
  inject(fault: NetworkFault): void {
    this.heal();
    this.current = fault;
    for (const connection of [...this.connections]) this.applyTo(connection);
  }

  /** Ends the fault in force: held and delayed bytes flow again, new connections pass. */
  heal(): void {
    this.current = undefined;
    for (const connection of this.connections) {
      connection.toTarget.release();
      connection.toClient.release();
    }
  }

  /** Stops listening and resets every open connection. */
  async close(): Promise<void> {
    for (const connection of [...this.connections]) this.reset(connection);
    await new Promise<void>((resolve) => this.server.close(() => resolve()));
  }

  private accept(client: Socket): void {
    this.accepted += 1;
    if (this.current?.kind === 'cut') {
      client.resetAndDestroy();
      return;
    }
    // Both sides stay paused (no 'data' listener makes them flow) until the target answers and the fault is applied.
    client.pause();
    const target = connect({ host: this.options.targetHost, port: this.targetPort });
    target.pause();
    const latency = (): number => (this.current?.kind === 'latency' ? this.current.ms : 0);
    const connection: ProxiedConnection = {
      client,
      target,
      toTarget: new Pipe(client, target, latency),
      toClient: new Pipe(target, client, latency),
    };
    this.connections.add(connection);
    client.on('data', (chunk: Buffer) => (this.bytesToTarget += chunk.length));
    target.on('data', (chunk: Buffer) => (this.bytesToClient += chunk.length));
    // Either side failing or closing ends both, as a real path would: the other side sees a reset or an end.
    const closeBoth = (): void => this.reset(connection);
    client.on('error', closeBoth);
    target.on('error', closeBoth);
    client.on('close', closeBoth);
    target.on('close', closeBoth);
    target.once('connect', () => {
      this.applyTo(connection);
      connection.toTarget.start();
      connection.toClient.start();
    });
  }

  private applyTo(connection: ProxiedConnection): void {
    const fault = this.current;
    if (fault === undefined || fault.kind === 'latency') return;
    if (fault.kind === 'cut') {
      this.reset(connection);
      return;
    }
    if (fault.kind === 'stall' || fault.direction === 'to-target') connection.toTarget.stall();
    if (fault.kind === 'stall' || fault.direction === 'to-client') connection.toClient.stall();
  }

  private reset(connection: ProxiedConnection): void {
    if (!this.connections.delete(connection)) return;
    connection.toTarget.discard();
    connection.toClient.discard();
    // A reset (RST), not an orderly end: the peer learns at once that the path is gone.
    if (!connection.client.destroyed) connection.client.resetAndDestroy();
    if (!connection.target.destroyed) connection.target.resetAndDestroy();
  }
}
