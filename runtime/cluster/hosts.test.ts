import assert from 'node:assert/strict';
import { spawn, type ChildProcess } from 'node:child_process';
import { execFileSync } from 'node:child_process';
import { connect } from 'node:net';
import { createInterface } from 'node:readline';
import { after, before, describe, it } from 'node:test';
import { HostNetwork, hostsUnavailableReason, type Host } from './hosts.ts';

const unavailable = await hostsUnavailableReason();
if (unavailable !== undefined) console.log(`# skipping the namespace-host tests: ${unavailable}`);

/** How long a connection attempt may go unanswered before the peer counts as silent. */
const SILENCE_MS = 1_500;

type Outcome = 'connected' | 'refused' | 'silent' | 'unreachable';

/** Connects from the root namespace and says what came back: an answer, a refusal, or nothing at all. */
function probe(address: string, port: number): Promise<Outcome> {
  return new Promise((resolve) => {
    const socket = connect({ host: address, port });
    const timer = setTimeout(() => {
      socket.destroy();
      resolve('silent');
    }, SILENCE_MS);
    socket.on('connect', () => {
      clearTimeout(timer);
      socket.destroy();
      resolve('connected');
    });
    socket.on('error', (error: NodeJS.ErrnoException) => {
      clearTimeout(timer);
      resolve(error.code === 'ECONNREFUSED' ? 'refused' : 'unreachable');
    });
  });
}

/** Starts a TCP server on port 7000 inside `host`; resolves once it listens. */
async function listenIn(network: HostNetwork, host: Host): Promise<ChildProcess> {
  const script =
    "require('net').createServer((s) => s.end()).listen(7000, '0.0.0.0', () => console.log('listening'))";
  const [command, ...args] = network.command(host, [process.execPath, '-e', script]);
  const child = spawn(command!, args, { stdio: ['ignore', 'pipe', 'inherit'] });
  await new Promise<void>((resolve, reject) => {
    createInterface({ input: child.stdout }).on('line', (line) => {
      if (line === 'listening') resolve();
    });
    child.on('exit', (code) =>
      reject(new Error(`the listener in ${host.namespace} exited (${String(code)})`)),
    );
  });
  return child;
}

function namespaces(): string {
  return execFileSync('ip', ['netns', 'list'], { encoding: 'utf8' });
}

describe('namespace test hosts', { skip: unavailable }, () => {
  let network: HostNetwork;
  const listeners: ChildProcess[] = [];

  before(async () => {
    network = await HostNetwork.create({ hosts: 3 });
    for (const host of network.hosts) listeners.push(await listenIn(network, host));
  });

  after(async () => {
    for (const child of listeners) child.kill('SIGKILL');
    await network?.destroy();
  });

  it('gives each host its own address, reachable from the root namespace', async () => {
    const addresses = new Set(network.hosts.map((host) => host.address));
    assert.equal(addresses.size, 3, 'three distinct addresses');
    for (const host of network.hosts)
      assert.equal(await probe(host.address, 7000), 'connected', `${host.address} answers`);
    assert.equal(await probe(network.hosts[0]!.address, 7001), 'refused', 'a closed port is refused at once');
  });

  it('a host whose link is down answers nothing, and answers again once reconnected', async () => {
    const host = network.hosts[1]!;
    await network.cut(host);
    assert.equal(await probe(host.address, 7000), 'silent', 'no reset from a cut-off host');
    assert.equal(await probe(host.address, 7001), 'silent', 'not even a refusal from a cut-off host');
    assert.equal(await probe(network.hosts[2]!.address, 7000), 'connected', 'the other hosts still answer');
    await network.reconnect(host);
    assert.equal(await probe(host.address, 7000), 'connected', 'healed');
  });

  it('a one-way partition drops what one side sends, and heals', async () => {
    const host = network.hosts[2]!;
    await network.dropFromTo(host, 'root');
    assert.equal(await probe(host.address, 7000), 'silent', 'the host’s answers to the root are dropped');
    await network.heal();
    assert.equal(await probe(host.address, 7000), 'connected', 'healed');
    await network.dropFromTo('root', host);
    assert.equal(
      await probe(host.address, 7000),
      'unreachable',
      'the side holding the blackhole route learns at once that it cannot send',
    );
    await network.heal();
    assert.equal(await probe(host.address, 7000), 'connected', 'healed again');
  });

  it('destroy removes every namespace it made', async () => {
    const extra = await HostNetwork.create({ hosts: 2 });
    const names = extra.hosts.map((host) => host.namespace);
    assert.ok(
      names.every((name) => namespaces().includes(name)),
      'the namespaces exist while the network does',
    );
    await extra.destroy();
    const left = namespaces();
    assert.ok(!names.some((name) => left.includes(name)), `no namespace left behind: ${left}`);
  });
});
