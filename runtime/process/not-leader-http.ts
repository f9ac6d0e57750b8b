// The management port of a master that does not lead (a follower of its group): GET /api/v1/masters shows the group
// as this member knows it; every other request is answered 503 with the leader's announced address, so that an
// operator or a script is sent on rather than left without an answer. It closes when the master is elected, and
// the management API proper takes the port.
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import type { Logger } from '../log.ts';

export interface NotLeaderHttp {
  readonly address: { readonly host: string; readonly port: number };
  close(): Promise<void>;
}

export async function serveNotLeader(options: {
  readonly host: string;
  readonly port: number;
  /** The leader as the election last named it (`<id>@<host>:<port>`), or null when unknown. */
  readonly leader: () => string | null;
  readonly memberId: string;
  /** GET /api/v1/masters: the group as this member knows it. */
  readonly masters?: () => unknown;
  readonly logger: Logger;
}): Promise<NotLeaderHttp> {
  const server = createServer((request, response) => {
    request.resume();
    const path = (request.url ?? '').split('?')[0];
    if (options.masters !== undefined && request.method === 'GET' && path === '/api/v1/masters') {
      response.writeHead(200, { 'content-type': 'application/json' });
      response.end(JSON.stringify(options.masters()));
      return;
    }
    const leader = options.leader();
    response.writeHead(503, { 'content-type': 'application/json', 'retry-after': '1' });
    response.end(
      JSON.stringify({
        error: 'not leader',
        message: `master ${options.memberId} does not lead its group; ${leader === null ? 'no leader is known yet' : `the leader is ${leader}`}`,
        leader,
      }),
    );
  });
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(options.port, options.host, () => resolve());
  });
  const port = (server.address() as AddressInfo).port;
  options.logger.info(
    { event: 'ha.notLeaderHttp', member: options.memberId, http: { host: options.host, port } },
    `master ${options.memberId} follows: its management port ${port} answers 503 with the leader until it leads`,
  );
  let closed: Promise<void> | undefined;
  return {
    address: { host: options.host, port },
    close: () =>
      (closed ??= new Promise<void>((resolve) => {
        server.closeAllConnections();
        server.close(() => resolve());
      })),
  };
}
