import { createServer, type Server, type Socket } from 'node:net';
import type { TLSSocket } from 'node:tls';
import type { StatusCode } from '../../core/domain/status.ts';
import { defaultRouteIdleMs, portFull } from '../../core/interpreter/connection-limits.ts';
import { UnansweredRequests } from '../../core/interpreter/unanswered-requests.ts';
import type { Envelope, NodeId, Principal } from '../../core/machines/effects.ts';
import type { PlantedBug } from '../../core/planted-bugs.ts';
import {
  nameTheftRefusal,
  routeExpired,
  routeSweepDue,
  routeTakeoverRefusal,
  type SpeakerRules,
} from '../../core/protocol/speakers.ts';
import type { Release } from '../../core/release/version.ts';
import type { Logger } from '../log.ts';
import { RepeatedLog } from '../log-repeats.ts';
import {
  encodeAuthChallenge,
  encodeAuthProof,
  encodeEnvelope,
  encodeHello,
  encodeHelloReply,
  type DecodedFrame,
  type Hello,
  type WireEnvelope,
} from '../wire/index.ts';
import { addressText, type Address, type AddressBook } from './addresses.ts';
import {
  authAdvice,
  authMac,
  newNonce,
  proofMatches,
  type ExpectedSecret,
  type TransportAuth,
} from './authentication.ts';
import { acceptInPlace, Connection, type ConnectionLimits, type InPlaceReading } from './connection.ts';
import { tlsRefusalReason, TlsSetup, type TransportTls } from './tls.ts';

export type Admission =
  | { readonly accepted: true }
  | { readonly accepted: false; readonly status: StatusCode; readonly message: string };

export interface TransportOptions extends ConnectionLimits {
  /** What this process says of itself in every handshake. */
  readonly self: Hello;
  /** Connecting plus the handshake, both ways; a peer that says nothing for this long is cut off. */
  readonly connectTimeoutMs: number;
  readonly addresses: AddressBook;
  readonly logger: Logger;
  /** Whether a connecting peer is accepted (the core's admission rule, applied by the caller). */
  readonly admit: (hello: Hello) => Admission;
  /** Whether a node lives in this process: envelopes to it are delivered without a socket. */
  readonly isLocal: (node: NodeId) => boolean;
  /** Hands an arrived envelope to the node it is for; false when no such node lives here. */
  readonly deliver: (envelope: Envelope) => boolean;
  /**
   * A send that could not be attempted (no address, connection refused, the peer went away before its handshake), or
   * a request whose connection closed before its answer came (a killed peer): the sender learns at once instead of
   * waiting out its timeout, as a primary pushing to a dead replica must.
   */
  readonly sendFailed: (envelope: WireEnvelope) => void;
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
  /** Test-only (core/planted-bugs.ts), for the record of unanswered requests; no configuration key sets it. */
  readonly plantedBug?: PlantedBug;
}

const SERVER: Principal = { kind: 'server' };

/** An accepted connection through its handshake. */
interface Inbound {
  readonly connection: Connection;
  readonly service: string;
  readonly peer: string;
  phase: 'hello' | 'proof' | 'verifying' | 'open';
  hello?: Hello;
  nonce?: Uint8Array;
  /** The secret the hello's claim must prove, looked up while the proof travels. */
  expected?: Promise<ExpectedSecret>;
  /** A proof kept to verify once the secret is known (ExpectedSecret 'later'). */
  pending?: {
    readonly later: () => string | undefined;
    readonly principal: Principal;
    readonly mac: Uint8Array;
  };
}

interface Queued {
  readonly envelope: WireEnvelope;
  readonly pieces: readonly Uint8Array[];
  readonly written?: () => void;
}

/** An outgoing connection to one address: queues sends until the peer accepted the handshake. */
interface Link {
  readonly address: Address;
  state: 'handshaking' | 'open' | 'closed';
  readonly connection: Connection;
  readonly queue: Queued[];
  peerRelease?: Release;
  timer?: NodeJS.Timeout;
  /** Whether this process already answered the peer's authentication challenge. */
  proved?: boolean;
}

/**
 * svc's network layer for one process: listens on its ports, keeps one pooled connection per peer address,
 * performs the handshake (role, release, node id) on every connection, and routes envelopes. A reply goes back on
 * the connection its request came on; any other message goes to the destination's address (./addresses.ts) or, for
 * a node without one (a task), to the connection it last spoke on. Every decision about what to send is the
 * machines'; this only moves bytes and reports what could not be moved as `sendFailed`, as the simulator does.
 */
export class Transport {
  private readonly servers = new Map<string, Server>();
  private readonly inbound = new Map<string, Set<Connection>>();
  private readonly links = new Map<string, Link>();
  private readonly routes = new Map<NodeId, Connection>();
  /** When each routed node last spoke (ms since the epoch), to forget the routes of tasks that ended. */
  private readonly routeSpoke = new Map<NodeId, number>();
  private lastRouteSweep: number;
  private readonly paused = new Set<string>();
  /** Requests written on each link and not answered yet: failed at their senders when the link closes. */
  private readonly unanswered: UnansweredRequests<Link, WireEnvelope>;
  private closing = false;
  private readonly tls: TlsSetup | undefined;
  /** Warnings hostile peers can repeat at will, summarised per interval. */
  private readonly repeated: RepeatedLog;

  /** Who may speak as which node and take over whose route (core/protocol/speakers.ts). */
  private readonly speakerRules: SpeakerRules;

  constructor(private readonly options: TransportOptions) {
    this.speakerRules = { authenticated: options.auth !== undefined };
    this.unanswered = new UnansweredRequests(
      options.plantedBug === undefined ? {} : { plantedBug: options.plantedBug },
    );
    this.tls = options.tls === undefined ? undefined : new TlsSetup(options.tls);
    this.lastRouteSweep = this.now();
    this.repeated = new RepeatedLog(options.logger, {
      intervalMs: options.logSummaryIntervalMs ?? 10_000,
      ...(options.logBurst === undefined ? {} : { burst: options.logBurst }),
    });
  }

  /** Nodes a reply or message can be routed to through the connection they spoke on. */
  get routeCount(): number {
    return this.routes.size;
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
      const route = this.routes.get(envelope.to);
      if (route !== undefined && !route.closed) {
        route.write(pieces, written);
        return;
      }
    }
    const address = this.options.addresses.resolve(envelope.to, envelope.message);
    if (address !== undefined) {
      this.sendVia(this.link(address), { envelope, pieces, ...(written === undefined ? {} : { written }) });
      return;
    }
    const route = this.routes.get(envelope.to);
    if (route !== undefined && !route.closed) route.write(pieces, written);
    else this.options.sendFailed(envelope);
  }

  /** Stops (or restarts) reading from the connections of a service: the worker's back-pressure on pushes. */
  setPaused(service: string, paused: boolean): void {
    if (paused === this.paused.has(service)) return;
    if (paused) this.paused.add(service);
    else this.paused.delete(service);
    for (const connection of this.inbound.get(service) ?? []) {
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
    const closed = [...this.servers.values()].map(
      (server) => new Promise<void>((resolve) => server.close(() => resolve())),
    );
    for (const connections of this.inbound.values()) for (const c of connections) c.destroy('shutting down');
    for (const link of this.links.values()) link.connection.destroy('shutting down');
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
    const connection: Connection = new Connection(
      socket,
      this.options,
      {
        onFrame: (frame) => {
          switch (inbound.phase) {
            case 'hello':
              if (frame.kind !== 'hello') {
                connection.destroy(
                  `expected a handshake first, got a ${frame.kind} frame`,
                  'unexpectedFrame',
                );
                return;
              }
              inbound.hello = frame.hello;
              if (!this.answerHello(inbound)) clearTimeout(handshakeTimer);
              return;
            case 'proof':
              if (frame.kind !== 'authProof') {
                connection.destroy(
                  `expected an authentication proof, got a ${frame.kind} frame`,
                  'unexpectedFrame',
                );
                return;
              }
              clearTimeout(handshakeTimer);
              inbound.phase = 'verifying';
              void this.verifyProof(inbound, frame.mac);
              return;
            case 'verifying':
              connection.destroy(
                `a ${frame.kind} frame before the handshake was answered`,
                'unexpectedFrame',
              );
              return;
            case 'open':
              if (frame.kind !== 'envelope') {
                connection.destroy(`unexpected ${frame.kind} frame after the handshake`, 'unexpectedFrame');
                return;
              }
              this.arrivedInbound(inbound, frame.envelope);
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
                peerNode: inbound.hello?.nodeId,
                reason,
              },
              `closed a ${service} connection from ${peer}: ${reason}`,
            );
          }
        },
      },
      reading,
    );
    const inbound: Inbound = { connection, service, peer, phase: 'hello' };
    connections.add(connection);
    connection.pacesReading = true;
    if (this.paused.has(service)) connection.pauseFor('backPressure');
  }

  /** Answers a hello: accepted, refused, or (authentication on) challenged; true when a proof is now awaited. */
  private answerHello(inbound: Inbound): boolean {
    const hello = inbound.hello!;
    const admission = this.options.admit(hello);
    if (!admission.accepted) {
      this.refuse(inbound, admission.status, admission.message);
      return false;
    }
    const auth = this.options.auth;
    if (auth === undefined) {
      this.acceptHello(inbound, undefined);
      return false;
    }
    if (hello.role === 'client' && (hello.application ?? '') === '') {
      this.refuse(
        inbound,
        'AUTHENTICATION_FAILED',
        `authentication is on (svc.auth.enabled) and client ${hello.nodeId} names no application in its ` +
          'handshake: use a client of this build, with svc.auth.enabled=true and its application’s secret',
      );
      return false;
    }
    // The secret is looked up while the challenge and the proof travel (a worker may have to ask the master).
    inbound.expected = this.expectedSecret(auth, hello, false);
    inbound.expected.catch(() => undefined);
    inbound.nonce = newNonce();
    inbound.phase = 'proof';
    inbound.connection.write([encodeAuthChallenge(inbound.nonce)]);
    return true;
  }

  private async expectedSecret(auth: TransportAuth, hello: Hello, fresh: boolean): Promise<ExpectedSecret> {
    try {
      return await auth.expectedSecret(hello, fresh);
    } catch (error) {
      return { kind: 'refused', message: `cannot check the proof: ${(error as Error).message}` };
    }
  }

  /** Checks a proof against the secret the hello's claim needs; answers the hello either way. */
  private async verifyProof(inbound: Inbound, mac: Uint8Array): Promise<void> {
    const auth = this.options.auth!;
    const hello = inbound.hello!;
    const nonce = inbound.nonce!;
    let expected = await inbound.expected!;
    if (inbound.connection.closed) return;
    if (
      expected.kind === 'secret' &&
      expected.cached === true &&
      !proofMatches(expected.secret, hello, nonce, mac)
    ) {
      // A cached secret may be stale (the application registered again): ask once more, without the cache.
      expected = await this.expectedSecret(auth, hello, true);
      if (inbound.connection.closed) return;
    }
    switch (expected.kind) {
      case 'refused':
        this.refuse(inbound, 'AUTHENTICATION_FAILED', `authentication failed: ${expected.message}`);
        return;
      case 'later':
        inbound.pending = { later: expected.later, principal: expected.principal, mac };
        this.acceptHello(inbound, undefined);
        return;
      case 'secret':
        if (proofMatches(expected.secret, hello, nonce, mac)) this.acceptHello(inbound, expected.principal);
        else this.refuse(inbound, 'AUTHENTICATION_FAILED', mismatch(hello));
    }
  }

  private acceptHello(inbound: Inbound, principal: Principal | undefined): void {
    const self = this.options.self;
    inbound.phase = 'open';
    inbound.connection.principal = principal;
    inbound.connection.handshaken();
    inbound.connection.write([
      encodeHelloReply({
        accepted: true,
        status: 'SUCCESS',
        message: '',
        release: self.release,
        nodeId: self.nodeId,
      }),
    ]);
  }

  /** Answers the hello with a refusal and closes once it is sent. */
  private refuse(inbound: Inbound, status: StatusCode, message: string): void {
    const self = this.options.self;
    const hello = inbound.hello!;
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
    if (status === 'AUTHENTICATION_FAILED') this.options.authenticationFailed?.();
    inbound.phase = 'verifying';
    inbound.connection.write([
      encodeHelloReply({ accepted: false, status, message, release: self.release, nodeId: self.nodeId }),
    ]);
    inbound.connection.end();
  }

  /**
   * An envelope on an accepted connection. A connection accepted before its secret was known has its proof checked
   * at the first envelope after the secret is: it is then its application, or it is closed.
   */
  private arrivedInbound(inbound: Inbound, wire: WireEnvelope): void {
    const connection = inbound.connection;
    const pending = inbound.pending;
    if (pending !== undefined) {
      const secret = pending.later();
      if (secret !== undefined) {
        inbound.pending = undefined;
        if (!proofMatches(secret, inbound.hello!, inbound.nonce!, pending.mac)) {
          this.options.authenticationFailed?.();
          connection.destroy(
            `${mismatch(inbound.hello!)} (checked once the application had registered its secret)`,
            'authenticationFailed',
          );
          return;
        }
        connection.principal = pending.principal;
      }
    }
    const hello = inbound.hello!;
    // A client connection speaks only as nodes of the application it proves (or, provisionally, claims): no
    // application can hold another's node names, nor the replies meant for them (core/protocol/speakers.ts).
    const theft = nameTheftRefusal(this.speakerRules, hello, connection.principal, wire.from);
    if (theft !== undefined) {
      this.options.authenticationFailed?.();
      connection.destroy(theft, 'speaksAsAnotherApplication');
      return;
    }
    this.arrived(connection, wire, hello.release);
  }

  // ------------------------------------------------------------------ connecting

  private link(address: Address): Link {
    const key = addressText(address);
    const existing = this.links.get(key);
    if (existing !== undefined && existing.state !== 'closed') return existing;
    const events = {
      onFrame: (frame: DecodedFrame) => this.onLinkFrame(link, frame),
      onClose: (reason: string | undefined) => this.onLinkClosed(link, reason),
    };
    const connection =
      this.tls === undefined
        ? Connection.open(address, this.options, events)
        : new Connection(this.tls.connect(address), this.options, events);
    const socket = connection.socket;
    const link: Link = { address, state: 'handshaking', queue: [], connection };
    link.timer = setTimeout(() => {
      link.connection.destroy(
        `no handshake reply from ${key} within ${this.options.connectTimeoutMs} ms (svc.network.connect.timeout)`,
      );
    }, this.options.connectTimeoutMs);
    link.timer.unref();
    // Over TLS the hello waits for the handshake, so that nothing is sent to a peer whose certificate failed.
    socket.once(this.tls === undefined ? 'connect' : 'secureConnect', () =>
      link.connection.write([encodeHello(this.options.self)]),
    );
    this.links.set(key, link);
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
    if (link.state === 'handshaking') {
      if (frame.kind === 'authChallenge' && link.proved !== true) {
        this.answerChallenge(link, frame.nonce);
        return;
      }
      if (frame.kind !== 'helloReply') {
        link.connection.destroy(`expected a handshake reply, got a ${frame.kind} frame`, 'unexpectedFrame');
        return;
      }
      clearTimeout(link.timer);
      const reply = frame.reply;
      if (!reply.accepted) {
        this.linkRefused(link, reply.status, reply.message, reply.release);
        return;
      }
      link.state = 'open';
      link.peerRelease = reply.release;
      link.connection.handshaken();
      // The peer is the one this process chose to reach (and, over TLS, proved its certificate).
      link.connection.principal = this.options.auth === undefined ? undefined : SERVER;
      for (const queued of link.queue.splice(0)) this.writeOn(link, queued);
      return;
    }
    if (frame.kind !== 'envelope') {
      link.connection.destroy(`unexpected ${frame.kind} frame after the handshake`, 'unexpectedFrame');
      return;
    }
    const { envelope } = frame;
    if (envelope.inReplyTo !== undefined) this.unanswered.answered(link, envelope.to, envelope.inReplyTo);
    this.arrived(link.connection, envelope, link.peerRelease!);
  }

  /** The peer requires authentication: prove this process's secret, or give up saying what to set. */
  private answerChallenge(link: Link, nonce: Uint8Array): void {
    link.proved = true;
    const auth = this.options.auth;
    if (auth === undefined) {
      clearTimeout(link.timer);
      const message =
        `the peer ${addressText(link.address)} requires authentication (svc.auth.enabled): ` +
        authAdvice(this.options.self.role);
      this.options.logger.warn(
        { event: 'transport.authenticationRequired', peer: addressText(link.address), reason: message },
        message,
      );
      this.linkRefused(link, 'AUTHENTICATION_FAILED', message, this.options.self.release);
      return;
    }
    link.connection.write([encodeAuthProof(authMac(auth.secret, this.options.self, nonce))]);
  }

  /** The handshake failed for a reason the peer gave: queued requests are answered with it, and the link closes. */
  private linkRefused(link: Link, status: StatusCode, message: string, release: Release): void {
    link.state = 'closed';
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
    if (envelope.requestId === undefined) return;
    this.options.deliver({
      from: envelope.to,
      to: envelope.from,
      fromRelease: release,
      inReplyTo: envelope.requestId,
      message: { type: 'StatusResponse', status, message },
    });
  }

  private onLinkClosed(link: Link, closeReason: string | undefined): void {
    clearTimeout(link.timer);
    const key = addressText(link.address);
    if (this.links.get(key) === link) this.links.delete(key);
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
    if (!this.closing) for (const envelope of unanswered) this.options.sendFailed(envelope);
    if (reason !== undefined && !this.closing) {
      this.options.logger.warn(
        { event: 'transport.connectionClosed', peer: key, established: wasOpen, reason },
        `connection to ${key} closed: ${reason}`,
      );
    }
  }

  // ------------------------------------------------------------------ both ways

  private arrived(connection: Connection, wire: WireEnvelope, fromRelease: Release): void {
    const principal = connection.principal;
    const previous = this.routes.get(wire.from);
    if (previous !== connection) {
      // A node's replies go where it last spoke: who may take them over is the core's rule.
      const takeover = routeTakeoverRefusal(
        this.speakerRules,
        wire.from,
        previous === undefined ? undefined : { principal: previous.principal, open: !previous.closed },
        principal,
      );
      if (takeover !== undefined) {
        this.options.authenticationFailed?.();
        connection.destroy(takeover, 'routeTakeover');
        return;
      }
      this.routes.set(wire.from, connection);
      connection.speakers.add(wire.from);
    }
    this.spoke(wire.from);
    const envelope: Envelope =
      principal === undefined ? { ...wire, fromRelease } : { ...wire, fromRelease, principal };
    if (!this.options.deliver(envelope)) {
      this.options.logger.debug(
        { event: 'transport.noSuchNode', to: wire.to, from: wire.from, type: wire.message.type },
        `no node ${wire.to} here`,
      );
    }
  }

  private forget(connection: Connection): void {
    for (const node of connection.speakers) {
      if (this.routes.get(node) === connection) {
        this.routes.delete(node);
        this.routeSpoke.delete(node);
      }
    }
  }

  /**
   * `node` spoke now. Every so often, the routes of nodes silent for longer than the idle time are forgotten: a
   * pooled connection carries task after task, each a node of its own that ends without a word, and the table
   * would otherwise grow by one entry per task that ever spoke.
   */
  private now(): number {
    return this.options.now?.() ?? Date.now();
  }

  private spoke(node: NodeId): void {
    const now = this.now();
    this.routeSpoke.set(node, now);
    const idleMs = this.options.routeIdleMs ?? defaultRouteIdleMs(this.options.frameTimeoutMs);
    if (!routeSweepDue(this.lastRouteSweep, now, idleMs)) return;
    this.lastRouteSweep = now;
    for (const [silent, at] of this.routeSpoke) {
      if (!routeExpired(at, now, idleMs)) continue;
      this.routeSpoke.delete(silent);
      const connection = this.routes.get(silent);
      this.routes.delete(silent);
      connection?.speakers.delete(silent);
    }
  }
}

/** Why a proof did not match, with what the peer should change. */
function mismatch(hello: Hello): string {
  if (hello.role === 'client') {
    return (
      `authentication failed: ${hello.nodeId} did not prove application ${hello.application ?? ''}’s secret ` +
      '(svc.auth.enabled): give it the secret the application registered (svc.client.auth.secret, or ' +
      'Application.secret to connectExecutor)'
    );
  }
  return (
    `authentication failed: ${hello.role} ${hello.nodeId} did not prove the cluster’s internal secret ` +
    '(svc.auth.enabled): set svc.auth.internal.secret (or svc.auth.internal.secretFile) to the same value on ' +
    'every master and worker'
  );
}
