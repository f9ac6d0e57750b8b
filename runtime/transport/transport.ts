import { createServer, type Server, type Socket } from 'node:net';
import type { TLSSocket } from 'node:tls';
import type { StatusCode } from '../../core/domain/status.ts';
import { defaultRouteIdleMs, portFull } from '../../core/interpreter/connection-limits.ts';
import { chooseConnection } from '../../core/interpreter/peer-connections.ts';
import { ReplyRoutes } from '../../core/interpreter/reply-routes.ts';
import { UnansweredRequests } from '../../core/interpreter/unanswered-requests.ts';
import type { SilentPeerSettings } from '../../core/interpreter/silent-peers.ts';
import type { Envelope, NodeId } from '../../core/machines/effects.ts';
import type { PlantedBug } from '../../core/planted-bugs.ts';
import { nameTheftRefusal, type SpeakerRules } from '../../core/protocol/speakers.ts';
import type { Release } from '../../core/release/version.ts';
import {
  acceptingStep,
  connectingStep,
  initialAcceptingState,
  initialConnectingState,
  type AcceptingConfig,
  type AcceptingEffect,
  refusalAnswer,
  type AcceptingInput,
  type AcceptingState,
  type ConnectingConfig,
  type ConnectingEffect,
  type ConnectingInput,
  type ConnectingState,
  type HelloAdmission,
  type SecretAnswer,
} from '../../core/handshake/index.ts';
import type { Logger } from '../log.ts';
import { RepeatedLog } from '../log-repeats.ts';
import {
  encodeAuthChallenge,
  encodeAuthProof,
  encodeEnvelope,
  encodeHello,
  encodeHelloReply,
  PING_FRAME,
  PONG_FRAME,
  type DecodedFrame,
  type Hello,
  type HelloReply,
  type WireEnvelope,
} from '../wire/index.ts';
import { addressText, type Address, type AddressBook } from './addresses.ts';
import { authMac, newNonce, proofMatches, type TransportAuth } from './authentication.ts';
import { acceptInPlace, Connection, type ConnectionLimits, type InPlaceReading } from './connection.ts';
import { SilenceWatch, type SilenceHooks } from './silence.ts';
import { tlsRefusalReason, TlsSetup, type TransportTls } from './tls.ts';

export interface TransportOptions extends ConnectionLimits {
  /** What this process says of itself in every handshake. */
  readonly self: Hello;
  /** Connecting plus the handshake, both ways; a peer that says nothing for this long is cut off. */
  readonly connectTimeoutMs: number;
  readonly addresses: AddressBook;
  readonly logger: Logger;
  /**
   * Which connecting peers are admitted by release (core/handshake/admission.ts; ./release-admission.ts builds a
   * server's). Absent: every release (a process that serves no clients).
   */
  readonly admit?: HelloAdmission;
  /** Whether a node lives in this process: envelopes to it are delivered without a socket. */
  readonly isLocal: (node: NodeId) => boolean;
  /** Hands an arrived envelope to the node it is for; false when no such node lives here. */
  readonly deliver: (envelope: Envelope) => boolean;
  /**
   * A send that could not be attempted (no address, connection refused, the peer went away before its handshake), or
   * a request whose connection closed before its answer came (a killed peer): the sender learns at once instead of
   * waiting out its timeout, as a primary pushing to a dead replica must.
   */
  readonly sendFailed: (envelope: WireEnvelope, sent?: boolean) => void;
  /**
   * The peer refused this process at the handshake: its release (CLIENT_RELEASE_REFUSED) or its proof
   * (AUTHENTICATION_FAILED, also when the peer requires authentication and this process has it off); `message`
   * says why and what to change.
   */
  readonly refused?: (peer: string, message: string, status: StatusCode) => void;
  /**
   * A connection this process opened closed before its handshake completed: refused, unreachable, or closed by a
   * peer that speaks TLS; `reason` says which (and what to check).
   */
  readonly connectFailed?: (peer: string, reason: string) => void;
  /**
   * The pieces of a frame were written to the socket (or the write failed) and the socket needs them no more: a
   * worker takes back the read buffers its chunks were served in (runtime/storage/read-buffers.ts). Called only for
   * frames with raw payloads; never for a frame that was not written (its connection closed first).
   */
  readonly written?: (pieces: readonly Uint8Array[]) => void;
  /**
   * A peer failed authentication here: refused at the handshake (AUTHENTICATION_FAILED), or closed for a proof
   * checked later or a node name it may not use. Servers count it (AuthenticationFailCount), as the core counts
   * the requests it refuses.
   */
  readonly authenticationFailed?: () => void;
  /** TLS on every server and connection (svc.ssl.enabled); absent: plaintext. */
  readonly tls?: TransportTls;
  /**
   * Application authentication (svc.auth.enabled; ./authentication.ts): every accepted connection proves the
   * identity its hello claims, and envelopes carry the principal they arrived with. Absent: off (no challenge,
   * no principal).
   */
  readonly auth?: TransportAuth;
  /**
   * The most connections one port holds at once (svc.network.port.maxConnections); one more is closed as it is
   * accepted. Absent: no cap.
   */
  readonly maxConnectionsPerPort?: number;
  /**
   * How many connections to keep to a peer whose port serves `service` (rpc, push, fetch, replicate):
   * svc.<module>.io.numConnectionsPerPeer of the module (./node-network.ts). Absent: one.
   */
  readonly connectionsPerPeer?: (service: string) => number;
  /** The interval over which repeated warnings of one cause become one summary line (svc.log.summary.interval). */
  readonly logSummaryIntervalMs?: number;
  /** Lines of one cause written in full per interval before the rest are counted (default 3). */
  readonly logBurst?: number;
  /**
   * How long a route to a node without an address (a task) is kept after the node last spoke: a task that ended
   * says nothing more, and its route goes. Absent: twice svc.network.timeout.
   */
  readonly routeIdleMs?: number;
  /** The clock routes are aged by (ms); absent: Date.now. */
  readonly now?: () => number;
  /**
   * When a peer address that owes answers is pinged and given up as silent (svc.network.silentPeer.*;
   * core/interpreter/silent-peers.ts). Absent: never; each request waits out its own deadline.
   */
  readonly silentPeer?: SilentPeerSettings;
  /** Test-only (core/planted-bugs.ts), for the record of unanswered requests; no configuration key sets it. */
  readonly plantedBug?: PlantedBug;
}

/** An accepted connection through its handshake (the core's accepting machine decides; this moves its bytes). */
interface Inbound {
  readonly connection: Connection;
  readonly service: string;
  readonly peer: string;
  readonly handshake: AcceptingState;
  /** Envelopes received and not yet delivered: the machine says when (a later proof holds them). */
  readonly received: WireEnvelope[];
}

interface Queued {
  readonly envelope: WireEnvelope;
  readonly pieces: readonly Uint8Array[];
  readonly written?: () => void;
}

/** An outgoing connection to one address: queues sends until the peer accepted the handshake. */
interface Link {
  readonly address: Address;
  readonly pool: Pool;
  state: 'handshaking' | 'open' | 'closed';
  readonly connection: Connection;
  readonly queue: Queued[];
  peerRelease?: Release;
  timer?: NodeJS.Timeout;
  /** The core's connecting machine (core/handshake/connecting.ts). */
  readonly handshake: ConnectingState;
}

/**
 * The connections to one peer address (svc.<module>.io.numConnectionsPerPeer of its port's module); which one a
 * message takes is the core's choice (core/interpreter/peer-connections.ts).
 */
interface Pool {
  readonly key: string;
  readonly wanted: number;
  /** Open or opening, in the order they were opened. */
  readonly links: Link[];
  cursor: number;
  /** Nodes awaiting answers on one of the links: they keep speaking on it until answered. */
  readonly holders: Map<NodeId, { readonly link: Link; awaiting: number }>;
}

/**
 * svc's network layer for one process: listens on its ports, keeps a pool of connections per peer address
 * (svc.<module>.io.numConnectionsPerPeer),
 * performs the handshake (role, release, node id) on every connection, and routes envelopes. A reply goes back on
 * the connection its request came on; any other message goes to the destination's address (./addresses.ts) or, for
 * a node without one (a task), to the connection it last spoke on. Every decision about what to send is the
 * machines'; this only moves bytes and reports what could not be moved as `sendFailed`, as the simulator does.
 */
export class Transport {
  private readonly servers = new Map<string, Server>();
  private readonly inbound = new Map<string, Set<Connection>>();
  private readonly pools = new Map<string, Pool>();
  /** Where each node's replies go: the connection it last spoke on (the core's table, as the simulator's). */
  private readonly routes: ReplyRoutes<Connection>;
  private readonly paused = new Set<string>();
  /** Requests written on each link and not answered yet: failed at their senders when the link closes. */
  private readonly unanswered: UnansweredRequests<Link, WireEnvelope>;
  private closing = false;
  private readonly tls: TlsSetup | undefined;
  /** Warnings hostile peers can repeat at will, summarised per interval. */
  private readonly repeated: RepeatedLog;

  /** Who may speak as which node and take over whose route (core/protocol/speakers.ts). */
  private readonly speakerRules: SpeakerRules;
  private readonly accepting: AcceptingConfig;
  private readonly connecting: ConnectingConfig;
  /** The peers it waits for that have gone silent (./silence.ts); absent without options.silentPeer. */
  private readonly silence: SilenceWatch | undefined;
  /** The address behind each link key, for the silence watch's probes. */
  private readonly addressOf = new Map<string, { readonly address: Address; readonly service: string }>();

  constructor(private readonly options: TransportOptions) {
    this.speakerRules = { authenticated: options.auth !== undefined };
    this.unanswered = new UnansweredRequests(
      options.plantedBug === undefined ? {} : { plantedBug: options.plantedBug },
    );
    const self = options.self;
    this.accepting = {
      self: { release: self.release, nodeId: self.nodeId },
      admission: options.admit ?? { release: self.release, servesClients: false },
      authenticated: options.auth !== undefined,
    };
    this.connecting = { self, authenticated: options.auth !== undefined };
    this.tls = options.tls === undefined ? undefined : new TlsSetup(options.tls);
    this.routes = new ReplyRoutes(
      this.speakerRules,
      options.routeIdleMs ?? defaultRouteIdleMs(options.frameTimeoutMs),
      this.now(),
      {
        key: (connection) => connection,
        open: (connection) => !connection.closed,
        principal: (connection) => connection.principal,
      },
    );
    this.repeated = new RepeatedLog(options.logger, {
      intervalMs: options.logSummaryIntervalMs ?? 10_000,
      ...(options.logBurst === undefined ? {} : { burst: options.logBurst }),
    });
    this.silence =
      options.silentPeer === undefined
        ? undefined
        : new SilenceWatch(options.silentPeer, this.silenceHooks(), options.plantedBug);
  }

  /** Nodes a reply or message can be routed to through the connection they spoke on. */
  get routeCount(): number {
    return this.routes.size;
  }

  /**
   * Whether a connection this transport opened holds bytes its socket has not handed to the kernel: they move only
   * when the event loop turns (a map writing in a loop asks for a turn when they do: runtime/client).
   */
  hasQueuedWrites(): boolean {
    for (const pool of this.pools.values()) {
      for (const link of pool.links)
        if (link.queue.length > 0 || link.connection.queuedBytes > 0) return true;
    }
    return false;
  }

  /** Whether connections are TLS (svc.ssl.enabled). */
  get secure(): boolean {
    return this.tls !== undefined;
  }

  /** Starts a server for `service` (rpc, push, fetch, replicate); port 0 takes a free one. Resolves the bound address. */
  async listen(service: string, host: string, port: number): Promise<Address> {
    const server = this.createServer(service);
    const connections = new Set<Connection>();
    this.inbound.set(service, connections);
    this.servers.set(service, server);
    await new Promise<void>((resolve, reject) => {
      server.once('error', reject);
      server.listen({ host, port, backlog: 1024 }, () => {
        server.off('error', reject);
        resolve();
      });
    });
    server.on('error', (error) =>
      this.options.logger.error({ event: 'transport.serverError', service, error }),
    );
    if (this.tls === undefined) {
      acceptInPlace(server, (socket, reading) => this.accept(service, socket, reading));
    }
    const bound = server.address();
    if (bound === null || typeof bound === 'string')
      throw new Error(`the ${service} server has no TCP address`);
    return { host, port: bound.port };
  }

  send(envelope: WireEnvelope): void {
    if (this.closing) return;
    if (this.options.isLocal(envelope.to)) {
      // A node of this process (a driver's own lifecycle manager): no socket, but still asynchronous, as a network is.
      const principal = this.options.auth?.principal;
      const local: Envelope = {
        ...envelope,
        fromRelease: this.options.self.release,
        ...(principal === undefined ? {} : { principal }),
      };
      queueMicrotask(() => this.options.deliver(local));
      return;
    }
    const pieces = encodeEnvelope(envelope);
    // Raw payloads travel as pieces of their own: whoever lent them may have them back once they are written.
    const givesBack = this.options.written;
    const written = givesBack !== undefined && pieces.length > 1 ? () => givesBack(pieces) : undefined;
    if (envelope.inReplyTo !== undefined) {
      const route = this.routes.route(envelope.to);
      if (route !== undefined) {
        route.write(pieces, written);
        return;
      }
    }
    const reached = this.options.addresses.reach(envelope.to, envelope.message);
    if (reached !== undefined && this.silence?.mayAsk(addressText(reached.address)) === false) {
      // Given up as silent and not heard from since: the sender learns at once, and moves the work elsewhere.
      queueMicrotask(() => this.options.sendFailed(envelope));
      return;
    }
    if (reached !== undefined) {
      const link = this.link(reached.address, reached.service, envelope);
      this.sendVia(link, { envelope, pieces, ...(written === undefined ? {} : { written }) });
      return;
    }
    const route = this.routes.route(envelope.to);
    if (route !== undefined) route.write(pieces, written);
    else this.options.sendFailed(envelope);
  }

  /** Stops (or restarts) reading from the connections of a service: the worker's back-pressure on pushes. */
  setPaused(service: string, paused: boolean): void {
    if (paused === this.paused.has(service)) return;
    if (paused) this.paused.add(service);
    else this.paused.delete(service);
    for (const connection of this.inbound.get(service) ?? []) {
      if (!connection.isHandshaken) continue; // paused once its handshake is done (`accept`)
      if (paused) connection.pauseFor('backPressure');
      else connection.resumeFor('backPressure');
    }
  }

  isPaused(service: string): boolean {
    return this.paused.has(service);
  }

  /** Closes every server and connection. */
  async close(): Promise<void> {
    this.closing = true;
    this.silence?.close();
    const closed = [...this.servers.values()].map(
      (server) => new Promise<void>((resolve) => server.close(() => resolve())),
    );
    for (const connections of this.inbound.values()) for (const c of connections) c.destroy('shutting down');
    for (const pool of this.pools.values()) {
      for (const link of [...pool.links]) link.connection.destroy('shutting down');
    }
    this.repeated.flush();
    await Promise.all(closed);
  }

  // ------------------------------------------------------------------ accepting

  /** A plaintext server, or a TLS one whose failed handshakes are logged with what the peer should change. */
  private createServer(service: string): Server {
    if (this.tls === undefined) return createServer((socket) => this.accept(service, socket));
    const server = this.tls.createServer(this.options.connectTimeoutMs, (socket) =>
      this.accept(service, socket),
    );
    server.on('tlsClientError', (error: NodeJS.ErrnoException, socket: TLSSocket) => {
      if (this.closing) return;
      const peer = `${socket.remoteAddress ?? '?'}:${socket.remotePort ?? '?'}`;
      const reason = tlsRefusalReason(error);
      this.repeated.warn(
        error.code ?? 'tls',
        { event: 'transport.tlsRefused', service, peer, code: error.code, reason },
        `refused a ${service} connection from ${peer}: ${reason}`,
      );
    });
    return server;
  }

  private accept(service: string, socket: Socket, reading?: InPlaceReading): void {
    if (this.closing) {
      socket.destroy();
      return;
    }
    const peer = `${socket.remoteAddress ?? '?'}:${socket.remotePort ?? '?'}`;
    const connections = this.inbound.get(service)!;
    const cap = this.options.maxConnectionsPerPort;
    if (portFull(connections.size, cap)) {
      // Refused before anything is allocated for it: the peer sees its connection closed at once.
      socket.destroy();
      this.repeated.warn(
        'tooManyConnections',
        { event: 'transport.connectionRefused', service, peer, connections: connections.size },
        `refused a ${service} connection from ${peer}: the port holds ${connections.size} connections, ` +
          'its limit (svc.network.port.maxConnections)',
      );
      return;
    }
    // Covers the hello and, with authentication on, the proof: the peer has this long to say who it is.
    const handshakeTimer = setTimeout(() => {
      connection.destroy(
        `no handshake within ${this.options.connectTimeoutMs} ms (svc.network.connect.timeout)`,
        'noHandshake',
      );
    }, this.options.connectTimeoutMs);
    handshakeTimer.unref();
    let greeting = true;
    const connection: Connection = new Connection(
      socket,
      this.options,
      {
        onFrame: (frame) => {
          if (frame.kind === 'ping' && inbound.handshake.phase === 'open') {
            // Answered here, not by the machine: a busy process still shows it is alive.
            connection.write([PONG_FRAME]);
            return;
          }
          const input: AcceptingInput =
            frame.kind === 'hello'
              ? { kind: 'hello', hello: frame.hello, nonce: newNonce() }
              : frame.kind === 'authProof'
                ? { kind: 'proof', mac: frame.mac }
                : frame.kind === 'envelope'
                  ? { kind: 'envelope' }
                  : { kind: 'frame', frame: frame.kind };
          if (frame.kind === 'envelope') inbound.received.push(frame.envelope);
          this.runAccepting(inbound, input);
          // The peer had this long to say who it is (the hello and, with authentication on, the proof): the
          // deadline goes once, when the handshake ends, not at every frame after it.
          if (greeting && inbound.handshake.phase !== 'hello' && inbound.handshake.phase !== 'proof') {
            greeting = false;
            clearTimeout(handshakeTimer);
          }
        },
        onClose: (reason) => {
          clearTimeout(handshakeTimer);
          connections.delete(connection);
          this.forget(connection);
          if (reason !== undefined && !this.closing) {
            this.repeated.warn(
              connection.closeCause ?? 'other',
              {
                event: 'transport.connectionClosed',
                service,
                peer,
                peerNode: inbound.handshake.hello?.nodeId,
                reason,
              },
              `closed a ${service} connection from ${peer}: ${reason}`,
            );
          }
        },
      },
      reading,
    );
    const inbound: Inbound = {
      connection,
      service,
      peer,
      handshake: initialAcceptingState(),
      received: [],
    };
    connections.add(connection);
    connection.pacesReading = true;
    // Not paused before its handshake is done (`accept`), even on a paused port: a few bytes, under the handshake
    // deadline; the peer connects, and what it sends next waits for the port, under its request's timeout rather
    // than its connect timeout.
  }

  /**
   * Runs the accepting machine on `first` and executes its effects; answers a driver gives at once (a proof's
   * check, a secret known here) are fed back in order before this returns.
   */
  private runAccepting(inbound: Inbound, first: AcceptingInput): void {
    const inputs: AcceptingInput[] = [first];
    for (let input = inputs.shift(); input !== undefined; input = inputs.shift()) {
      const { effects } = acceptingStep(this.accepting, inbound.handshake, input);
      for (const effect of effects) this.executeAccepting(inbound, effect, inputs);
    }
  }

  private executeAccepting(inbound: Inbound, effect: AcceptingEffect, inputs: AcceptingInput[]): void {
    const connection = inbound.connection;
    switch (effect.kind) {
      case 'challenge':
        connection.write([encodeAuthChallenge(effect.nonce)]);
        return;
      case 'lookupSecret':
        this.lookUpSecret(inbound, effect.hello, effect.fresh, inputs);
        return;
      case 'checkProof':
        inputs.push({
          kind: 'proofChecked',
          matches: proofMatches(effect.secret, effect.hello, effect.nonce, effect.mac),
        });
        return;
      case 'accept':
        connection.principal = effect.principal;
        connection.handshaken();
        connection.write([encodeHelloReply(effect.reply)]);
        if (this.paused.has(inbound.service)) connection.pauseFor('backPressure');
        return;
      case 'refuse':
        this.refuse(inbound, effect.reply);
        return;
      case 'proved':
        connection.principal = effect.principal;
        return;
      case 'deliver':
        for (const wire of inbound.received.splice(0, effect.count)) this.arrivedInbound(inbound, wire);
        return;
      case 'close':
        inbound.received.length = 0;
        connection.destroy(effect.reason, effect.cause);
        return;
      case 'authenticationFailed':
        this.options.authenticationFailed?.();
    }
  }

  /**
   * The secret a hello's claim must prove, from this process's source (./authentication.ts): known here, the answer
   * goes in at once; asked elsewhere (a worker asks the master), it goes in when it comes, unless the connection
   * closed meanwhile.
   */
  private lookUpSecret(inbound: Inbound, hello: Hello, fresh: boolean, inputs: AcceptingInput[]): void {
    const auth = this.options.auth!;
    let answer: SecretAnswer | Promise<SecretAnswer>;
    try {
      answer = auth.expectedSecret(hello, fresh);
    } catch (error) {
      answer = cannotCheck(error);
    }
    if (!(answer instanceof Promise)) {
      inputs.push({ kind: 'secret', answer });
      return;
    }
    void answer
      .catch((error: unknown) => cannotCheck(error))
      .then((settled) => {
        if (!inbound.connection.closed) this.runAccepting(inbound, { kind: 'secret', answer: settled });
      });
  }

  /** Answers the hello with a refusal and closes once it is sent. */
  private refuse(inbound: Inbound, reply: HelloReply): void {
    const hello = inbound.handshake.hello!;
    const { status, message } = reply;
    this.repeated.warn(
      status,
      {
        event: 'transport.peerRefused',
        service: inbound.service,
        peer: inbound.peer,
        peerNode: hello.nodeId,
        peerRole: hello.role,
        peerRelease: hello.release,
        ...(hello.application === undefined ? {} : { peerApplication: hello.application }),
        status,
        reason: message,
      },
      message,
    );
    inbound.connection.write([encodeHelloReply(reply)]);
    inbound.connection.end();
  }

  /** An envelope the accepting machine lets through: the speaker rules decide whether it is taken. */
  private arrivedInbound(inbound: Inbound, wire: WireEnvelope): void {
    const connection = inbound.connection;
    const hello = inbound.handshake.hello!;
    // A client connection speaks only as nodes of the application it proves (or, provisionally, claims): no
    // application can hold another's node names, nor the replies meant for them (core/protocol/speakers.ts).
    const theft = nameTheftRefusal(this.speakerRules, hello, connection.principal, wire.from);
    if (theft !== undefined) {
      this.options.authenticationFailed?.();
      connection.destroy(theft, 'speaksAsAnotherApplication');
      return;
    }
    this.arrived(connection, wire, hello.release, hello.followsLeader === true);
  }

  // ------------------------------------------------------------------ connecting

  /** Connections accepted on each port and not closed yet (a server's ActiveConnectionCount). */
  acceptedConnections(): { readonly service: string; readonly count: number }[] {
    return [...this.inbound.entries()].map(([service, connections]) => ({
      service,
      count: connections.size,
    }));
  }

  /**
   * The connection `envelope` goes on to `address`: the pool's connections are opened up to its size, and the core
   * chooses among them (the one its sender awaits an answer on, else the least loaded, in turn).
   */
  private link(address: Address, service: string, envelope: WireEnvelope): Link {
    const pool = this.poolFor(address, service);
    const held = pool.holders.get(envelope.from)?.link;
    const choice = chooseConnection({
      loads: pool.links.map((link) => link.queue.length + this.unanswered.waiting(link)),
      wanted: pool.wanted,
      cursor: pool.cursor,
      ...(held === undefined ? {} : { held: pool.links.indexOf(held) }),
    });
    for (let opened = 0; opened < choice.open; opened++) pool.links.push(this.openLink(address, pool));
    pool.cursor = choice.cursor;
    const link = pool.links[choice.index]!;
    if (envelope.requestId !== undefined && envelope.inReplyTo === undefined) {
      const holder = pool.holders.get(envelope.from);
      if (holder === undefined) pool.holders.set(envelope.from, { link, awaiting: 1 });
      else holder.awaiting += 1;
    }
    return link;
  }

  /** The pool of connections to `address`, made on first use. */
  private poolFor(address: Address, service: string): Pool {
    const key = addressText(address);
    let pool = this.pools.get(key);
    if (pool === undefined) {
      const wanted = this.options.connectionsPerPeer?.(service) ?? 1;
      pool = { key, wanted, links: [], cursor: 0, holders: new Map() };
      this.pools.set(key, pool);
      this.addressOf.set(key, { address, service });
    }
    return pool;
  }

  private openLink(address: Address, pool: Pool): Link {
    const key = pool.key;
    const events = {
      onFrame: (frame: DecodedFrame) => this.onLinkFrame(link, frame),
      onClose: (reason: string | undefined) => this.onLinkClosed(link, reason),
    };
    const connection =
      this.tls === undefined
        ? Connection.open(address, this.options, events)
        : new Connection(this.tls.connect(address), this.options, events);
    const socket = connection.socket;
    const link: Link = {
      address,
      pool,
      state: 'handshaking',
      queue: [],
      connection,
      handshake: initialConnectingState(),
    };
    link.timer = setTimeout(() => {
      link.connection.destroy(
        `no handshake reply from ${key} within ${this.options.connectTimeoutMs} ms (svc.network.connect.timeout)`,
      );
    }, this.options.connectTimeoutMs);
    link.timer.unref();
    // Over TLS the hello waits for the handshake, so that nothing is sent to a peer whose certificate failed.
    socket.once(this.tls === undefined ? 'connect' : 'secureConnect', () =>
      this.runConnecting(link, { kind: 'connected' }),
    );
    return link;
  }

  private sendVia(link: Link, queued: Queued): void {
    if (link.state === 'open') this.writeOn(link, queued);
    else link.queue.push(queued);
  }

  private writeOn(link: Link, queued: Queued): void {
    const { envelope } = queued;
    if (envelope.requestId !== undefined && envelope.inReplyTo === undefined)
      this.unanswered.asked(link, envelope.from, envelope.requestId, envelope, this.now());
    link.connection.write(queued.pieces, queued.written);
  }

  private onLinkFrame(link: Link, frame: DecodedFrame): void {
    this.silence?.heard(addressText(link.address));
    if (link.state === 'open' && frame.kind === 'pong') {
      this.options.logger.debug({ event: 'transport.pong', peer: addressText(link.address) }, 'pong');
      return;
    }
    if (link.state === 'open' && frame.kind === 'envelope') {
      const { envelope } = frame;
      if (
        envelope.inReplyTo !== undefined &&
        this.unanswered.answered(link, envelope.to, envelope.inReplyTo)
      ) {
        this.holderAnswered(link, envelope.to);
      }
      this.arrived(link.connection, envelope, link.peerRelease!);
      return;
    }
    this.runConnecting(
      link,
      frame.kind === 'authChallenge'
        ? { kind: 'challenge', nonce: frame.nonce }
        : frame.kind === 'helloReply'
          ? { kind: 'reply', reply: frame.reply }
          : { kind: 'frame', frame: frame.kind },
    );
  }

  /** Runs the connecting machine (core/handshake/connecting.ts) on `input` and executes its effects. */
  private runConnecting(link: Link, input: ConnectingInput): void {
    const { effects } = connectingStep(this.connecting, link.handshake, input);
    for (const effect of effects) this.executeConnecting(link, effect);
  }

  private executeConnecting(link: Link, effect: ConnectingEffect): void {
    switch (effect.kind) {
      case 'sendHello':
        link.connection.write([encodeHello(effect.hello)]);
        return;
      case 'prove':
        link.connection.write([
          encodeAuthProof(authMac(this.options.auth!.secret, this.options.self, effect.nonce)),
        ]);
        return;
      case 'open':
        clearTimeout(link.timer);
        link.state = 'open';
        link.peerRelease = effect.peerRelease;
        link.connection.handshaken();
        // The peer is the one this process chose to reach (and, over TLS, proved its certificate).
        link.connection.principal = effect.principal;
        for (const queued of link.queue.splice(0)) this.writeOn(link, queued);
        return;
      case 'refused': {
        clearTimeout(link.timer);
        if (!effect.authenticationRequired) {
          this.linkRefused(link, effect.status, effect.message, effect.release);
          return;
        }
        const peer = addressText(link.address);
        const message = `the peer ${peer} ${effect.message}`;
        this.options.logger.warn(
          { event: 'transport.authenticationRequired', peer, reason: message },
          message,
        );
        this.linkRefused(link, effect.status, message, effect.release);
        return;
      }
      case 'close':
        link.connection.destroy(effect.reason, effect.cause);
    }
  }

  /** The handshake failed for a reason the peer gave: queued requests are answered with it, and the link closes. */
  private linkRefused(link: Link, status: StatusCode, message: string, release: Release): void {
    link.state = 'closed';
    this.leavePool(link);
    this.options.refused?.(addressText(link.address), message, status);
    for (const { envelope } of link.queue.splice(0)) this.refusedRequest(envelope, status, message, release);
    link.connection.end();
  }

  /**
   * A request queued on a connection whose handshake the peer refused gets the answer the peer's core would have
   * given it (StatusResponse CLIENT_RELEASE_REFUSED or AUTHENTICATION_FAILED with the peer's message), so that the
   * asking machine learns why at once instead of from a timeout.
   */
  private refusedRequest(
    envelope: WireEnvelope,
    status: StatusCode,
    message: string,
    release: Release,
  ): void {
    const answer = refusalAnswer(envelope, { status, message, release });
    if (answer !== undefined) this.options.deliver(answer);
  }

  /** `node` got an answer on `link`: once it awaits none, its next message may take another connection. */
  private holderAnswered(link: Link, node: NodeId): void {
    const holder = link.pool.holders.get(node);
    if (holder === undefined || holder.link !== link) return;
    holder.awaiting -= 1;
    if (holder.awaiting <= 0) link.pool.holders.delete(node);
  }

  /** A closed link leaves its pool (the next message opens its replacement), and so do the nodes it held. */
  private leavePool(link: Link): void {
    const pool = link.pool;
    const index = pool.links.indexOf(link);
    if (index >= 0) pool.links.splice(index, 1);
    for (const [node, holder] of pool.holders) if (holder.link === link) pool.holders.delete(node);
    if (pool.links.length === 0 && this.pools.get(pool.key) === pool) this.pools.delete(pool.key);
  }

  private onLinkClosed(link: Link, closeReason: string | undefined): void {
    clearTimeout(link.timer);
    const key = addressText(link.address);
    this.leavePool(link);
    this.forget(link.connection);
    const wasOpen = link.state === 'open';
    // A TLS port closes on a plaintext hello without a word (as does a peer that went away): say what to check.
    const reason =
      closeReason ??
      (link.state === 'handshaking'
        ? `the peer closed the connection before answering the handshake` +
          (this.tls === undefined
            ? ' (if its port requires TLS, set svc.ssl.enabled=true and svc.ssl.caFile here)'
            : '')
        : undefined);
    link.state = 'closed';
    if (!wasOpen && reason !== undefined && !this.closing) this.options.connectFailed?.(key, reason);
    for (const { envelope } of link.queue.splice(0)) this.options.sendFailed(envelope);
    // Requests the peer took but never answered: it died or dropped the connection, and no answer can come on
    // another one (answers go back where their request came from).
    const unanswered = this.unanswered.ended(link);
    if (!this.closing) for (const envelope of unanswered) this.options.sendFailed(envelope, true);
    if (reason !== undefined && !this.closing) {
      this.options.logger.warn(
        { event: 'transport.connectionClosed', peer: key, established: wasOpen, reason },
        `connection to ${key} closed: ${reason}`,
      );
    }
  }

  // ------------------------------------------------------------------ both ways

  private arrived(
    connection: Connection,
    wire: WireEnvelope,
    fromRelease: Release,
    followsLeader = false,
  ): void {
    const principal = connection.principal;
    // A node's replies go where it last spoke: who may take them over is the core's rule.
    const takeover = this.routes.spoke(wire.from, connection, this.now());
    if (takeover !== undefined) {
      this.options.authenticationFailed?.();
      connection.destroy(takeover, 'routeTakeover');
      return;
    }
    const envelope: Envelope = {
      ...wire,
      fromRelease,
      ...(principal === undefined ? {} : { principal }),
      ...(followsLeader ? { peerFollowsLeader: true as const } : {}),
    };
    if (!this.options.deliver(envelope)) {
      this.options.logger.debug(
        { event: 'transport.noSuchNode', to: wire.to, from: wire.from, type: wire.message.type },
        `no node ${wire.to} here`,
      );
    }
  }

  /** The silence watch's view of the links (./silence.ts). */
  private silenceHooks(): SilenceHooks {
    return {
      owing: () => this.owing(),
      ping: (peer) => {
        for (const link of this.pools.get(peer)?.links ?? []) {
          if (link.state !== 'open' || this.unanswered.waiting(link) === 0) continue;
          this.options.logger.debug({ event: 'transport.ping', peer }, `ping ${peer}`);
          link.connection.write([PING_FRAME]);
        }
      },
      silent: (peer, unheardMs) => {
        const links = [...(this.pools.get(peer)?.links ?? [])];
        const owed = links.reduce((sum, link) => sum + this.unanswered.waiting(link), 0);
        // Each close fails what its link owes and logs its reason: the lines a silence costs.
        for (const link of links) {
          link.connection.destroy(
            `silent for ${unheardMs} ms while owing ${owed} answer(s) (svc.network.silentPeer.timeout); ` +
              `requests to it fail at once until it answers again`,
          );
        }
      },
      back: (peer) =>
        this.options.logger.info(
          { event: 'transport.peerBack', peer },
          `${peer} answers again after its silence`,
        ),
      probe: (peer) => {
        const known = this.addressOf.get(peer);
        if (known === undefined) return;
        const pool = this.poolFor(known.address, known.service);
        if (pool.links.length === 0) pool.links.push(this.openLink(known.address, pool));
      },
      resumed: (pausedMs) =>
        this.options.logger.warn(
          { event: 'transport.resumed', pausedMs },
          `this process did not run for ${pausedMs} ms: its peers' silence is measured from now`,
        ),
      now: () => this.now(),
    };
  }

  /** Each peer address that owes answers, with when the oldest was asked on any of its connections. */
  private *owing(): Iterable<readonly [string, number]> {
    for (const [key, pool] of this.pools) {
      let oldest: number | undefined;
      for (const link of pool.links) {
        const since = this.unanswered.waitingSince(link);
        if (since !== undefined && (oldest === undefined || since < oldest)) oldest = since;
      }
      if (oldest !== undefined) yield [key, oldest];
    }
  }

  private forget(connection: Connection): void {
    this.routes.forget(connection);
  }

  /** The clock routes are aged by. */
  private now(): number {
    return this.options.now?.() ?? Date.now();
  }
}

/** A secret source that failed: the claim cannot be checked, and the connection is refused saying why. */
function cannotCheck(error: unknown): SecretAnswer {
  return { kind: 'refused', message: `cannot check the proof: ${(error as Error).message}` };
}
