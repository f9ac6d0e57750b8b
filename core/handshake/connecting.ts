import type { StatusCode } from '../domain/status.ts';
import type { Principal } from '../machines/effects.ts';
import type { Release } from '../release/version.ts';
import { authAdvice } from './messages.ts';
import type { FrameKind, HandshakeCloseCause, Hello, HelloReply } from './types.ts';

/**
 * The connecting end of a connection's handshake, sans-IO (./accepting.ts says how the two ends split the work with
 * their drivers): the hello once connected, the proof of this process's secret when challenged (the MAC itself is
 * the driver's: `prove` says over which nonce), and the peer's verdict.
 */

export interface ConnectingConfig {
  readonly self: Hello;
  /** svc.auth.enabled here: this process has a secret to prove. */
  readonly authenticated: boolean;
}

export type ConnectingPhase = 'connecting' | 'handshaking' | 'open' | 'closed';

export interface ConnectingState {
  phase: ConnectingPhase;
  /** Whether this end answered the peer's challenge already (a second one is a protocol error). */
  proved: boolean;
  /** The peer's release, once it accepted. */
  peerRelease?: Release;
}

export type ConnectingInput =
  /** The connection (and over TLS its handshake) is up. */
  | { readonly kind: 'connected' }
  | { readonly kind: 'challenge'; readonly nonce: Uint8Array }
  | { readonly kind: 'reply'; readonly reply: HelloReply }
  /** Any other frame. */
  | { readonly kind: 'frame'; readonly frame: FrameKind };

export type ConnectingEffect =
  | { readonly kind: 'sendHello'; readonly hello: Hello }
  /** Send the proof of this process's secret for its hello over `nonce` (the driver computes the MAC). */
  | { readonly kind: 'prove'; readonly nonce: Uint8Array }
  /**
   * The peer accepted: queued envelopes go; envelopes from the peer carry `peerRelease` and `principal` (a server:
   * the peer this process chose to reach, with authentication on).
   */
  | { readonly kind: 'open'; readonly peerRelease: Release; readonly principal: Principal | undefined }
  /**
   * The handshake failed for a reason the peer gave (or, `authenticationRequired`, because the peer requires authentication and
   * this process has it off): queued requests are answered with `status` and `message` as from `release`, and the
   * connection ends.
   */
  | {
      readonly kind: 'refused';
      readonly status: StatusCode;
      readonly message: string;
      readonly release: Release;
      readonly authenticationRequired: boolean;
    }
  | { readonly kind: 'close'; readonly reason: string; readonly cause: HandshakeCloseCause };

export interface ConnectingStep {
  readonly state: ConnectingState;
  readonly effects: readonly ConnectingEffect[];
}

const SERVER: Principal = { kind: 'server' };

export function initialConnectingState(): ConnectingState {
  return { phase: 'connecting', proved: false };
}

/** One transition of the connecting end (updates `state` in place, as the core's machines may). */
export function connectingStep(
  config: ConnectingConfig,
  state: ConnectingState,
  input: ConnectingInput,
): ConnectingStep {
  const effects: ConnectingEffect[] = [];
  switch (state.phase) {
    case 'closed':
      break;
    case 'connecting':
      if (input.kind === 'connected') {
        state.phase = 'handshaking';
        effects.push({ kind: 'sendHello', hello: config.self });
      } else close(state, effects, `a ${frameOf(input)} frame before the hello was sent`);
      break;
    case 'handshaking':
      handshaking(config, state, input, effects);
      break;
    case 'open':
      if (input.kind !== 'frame' || input.frame !== 'envelope') {
        close(state, effects, `unexpected ${frameOf(input)} frame after the handshake`);
      }
  }
  return { state, effects };
}

function handshaking(
  config: ConnectingConfig,
  state: ConnectingState,
  input: ConnectingInput,
  effects: ConnectingEffect[],
): void {
  if (input.kind === 'challenge' && !state.proved) {
    state.proved = true;
    if (config.authenticated) {
      effects.push({ kind: 'prove', nonce: input.nonce });
      return;
    }
    state.phase = 'closed';
    effects.push({
      kind: 'refused',
      status: 'AUTHENTICATION_FAILED',
      // The driver names the peer first (`the peer <address> requires ...`): the core does not know addresses.
      message: `requires authentication (svc.auth.enabled): ${authAdvice(config.self.role)}`,
      release: config.self.release,
      authenticationRequired: true,
    });
    return;
  }
  if (input.kind !== 'reply') {
    close(state, effects, `expected a handshake reply, got a ${frameOf(input)} frame`);
    return;
  }
  const reply = input.reply;
  if (!reply.accepted) {
    state.phase = 'closed';
    effects.push({
      kind: 'refused',
      status: reply.status,
      message: reply.message,
      release: reply.release,
      authenticationRequired: false,
    });
    return;
  }
  state.phase = 'open';
  state.peerRelease = reply.release;
  effects.push({
    kind: 'open',
    peerRelease: reply.release,
    principal: config.authenticated ? SERVER : undefined,
  });
}

function frameOf(input: ConnectingInput): FrameKind | 'connected' {
  switch (input.kind) {
    case 'frame':
      return input.frame;
    case 'challenge':
      return 'authChallenge';
    case 'reply':
      return 'helloReply';
    case 'connected':
      return 'connected';
  }
}

function close(state: ConnectingState, effects: ConnectingEffect[], reason: string): void {
  state.phase = 'closed';
  effects.push({ kind: 'close', reason, cause: 'unexpectedFrame' });
}
