// Each ask of a task to its lifecycle manager waits its own timeout (svc.client.rpc.<ask>.askTimeout), whose fallback
// is the client release's: the connection timeout of the control plane before 0.4.1, svc.rpc.askTimeout from 0.4.1.
// The lifecycle manager here accepts connections and never answers; every other timeout is an hour, so a client
// that ignored the keys would not fail within the test's deadline.
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { within } from '../testing/deadline.ts';
import { SilentServer } from '../testing/silent-server.ts';
import { MapTaskFailedError, ReduceTaskFailedError } from './errors.ts';
import { connectExecutor, type ShuffleClient } from './shuffle-client.ts';

const HOUR = '1h';

describe('client ask timeouts, per ask and per client release', () => {
  const silent = new SilentServer();
  let port = 0;
  const executors: ShuffleClient[] = [];
  before(async () => {
    port = await silent.listen();
  });
  after(async () => {
    await Promise.all(executors.map((executor) => executor.close()));
    await silent.close();
  });

  function executor(release: string, conf: Record<string, string>): ShuffleClient {
    const client = connectExecutor({
      release,
      appId: 'app-ask',
      lifecycleManager: `127.0.0.1:${port}`,
      logLevel: 'silent',
      conf: { 'svc.network.connect.timeout': HOUR, 'svc.network.timeout': HOUR, ...conf },
    });
    executors.push(client);
    return client;
  }

  async function registerFailure(client: ShuffleClient): Promise<MapTaskFailedError> {
    const writer = client.shuffle(1, { maps: 1, partitions: 1 }).writer(0);
    writer.write(0, new Uint8Array([1, 2, 3]));
    const error = await within(
      writer.close().then(
        () => undefined,
        (failure: unknown) => failure,
      ),
      'the map attempt to fail its registration',
      20_000,
    );
    assert.ok(error instanceof MapTaskFailedError, `expected MapTaskFailedError, got ${String(error)}`);
    return error;
  }

  it('a 0.3.0 client’s registerShuffle waits svc.rpc.io.connectionTimeout, not svc.rpc.askTimeout', async () => {
    const error = await registerFailure(
      executor('0.3.0', { 'svc.rpc.io.connectionTimeout': '200ms', 'svc.rpc.askTimeout': HOUR }),
    );
    assert.match(
      error.message,
      /RegisterShuffle 3 times \(timedOut; each try waited 200 ms, svc\.client\.rpc\.registerShuffle\.askTimeout from svc\.rpc\.io\.connectionTimeout\)/,
    );
  });

  it('a 0.6.0 client’s registerShuffle waits svc.rpc.askTimeout, not the connection timeout', async () => {
    const error = await registerFailure(
      executor('0.6.0', { 'svc.rpc.io.connectionTimeout': HOUR, 'svc.rpc.askTimeout': '200ms' }),
    );
    assert.match(
      error.message,
      /each try waited 200 ms, svc\.client\.rpc\.registerShuffle\.askTimeout from svc\.rpc\.askTimeout\)/,
    );
  });

  it('registerShuffle set on its own wins over both, for any release', async () => {
    for (const release of ['0.3.0', '0.6.0']) {
      const error = await registerFailure(
        executor(release, {
          'svc.rpc.io.connectionTimeout': HOUR,
          'svc.rpc.askTimeout': HOUR,
          'svc.client.rpc.registerShuffle.askTimeout': '150ms',
        }),
      );
      assert.match(error.message, /each try waited 150 ms, svc\.client\.rpc\.registerShuffle\.askTimeout\)/);
    }
  });

  it('a reduce task’s GetReducerFileGroup waits svc.client.rpc.getReducerFileGroup.askTimeout', async () => {
    const client = executor('0.6.0', {
      'svc.rpc.askTimeout': HOUR,
      'svc.client.rpc.getReducerFileGroup.askTimeout': '150ms',
    });
    const error = await within(
      client
        .shuffle(2, { maps: 1, partitions: 1 })
        .read(0)
        .then(
          () => undefined,
          (failure: unknown) => failure,
        ),
      'the read to fail asking for its file group',
      20_000,
    );
    assert.ok(error instanceof ReduceTaskFailedError, `expected ReduceTaskFailedError, got ${String(error)}`);
    assert.match(
      error.message,
      /GetReducerFileGroup 3 times \(.*each try waited 150 ms, svc\.client\.rpc\.getReducerFileGroup\.askTimeout\)/,
    );
  });
});
