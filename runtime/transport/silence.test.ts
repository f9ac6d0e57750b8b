// The transport gives up on a silent peer once (issue 34): a peer that owes answers is pinged, and one that answers
// nothing, not even the pings, for svc.network.silentPeer.timeout is silent: every request it owes fails at once,
// its connection closes, and requests to it fail at once until a probe's handshake is answered. A slow peer that
// answers its pings is never given up. The peer is made silent by a fault proxy that stalls both ways (what a cut
// link does: the connection stays open and nothing comes back).
import assert from 'node:assert/strict';
import { after, describe, it } from 'node:test';
import { pino } from 'pino';
import type { Envelope } from '../../core/machines/effects.ts';
import { CURRENT_RELEASE } from '../../core/release/version.ts';
import { REGISTRY } from '../../conf/registry/registry.ts';
import { parseDurationMs } from '../../conf/values.ts';
import { FaultProxy } from '../cluster/fault-proxy.ts';
import { within } from '../testing/deadline.ts';
import type { WireEnvelope } from '../wire/index.ts';
import { AddressBook } from './addresses.ts';
import { SILENT_PEER_DEFAULTS } from './node-network.ts';
import { Transport } from './transport.ts';

const SETTINGS = { pingAfterMs: 100, silentAfterMs: 600 };
type Line = Record<string, unknown>;

/** A transport whose log lines, deliveries and failed sends a test can wait on. */
class Peer {
  readonly transport: Transport;
  readonly lines: Line[] = [];
  readonly delivered: Envelope[] = [];
  readonly failed: { readonly envelope: WireEnvelope; readonly at: number }[] = [];
  private readonly waiters = new Set<() => void>();

  constructor(
    readonly nodeId: string,
    addresses: AddressBook,
  ) {
    this.transport = new Transport({
      self: { role: 'worker', release: CURRENT_RELEASE, nodeId },
      maxFrameBytes: 1 << 20,
      frameTimeoutMs: 60_000,
      connectTimeoutMs: 5_000,
      addresses,
      logger: pino({ level: 'debug' }, { write: (text: string) => this.changed(JSON.parse(text) as Line) }),
      isLocal: () => false,
      deliver: (envelope) => {
        this.delivered.push(envelope);
        this.changed(undefined);
        return true;
      },
      sendFailed: (envelope) => {
        this.failed.push({ envelope, at: Date.now() });
        this.changed(undefined);
      },
      silentPeer: SETTINGS,
    });
  }

  /** Resolves once `condition` holds (checked at every log line, delivery and failure); fails after 30 s. */
  until(condition: () => boolean, what: string): Promise<void> {
    if (condition()) return Promise.resolve();
    const held = new Promise<void>((resolve) => {
      const check = (): void => {
        if (!condition()) return;
        this.waiters.delete(check);
        resolve();
      };
      this.waiters.add(check);
    });
    return within(held, `${this.nodeId} to see ${what}`);
  }

  seen(event: string): Line[] {
    return this.lines.filter((line) => line.event === event);
  }

  private changed(line: Line | undefined): void {
    if (line !== undefined) this.lines.push(line);
    for (const waiter of [...this.waiters]) waiter();
  }
}

function request(requestId: number): WireEnvelope {
  return {
    from: 'asker',
    to: 'answerer',
    requestId,
    message: { type: 'FetchChunk', streamId: 1, chunkIndex: requestId },
  };
}

describe('a silent peer in the transport (loopback, a stalling proxy)', () => {
  const closing: (() => Promise<void>)[] = [];
  after(async () => {
    for (const close of closing.reverse()) await close();
  });

  async function pair(): Promise<{ asker: Peer; answerer: Peer; proxy: FaultProxy }> {
    const answerer = new Peer('answerer', new AddressBook());
    closing.push(() => answerer.transport.close());
    const port = (await answerer.transport.listen('rpc', '127.0.0.1', 0)).port;
    const proxy = await FaultProxy.start({
      listenHost: '127.0.0.1',
      listenPort: 0,
      targetHost: '127.0.0.1',
      targetPort: port,
    });
    closing.push(() => proxy.close());
    const addresses = new AddressBook();
    addresses.set('answerer', { host: '127.0.0.1', port: proxy.port });
    const asker = new Peer('asker', addresses);
    closing.push(() => asker.transport.close());
    return { asker, answerer, proxy };
  }

  it('never gives up a peer that answers its pings, however long its answer takes', async () => {
    const { asker, answerer } = await pair();
    asker.transport.send(request(1));
    await answerer.until(() => answerer.delivered.length === 1, 'the request');
    const askedAt = Date.now();
    // Pongs keep coming: wait for one later than the silence bound after the request.
    await asker.until(
      () => asker.seen('transport.pong').length > 0 && Date.now() - askedAt > SETTINGS.silentAfterMs * 2,
      'pongs past twice the silence bound',
    );
    assert.deepEqual(asker.failed, [], 'the unanswered request is still waited for');
    assert.ok(asker.seen('transport.ping').length >= 2, 'it was pinged while it owed an answer');
  });

  it('fails what a silent peer owes at once, asks nothing of it until it answers again, then uses it', async () => {
    const { asker, answerer, proxy } = await pair();
    asker.transport.send(request(1));
    await answerer.until(() => answerer.delivered.length === 1, 'the first request');
    const stalledAt = Date.now();
    proxy.inject({ kind: 'stall' });
    asker.transport.send(request(2)); // taken by the silent peer's connection, never answered
    await asker.until(() => asker.failed.length === 2, 'both requests failed');
    assert.deepEqual(
      asker.failed.map((f) => f.envelope.requestId).sort(),
      [1, 2],
      'every request the silent peer owed failed, together',
    );
    assert.ok(
      asker.failed.every((f) => f.at - stalledAt >= SETTINGS.silentAfterMs - SETTINGS.pingAfterMs),
      'not before it was unheard from for the silence bound',
    );
    const closed = asker.seen('transport.connectionClosed');
    assert.equal(closed.length, 1, 'one line says so');
    assert.match(String(closed[0]!.reason), /silent for \d+ ms .*svc\.network\.silentPeer\.timeout/);

    // Silent and not heard from: a new request fails at once, and no request reaches the peer.
    const accepted = proxy.accepted;
    asker.transport.send(request(3));
    await asker.until(() => asker.failed.length === 3, 'the third request failed');
    assert.equal(asker.failed[2]!.envelope.requestId, 3, 'the request to the silent peer failed');
    assert.equal(answerer.delivered.length, 1, 'nothing more reached the peer');

    // The network heals: a probe's handshake is answered, and requests flow again.
    proxy.heal();
    await asker.until(() => asker.seen('transport.peerBack').length === 1, 'the peer answering again');
    assert.ok(proxy.accepted > accepted, 'a probe opened a new connection');
    asker.transport.send(request(4));
    await answerer.until(
      () => answerer.delivered.some((envelope) => envelope.requestId === 4),
      'the fourth request',
    );
  });

  it('has the registry’s defaults for releases whose configuration lacks the keys', () => {
    const defaultOf = (key: string): number => {
      const text = REGISTRY.entry(key).entry.declaredDefault;
      const parsed = parseDurationMs(text ?? '');
      assert.ok(parsed.ok, `${key} has a duration default`);
      return parsed.value;
    };
    assert.deepEqual(SILENT_PEER_DEFAULTS, {
      pingAfterMs: defaultOf('svc.network.silentPeer.pingInterval'),
      silentAfterMs: defaultOf('svc.network.silentPeer.timeout'),
    });
  });
});
