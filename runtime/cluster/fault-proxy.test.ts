// The fault proxy on real sockets: bytes pass both ways, and each fault strikes (and heals) where it says.
import assert from 'node:assert/strict';
import { once } from 'node:events';
import { connect, createServer, type Server, type Socket } from 'node:net';
import { after, before, describe, it } from 'node:test';
import { within } from '../testing/deadline.ts';
import { FaultProxy } from './fault-proxy.ts';

/** An echo server that greets each connection with `hello\n` and records what each one received. */
class Target {
  readonly received: string[] = [];
  onReceive: ((text: string) => void) | undefined;
  private constructor(readonly server: Server) {}

  static async start(): Promise<Target> {
    const target = new Target(createServer());
    target.server.on('connection', (socket) => {
      socket.on('error', () => undefined);
      socket.write('hello\n');
      socket.on('data', (chunk: Buffer) => {
        target.received.push(chunk.toString());
        target.onReceive?.(chunk.toString());
        socket.write(chunk);
      });
    });
    target.server.listen(0, '127.0.0.1');
    await once(target.server, 'listening');
    return target;
  }

  get port(): number {
    return (this.server.address() as { port: number }).port;
  }
}

/** A client socket that collects what it reads; `until(text)` resolves once it has read that much. */
class Client {
  text = '';
  closed: Error | undefined | null = null;
  private readonly waiters: (() => void)[] = [];
  private constructor(readonly socket: Socket) {
    socket.on('data', (chunk: Buffer) => {
      this.text += chunk.toString();
      for (const waiter of this.waiters.splice(0)) waiter();
    });
    socket.on('error', (error) => (this.closed = error));
    socket.on('close', () => {
      this.closed ??= undefined;
      for (const waiter of this.waiters.splice(0)) waiter();
    });
  }

  static async open(port: number): Promise<Client> {
    const socket = connect(port, '127.0.0.1');
    const client = new Client(socket);
    await once(socket, 'connect');
    return client;
  }

  async until(text: string, what: string): Promise<void> {
    await within(
      (async () => {
        while (!this.text.includes(text)) {
          if (this.closed !== null) throw new Error(`closed before ${what}: ${String(this.closed)}`);
          await new Promise<void>((resolve) => this.waiters.push(resolve));
        }
      })(),
      what,
      10_000,
    );
  }

  async closedNow(what: string): Promise<Error | undefined> {
    // Not once(socket, 'close'): it rejects on the reset's 'error', which is what this waits to see.
    if (this.closed === null)
      await within(new Promise((resolve) => this.socket.once('close', resolve)), what, 10_000);
    return this.closed ?? undefined;
  }
}

describe('the fault proxy', () => {
  let target: Target;
  let proxy: FaultProxy;
  /** A second, unfaulted path to the same target: a round trip through it gives a faulted path time to misbehave. */
  let control: FaultProxy;
  const open: Client[] = [];

  before(async () => {
    target = await Target.start();
    const to = { listenHost: '127.0.0.1', listenPort: 0, targetHost: '127.0.0.1', targetPort: target.port };
    proxy = await FaultProxy.start(to);
    control = await FaultProxy.start(to);
  });
  after(async () => {
    for (const client of open) client.socket.destroy();
    await within(proxy.close(), 'the fault proxy to close');
    await within(control.close(), 'the control proxy to close');
    await within(
      new Promise((resolve) => target.server.close(resolve)),
      "the echo target's server to close (its connections ended)",
    );
  });

  const client = async (through: FaultProxy = proxy): Promise<Client> => {
    const opened = await Client.open(through.port);
    open.push(opened);
    return opened;
  };
  const roundTripElsewhere = async (): Promise<void> => {
    const other = await client(control);
    other.socket.write('control\n');
    await other.until('control\n', 'a round trip through the unfaulted proxy');
  };

  it('forwards bytes both ways', async () => {
    const c = await client();
    await c.until('hello\n', 'the greeting');
    c.socket.write('abc\n');
    await c.until('abc\n', 'the echo');
    assert.ok(proxy.accepted >= 1, 'proxy.accepted >= 1');
    assert.ok(
      proxy.bytesToTarget >= 4 && proxy.bytesToClient >= 10,
      'proxy.bytesToTarget >= 4 && proxy.bytesToClient >= 10',
    );
  });

  it('delays each direction by the latency it was given', async () => {
    const c = await client();
    await c.until('hello\n', 'the greeting');
    proxy.inject({ kind: 'latency', ms: 150 });
    const sent = Date.now();
    c.socket.write('slow\n');
    await c.until('slow\n', 'the delayed echo');
    proxy.heal();
    // Both directions were held at least the latency (a lower bound: the fault struck, not a timing target).
    assert.ok(Date.now() - sent >= 300, `round trip took ${Date.now() - sent} ms`);
  });

  it('stalls an open connection both ways, and lets the held bytes through in order once healed', async () => {
    const c = await client();
    await c.until('hello\n', 'the greeting');
    proxy.inject({ kind: 'stall' });
    let healed = false;
    target.onReceive = (text) => {
      if (text.includes('held')) assert.ok(healed, 'the target received bytes during a stall');
    };
    c.socket.write('held-1\n');
    c.socket.write('held-2\n');
    await roundTripElsewhere();
    assert.equal(c.text.includes('held'), false);
    healed = true;
    proxy.heal();
    await c.until('held-1\nheld-2\n', 'the held bytes after the heal');
    target.onReceive = undefined;
  });

  it('stalls one direction only', async () => {
    const c = await client();
    await c.until('hello\n', 'the greeting');
    proxy.inject({ kind: 'one-way-stall', direction: 'to-target' });
    const before = target.received.length;
    c.socket.write('one-way\n');
    // The other direction still flows: a new connection's greeting arrives while the client's bytes are held.
    const fresh = await client();
    await fresh.until('hello\n', 'the greeting through a one-way stall');
    await roundTripElsewhere();
    assert.equal(target.received.slice(before).join('').includes('one-way'), false);
    proxy.heal();
    await c.until('one-way\n', 'the echo after the heal');

    proxy.inject({ kind: 'one-way-stall', direction: 'to-client' });
    let arrived: () => void = () => undefined;
    const atTarget = new Promise<void>((resolve) => (arrived = resolve));
    target.onReceive = (text) => {
      if (text.includes('answer-me')) arrived();
    };
    c.socket.write('answer-me\n');
    await within(atTarget, 'the bytes at the target through a to-client stall', 10_000);
    await roundTripElsewhere();
    assert.equal(c.text.includes('answer-me'), false, 'the answer passed a to-client stall');
    proxy.heal();
    await c.until('answer-me\n', 'the answer after the heal');
    target.onReceive = undefined;
  });

  it('cuts open connections with a reset and refuses new ones until healed', async () => {
    const c = await client();
    await c.until('hello\n', 'the greeting');
    proxy.inject({ kind: 'cut' });
    const error = await c.closedNow('the cut connection to close');
    assert.equal(error !== undefined && 'code' in error ? error.code : undefined, 'ECONNRESET');
    assert.equal(proxy.open, 0);

    const during = Client.open(proxy.port).then(
      (opened) => opened,
      () => undefined,
    );
    const refused = await during;
    if (refused !== undefined) {
      open.push(refused);
      await refused.closedNow('a connection accepted during the cut to be reset');
      assert.equal(refused.text, '', 'a connection during a cut reached the target');
    }

    proxy.heal();
    const after = await client();
    await after.until('hello\n', 'a new connection after the heal');
  });
});
