import type { StatusCode } from '../domain/status.ts';
import type { Principal } from '../machines/effects.ts';
import type { Release } from '../release/version.ts';

/** The roles a hello may claim. */
export type PeerRole = 'master' | 'worker' | 'client';

/** What a connecting process says of itself, first thing on every connection (docs/protocol.md, Handshake). */
export interface Hello {
  readonly role: PeerRole;
  readonly release: Release;
  /** The process's name: a server's node id, an application's lifecycle manager or an executor. */
  readonly nodeId: string;
  /** The application a client process acts for; absent for servers. With authentication on, it proves its secret. */
  readonly application?: string;
  /**
   * svc addition: the process follows the leader of a group of masters, so a follower may answer it `NotLeader`
   * (core/ha/follow-leader.ts). Absent: a process of a release built before groups.
   */
  readonly followsLeader?: true;
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
 * The secret a hello's claim must prove, as the process's secret source answers a `lookupSecret` effect: the
 * cluster's internal secret for a server, an application's secret (a master's own state; a worker's cache, or the
 * master asked with GetApplicationSecret), or why the claim cannot be checked.
 */
export type SecretAnswer =
  /** Check the proof against `secret`; `cached`: a mismatch is worth one fresh lookup (the secret may be stale). */
  | {
      readonly kind: 'secret';
      readonly secret: string;
      readonly principal: Principal;
      readonly cached?: boolean;
    }
  /**
   * Nothing to check against yet (a master that does not know the application: its first registration). The
   * connection is accepted without a principal; the proof is kept and checked at the first envelope after the
   * secret is known (another lookup): then the connection is `principal`, or it is closed.
   */
  | { readonly kind: 'later'; readonly principal: Principal }
  /** Refuse the connection; `message` says what to fix. */
  | { readonly kind: 'refused'; readonly message: string };

/** Why the handshake closes a connection without a reply, for the transport's summarised warnings. */
export type HandshakeCloseCause = 'unexpectedFrame' | 'authenticationFailed';

/** The kinds of frame a connection carries, as the handshake tells them apart. */
export type FrameKind = 'hello' | 'helloReply' | 'authChallenge' | 'authProof' | 'envelope' | 'ping' | 'pong';
