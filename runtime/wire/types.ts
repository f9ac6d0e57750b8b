import type { Hello, HelloReply } from '../../core/handshake/types.ts';
import type { Envelope } from '../../core/machines/effects.ts';

// The handshake's frames are the core's handshake machines' vocabulary (core/handshake/types.ts).
export type { Hello, HelloReply, PeerRole } from '../../core/handshake/types.ts';

/**
 * An envelope as it travels: the sender's release and principal are the connection's (its handshake), not the
 * frame's.
 */
export type WireEnvelope = Omit<Envelope, 'fromRelease' | 'principal' | 'peerFollowsLeader'>;

/**
 * An envelope's control part and payloads, as the codecs write them. `controlTail`, when present, is the control
 * part's end, shared with other frames (./file-group-codec.ts): the frame sends it after `control`, not copied in.
 */
export interface EncodedControl {
  readonly control: Uint8Array;
  readonly controlTail?: Uint8Array;
  readonly payloads: readonly Uint8Array[];
}

export type DecodedFrame =
  | { readonly kind: 'hello'; readonly hello: Hello }
  | { readonly kind: 'helloReply'; readonly reply: HelloReply }
  /** The accepting side requires authentication: prove the Hello's identity over this nonce. */
  | { readonly kind: 'authChallenge'; readonly nonce: Uint8Array }
  /** The connecting side's HMAC over the handshake's transcript (runtime/transport/authentication.ts). */
  | { readonly kind: 'authProof'; readonly mac: Uint8Array }
  | { readonly kind: 'envelope'; readonly envelope: WireEnvelope }
  /** A sign of life asked for (by the side that opened the connection) and given. */
  | { readonly kind: 'ping' }
  | { readonly kind: 'pong' };
