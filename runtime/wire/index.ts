export { WireError, type WireErrorReason } from './errors.ts';
export {
  EAGER_BODY_BYTES,
  frameLimit,
  FrameReader,
  HANDSHAKE_FRAME_BYTES,
  HANDSHAKE_LIMIT,
  LENGTH_PREFIX_BYTES,
  type FrameLimit,
} from './frame-reader.ts';
export { InPlaceFrameReader } from './in-place-reader.ts';
export { recallingChecksum } from './batch-checksums.ts';
export {
  lentBodiesOf,
  POOLED_BODY_MIN_BYTES,
  ReceiveBodies,
  RECEIVE_BODIES_KEPT_BYTES,
  SCRIBBLE_BYTE,
  type BodySource,
  type ReceiveBodiesOptions,
} from './receive-bodies.ts';
export {
  decodeFrame,
  encodeAuthChallenge,
  encodeAuthProof,
  encodeEnvelope,
  encodeHello,
  encodeHelloReply,
  FRAME_KIND,
  PROTOCOL_VERSION,
  PING_FRAME,
  PONG_FRAME,
} from './frames.ts';
export type { DecodedFrame, Hello, HelloReply, PeerRole, WireEnvelope } from './types.ts';
export { AUTH_MAC_BYTES, AUTH_NONCE_BYTES } from './control-codec.ts';
