// INTERIM: control messages as JSON with byte fields carried as raw payloads, until the protocol-buffers codec
// (runtime/wire/proto) replaces it with the same six functions.
import type { Message } from '../../core/protocol/messages.ts';
import { WireError } from './errors.ts';
import type { Hello, HelloReply, WireEnvelope } from './types.ts';

const encoder = new TextEncoder();
const decoder = new TextDecoder('utf-8', { fatal: true });

function parse(bytes: Uint8Array, what: string, reviver?: (key: string, value: unknown) => unknown): unknown {
  try {
    return JSON.parse(decoder.decode(bytes), reviver) as unknown;
  } catch (error) {
    throw new WireError('malformed', `${what}: ${(error as Error).message}`);
  }
}

export function encodeHelloControl(hello: Hello): Uint8Array {
  return encoder.encode(JSON.stringify(hello));
}
export function decodeHelloControl(bytes: Uint8Array): Hello {
  return parse(bytes, 'handshake') as Hello;
}
export function encodeHelloReplyControl(reply: HelloReply): Uint8Array {
  return encoder.encode(JSON.stringify(reply));
}
export function decodeHelloReplyControl(bytes: Uint8Array): HelloReply {
  return parse(bytes, 'handshake reply') as HelloReply;
}

export function encodeEnvelopeControl(envelope: WireEnvelope): {
  control: Uint8Array;
  payloads: readonly Uint8Array[];
} {
  const payloads: Uint8Array[] = [];
  let offset = 0;
  // The holder's own value: a Buffer's toJSON would otherwise have turned it into an array before the replacer.
  const text = JSON.stringify(envelope, function (this: Record<string, unknown>, key, value: unknown) {
    const original = this[key];
    if (original instanceof Uint8Array) {
      payloads.push(original);
      const placeholder = { $b: [offset, original.byteLength] };
      offset += original.byteLength;
      return placeholder;
    }
    return value;
  });
  return { control: encoder.encode(text), payloads };
}

export function decodeEnvelopeControl(control: Uint8Array, payloads: Uint8Array): WireEnvelope {
  const envelope = parse(control, 'envelope', (_key, value: unknown) => {
    if (typeof value === 'object' && value !== null && '$b' in value) {
      const [at, length] = (value as { $b: [number, number] }).$b;
      if (at + length > payloads.byteLength) throw new WireError('malformed', 'a payload overruns its frame');
      return payloads.subarray(at, at + length);
    }
    return value;
  }) as WireEnvelope;
  if (typeof (envelope.message as Message | undefined)?.type !== 'string') {
    throw new WireError('unknown', 'an envelope without a message type');
  }
  return envelope;
}
