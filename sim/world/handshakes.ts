import {
  acceptingStep,
  connectingStep,
  initialAcceptingState,
  initialConnectingState,
  initialSecretCache,
  lookupCachedSecret,
  MAX_CACHED_SECRETS,
  secretAnswered,
  type AcceptingConfig,
  type AcceptingEffect,
  type AcceptingInput,
  type AcceptingState,
  type ConnectingConfig,
  type ConnectingInput,
  type Hello,
  type HelloReply,
  type SecretAnswer,
  type SecretCacheState,
} from '../../core/handshake/index.ts';
import type { StatusCode } from '../../core/domain/status.ts';
import type { NodeId, Principal } from '../../core/machines/effects.ts';
import type { PlantedBug } from '../../core/planted-bugs.ts';
import type { Release } from '../../core/release/version.ts';
import type { Speaker } from './routes.ts';

/**
 * The connection handshakes of the simulated world: every connection a node opens runs the core's two handshake
 * machines (core/handshake/), the opener's and the acceptor's: the same code the runtime's transport runs on a socket.
 * What the world supplies is their I/O: the nonce (a counter: nothing here guesses), a stand-in MAC (any function
 * of the secret, the claim and the nonce proves the same), and the secret lookups: a server's claim is checked
 * against the cluster's internal secret; the master reads an application's secret from its own state (`later`
 * while it has none); a worker keeps the core's secret cache (core/handshake/secret-cache.ts) and asks the master
 * on a miss, a network round trip after which the master answers from its state as its machine answers
 * GetApplicationSecret (a world-level service: the simulated worker has no pseudo-node for it); a lifecycle manager
 * admits its own application's executors only. The handshake's frames take no virtual time; only a worker's ask
 * does, and envelopes wait on the connection meanwhile.
 */

/** The cluster's internal secret in the simulator (svc.auth.internal.secret). */
export const SIM_INTERNAL_SECRET = 'sim-internal-secret';

/** The secret an application registers in the simulator (its lifecycle manager's svc.client.auth.secret). */
export function simApplicationSecret(appId: string): string {
  return `secret-of-${appId}`;
}

/** A stand-in for HMAC-SHA256 over the transcript: what only the holder of `secret` can produce for this claim. */
function simMac(secret: string, hello: Hello, nonce: Uint8Array): string {
  return `${secret}|${hello.role}|${hello.nodeId}|${hello.application ?? ''}|${nonce.join('.')}`;
}

const encoder = new TextEncoder();
const decoder = new TextDecoder();

/** A process at one end of a connection. */
export interface HandshakeEnd {
  readonly id: NodeId;
  readonly incarnation: number;
  readonly role: string;
  readonly release: Release;
  /** What its hello claims and, for a connection it opens, what it proves. */
  readonly speaker: Speaker;
}

/** What the handshakes need of the world. */
export interface HandshakeWorld {
  readonly authenticated: boolean;
  readonly plantedBug?: PlantedBug;
  /** How long a worker trusts a learnt secret (svc.worker.auth.secretCache.expiry). */
  readonly secretCacheExpiryMs: number;
  /** The master's answer to GetApplicationSecret now, or undefined when no master is up to answer. */
  readonly masterSecret: (appId: string) => { readonly found: boolean; readonly secret: string } | undefined;
  /** Runs `then` a network round trip from now (a worker's ask to the master and its answer). */
  readonly afterRoundTrip: (label: string, then: () => void) => void;
  readonly now: () => number;
  readonly count: (name: string) => void;
  /** A handshake's verdict, for checkers (sim/invariants/admission.ts). */
  readonly verdict: (acceptor: HandshakeEnd, opener: HandshakeEnd, hello: Hello, reply: HelloReply) => void;
}

/** Where a connection stands, as its opener sees it. */
export type ConnectionVerdict =
  | {
      readonly kind: 'open';
      /** The acceptor's release (its hello reply's), for the envelopes coming back. */
      readonly peerRelease: Release;
      /** What the opener proved at the acceptor: stamped on its envelopes (the acceptor may learn more later). */
      readonly connection: SimConnection;
    }
  | { readonly kind: 'pending'; readonly connection: SimConnection }
  /** Closed before its handshake completed (a process ended, a protocol error): sends on it fail. */
  | { readonly kind: 'closed' }
  | {
      readonly kind: 'refused';
      readonly status: StatusCode;
      readonly message: string;
      readonly release: Release;
    };

/** A handshake's outcome, once there is one. */
export type SettledVerdict = Exclude<ConnectionVerdict, { readonly kind: 'pending' }>;

/** One connection between two processes, with both ends' handshake machines. */
export class SimConnection {
  readonly accepting: AcceptingState = initialAcceptingState();
  /** Sends waiting for the handshake (a worker asking the master for a secret), in order. */
  readonly waiting: ((verdict: SettledVerdict) => void)[] = [];
  verdict: SettledVerdict | undefined;
  /** The opener's connection as the acceptor's routes see it: what it proved so far. */
  speaker: Speaker;
  /** Hands a frame from the acceptor to the opener's machine. */
  toOpener: (input: ConnectingInput) => void = () => undefined;

  constructor(
    readonly key: string,
    readonly opener: HandshakeEnd,
    readonly acceptor: HandshakeEnd,
    readonly acceptingConfig: AcceptingConfig,
  ) {
    this.speaker = { ...opener.speaker, principal: undefined };
  }

  /** The principal the acceptor stamps on the opener's envelopes now. */
  get principal(): Principal | undefined {
    return this.speaker.principal;
  }

  /** Whether the acceptor still has a proof to check later (the master's first registration). */
  get provingLater(): boolean {
    return this.accepting.later !== undefined;
  }
}

/** A worker process's secret cache and the connections waiting on its asks. */
interface WorkerSecrets {
  readonly incarnation: number;
  readonly cache: SecretCacheState;
  readonly waiting: Map<string, SimConnection[]>;
}

export class Handshakes {
  private readonly connections = new Map<string, SimConnection>();
  private readonly byNode = new Map<NodeId, Set<string>>();
  private readonly secrets = new Map<NodeId, WorkerSecrets>();
  private nonces = 0;

  constructor(private readonly world: HandshakeWorld) {}

  /**
   * The connection from `opener` to `acceptor`'s process: open already, or its handshake run now (pending when a
   * worker has to ask the master). A refused connection is not kept: the next send handshakes again, as the
   * runtime opens a new connection after a refusal closed the last.
   */
  connect(
    opener: { readonly id: NodeId; readonly incarnation: number },
    acceptor: { readonly id: NodeId; readonly incarnation: number },
    ends: () => { readonly opener: HandshakeEnd; readonly acceptor: HandshakeEnd },
  ): ConnectionVerdict {
    // The hot path (every send on an open connection) allocates nothing but the key.
    const key = `${opener.id}#${opener.incarnation}>${acceptor.id}#${acceptor.incarnation}`;
    const existing = this.connections.get(key);
    if (existing !== undefined) return existing.verdict ?? { kind: 'pending', connection: existing };
    return this.open(key, ends());
  }

  private open(
    key: string,
    { opener, acceptor }: { readonly opener: HandshakeEnd; readonly acceptor: HandshakeEnd },
  ): ConnectionVerdict {
    const connection = new SimConnection(key, opener, acceptor, {
      self: { release: acceptor.release, nodeId: acceptor.id },
      admission: {
        release: acceptor.release,
        servesClients: acceptor.role !== 'client',
        ...(this.world.plantedBug === undefined ? {} : { plantedBug: this.world.plantedBug }),
      },
      authenticated: this.world.authenticated,
    });
    this.connections.set(key, connection);
    this.index(opener.id, key);
    this.index(acceptor.id, key);
    this.handshake(connection);
    return connection.verdict ?? { kind: 'pending', connection };
  }

  /**
   * An envelope arrives on `connection`: whether it is delivered. With a proof kept for later, the acceptor checks
   * it once the application's secret is known (the principal may change, or the connection close).
   */
  arrived(connection: SimConnection): boolean {
    if (this.connections.get(connection.key) !== connection) return false;
    if (!connection.provingLater) return true;
    let delivered = false;
    this.accept(connection, { kind: 'envelope' }, (effect) => {
      if (effect.kind === 'deliver') delivered = true;
    });
    return delivered;
  }

  /** A process ended: its connections close with it, and a worker's secret cache goes. */
  ended(node: NodeId): void {
    this.secrets.delete(node);
    const keys = this.byNode.get(node);
    if (keys === undefined) return;
    this.byNode.delete(node);
    for (const key of keys) this.close(key);
  }

  private index(node: NodeId, key: string): void {
    let keys = this.byNode.get(node);
    if (keys === undefined) this.byNode.set(node, (keys = new Set()));
    keys.add(key);
  }

  private close(key: string): void {
    const connection = this.connections.get(key);
    if (connection === undefined) return;
    this.connections.delete(key);
    this.byNode.get(connection.opener.id)?.delete(key);
    this.byNode.get(connection.acceptor.id)?.delete(key);
    if (connection.verdict === undefined) {
      // Closed before its handshake completed: the opener's waiting sends fail as on a connection that closed.
      this.settle(connection, { kind: 'closed' });
    }
  }

  private handshake(connection: SimConnection): void {
    const opener = connection.opener;
    const self: Hello = {
      role: opener.speaker.identity.role,
      release: opener.release,
      nodeId: opener.id,
      ...(opener.speaker.identity.application === undefined
        ? {}
        : { application: opener.speaker.identity.application }),
    };
    const config: ConnectingConfig = { self, authenticated: this.world.authenticated };
    const state = initialConnectingState();
    const secret =
      opener.speaker.principal?.kind === 'application'
        ? simApplicationSecret(opener.speaker.principal.appId)
        : SIM_INTERNAL_SECRET;
    const toAcceptor = (input: AcceptingInput): void =>
      this.accept(connection, input, this.acceptorToOpener(connection));
    const opening = (input: ConnectingInput): void => {
      for (const effect of connectingStep(config, state, input).effects) {
        switch (effect.kind) {
          case 'sendHello':
            toAcceptor({ kind: 'hello', hello: effect.hello, nonce: this.nonce() });
            break;
          case 'prove':
            toAcceptor({ kind: 'proof', mac: encoder.encode(simMac(secret, self, effect.nonce)) });
            break;
          case 'open':
            this.settle(connection, {
              kind: 'open',
              peerRelease: effect.peerRelease,
              connection,
            });
            break;
          case 'refused':
            this.settle(connection, {
              kind: 'refused',
              status: effect.status,
              message: effect.message,
              release: effect.release,
            });
            this.close(connection.key);
            break;
          case 'close':
            this.close(connection.key);
        }
      }
    };
    connection.toOpener = opening;
    opening({ kind: 'connected' });
  }

  /** What the acceptor's machine sends goes to the opener's: the challenge, and the hello reply (seen by checkers). */
  private acceptorToOpener(connection: SimConnection): (effect: AcceptingEffect) => void {
    return (effect) => {
      if (effect.kind === 'challenge') connection.toOpener({ kind: 'challenge', nonce: effect.nonce });
      else if (effect.kind === 'accept' || effect.kind === 'refuse') {
        this.world.verdict(connection.acceptor, connection.opener, connection.accepting.hello!, effect.reply);
        connection.toOpener({ kind: 'reply', reply: effect.reply });
      }
    };
  }

  private settle(connection: SimConnection, verdict: SettledVerdict): void {
    if (connection.verdict !== undefined) return;
    connection.verdict = verdict;
    for (const send of connection.waiting.splice(0)) send(verdict);
  }

  /** Runs the acceptor's machine on `input`, answering its lookups and checks; `seen` sees every effect. */
  private accept(
    connection: SimConnection,
    first: AcceptingInput,
    seen: (effect: AcceptingEffect) => void,
  ): void {
    const inputs: AcceptingInput[] = [first];
    for (let input = inputs.shift(); input !== undefined; input = inputs.shift()) {
      const { effects } = acceptingStep(connection.acceptingConfig, connection.accepting, input);
      for (const effect of effects) {
        switch (effect.kind) {
          case 'lookupSecret':
            this.lookUp(connection, effect.hello, effect.fresh, inputs);
            break;
          case 'checkProof':
            inputs.push({
              kind: 'proofChecked',
              matches: simMac(effect.secret, effect.hello, effect.nonce) === decoder.decode(effect.mac),
            });
            break;
          case 'accept':
            connection.speaker = { ...connection.speaker, principal: effect.principal };
            if (connection.provingLater) this.world.count('handshake.proofKeptForLater');
            break;
          case 'proved':
            connection.speaker = { ...connection.speaker, principal: effect.principal };
            this.world.count('handshake.laterProofChecked');
            break;
          case 'close':
            this.world.count(`handshake.closed.${effect.cause}`);
            this.close(connection.key);
            break;
          case 'authenticationFailed':
            this.world.count('handshake.authenticationFailed');
            break;
          case 'challenge':
          case 'refuse':
          case 'deliver':
            break;
        }
        // After the connection's own bookkeeping: the opener's sends may go at once, with what it proved.
        seen(effect);
      }
    }
  }

  /** The acceptor's secret source, by its role. */
  private lookUp(connection: SimConnection, hello: Hello, fresh: boolean, inputs: AcceptingInput[]): void {
    const answer = (a: SecretAnswer): void => void inputs.push({ kind: 'secret', answer: a });
    if (hello.role !== 'client') {
      answer({ kind: 'secret', secret: SIM_INTERNAL_SECRET, principal: { kind: 'server' } });
      return;
    }
    const appId = hello.application ?? '';
    const principal: Principal = { kind: 'application', appId };
    const acceptor = connection.acceptor;
    switch (acceptor.role) {
      case 'master': {
        const known = this.world.masterSecret(appId);
        answer(
          known?.found === true
            ? { kind: 'secret', secret: known.secret, principal }
            : { kind: 'later', principal },
        );
        return;
      }
      case 'worker':
        this.workerLookUp(connection, appId, fresh, answer);
        return;
      default: {
        const own = acceptor.speaker.principal;
        answer(
          own?.kind === 'application' && own.appId === appId
            ? { kind: 'secret', secret: simApplicationSecret(appId), principal }
            : {
                kind: 'refused',
                message: `this is application ${own?.kind === 'application' ? own.appId : '?'}'s lifecycle manager; it serves that application's executors only`,
              },
        );
      }
    }
  }

  private workerLookUp(
    connection: SimConnection,
    appId: string,
    fresh: boolean,
    answer: (a: SecretAnswer) => void,
  ): void {
    const worker = connection.acceptor;
    let secrets = this.secrets.get(worker.id);
    if (secrets === undefined || secrets.incarnation !== worker.incarnation) {
      secrets = { incarnation: worker.incarnation, cache: initialSecretCache(), waiting: new Map() };
      this.secrets.set(worker.id, secrets);
    }
    const config = { maxAgeMs: this.world.secretCacheExpiryMs, maxEntries: MAX_CACHED_SECRETS };
    const principal: Principal = { kind: 'application', appId };
    const lookup = lookupCachedSecret(config, secrets.cache, appId, this.world.now(), fresh);
    if (lookup.kind === 'cached') {
      this.world.count('handshake.secretFromCache');
      answer({ kind: 'secret', secret: lookup.secret, principal, cached: true });
      return;
    }
    const waiting = secrets.waiting.get(appId) ?? [];
    secrets.waiting.set(appId, waiting);
    waiting.push(connection);
    if (!lookup.send) return;
    this.world.count(fresh ? 'handshake.secretAskedFresh' : 'handshake.secretAsked');
    const asked = secrets;
    this.world.afterRoundTrip(`${worker.id} asks the master for ${appId}'s secret`, () => {
      if (this.secrets.get(worker.id) !== asked) return; // the worker's process ended meanwhile
      const reply = this.world.masterSecret(appId);
      secretAnswered(
        config,
        asked.cache,
        appId,
        reply === undefined
          ? { kind: 'unanswered' }
          : reply.found
            ? { kind: 'found', secret: reply.secret }
            : { kind: 'unregistered' },
        this.world.now(),
      );
      const result: SecretAnswer =
        reply === undefined
          ? {
              kind: 'refused',
              message: 'the worker cannot reach the master to learn the application’s secret',
            }
          : reply.found
            ? { kind: 'secret', secret: reply.secret, principal }
            : {
                kind: 'refused',
                message: `application ${appId} is not registered with the master (or registered no secret)`,
              };
      const connections = asked.waiting.get(appId) ?? [];
      asked.waiting.delete(appId);
      for (const waiter of connections) {
        if (this.connections.get(waiter.key) !== waiter) continue;
        this.accept(waiter, { kind: 'secret', answer: result }, this.acceptorToOpener(waiter));
      }
    });
  }

  private nonce(): Uint8Array {
    this.nonces += 1;
    return Uint8Array.of(this.nonces & 0xff, (this.nonces >> 8) & 0xff, (this.nonces >> 16) & 0xff);
  }
}
