// Real servers refuse a client of a release they may not admit at the handshake (core/handshake/admission.ts), with
// the core's message; and the same check catches the planted bug 'refused-release-admitted' (core/planted-bugs.ts),
// given to the servers through runtime/testing/test-server.ts only.
import assert from 'node:assert/strict';
import { connect } from 'node:net';
import { after, before, describe, it } from 'node:test';
import type { Release } from '../core/release/version.ts';
import { LocalCluster } from './cluster/local-cluster.ts';
import { within } from './testing/deadline.ts';
import { decodeFrame, encodeHello, LENGTH_PREFIX_BYTES, type HelloReply } from './wire/index.ts';

/** A release every server of this build refuses: older than the oldest client it admits. */
const REFUSED: Release = '0.2.0';

/** Says hello as a client of `release` to `host:port` and resolves with the reply frame. */
function helloReply(port: number, release: Release): Promise<HelloReply> {
  const reply = new Promise<HelloReply>((resolve, reject) => {
    let received = Buffer.alloc(0);
    const socket = connect({ host: '127.0.0.1', port }, () =>
      socket.write(encodeHello({ role: 'client', release, nodeId: 'app-old', application: 'old' })),
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
    socket.on('close', () => reject(new Error(`port ${port} closed the connection without a hello reply`)));
  });
  return within(reply, `the hello reply of port ${port}`);
}

/** The master's and the first worker's rpc ports, from their `listening` lines. */
function rpcPorts(cluster: LocalCluster): number[] {
  const master = cluster.master.seen((line) => line.event === 'listening')[0] as { rpc: { port: number } };
  const worker = cluster.workers[0]!.seen((line) => line.event === 'listening')[0] as {
    ports: { rpc: number };
  };
  return [master.rpc.port, worker.ports.rpc];
}

describe('admission by release at the handshake of real servers', () => {
  let cluster: LocalCluster;
  let planted: LocalCluster;
  before(async () => {
    [cluster, planted] = await Promise.all([
      LocalCluster.start({ workers: 1 }),
      LocalCluster.start({ workers: 1, plantedBug: 'refused-release-admitted' }),
    ]);
  });
  after(async () => {
    await Promise.all([cluster?.stop(), planted?.stop()]);
  });

  it('a master and a worker refuse a client of 0.2.0 with CLIENT_RELEASE_REFUSED and the core’s message', async () => {
    for (const port of rpcPorts(cluster)) {
      const reply = await helloReply(port, REFUSED);
      assert.equal(reply.accepted, false, `port ${port}`);
      assert.equal(reply.status, 'CLIENT_RELEASE_REFUSED');
      assert.match(reply.message, /refuses client release 0\.2\.0/);
      assert.match(reply.message, /[Uu]pgrade/);
    }
  });

  it('catches the planted bug: servers with refused-release-admitted accept that client', async () => {
    for (const port of rpcPorts(planted)) {
      const reply = await helloReply(port, REFUSED);
      assert.equal(reply.accepted, true, `the planted bug admits 0.2.0 on port ${port}`);
    }
  });
});
