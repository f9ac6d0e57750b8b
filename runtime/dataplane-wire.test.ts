// Hostile and old peers against real processes: garbage, truncated, oversized and slow frames on every port close
// that connection only, and a 0.2.0 client is refused at the handshake with the core's message, writing nothing.
import assert from 'node:assert/strict';
import { randomBytes } from 'node:crypto';
import { connect, type Socket } from 'node:net';
import path from 'node:path';
import { after, before, describe, it } from 'node:test';
import { ClientReleaseRefusedError } from './client/errors.ts';
import { startApplication } from './client/application.ts';
import { LocalCluster } from './cluster/local-cluster.ts';
import type { ServerProcess } from './cluster/server-process.ts';
import { filesUnder } from './testing/files-under.ts';
import { type SmallJob, runVerifiedJob } from './testing/small-job.ts';
import { encodeHello } from './wire/index.ts';

const JOB: SmallJob = { maps: 2, partitions: 3, recordsPerPartition: 10 };

/** Connects, runs `act`, and resolves once the server closed the connection. */
function closedByServer(port: number, act: (socket: Socket) => void): Promise<void> {
  return new Promise((resolve, reject) => {
    const socket = connect({ host: '127.0.0.1', port }, () => act(socket));
    socket.on('error', () => undefined);
    socket.on('close', () => resolve());
    socket.on('data', () => undefined);
    socket.setTimeout(20_000, () => reject(new Error(`port ${port} kept a bad connection open`)));
  });
}

function lengthPrefix(length: number): Buffer {
  const head = Buffer.alloc(4);
  head.writeUInt32BE(length);
  return head;
}

describe('the wire on real processes', () => {
  let cluster: LocalCluster;
  before(async () => {
    cluster = await LocalCluster.start({
      workers: 2,
      // Short deadlines, so that a slow sender is cut off within the test.
      conf: ['svc.network.timeout=1s', 'svc.network.connect.timeout=2s', 'svc.network.frame.maxSize=1m'],
    });
  });
  after(async () => {
    await cluster?.stop();
  });

  const ports = (): { name: string; port: number; server: () => ServerProcess }[] => {
    const worker = cluster.workerIds[0]!.split(':').slice(1).map(Number);
    const names = ['rpc', 'push', 'fetch', 'replicate'];
    return [
      { name: 'master rpc', port: cluster.masterPort, server: () => cluster.master },
      ...names.map((name, i) => ({
        name: `worker ${name}`,
        port: worker[i]!,
        server: () => cluster.workers[0]!,
      })),
    ];
  };

  it('closes connections that send random bytes, truncated, oversized or too slow frames, on every port', async () => {
    for (const { name, port, server } of ports()) {
      const seen = server().lineCount;
      await closedByServer(port, (s) => s.write(randomBytes(64)));
      await closedByServer(port, (s) => s.write(Buffer.concat([lengthPrefix(1 << 30), Buffer.alloc(8)])));
      // A handshake cut short: the peer closes mid-frame.
      await closedByServer(port, (s) =>
        s.end(Buffer.from(encodeHello({ role: 'client', release: '0.6.0', nodeId: 'x' })).subarray(0, 9)),
      );
      // Slow loris: a frame begun and never finished.
      await closedByServer(port, (s) => s.write(Buffer.concat([lengthPrefix(100), Buffer.alloc(3)])));
      // The server logs a close after the socket closed: wait for its four lines rather than racing the pipe.
      const closed = await server().waitForCount(
        (line) => line.event === 'transport.connectionClosed',
        4,
        `${name}: four logged closes`,
        seen,
      );
      const reasons = closed.map((line) => String(line.reason));
      assert.equal(
        reasons.length,
        4,
        `${name}: every closed connection logs one reason (after line ${seen})`,
      );
      assert.match(reasons.join('\n'), /oversized/, name);
      assert.match(reasons.join('\n'), /truncated/, name);
      assert.match(reasons.join('\n'), /too slowly/, name);
      assert.ok(server().running, `${name}: the process stays up`);
    }
    await runVerifiedJob(cluster.masterUrl, JOB);
  });

  it('refuses a 0.2.0 client at the handshake with the core’s message, and nothing is written', async () => {
    const partitionFiles = (): number =>
      cluster.workerIds.flatMap((_, i) => filesUnder(path.join(cluster.dir, `worker-${i}`, 'disk-1'))).length;
    const filesBefore = partitionFiles();
    await assert.rejects(
      startApplication({ master: cluster.masterUrl.replace('svc://', 'rss://'), release: '0.2.0' }),
      (error: unknown) => {
        assert.ok(error instanceof ClientReleaseRefusedError, String(error));
        assert.match(error.message, /server release 0\.6\.0 refuses client release 0\.2\.0/);
        assert.match(error.message, /[Uu]pgrade/);
        return true;
      },
    );
    assert.equal(partitionFiles(), filesBefore, 'no partition file was created');
    // The master logs the refusal as it answers: its line may reach the pipe after the client saw the answer.
    const refused = await cluster.master.waitForEvent('transport.peerRefused');
    assert.equal(refused.peerRelease, '0.2.0');
  });
});
