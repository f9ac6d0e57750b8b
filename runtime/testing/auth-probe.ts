import type { StatusCode } from '../../core/domain/status.ts';
import type { Envelope, NodeId } from '../../core/machines/effects.ts';
import type { PlantedBug } from '../../core/planted-bugs.ts';
import type { Message } from '../../core/protocol/messages.ts';
import { CURRENT_RELEASE } from '../../core/release/version.ts';
import { createLogger } from '../log.ts';
import { AddressBook } from '../transport/addresses.ts';
import { Transport } from '../transport/transport.ts';
import type { PeerRole } from '../wire/index.ts';

/** Who a probe says it is, and what it can prove. */
export interface ProbeIdentity {
  readonly role: PeerRole;
  readonly nodeId: string;
  readonly application?: string;
  /** The secret it proves when challenged; absent: authentication off (it cannot answer a challenge). */
  readonly secret?: string;
  /** A planted bug for the probe's own transport (core/planted-bugs.ts), in this process. */
  readonly plantedBug?: PlantedBug;
}

/** What became of a probe's request. */
export type ProbeOutcome =
  | { readonly kind: 'reply'; readonly message: Message; readonly envelope: Envelope }
  /** The handshake was refused (the transport answers queued requests with the peer's StatusResponse). */
  | { readonly kind: 'refused'; readonly status: StatusCode; readonly message: string }
  | { readonly kind: 'sendFailed' }
  | { readonly kind: 'noAnswer' };

/**
 * A hand-made peer for authentication tests: one process-local transport that says what `identity` says, proves
 * what it knows, and sends requests to one port, reporting each request's outcome. Nothing of the client library's
 * rules: it can claim any role and application, and ask anything of anyone.
 */
export class AuthProbe {
  private readonly transport: Transport;
  private readonly addresses = new AddressBook();
  private readonly waiting = new Map<number, (outcome: ProbeOutcome) => void>();
  private refusal: { status: StatusCode; message: string } | undefined;
  private nextRequest = 1;

  constructor(identity: ProbeIdentity) {
    const secret = identity.secret;
    this.transport = new Transport({
      self: {
        role: identity.role,
        release: CURRENT_RELEASE,
        nodeId: identity.nodeId,
        ...(identity.application === undefined ? {} : { application: identity.application }),
      },
      maxFrameBytes: 1 << 24,
      frameTimeoutMs: 10_000,
      connectTimeoutMs: 10_000,
      addresses: this.addresses,
      logger: createLogger('silent', { role: 'probe' }),
      isLocal: () => false,
      deliver: (envelope) => {
        if (envelope.inReplyTo === undefined) return true;
        const refused =
          this.refusal !== undefined &&
          envelope.message.type === 'StatusResponse' &&
          envelope.message.message === this.refusal.message;
        this.settle(
          envelope.inReplyTo,
          refused
            ? { kind: 'refused', status: this.refusal!.status, message: this.refusal!.message }
            : { kind: 'reply', message: envelope.message, envelope },
        );
        return true;
      },
      sendFailed: (envelope) => {
        if (envelope.requestId !== undefined) this.settle(envelope.requestId, { kind: 'sendFailed' });
      },
      refused: (_peer, message, status) => {
        this.refusal = { status, message };
      },
      ...(identity.plantedBug === undefined ? {} : { plantedBug: identity.plantedBug }),
      ...(secret === undefined
        ? {}
        : {
            auth: {
              secret,
              principal:
                identity.role === 'client'
                  ? { kind: 'application', appId: identity.application ?? '' }
                  : { kind: 'server' },
              expectedSecret: () => ({ kind: 'refused', message: 'a probe accepts nothing' }),
            },
          }),
    });
  }

  /**
   * Sends `message` from `from` to node `to` at `port` (127.0.0.1) as a request; resolves with its outcome, or
   * `noAnswer` after `timeoutMs` (a request the peer drops, or a connection it closed after accepting it).
   */
  ask(port: number, to: NodeId, from: NodeId, message: Message, timeoutMs = 10_000): Promise<ProbeOutcome> {
    this.addresses.set(to, { host: '127.0.0.1', port });
    const requestId = this.nextRequest++;
    return new Promise((resolve) => {
      const timer = setTimeout(() => this.settle(requestId, { kind: 'noAnswer' }), timeoutMs);
      timer.unref();
      this.waiting.set(requestId, (outcome) => {
        clearTimeout(timer);
        resolve(outcome);
      });
      this.transport.send({ from, to, requestId, message });
    });
  }

  /** Closes the connections; requests still waiting resolve as `noAnswer`. */
  async close(): Promise<void> {
    await this.transport.close();
    for (const requestId of [...this.waiting.keys()]) this.settle(requestId, { kind: 'noAnswer' });
  }

  private settle(requestId: number, outcome: ProbeOutcome): void {
    const resolve = this.waiting.get(requestId);
    this.waiting.delete(requestId);
    resolve?.(outcome);
  }
}
