import { createConnection, createServer, type Server, type Socket } from 'node:net';
import { decodeFrame, encodeHello, LENGTH_PREFIX_BYTES } from '../wire/index.ts';

/**
 * A deliberately broken server for the conformance suite's own tests: a TCP front for a real master's data port
 * that rewrites every client's handshake to claim `presentAs`, so the master behind it admits any client release
 * (a 0.2 client at 0.6.0, which the contract's rule 6 refuses). Everything after the handshake passes unchanged.
 * Test-only: it lives under runtime/testing/, which the package excludes, and nothing in a deployment starts it.
 */
export interface MisadmittingFront {
  /** `svc://127.0.0.1:<port>`: hand it to clients instead of the master's own address. */
  readonly url: string;
  readonly port: number;
  /** Client releases whose handshakes were rewritten, in arrival order. */
  readonly laundered: readonly string[];
  close(): Promise<void>;
}

export async function startMisadmittingFront(
  upstream: { readonly host: string; readonly port: number },
  presentAs: string,
): Promise<MisadmittingFront> {
  const laundered: string[] = [];
  const sockets = new Set<Socket>();
  const server: Server = createServer((client) => {
    sockets.add(client);
    const master = createConnection(upstream);
    sockets.add(master);
    const closeBoth = (): void => {
      client.destroy();
      master.destroy();
    };
    client.on('close', closeBoth).on('error', closeBoth);
    master.on('close', closeBoth).on('error', closeBoth);
    let pending = Buffer.alloc(0);
    const firstFrame = (data: Buffer): void => {
      pending = Buffer.concat([pending, data]);
      if (pending.length < LENGTH_PREFIX_BYTES) return;
      const end = LENGTH_PREFIX_BYTES + pending.readUInt32BE(0);
      if (pending.length < end) return;
      client.off('data', firstFrame);
      const frame = decodeFrame(pending.subarray(LENGTH_PREFIX_BYTES, end));
      const hello =
        frame.kind === 'hello' && frame.hello.role === 'client'
          ? (laundered.push(frame.hello.release),
            Buffer.from(encodeHello({ ...frame.hello, release: presentAs as typeof frame.hello.release })))
          : pending.subarray(0, end);
      master.write(hello);
      master.write(pending.subarray(end));
      client.pipe(master);
      master.pipe(client);
    };
    client.on('data', firstFrame);
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const address = server.address();
  if (address === null || typeof address === 'string') throw new Error('the front has no TCP address');
  return {
    url: `svc://127.0.0.1:${address.port}`,
    port: address.port,
    laundered,
    async close() {
      for (const socket of sockets) socket.destroy();
      await new Promise<void>((resolve) => server.close(() => resolve()));
    },
  };
}
