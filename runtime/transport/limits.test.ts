// The transport's bounds on loopback (docs/operations.md, "Limits and hostile peers"): a connection paused for
// back-pressure finishes the frame under way and is never cut off as a slow sender while paused; a connection to a
// paused port completes its handshake and its frames wait; a peer that does
// not read is disconnected past svc.network.send.maxQueuedBytes; routes of silent tasks are forgotten.
import assert from 'node:assert/strict';
import { connect, type Socket } from 'node:net';
import { after, describe, it } from 'node:test';
import { pino } from 'pino';
import type { Envelope } from '../../core/machines/effects.ts';
import { CURRENT_RELEASE } from '../../core/release/version.ts';
import { encodeEnvelope, encodeHello, type WireEnvelope } from '../wire/index.ts';
import { AddressBook } from './addresses.ts';
import { ReceiveMemory } from './receive-memory.ts';
import { Transport, type TransportOptions } from './transport.ts';
import { within } from '../testing/deadline.ts';

const NODE = 'acceptor';
type Line = Record<string, unknown>;

/** A worker-role acceptor whose log lines and deliveries a test can wait on. */
class Acceptor {
  readonly transport: Transport;
  readonly lines: Line[] = [];
  readonly delivered: Envelope[] = [];
  private readonly waiters = new Set<() => void>();
  port = 0;

  constructor(options: Partial<TransportOptions>) {
    this.transport = new Transport({
      self: { role: 'worker', release: CURRENT_RELEASE, nodeId: NODE },
      maxFrameBytes: 1 << 24,
      frameTimeoutMs: 5_000,
      connectTimeoutMs: 5_000,
      addresses: new AddressBook(),
      logger: pino({ level: 'warn' }, { write: (text: string) => this.changed(JSON.parse(text) as Line) }),
      isLocal: () => false,
      deliver: (envelope) => {
        this.delivered.push(envelope);
        this.changed(undefined);
        return true;
      },
      sendFailed: () => undefined,
      logBurst: 100,
      ...options,
    });
  }

  async listen(service: string): Promise<void> {
    this.port = (await this.transport.listen(service, '127.0.0.1', 0)).port;
  }

  /** Resolves once `condition` holds (checked at every log line and delivery); fails, quoting it, after 30 s. */
  until(condition: () => boolean): Promise<void> {
    if (condition()) return Promise.resolve();
    const held = new Promise<void>((resolve) => {
      const check = (): void => {
        if (!condition()) return;
        this.waiters.delete(check);
        resolve();
      };
      this.waiters.add(check);
    });
    return within(held, `the acceptor to see ${condition.toString()}`);
  }

  closedLines(): Line[] {
    return this.lines.filter((line) => line.event === 'transport.connectionClosed');
  }

  changed(line: Line | undefined): void {
    if (line !== undefined) this.lines.push(line);
    for (const waiter of [...this.waiters]) waiter();
  }
}

function frameOf(envelope: WireEnvelope): Buffer {
  return Buffer.concat(encodeEnvelope(envelope));
}

function chunk(from: string, bytes: number): WireEnvelope {
  return {
    from,
    to: NODE,
    message: {
      type: 'ChunkData',
      status: 'SUCCESS',
      streamId: 1,
      chunkIndex: 0,
      bytes: new Uint8Array(bytes).fill(7),
      message: '',
    },
  };
}

/** A raw peer through its handshake: resolves once the hello was answered. */
async function shakeHands(port: number, nodeId: string): Promise<Socket> {
  const socket = connect({ host: '127.0.0.1', port });
  socket.on('error', () => undefined);
  await within(
    new Promise<void>((resolve) => socket.once('connect', () => resolve())),
    `${nodeId}'s connection`,
  );
  socket.write(encodeHello({ role: 'client', release: CURRENT_RELEASE, nodeId }));
  await within(
    new Promise<void>((resolve) => socket.once('data', () => resolve())),
    `${nodeId}'s hello reply`,
  );
  return socket;
}

const closedSocket = (socket: Socket): Promise<'closed'> =>
  new Promise((resolve) => {
    if (socket.destroyed) resolve('closed');
    else socket.once('close', () => resolve('closed'));
  });

describe('transport limits on loopback', () => {
  const started: Acceptor[] = [];
  const sockets: Socket[] = [];
  after(async () => {
    for (const socket of sockets) socket.destroy();
    await Promise.all(started.map((acceptor) => acceptor.transport.close()));
  });

  it('a connection paused for back-pressure finishes its frame, then waits unread past the frame deadline', async () => {
    let held = 0;
    const acceptor: Acceptor = new Acceptor({
      frameTimeoutMs: 300,
      receiveMemory: new ReceiveMemory({
        changed: (total) => {
          held = total;
          acceptor.changed(undefined);
        },
      }),
    });
    started.push(acceptor);
    await acceptor.listen('push');
    // Another port, not paused, for a connection that is read and stalls.
    const replicatePort = (await acceptor.transport.listen('replicate', '127.0.0.1', 0)).port;
    const paused = await shakeHands(acceptor.port, 'map-1');
    sockets.push(paused);
    const first = frameOf(chunk('map-1', 1 << 20));
    paused.write(first.subarray(0, 1000));
    // The acceptor holds part of the frame; back-pressure now pauses the port.
    await acceptor.until(() => held > 0);
    acceptor.transport.setPaused('push', true);
    paused.write(first.subarray(1000));
    const outcome = await Promise.race([
      acceptor.until(() => acceptor.delivered.length === 1).then(() => 'delivered' as const),
      closedSocket(paused),
    ]);
    assert.equal(outcome, 'delivered', 'the frame under way completes although the port is paused');
    // The paused connection now holds the start of a second frame in the kernel, unread. Another connection, not
    // paused (another port), begins a frame and stalls: its deadline passes, and the paused one must outlive it.
    const second = frameOf(chunk('map-1', 1000));
    paused.write(second.subarray(0, 10));
    const slow = await shakeHands(replicatePort, 'map-2');
    sockets.push(slow);
    slow.write(frameOf(chunk('map-2', 100)).subarray(0, 20));
    await acceptor.until(() => acceptor.closedLines().length >= 1);
    const closed = acceptor.closedLines();
    assert.equal(closed.length, 1, JSON.stringify(closed));
    assert.match(String(closed[0]!.reason), /too slowly/);
    assert.equal(closed[0]!.peerNode, 'map-2', 'only the connection that was read and stalled is cut off');
    assert.ok(!paused.destroyed, '!paused.destroyed');
    acceptor.transport.setPaused('push', false);
    paused.write(second.subarray(10));
    await acceptor.until(() => acceptor.delivered.length === 2);
    assert.equal(acceptor.closedLines().length, 1);
  });

  it('a new connection to a paused port completes its handshake; what it sends next waits for the port', async () => {
    const acceptor = new Acceptor({ connectTimeoutMs: 60_000 });
    started.push(acceptor);
    await acceptor.listen('push');
    acceptor.transport.setPaused('push', true);
    // Resolves only once the hello was answered: a port paused before the connection came still reads its hello.
    const socket = await shakeHands(acceptor.port, 'map-3');
    sockets.push(socket);
    socket.write(frameOf(chunk('map-3', 1000)));
    // The frame is in the acceptor's socket, unread; a delivery would be seen by this probe on the other port.
    const probePort = (await acceptor.transport.listen('replicate', '127.0.0.1', 0)).port;
    const probe = await shakeHands(probePort, 'probe');
    sockets.push(probe);
    probe.write(frameOf(chunk('probe', 10)));
    await acceptor.until(() => acceptor.delivered.length === 1);
    assert.deepEqual(
      acceptor.delivered.map((envelope) => envelope.from),
      ['probe'],
      "the probe, sent after the paused connection's frame, arrived; that frame did not",
    );
    acceptor.transport.setPaused('push', false);
    await acceptor.until(() => acceptor.delivered.length === 2);
    assert.equal(acceptor.delivered[1]!.from, 'map-3');
  });

  it('disconnects a peer that does not read once more than svc.network.send.maxQueuedBytes wait', async () => {
    const acceptor = new Acceptor({ maxQueuedBytes: 4 << 20 });
    started.push(acceptor);
    await acceptor.listen('fetch');
    const reader = await shakeHands(acceptor.port, 'reduce-1');
    sockets.push(reader);
    reader.pause();
    reader.write(frameOf(chunk('reduce-1', 10)));
    await acceptor.until(() => acceptor.delivered.length === 1);
    // Messages to the task go back on the connection it spoke on; the peer reads none of them.
    let sent = 0;
    while (acceptor.closedLines().length === 0 && sent < 64) {
      acceptor.transport.send({
        from: NODE,
        to: 'reduce-1',
        message: {
          type: 'ChunkData',
          status: 'SUCCESS',
          streamId: 1,
          chunkIndex: sent,
          bytes: new Uint8Array(1 << 20),
          message: '',
        },
      });
      sent += 1;
      await new Promise<void>((resolve) => setImmediate(resolve));
    }
    await acceptor.until(() => acceptor.closedLines().length > 0);
    const closed = acceptor.closedLines();
    assert.equal(closed.length, 1);
    assert.match(String(closed[0]!.reason), /reads too slowly.*svc\.network\.send\.maxQueuedBytes/);
    assert.ok(sent < 64, `closed after ${sent} MiB, not after all of them`);
  });

  it('forgets the route of a task that has been silent for the idle time', async () => {
    let now = 1_000_000;
    const acceptor = new Acceptor({ routeIdleMs: 10_000, now: () => now });
    started.push(acceptor);
    await acceptor.listen('push');
    const pooled = await shakeHands(acceptor.port, 'executor-1');
    sockets.push(pooled);
    for (let task = 0; task < 20; task += 1) pooled.write(frameOf(chunk(`map-${task}`, 10)));
    await acceptor.until(() => acceptor.delivered.length === 20);
    assert.equal(acceptor.transport.routeCount, 20, 'every task that spoke has a route');
    now += 20_000;
    pooled.write(frameOf(chunk('map-live', 10)));
    await acceptor.until(() => acceptor.delivered.length === 21);
    assert.equal(acceptor.transport.routeCount, 1, 'only the task that still speaks keeps its route');
  });
});
