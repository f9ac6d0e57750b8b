// The transport's `written` signal, on real loopback sockets: a frame with raw payloads reports its pieces once the
// socket has taken them (so that a worker may use its read buffers again), after the bytes went out whole; a frame
// without raw payloads reports nothing.
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import type { Envelope } from '../../core/machines/effects.ts';
import { AddressBook } from './addresses.ts';
import { loopbackTransport } from './loopback-transport.ts';
import { within } from '../testing/deadline.ts';

describe('the transport tells when a frame’s pieces are written', () => {
  const addresses = new AddressBook();
  const arrived: Envelope[] = [];
  const waiting: ((envelope: Envelope) => void)[] = [];
  const reported: (readonly Uint8Array[])[] = [];
  const reports: (() => void)[] = [];
  const nextReport = () =>
    within(new Promise<void>((resolve) => reports.push(resolve)), 'the sender to report a frame written');
  const receiver = loopbackTransport('receiver', new AddressBook(), (envelope) => {
    arrived.push(envelope);
    waiting.shift()?.(envelope);
  });
  const sender = loopbackTransport(
    'sender',
    addresses,
    () => undefined,
    (pieces) => {
      reported.push(pieces);
      reports.shift()?.();
    },
  );
  const next = () =>
    within(new Promise<Envelope>((resolve) => waiting.push(resolve)), 'a message delivered to the receiver');

  before(async () => {
    const bound = await receiver.listen('rpc', '127.0.0.1', 0);
    addresses.set('receiver', bound);
  });
  after(async () => {
    await sender.close();
    await receiver.close();
  });

  it('reports a chunk’s pieces, its bytes among them, once they went out whole', async () => {
    const bytes = new Uint8Array(3 << 20).map((_, i) => i % 253);
    const delivered = next();
    const written = nextReport();
    sender.send({
      from: 'sender',
      to: 'receiver',
      inReplyTo: 7,
      message: { type: 'ChunkData', status: 'SUCCESS', streamId: 1, chunkIndex: 0, bytes, message: '' },
    });
    assert.equal(reported.length, 0, 'nothing is reported before the socket took the bytes');
    const envelope = await delivered;
    await written;
    assert.equal(reported.length, 1);
    assert.ok(
      reported[0]!.some((piece) => piece.buffer === bytes.buffer),
      'reported[0]!.some((piece) => piece.buffer === bytes.buffer)',
    );
    const message = envelope.message;
    assert.ok(message.type === 'ChunkData', "message.type === 'ChunkData'");
    assert.deepEqual(message.bytes, bytes);
  });

  it('reports nothing for a frame without raw payloads', async () => {
    const before = reported.length;
    const delivered = next();
    sender.send({ from: 'sender', to: 'receiver', message: { type: 'CloseStream', streamId: 1 } });
    await delivered;
    // A chunk sent after it is the next report: had the CloseStream been reported, it would come first.
    const written = nextReport();
    const bytes = new Uint8Array(16).fill(9);
    sender.send({
      from: 'sender',
      to: 'receiver',
      inReplyTo: 8,
      message: { type: 'ChunkData', status: 'SUCCESS', streamId: 1, chunkIndex: 1, bytes, message: '' },
    });
    await written;
    assert.equal(reported.length, before + 1);
    assert.ok(
      reported.at(-1)!.some((piece) => piece.buffer === bytes.buffer),
      'reported.at(-1)!.some((piece) => piece.buffer === bytes.buffer)',
    );
  });
});
