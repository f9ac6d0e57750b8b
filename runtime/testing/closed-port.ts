import { createServer } from 'node:net';

/** A loopback port that was just closed: connecting to it is refused (a peer nobody listens at). */
export async function closedPort(): Promise<number> {
  const server = createServer();
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const address = server.address();
  if (address === null || typeof address === 'string') throw new Error('no TCP address');
  await new Promise<void>((resolve) => server.close(() => resolve()));
  return address.port;
}
