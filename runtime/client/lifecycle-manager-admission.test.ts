// An application's lifecycle manager admits connecting executors by the core's release rule, as the master and
// workers admit clients: on a real socket, a hello of 9.9.9 or 0.1.0 is refused with CLIENT_RELEASE_REFUSED.
import assert from 'node:assert/strict';
import { connect } from 'node:net';
import { after, before, describe, it } from 'node:test';
import type { Release } from '../../core/release/version.ts';
import { LocalCluster } from '../cluster/local-cluster.ts';
import { decodeFrame, encodeHello, LENGTH_PREFIX_BYTES, type HelloReply } from '../wire/index.ts';
import { startApplication, type Application } from './application.ts';
import { within } from '../testing/deadline.ts';

/** Says hello as a client of `release` to `address` (`host:port`) and resolves with the reply frame. */
function helloReply(address: string, release: Release): Promise<HelloReply> {
  const [host, port] = address.split(':');
  const reply = new Promise<HelloReply>((resolve, reject) => {
    let received = Buffer.alloc(0);
    const socket = connect({ host: host!, port: Number(port) }, () =>
      socket.write(encodeHello({ role: 'client', release, nodeId: 'app-executor-1', application: 'app' })),
    );
    socket.on('error', reject);
    socket.on('data', (data: Buffer) => {
      received = Buffer.concat([received, data]);
      if (received.length < LENGTH_PREFIX_BYTES) return;
      const length = received.readUInt32BE(0);
      if (received.length < LENGTH_PREFIX_BYTES + length) return;
      const frame = decodeFrame(received.subarray(LENGTH_PREFIX_BYTES, LENGTH_PREFIX_BYTES + length));
      socket.destroy();
      if (frame.kind === 'helloReply') resolve(frame.reply);
      else reject(new Error(`expected a hello reply, got a ${frame.kind} frame`));
    });
    socket.on('close', () => reject(new Error(`${address} closed the connection without a hello reply`)));
  });
  return within(reply, `a hello reply from ${address}`);
}

describe('the lifecycle manager’s handshake on a real socket', () => {
  let cluster: LocalCluster;
  let application: Application;
  before(async () => {
    cluster = await LocalCluster.start({ workers: 0 });
    application = await startApplication({ master: cluster.masterUrl, appId: 'app' });
  });
  after(async () => {
    await application?.close();
    await cluster?.stop();
  });

  it('refuses executors of 9.9.9 and 0.1.0 with the core’s message, and admits its own release', async () => {
    for (const release of ['9.9.9', '0.1.0'] as const) {
      const reply = await helloReply(application.lifecycleManager, release);
      assert.equal(reply.accepted, false, release);
      assert.equal(reply.status, 'CLIENT_RELEASE_REFUSED', release);
      assert.match(reply.message, new RegExp(`refuses client release ${release.replaceAll('.', '\\.')}`));
      assert.match(reply.message, /[Uu]pgrade/);
    }
    const own = await helloReply(application.lifecycleManager, application.release);
    assert.equal(own.accepted, true);
    assert.equal(own.status, 'SUCCESS');
  });
});
