/**
 * The bare echo server, master-load's same-run baseline (`node --import tsx bench/master-load/echo.ts`, driven over
 * IPC, ./protocol.ts): it accepts every hello with svc's own HelloReply frame, then cuts the stream into frames with
 * runtime/wire's FrameReader (the framing every svc process uses) and writes each frame back as it came, decoding
 * nothing. What the load generator and loopback cost at the same rates, without a master's decisions.
 */
import { createServer, type Socket } from 'node:net';
import { CURRENT_RELEASE } from '../../core/release/version.ts';
import { encodeHelloReply, FrameReader, frameLimit, LENGTH_PREFIX_BYTES } from '../../runtime/wire/index.ts';
import type { FromEcho, ToEcho } from './protocol.ts';

const HELLO_REPLY = encodeHelloReply({
  accepted: true,
  status: 'SUCCESS',
  message: '',
  release: CURRENT_RELEASE,
  nodeId: 'echo',
});

function send(message: FromEcho): void {
  process.send?.(message);
}

const sockets = new Set<Socket>();
const server = createServer((socket) => {
  sockets.add(socket);
  socket.setNoDelay(true);
  const reader = new FrameReader(frameLimit(64 * 2 ** 20));
  let greeted = false;
  socket.on('data', (chunk) => {
    const bodies = reader.push(chunk);
    if (bodies.length === 0) return;
    socket.cork();
    for (const body of bodies) {
      if (!greeted) {
        greeted = true;
        socket.write(HELLO_REPLY);
        continue;
      }
      const prefix = Buffer.allocUnsafe(LENGTH_PREFIX_BYTES);
      prefix.writeUInt32BE(body.byteLength);
      socket.write(prefix);
      socket.write(body);
    }
    socket.uncork();
  });
  socket.on('error', () => undefined);
  socket.on('close', () => sockets.delete(socket));
});

server.listen({ host: '127.0.0.1', port: 0, backlog: 2048 }, () => send({ type: 'ready' }));

process.on('message', (message: ToEcho) => {
  switch (message.type) {
    case 'port': {
      const address = server.address();
      send({ type: 'port', port: typeof address === 'object' && address !== null ? address.port : 0 });
      break;
    }
    case 'exit':
      for (const socket of sockets) socket.destroy();
      server.close();
      send({ type: 'exiting' });
      process.exit(0);
  }
});
