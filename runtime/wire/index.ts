export { WireError, type WireErrorReason } from './errors.ts';
export { FrameReader, LENGTH_PREFIX_BYTES } from './frame-reader.ts';
export {
  decodeFrame,
  encodeEnvelope,
  encodeHello,
  encodeHelloReply,
  FRAME_KIND,
  PROTOCOL_VERSION,
} from './frames.ts';
export type { DecodedFrame, Hello, HelloReply, PeerRole, WireEnvelope } from './types.ts';
