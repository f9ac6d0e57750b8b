import { WireError } from './errors.ts';
import {
  decodeAuthChallengeControl,
  decodeAuthProofControl,
  decodeEnvelopeControl,
  encodeAuthChallengeControl,
  encodeAuthProofControl,
  decodeHelloControl,
  decodeHelloReplyControl,
  encodeEnvelopeControl,
  encodeHelloControl,
  encodeHelloReplyControl,
} from './control-codec.ts';
import { LENGTH_PREFIX_BYTES } from './frame-reader.ts';
import { decodeHotEnvelope, encodeHotEnvelope } from './hot-codec.ts';
import type { DecodedFrame, Hello, HelloReply, WireEnvelope } from './types.ts';

/**
 * A frame is `length (u32 BE) | kind (u8) | …`. Handshakes (hello, reply, and the authentication challenge and proof) carry their control message after a protocol version
 * byte; an envelope carries `control length (u32 BE) | control | raw payloads`, where the payloads (batch bytes,
 * chunks) are never re-encoded: the control message says how long each is, in order (docs/protocol.md).
 */
export const FRAME_KIND = {
  hello: 1,
  helloReply: 2,
  envelope: 3,
  authChallenge: 4,
  authProof: 5,
  ping: 6,
  pong: 7,
} as const;

/** The frame layout's version, in every handshake; a peer with another refuses the connection. */
export const PROTOCOL_VERSION = 1;

const HEAD_BYTES = LENGTH_PREFIX_BYTES + 1;

function handshakeFrame(kind: number, control: Uint8Array): Uint8Array {
  const frame = new Uint8Array(HEAD_BYTES + 1 + control.byteLength);
  const view = new DataView(frame.buffer);
  view.setUint32(0, 1 + 1 + control.byteLength);
  frame[LENGTH_PREFIX_BYTES] = kind;
  frame[HEAD_BYTES] = PROTOCOL_VERSION;
  frame.set(control, HEAD_BYTES + 1);
  return frame;
}

export function encodeHello(hello: Hello): Uint8Array {
  return handshakeFrame(FRAME_KIND.hello, encodeHelloControl(hello));
}

export function encodeHelloReply(reply: HelloReply): Uint8Array {
  return handshakeFrame(FRAME_KIND.helloReply, encodeHelloReplyControl(reply));
}

/** The accepting side's challenge (authentication on): 32 random bytes the connecting side proves its secret over. */
export function encodeAuthChallenge(nonce: Uint8Array): Uint8Array {
  return handshakeFrame(FRAME_KIND.authChallenge, encodeAuthChallengeControl(nonce));
}

/** The connecting side's answer to a challenge: an HMAC-SHA256 (runtime/transport/authentication.ts). */
export function encodeAuthProof(mac: Uint8Array): Uint8Array {
  return handshakeFrame(FRAME_KIND.authProof, encodeAuthProofControl(mac));
}

function bareFrame(kind: number): Uint8Array {
  const frame = new Uint8Array(HEAD_BYTES);
  new DataView(frame.buffer).setUint32(0, 1);
  frame[LENGTH_PREFIX_BYTES] = kind;
  return frame;
}

/**
 * A sign-of-life request on an open connection, from the side that opened it to a peer that owes answers: the
 * peer's transport answers with a pong, whatever its machine is doing (core/interpreter/silent-peers.ts).
 */
export const PING_FRAME: Uint8Array = bareFrame(FRAME_KIND.ping);

/** The answer to a ping. */
export const PONG_FRAME: Uint8Array = bareFrame(FRAME_KIND.pong);

/**
 * An envelope as the pieces of one frame: a head (prefix, kind, control) and each payload as given, so that the
 * socket writes them together without copying batch bytes (runtime/transport/connection.ts).
 */
export function encodeEnvelope(envelope: WireEnvelope): Uint8Array[] {
  const { control, controlTail, payloads } = encodeHotEnvelope(envelope) ?? encodeEnvelopeControl(envelope);
  const controlBytes = control.byteLength + (controlTail?.byteLength ?? 0);
  let payloadBytes = 0;
  for (const payload of payloads) payloadBytes += payload.byteLength;
  const head = new Uint8Array(HEAD_BYTES + 4 + control.byteLength);
  const view = new DataView(head.buffer);
  view.setUint32(0, 1 + 4 + controlBytes + payloadBytes);
  head[LENGTH_PREFIX_BYTES] = FRAME_KIND.envelope;
  view.setUint32(HEAD_BYTES, controlBytes);
  head.set(control, HEAD_BYTES + 4);
  const rest = payloads.filter((payload) => payload.byteLength > 0);
  return controlTail === undefined ? [head, ...rest] : [head, controlTail, ...rest];
}

/** Decodes one frame body (without its length prefix). Throws WireError on anything it cannot read. */
export function decodeFrame(body: Uint8Array): DecodedFrame {
  const kind = body[0];
  switch (kind) {
    case FRAME_KIND.hello:
      return { kind: 'hello', hello: decodeHelloControl(handshakeControl(body)) };
    case FRAME_KIND.helloReply:
      return { kind: 'helloReply', reply: decodeHelloReplyControl(handshakeControl(body)) };
    case FRAME_KIND.authChallenge:
      return { kind: 'authChallenge', nonce: decodeAuthChallengeControl(handshakeControl(body)) };
    case FRAME_KIND.authProof:
      return { kind: 'authProof', mac: decodeAuthProofControl(handshakeControl(body)) };
    case FRAME_KIND.envelope: {
      if (body.byteLength < 5) throw new WireError('malformed', 'an envelope frame shorter than its head');
      const view = new DataView(body.buffer, body.byteOffset, body.byteLength);
      const controlLength = view.getUint32(1);
      if (5 + controlLength > body.byteLength) {
        throw new WireError(
          'malformed',
          `an envelope's control part of ${controlLength} bytes overruns its ${body.byteLength}-byte frame`,
        );
      }
      const control = body.subarray(5, 5 + controlLength);
      const payloads = body.subarray(5 + controlLength);
      const envelope = decodeHotEnvelope(control, payloads) ?? decodeEnvelopeControl(control, payloads);
      return { kind: 'envelope', envelope };
    }
    case FRAME_KIND.ping:
    case FRAME_KIND.pong:
      if (body.byteLength !== 1)
        throw new WireError('malformed', `a ${kind === FRAME_KIND.ping ? 'ping' : 'pong'} frame with a body`);
      return { kind: kind === FRAME_KIND.ping ? 'ping' : 'pong' };
    case undefined:
    default:
      throw new WireError(
        'unknown',
        `frame kind ${String(kind)} is not one of hello, helloReply, envelope, authChallenge, authProof, ping, pong`,
      );
  }
}

function handshakeControl(body: Uint8Array): Uint8Array {
  const version = body[1];
  if (version !== PROTOCOL_VERSION) {
    throw new WireError(
      'unknown',
      `handshake of protocol version ${String(version)}; this process speaks version ${PROTOCOL_VERSION}`,
    );
  }
  return body.subarray(2);
}
