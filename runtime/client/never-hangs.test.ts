// A client that never hangs, on real sockets: a request to a peer that accepts and never answers rejects at its
// deadline, a send that fails rejects at once, an application whose master stopped answering (SIGSTOP) closes within
// svc.rpc.askTimeout with an error saying so, and closing an executor rejects the waits of its running tasks.
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { lifecycleManagerNodeId } from '../../core/protocol/node-ids.ts';
import { LocalCluster } from '../cluster/local-cluster.ts';
import { within } from '../testing/deadline.ts';
import { startApplication } from './application.ts';
import { resolveClientSettings } from './client-config.ts';
import { clientNetwork } from './client-network.ts';
import { DriverNode } from './driver-node.ts';
import { ClientClosedError, RequestFailedError } from './errors.ts';
import { connectExecutor } from './shuffle-client.ts';
import { closedPort } from '../testing/closed-port.ts';
import { SilentServer } from '../testing/silent-server.ts';

/** A driver node of application `app-x` whose lifecycle manager is at `port`, on a real client network. */
function driverTowards(port: number, deadline: string): { node: DriverNode; close: () => Promise<void> } {
  const client = resolveClientSettings(
    { conf: { 'svc.rpc.askTimeout': deadline, 'svc.network.connect.timeout': '10min' }, logLevel: 'silent' },
    { role: 'lifecycle-manager', node: 'driver-x' },
  );
  const { network, connectFailure } = clientNetwork({
    nodeId: 'driver-x',
    client,
    identity: { appId: 'app-x' },
  });
  const lifecycleManager = lifecycleManagerNodeId('app-x');
  network.addresses.set(lifecycleManager, { host: '127.0.0.1', port });
  const node = new DriverNode('driver-x', lifecycleManager, {
    send: (envelope) => network.transport.send(envelope),
    deadlineMs: client.askTimeoutMs,
    connectFailure,
  });
  network.host.add(node);
  return { node, close: () => network.transport.close() };
}

describe('the driver’s requests to its lifecycle manager', () => {
  it('reject at the deadline, naming the request, when the peer accepts and never answers', async () => {
    const silent = new SilentServer();
    const driver = driverTowards(await silent.listen(), '1s');
    try {
      await assert.rejects(
        driver.node.ask({ type: 'UnregisterShuffle', appId: 'app-x', shuffleId: 3 }),
        (error: unknown) => {
          assert.ok(error instanceof RequestFailedError, String(error));
          assert.equal(error.request, 'UnregisterShuffle');
          assert.match(
            error.message,
            /UnregisterShuffle got no answer from .* within 1000 ms \(svc\.rpc\.askTimeout\)/,
          );
          return true;
        },
      );
    } finally {
      await driver.close();
      await silent.close();
    }
  });

  it('reject as soon as the send fails, long before the deadline', async () => {
    const driver = driverTowards(await closedPort(), '10min');
    try {
      await assert.rejects(
        driver.node.ask({ type: 'UnregisterApplication', appId: 'app-x' }),
        (error: unknown) => {
          assert.ok(error instanceof RequestFailedError, String(error));
          assert.match(error.message, /UnregisterApplication could not be sent to .*ECONNREFUSED/);
          return true;
        },
      );
    } finally {
      await driver.close();
    }
  });

  it('reject with the stop reason when the node stops, and later requests too', async () => {
    const silent = new SilentServer();
    const driver = driverTowards(await silent.listen(), '10min');
    try {
      const asked = driver.node.ask({ type: 'UnregisterShuffle', appId: 'app-x', shuffleId: 1 });
      await within(silent.spoken, 'the node to send its request to the silent lifecycle manager');
      const reason = new ClientClosedError('closed');
      driver.node.stop(reason);
      await assert.rejects(asked, (error) => error === reason);
      await assert.rejects(
        driver.node.ask({ type: 'UnregisterShuffle', appId: 'app-x', shuffleId: 2 }),
        (error) => error === reason,
      );
    } finally {
      await driver.close();
      await silent.close();
    }
  });
});

describe('an application whose master stopped answering', () => {
  let cluster: LocalCluster;
  before(async () => {
    cluster = await LocalCluster.start({ workers: 0 });
  });
  after(async () => {
    cluster?.master.kill('SIGCONT');
    await cluster?.stop();
  });

  it('closes within svc.rpc.askTimeout, rejecting with an error that says the master did not confirm', async () => {
    const app = await startApplication({
      master: cluster.masterUrl,
      logLevel: 'silent',
      conf: { 'svc.rpc.askTimeout': '2s' },
    });
    cluster.master.kill('SIGSTOP');
    try {
      // The lifecycle manager answers an unregistered shuffle itself and tells the master later.
      await app.unregisterShuffle(0);
      await assert.rejects(within(app.close(), 'the application to close'), (error: unknown) => {
        assert.ok(error instanceof RequestFailedError, String(error));
        assert.equal(error.request, 'UnregisterApplication');
        assert.match(
          error.message,
          /is closed here, but the master did not confirm its unregister within 2000 ms/,
        );
        return true;
      });
      await app.close(); // a second close resolves
      await assert.rejects(app.unregisterShuffle(1), ClientClosedError);
    } finally {
      cluster.master.kill('SIGCONT');
    }
  });
});

describe('closing an executor', () => {
  it('rejects a running map attempt’s close() and a running read with ClientClosedError', async () => {
    const silent = new SilentServer();
    const port = await silent.listen();
    // Deadlines far away: only the executor's close can end these waits.
    const executor = connectExecutor({
      lifecycleManager: `127.0.0.1:${port}`,
      appId: 'app-x',
      logLevel: 'silent',
      conf: { 'svc.rpc.askTimeout': '10min', 'svc.network.connect.timeout': '10min' },
    });
    try {
      const shuffle = executor.shuffle(0, { maps: 1, partitions: 2 });
      const writer = shuffle.writer(0);
      writer.write(1, new Uint8Array([1, 2, 3]));
      const writing = writer.close();
      const reading = shuffle.records(0);
      await within(silent.spoken, 'the tasks to speak to the silent lifecycle manager'); // the tasks' first requests are on their way to a lifecycle manager that never answers
      const closed = executor.close();
      const second = executor.close();
      // A task node the host cannot stop would leave these waits hanging: each has a deadline of its own.
      await assert.rejects(within(writing, 'the running map attempt to end'), (error: unknown) => {
        assert.ok(error instanceof ClientClosedError, String(error));
        assert.match(error.message, /was closed while this task ran/);
        return true;
      });
      await assert.rejects(within(reading, 'the running read to end'), ClientClosedError);
      await closed;
      await second;
      await assert.rejects(shuffle.records(1), ClientClosedError);
      await assert.rejects(shuffle.writer(0).close(), ClientClosedError);
    } finally {
      await executor.close();
      await silent.close();
    }
  });
});
