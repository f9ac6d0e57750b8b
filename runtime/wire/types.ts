import type { StatusCode } from '../../core/domain/status.ts';
import type { Envelope } from '../../core/machines/effects.ts';
import type { Release } from '../../core/release/version.ts';

/** Who opens a connection: servers talk to each other whatever their releases; clients are admitted by release. */
export type PeerRole = 'master' | 'worker' | 'client';

/** The first frame on every connection (docs/protocol.md, Handshake). */
export interface Hello {
  readonly role: PeerRole;
  readonly release: Release;
  /** The process's name: a server's node id, an application's lifecycle manager or an executor. */
  readonly nodeId: string;
  /**
   * The application a client process acts for (its lifecycle manager, or one of its executors); absent for
   * servers. With authentication on, the connection proves this application's secret.
   */
  readonly application?: string;
}

/** The accepting side's answer to a Hello; a refusal is followed by the connection's close. */
export interface HelloReply {
  readonly accepted: boolean;
  /** SUCCESS, or why not (CLIENT_RELEASE_REFUSED, AUTHENTICATION_FAILED). */
  readonly status: StatusCode;
  readonly message: string;
  readonly release: Release;
  readonly nodeId: string;
}

/**
 * An envelope as it travels: the sender's release and principal are the connection's (its handshake), not the
 * frame's.
 */
export type WireEnvelope = Omit<Envelope, 'fromRelease' | 'principal'>;

export type DecodedFrame =
  | { readonly kind: 'hello'; readonly hello: Hello }
  | { readonly kind: 'helloReply'; readonly reply: HelloReply }
  /** The accepting side requires authentication: prove the Hello's identity over this nonce. */
  | { readonly kind: 'authChallenge'; readonly nonce: Uint8Array }
  /** The connecting side's HMAC over the handshake's transcript (runtime/transport/authentication.ts). */
  | { readonly kind: 'authProof'; readonly mac: Uint8Array }
  | { readonly kind: 'envelope'; readonly envelope: WireEnvelope };
