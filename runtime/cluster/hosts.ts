/**
 * Test hosts on a real (virtual) network: N network namespaces joined by a bridge, each with an address of its own,
 * so that a server started inside one (`ip netns exec`) is reached over a link that can be cut. Loopback is kinder
 * than a network: a dead peer on loopback answers with a reset at once, a host whose link is down answers nothing.
 * The faults here are the ones a real network has: a host's link down (symmetric partition), a one-way partition
 * (a blackhole route on one side), a partition between groups of hosts (racks), and healing.
 *
 * The root namespace (where the job and the test run) is on the bridge too, at the subnet's first address.
 * Everything is named after the creating process's pid, so sweepOrphanHosts() can remove what a killed test left.
 */
import { execFile } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { promisify } from 'node:util';

const run = promisify(execFile);

/** Namespace names: `svch-<creator pid>-<network id>-<host index>`. */
const NAMESPACE_PREFIX = 'svch';
const NAMESPACE_PATTERN = /^svch-(\d+)-([0-9a-f]{6})-(\d+)$/;

export interface Host {
  readonly index: number;
  /** The network namespace the host's processes run in. */
  readonly namespace: string;
  /** The host's address on the bridge; servers bind and advertise it. */
  readonly address: string;
  /** The root-side end of the host's veth pair: setting it down cuts the host off from everyone. */
  readonly link: string;
}

/** One side of a one-way partition: a host, or the root namespace (where the job runs). */
export type Side = Host | 'root';

async function ip(args: readonly string[]): Promise<string> {
  const { stdout } = await run('ip', [...args], { encoding: 'utf8' });
  return stdout;
}

/**
 * Why namespace hosts cannot be made on this machine, or undefined when they can. Tests that need them skip with
 * this line, never silently.
 */
export async function hostsUnavailableReason(): Promise<string | undefined> {
  if (process.platform !== 'linux') return `network namespaces need Linux (this is ${process.platform})`;
  if (typeof process.getuid === 'function' && process.getuid() !== 0)
    return 'network namespaces need root (ip netns add); run as root or in CI';
  try {
    await ip(['netns', 'list']);
    return undefined;
  } catch (error) {
    return `\`ip netns\` does not work here: ${(error as Error).message.split('\n')[0]}`;
  }
}

function isAlive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch (error) {
    return (error as NodeJS.ErrnoException).code === 'EPERM';
  }
}

/** Removes namespaces and bridges left by test processes that no longer run (killed before their cleanup). */
export async function sweepOrphanHosts(): Promise<number> {
  const listed = await ip(['netns', 'list']).catch(() => '');
  const orphans = new Set<string>();
  let removed = 0;
  for (const line of listed.split('\n')) {
    const match = NAMESPACE_PATTERN.exec(line.split(' ')[0] ?? '');
    if (match === null || isAlive(Number(match[1]))) continue;
    await ip(['netns', 'del', match[0]]).catch(() => undefined);
    orphans.add(match[2]!);
    removed += 1;
  }
  for (const id of orphans) await ip(['link', 'del', bridgeName(id)]).catch(() => undefined);
  return removed;
}

function bridgeName(id: string): string {
  return `svb${id}`;
}

/** A /24 in 10.224.0.0/11 that no route of this machine uses yet. */
async function freeSubnet(): Promise<string> {
  const routes = await ip(['-4', 'route', 'show', 'table', 'all']);
  for (let attempt = 0; attempt < 64; attempt++) {
    const [a, b] = randomBytes(2);
    const subnet = `10.${224 + (a! % 32)}.${b!}`;
    if (!routes.includes(`${subnet}.`)) return subnet;
  }
  throw new Error('no free 10.224.0.0/11 subnet for test hosts');
}

export interface HostNetworkOptions {
  /** How many hosts (namespaces). */
  readonly hosts: number;
}

/**
 * A bridge and `hosts` namespaces on it. Create with HostNetwork.create(); destroy() removes everything, and must
 * be called even when a test fails (it is idempotent).
 */
export class HostNetwork {
  private readonly blackholes: { side: Side; address: string }[] = [];
  private destroyed = false;

  private constructor(
    readonly id: string,
    readonly subnet: string,
    readonly hosts: readonly Host[],
  ) {}

  /** The root namespace's address on the bridge: what a server in a host sees the job (and the test) as. */
  get rootAddress(): string {
    return `${this.subnet}.1`;
  }

  get bridge(): string {
    return bridgeName(this.id);
  }

  static async create(options: HostNetworkOptions): Promise<HostNetwork> {
    if (options.hosts < 1 || options.hosts > 200)
      throw new RangeError(`hosts must be 1..200, not ${options.hosts}`);
    const reason = await hostsUnavailableReason();
    if (reason !== undefined) throw new Error(`cannot create test hosts: ${reason}`);
    await sweepOrphanHosts();
    const id = randomBytes(3).toString('hex');
    const subnet = await freeSubnet();
    const hosts = Array.from({ length: options.hosts }, (_, index) => ({
      index,
      namespace: `${NAMESPACE_PREFIX}-${process.pid}-${id}-${index}`,
      address: `${subnet}.${index + 2}`,
      link: `svh${id}${index}`,
    }));
    const network = new HostNetwork(id, subnet, hosts);
    try {
      await ip(['link', 'add', network.bridge, 'type', 'bridge']);
      await ip(['addr', 'add', `${network.rootAddress}/24`, 'dev', network.bridge]);
      await ip(['link', 'set', network.bridge, 'up']);
      for (const host of hosts) await network.addHost(host);
    } catch (error) {
      await network.destroy();
      throw error;
    }
    return network;
  }

  private async addHost(host: Host): Promise<void> {
    const inner = `svn${this.id}${host.index}`;
    await ip(['netns', 'add', host.namespace]);
    await ip(['link', 'add', host.link, 'type', 'veth', 'peer', 'name', inner]);
    await ip(['link', 'set', host.link, 'master', this.bridge, 'up']);
    await ip(['link', 'set', inner, 'netns', host.namespace]);
    const inside = (args: string[]) => ip(['-n', host.namespace, ...args]);
    await inside(['addr', 'add', `${host.address}/24`, 'dev', inner]);
    await inside(['link', 'set', inner, 'up']);
    await inside(['link', 'set', 'lo', 'up']);
    await inside(['route', 'add', 'default', 'via', this.rootAddress]);
  }

  /** The command line that runs `argv` inside `host` (`ip netns exec` execs it: the pid is the command's own). */
  command(host: Host, argv: readonly string[]): string[] {
    return ['ip', 'netns', 'exec', host.namespace, ...argv];
  }

  /** Sets the host's link down: nobody reaches it and it reaches nobody; its processes keep running. */
  async cut(host: Host): Promise<void> {
    await ip(['link', 'set', host.link, 'down']);
  }

  /** Sets the host's link up again. */
  async reconnect(host: Host): Promise<void> {
    await ip(['link', 'set', host.link, 'up']);
  }

  /**
   * A one-way partition: packets `from` sends to `to` are dropped (a blackhole route on `from`'s side); what `to`
   * sends still arrives. To `to`, `from` has gone silent (even its TCP handshake replies are dropped); `from` itself
   * learns at once, as a host does whose own route is gone (its sends fail with an error).
   */
  async dropFromTo(from: Side, to: Host | 'root'): Promise<void> {
    const address = to === 'root' ? this.rootAddress : to.address;
    await this.route(from, ['add', 'blackhole', `${address}/32`]);
    this.blackholes.push({ side: from, address });
  }

  /** A partition between two groups (racks): no packet crosses in either direction; inside each group all flows. */
  async partition(left: readonly Side[], right: readonly Side[]): Promise<void> {
    for (const a of left) {
      for (const b of right) {
        await this.dropFromTo(a, b);
        await this.dropFromTo(b, a);
      }
    }
  }

  /** Removes every blackhole route and sets every link up. */
  async heal(): Promise<void> {
    for (const { side, address } of this.blackholes.splice(0))
      await this.route(side, ['del', 'blackhole', `${address}/32`]).catch(() => undefined);
    for (const host of this.hosts) await this.reconnect(host);
  }

  /** Removes the namespaces (their veth pairs go with them) and the bridge; the root's blackhole routes too. */
  async destroy(): Promise<void> {
    if (this.destroyed) return;
    this.destroyed = true;
    for (const { side, address } of this.blackholes.splice(0)) {
      if (side === 'root')
        await this.route(side, ['del', 'blackhole', `${address}/32`]).catch(() => undefined);
    }
    for (const host of this.hosts) await ip(['netns', 'del', host.namespace]).catch(() => undefined);
    await ip(['link', 'del', this.bridge]).catch(() => undefined);
  }

  private async route(side: Side, args: readonly string[]): Promise<void> {
    await ip(side === 'root' ? ['route', ...args] : ['-n', side.namespace, 'route', ...args]);
  }
}
