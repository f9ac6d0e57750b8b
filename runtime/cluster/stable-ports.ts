// Ports a test server can come back on. A port the kernel picks for listen(0) comes from its ephemeral range
// (net.ipv4.ip_local_port_range), the range outgoing connections take their local ports from too: once the server
// exits, any connection of any process may be given that port, and a server restarted on its ports (a worker's
// graceful restart keeps its id, which is its address) fails with EADDRINUSE. A CI run lost a rolling-upgrade test
// to that. Ports below the range are never handed out by the kernel, so only another explicit bind can take them.
import { readFileSync } from 'node:fs';
import { createServer } from 'node:net';

/** The default lower bound of Linux's ephemeral range, for systems that do not say theirs. */
const DEFAULT_EPHEMERAL_LOW = 32768;
/** The lowest port handed out: above the registered services most machines run. */
const LOWEST_PORT = 10000;
const ATTEMPTS_PER_PORT = 50;

/** The first port of the kernel's ephemeral range (ports from it up are the kernel's to hand out). */
export function ephemeralLow(read: () => string = readLocalPortRange): number {
  try {
    const low = Number(read().trim().split(/\s+/)[0]);
    return Number.isInteger(low) && low > LOWEST_PORT ? low : DEFAULT_EPHEMERAL_LOW;
  } catch {
    return DEFAULT_EPHEMERAL_LOW;
  }
}

function readLocalPortRange(): string {
  return readFileSync('/proc/sys/net/ipv4/ip_local_port_range', 'utf8');
}

/**
 * `count` distinct ports on `host`, each free a moment ago (bound and released here), drawn at random below the
 * ephemeral range. Drawn at random so that test files running side by side seldom draw the same; a server that then
 * finds one taken after all fails to start and can be started again on fresh ones.
 */
export async function stablePorts(
  count: number,
  host: string,
  random: () => number = Math.random,
): Promise<number[]> {
  const high = ephemeralLow();
  const ports: number[] = [];
  for (let n = 0; n < count; n += 1) {
    let found: number | undefined;
    for (let attempt = 0; attempt < ATTEMPTS_PER_PORT && found === undefined; attempt += 1) {
      const port = LOWEST_PORT + Math.floor(random() * (high - LOWEST_PORT));
      if (!ports.includes(port) && (await bindable(port, host))) found = port;
    }
    if (found === undefined) {
      throw new Error(`no free port on ${host} below ${high} after ${ATTEMPTS_PER_PORT} attempts`);
    }
    ports.push(found);
  }
  return ports;
}

function bindable(port: number, host: string): Promise<boolean> {
  return new Promise((resolve) => {
    const server = createServer();
    server.once('error', () => resolve(false));
    server.listen({ port, host, exclusive: true }, () => server.close(() => resolve(true)));
  });
}
