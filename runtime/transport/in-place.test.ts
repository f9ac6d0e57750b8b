// Plain TCP connections are read in place on both ends, on real loopback sockets: the opening side through net's
// `onread`, the accepting side through the server hook of connection.ts `acceptInPlace`. A small frame read in place
// is a view of the reader's slab (node's own reads hand out buffers of the bytes read), so a payload's backing
// buffer tells which reader cut it; were the hook to stop taking effect on a newer node, this fails.
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import type { Envelope } from '../../core/machines/effects.ts';
import { SLAB_BYTES } from '../wire/in-place-reader.ts';
import type { WireEnvelope } from '../wire/index.ts';
import { AddressBook } from './addresses.ts';
import { loopbackTransport } from './loopback-transport.ts';
import { within } from '../testing/deadline.ts';

function chunk(from: string, to: string, index: number, bytes: Uint8Array): WireEnvelope {
  return {
    from,
    to,
    message: { type: 'ChunkData', status: 'SUCCESS', streamId: 1, chunkIndex: index, bytes, message: '' },
  };
}

function bytesOf(envelope: Envelope): Uint8Array {
  const message = envelope.message;
  assert.ok(message.type === 'ChunkData', "message.type === 'ChunkData'");
  return message.bytes;
}

describe('plain TCP connections are read in place', () => {
  const addresses = new AddressBook();
  const waiting = new Map<string, (envelope: Envelope) => void>();
  const next = (node: string) =>
    within(new Promise<Envelope>((resolve) => waiting.set(node, resolve)), `a message delivered to ${node}`);
  const arrive = (node: string) => (envelope: Envelope) => waiting.get(node)?.(envelope);
  const accepting = loopbackTransport('accepting', new AddressBook(), arrive('accepting'));
  const opening = loopbackTransport('opening', addresses, arrive('opening'));

  before(async () => {
    addresses.set('accepting', await accepting.listen('rpc', '127.0.0.1', 0));
  });
  after(async () => {
    await opening.close();
    await accepting.close();
  });

  it('on the accepting side: a small frame is a view of the slab it was read into', async () => {
    const arrived = next('accepting');
    opening.send(chunk('opening', 'accepting', 0, Uint8Array.of(1, 2, 3)));
    const bytes = bytesOf(await arrived);
    assert.deepEqual(bytes, Uint8Array.of(1, 2, 3));
    assert.equal(bytes.buffer.byteLength, SLAB_BYTES);
  });

  it('on the opening side, for the answer on the same connection', async () => {
    const arrived = next('opening');
    accepting.send(chunk('accepting', 'opening', 1, Uint8Array.of(4, 5)));
    const bytes = bytesOf(await arrived);
    assert.deepEqual(bytes, Uint8Array.of(4, 5));
    assert.equal(bytes.buffer.byteLength, SLAB_BYTES);
  });

  it('a frame larger than a slab arrives whole, in a buffer of its own size', async () => {
    const big = new Uint8Array(3 * SLAB_BYTES + 17).map((_, i) => i % 251);
    const arrived = next('accepting');
    opening.send(chunk('opening', 'accepting', 2, big));
    const bytes = bytesOf(await arrived);
    assert.deepEqual(bytes, big);
    assert.ok(bytes.buffer.byteLength < big.byteLength + 256, 'the frame’s own buffer, not a slab');
  });
});
