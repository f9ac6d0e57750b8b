import type { StatusCode } from '../domain/status.ts';
import type { Principal } from '../machines/effects.ts';
import { admitHello, type HelloAdmission } from './admission.ts';
import { mismatchMessage } from './messages.ts';
import type { FrameKind, HandshakeCloseCause, Hello, HelloReply, SecretAnswer } from './types.ts';

/**
 * The accepting end of a connection's handshake, sans-IO (as h11's and quinn-proto's connections are): the driver
 * hands in what arrived (frames, the answers of lookups and proof checks) and executes the effects that come out;
 * the machine decides everything between the hello and the connection's first delivered envelope: admission by
 * release, the challenge, which secret a proof is checked against (and a fresh lookup after a cached one failed),
 * the master's later proof, and every refusal with its message.
 *
 * Two things stay outside, as I/O: the nonce (random bytes, drawn by the driver and handed in with the hello) and
 * the MAC (HMAC-SHA256 in the runtime, node:crypto): the machine asks `checkProof` with everything the check needs,
 * and the driver answers `proofChecked`. The secret lookup is an effect too (`lookupSecret`): the driver answers
 * from its secret source (the master's state, a worker's cache or the master asked, the internal secret), at once
 * or later. A driver may complete an effect within the step's execution (feeding the answer as the next input): the
 * machine never depends on when an answer comes, only on its order with the frames.
 */

export interface AcceptingConfig {
  /** What this process answers in every hello reply. */
  readonly self: { readonly release: HelloReply['release']; readonly nodeId: string };
  readonly admission: HelloAdmission;
  /** svc.auth.enabled: every accepted connection proves the identity its hello claims. */
  readonly authenticated: boolean;
}

export type AcceptingPhase =
  /** Waiting for the hello. */
  | 'hello'
  /** Challenged: waiting for the proof (the secret is looked up meanwhile). */
  | 'proof'
  /** The proof came: waiting for the secret, or for the proof's check. */
  | 'verifying'
  /** Accepted: envelopes flow (perhaps with a proof still to check later). */
  | 'open'
  /** Refused or closed: nothing more is read. */
  | 'closed';

export interface AcceptingState {
  phase: AcceptingPhase;
  hello?: Hello;
  nonce?: Uint8Array;
  mac?: Uint8Array;
  /** The lookup's answer, once it came. */
  answer?: SecretAnswer;
  /** A lookup is in flight (its answer will come as a `secret` input). */
  lookingUp: boolean;
  /** The proof is being checked against `answer`'s secret. */
  checking: boolean;
  /** The secret was looked up fresh already after a cached one did not match: no second time. */
  askedFresh: boolean;
  /** Who the connection proved to be (undefined: nothing, or not yet). */
  principal?: Principal;
  /** With a later proof: who the connection becomes once its proof checks. */
  later?: Principal;
  /** Envelopes held while a later proof is checked, delivered (or not) by its verdict. */
  held: number;
}

export type AcceptingInput =
  /** The hello, with a fresh nonce drawn by the driver (used only when authentication is on). */
  | { readonly kind: 'hello'; readonly hello: Hello; readonly nonce: Uint8Array }
  | { readonly kind: 'proof'; readonly mac: Uint8Array }
  /** An envelope frame arrived. */
  | { readonly kind: 'envelope' }
  /** A frame of any other kind arrived (a reply, a challenge: not what an accepting end expects). */
  | { readonly kind: 'frame'; readonly frame: FrameKind }
  /** The answer to `lookupSecret`. */
  | { readonly kind: 'secret'; readonly answer: SecretAnswer }
  /** The answer to `checkProof`. */
  | { readonly kind: 'proofChecked'; readonly matches: boolean };

export type AcceptingEffect =
  /** Send the challenge (authChallenge frame). */
  | { readonly kind: 'challenge'; readonly nonce: Uint8Array }
  /** Look up the secret `hello`'s claim must prove; `fresh`: not from a cache. Completes with `secret`. */
  | { readonly kind: 'lookupSecret'; readonly hello: Hello; readonly fresh: boolean }
  /** Check `mac` against `secret` for `hello` and `nonce`. Completes with `proofChecked`. */
  | {
      readonly kind: 'checkProof';
      readonly secret: string;
      readonly hello: Hello;
      readonly nonce: Uint8Array;
      readonly mac: Uint8Array;
    }
  /** Accept: send `reply`; the connection is handshaken, its envelopes carry `principal` (undefined: nothing). */
  | { readonly kind: 'accept'; readonly reply: HelloReply; readonly principal: Principal | undefined }
  /** Refuse: send `reply` (with the status and message), then end the connection. */
  | { readonly kind: 'refuse'; readonly reply: HelloReply }
  /** A later proof checked: the connection's envelopes carry `principal` from now on. */
  | { readonly kind: 'proved'; readonly principal: Principal }
  /** Hand the oldest `count` envelopes received to their nodes. */
  | { readonly kind: 'deliver'; readonly count: number }
  /** Close the connection at once, without a reply. */
  | { readonly kind: 'close'; readonly reason: string; readonly cause: HandshakeCloseCause }
  /** A peer failed authentication here (AuthenticationFailCount). */
  | { readonly kind: 'authenticationFailed' };

export interface AcceptingStep {
  readonly state: AcceptingState;
  readonly effects: readonly AcceptingEffect[];
}

export function initialAcceptingState(): AcceptingState {
  return { phase: 'hello', lookingUp: false, checking: false, askedFresh: false, held: 0 };
}

/**
 * One transition of the accepting end. Owns its state as the core's machines do (core/machines/machine.ts): it may
 * update `state` in place and return it.
 */
export function acceptingStep(
  config: AcceptingConfig,
  state: AcceptingState,
  input: AcceptingInput,
): AcceptingStep {
  const effects: AcceptingEffect[] = [];
  if (state.phase === 'closed') return { state, effects };
  switch (input.kind) {
    case 'hello':
      if (state.phase !== 'hello') return unexpected(state, effects, 'hello');
      onHello(config, state, input.hello, input.nonce, effects);
      break;
    case 'proof':
      if (state.phase !== 'proof') return unexpected(state, effects, 'authProof');
      state.mac = input.mac;
      state.phase = 'verifying';
      verifyIfReady(config, state, effects);
      break;
    case 'envelope':
      if (state.phase !== 'open') return unexpected(state, effects, 'envelope');
      onEnvelope(state, effects);
      break;
    case 'frame':
      return unexpected(state, effects, input.frame);
    case 'secret':
      if (!state.lookingUp) break;
      state.lookingUp = false;
      if (state.phase === 'open') onLaterSecret(state, input.answer, effects);
      else {
        state.answer = input.answer;
        verifyIfReady(config, state, effects);
      }
      break;
    case 'proofChecked':
      if (!state.checking) break;
      state.checking = false;
      if (state.phase === 'open') onLaterChecked(state, input.matches, effects);
      else onChecked(config, state, input.matches, effects);
      break;
  }
  return { state, effects };
}

function onHello(
  config: AcceptingConfig,
  state: AcceptingState,
  hello: Hello,
  nonce: Uint8Array,
  effects: AcceptingEffect[],
): void {
  state.hello = hello;
  const verdict = admitHello(config.admission, hello);
  if (!verdict.accepted) {
    refuse(config, state, verdict.status, verdict.message, effects);
    return;
  }
  if (!config.authenticated) {
    accept(config, state, undefined, effects);
    return;
  }
  if (hello.role === 'client' && (hello.application ?? '') === '') {
    refuse(
      config,
      state,
      'AUTHENTICATION_FAILED',
      `authentication is on (svc.auth.enabled) and client ${hello.nodeId} names no application in its ` +
        'handshake: use a client of this build, with svc.auth.enabled=true and its application’s secret',
      effects,
    );
    return;
  }
  // The secret is looked up while the challenge and the proof travel (a worker may have to ask the master).
  state.nonce = nonce;
  state.phase = 'proof';
  state.lookingUp = true;
  effects.push({ kind: 'lookupSecret', hello, fresh: false });
  effects.push({ kind: 'challenge', nonce });
}

/** With the proof and the secret's answer both in, decides or asks for the proof's check. */
function verifyIfReady(config: AcceptingConfig, state: AcceptingState, effects: AcceptingEffect[]): void {
  const answer = state.answer;
  if (state.phase !== 'verifying' || answer === undefined || state.checking) return;
  switch (answer.kind) {
    case 'refused':
      refuse(config, state, 'AUTHENTICATION_FAILED', `authentication failed: ${answer.message}`, effects);
      return;
    case 'later':
      state.later = answer.principal;
      accept(config, state, undefined, effects);
      return;
    case 'secret':
      state.checking = true;
      effects.push(checkProof(state, answer.secret));
  }
}

function onChecked(
  config: AcceptingConfig,
  state: AcceptingState,
  matches: boolean,
  effects: AcceptingEffect[],
): void {
  const answer = state.answer;
  if (answer?.kind !== 'secret') return;
  if (matches) {
    accept(config, state, answer.principal, effects);
    return;
  }
  if (answer.cached === true && !state.askedFresh) {
    // A cached secret may be stale (the application registered again): asked once more, without the cache.
    state.askedFresh = true;
    state.answer = undefined;
    state.lookingUp = true;
    effects.push({ kind: 'lookupSecret', hello: state.hello!, fresh: true });
    return;
  }
  refuse(config, state, 'AUTHENTICATION_FAILED', mismatchMessage(state.hello!), effects);
}

/** An envelope on an open connection: delivered, or held while a later proof is (to be) checked. */
function onEnvelope(state: AcceptingState, effects: AcceptingEffect[]): void {
  if (state.later === undefined) {
    effects.push({ kind: 'deliver', count: 1 });
    return;
  }
  state.held += 1;
  if (state.lookingUp || state.checking) return;
  state.lookingUp = true;
  effects.push({ kind: 'lookupSecret', hello: state.hello!, fresh: false });
}

function onLaterSecret(state: AcceptingState, answer: SecretAnswer, effects: AcceptingEffect[]): void {
  if (answer.kind === 'secret') {
    state.checking = true;
    effects.push(checkProof(state, answer.secret));
    return;
  }
  // Still unknown: the envelopes go on without a principal (the machines refuse what needs one).
  release(state, effects);
}

function onLaterChecked(state: AcceptingState, matches: boolean, effects: AcceptingEffect[]): void {
  if (!matches) {
    state.phase = 'closed';
    state.held = 0;
    effects.push({ kind: 'authenticationFailed' });
    effects.push({
      kind: 'close',
      reason: `${mismatchMessage(state.hello!)} (checked once the application had registered its secret)`,
      cause: 'authenticationFailed',
    });
    return;
  }
  state.principal = state.later;
  state.later = undefined;
  effects.push({ kind: 'proved', principal: state.principal! });
  release(state, effects);
}

function release(state: AcceptingState, effects: AcceptingEffect[]): void {
  if (state.held > 0) effects.push({ kind: 'deliver', count: state.held });
  state.held = 0;
}

function checkProof(state: AcceptingState, secret: string): AcceptingEffect {
  return { kind: 'checkProof', secret, hello: state.hello!, nonce: state.nonce!, mac: state.mac! };
}

function accept(
  config: AcceptingConfig,
  state: AcceptingState,
  principal: Principal | undefined,
  effects: AcceptingEffect[],
): void {
  state.phase = 'open';
  state.principal = principal;
  effects.push({
    kind: 'accept',
    reply: { accepted: true, status: 'SUCCESS', message: '', ...config.self },
    principal,
  });
}

function refuse(
  config: AcceptingConfig,
  state: AcceptingState,
  status: StatusCode,
  message: string,
  effects: AcceptingEffect[],
): void {
  state.phase = 'closed';
  if (status === 'AUTHENTICATION_FAILED') effects.push({ kind: 'authenticationFailed' });
  effects.push({ kind: 'refuse', reply: { accepted: false, status, message, ...config.self } });
}

/** Why a frame of `frame`'s kind may not come now: the connection is closed with it. */
function unexpected(state: AcceptingState, effects: AcceptingEffect[], frame: FrameKind): AcceptingStep {
  const phase = state.phase;
  state.phase = 'closed';
  const reason =
    phase === 'hello'
      ? `expected a handshake first, got a ${frame} frame`
      : phase === 'proof'
        ? `expected an authentication proof, got a ${frame} frame`
        : phase === 'verifying'
          ? `a ${frame} frame before the handshake was answered`
          : `unexpected ${frame} frame after the handshake`;
  effects.push({ kind: 'close', reason, cause: 'unexpectedFrame' });
  return { state, effects };
}
