import { createServer, type Server, type Socket } from 'node:net';

/** A TCP server that accepts connections and never answers; `spoken` resolves once a peer has sent bytes. */
export class SilentServer {
  private readonly sockets = new Set<Socket>();
  private heard: () => void = () => undefined;
  /** Resolves once a peer has written something (its handshake): its request is then waiting here. */
  readonly spoken = new Promise<void>((resolve) => (this.heard = resolve));
  readonly server: Server = createServer((socket) => {
    this.sockets.add(socket);
    socket.on('data', () => this.heard());
    socket.on('error', () => undefined);
    socket.on('close', () => this.sockets.delete(socket));
  });

  async listen(): Promise<number> {
    await new Promise<void>((resolve) => this.server.listen(0, '127.0.0.1', resolve));
    const address = this.server.address();
    if (address === null || typeof address === 'string') throw new Error('no TCP address');
    return address.port;
  }

  async close(): Promise<void> {
    for (const socket of this.sockets) socket.destroy();
    await new Promise<void>((resolve) => this.server.close(() => resolve()));
  }
}
