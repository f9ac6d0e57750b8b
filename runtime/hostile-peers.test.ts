// Hostile peers against real processes (docs/operations.md, "Limits and hostile peers"): connections that say a
// valid hello and then hold most of a 120 MiB frame leave a worker under svc.worker.memory.size + 256 MiB and the
// master under its partly-received-frame limit + 256 MiB, both still serving a verifying job; idle connections by
// the thousand write a handful of log lines (svc.log.summary.interval at its default), the rest counted in
// summaries. Sizes: SVC_HOSTILE_PEERS (default 200) and SVC_IDLE_PEERS (default 2000). The servers run with the
// allocator setting a deployment gives them (runtime/process/allocator.ts; without it glibc keeps the abandoned
// frames' memory resident and the bounds do not hold).
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { connect, type Socket } from 'node:net';
import { after, before, describe, it } from 'node:test';
import { CURRENT_RELEASE } from '../core/release/version.ts';
import { LocalCluster } from './cluster/local-cluster.ts';
import type { LogLine, ServerProcess } from './cluster/server-process.ts';
import { type SmallJob, runVerifiedJob } from './testing/small-job.ts';
import { encodeHello } from './wire/index.ts';
import { RUN_WAIT_MS } from './cluster/server-process.ts';
import { within } from './testing/deadline.ts';

const HOSTILE = Number(process.env.SVC_HOSTILE_PEERS ?? 200);
const IDLE = Number(process.env.SVC_IDLE_PEERS ?? 2000);
/** svc.log.summary.interval's default. */
const SUMMARY_INTERVAL_MS = 10_000;
const MiB = 1024 * 1024;
const FRAME_BYTES = 120 * MiB;
/** What each hostile peer sends of its frame before it stalls: enough for the frame to grow past 16 MiB twice. */
const SENT_BYTES = 36 * MiB;
const WORKER_BUDGET = 512 * MiB;
/** svc.master.receive.maxPartialFrameBytes's default. */
const MASTER_LIMIT = 128 * MiB;
/**
 * The master's documented bound under attack is its partial-frame limit + 384 MiB (docs/operations.md): frames that
 * grew as their bytes arrived leave their smaller buffers to the garbage collector, and on a loaded host the master's
 * resident memory holds some of them for a while (344-476 MiB measured at the 128m limit).
 */
const MASTER_MARGIN = 384 * MiB;
const JOB: SmallJob = { maps: 2, partitions: 3, recordsPerPartition: 20 };

/** The resident memory of a process (Linux). */
function rssBytes(pid: number): number {
  const match = /VmRSS:\s+(\d+) kB/.exec(readFileSync(`/proc/${pid}/status`, 'utf8'));
  assert.ok(match, 'VmRSS in /proc/<pid>/status');
  return Number(match[1]) * 1024;
}

interface Hostile {
  readonly socket: Socket;
  /** Resolves once the peer sent its share of the frame, or its connection closed. */
  readonly settled: Promise<'holding' | 'closed'>;
}

/** A peer that says a valid hello, then begins a 120 MiB frame and stalls after SENT_BYTES of it. */
function hostilePeer(port: number, index: number): Hostile {
  const socket = connect({ host: '127.0.0.1', port });
  socket.on('error', () => undefined);
  const settled = new Promise<'holding' | 'closed'>((resolve) => {
    socket.once('close', () => resolve('closed'));
    socket.once('connect', () =>
      socket.write(encodeHello({ role: 'client', release: CURRENT_RELEASE, nodeId: `hostile-${index}` })),
    );
    // The hello reply: the handshake is done, the frame begins.
    socket.once('data', () => {
      const head = Buffer.alloc(4);
      head.writeUInt32BE(FRAME_BYTES);
      socket.write(head);
      const piece = Buffer.alloc(MiB);
      let sent = 0;
      const pump = (): void => {
        while (sent < SENT_BYTES && !socket.destroyed) {
          sent += piece.byteLength;
          if (!socket.write(piece)) {
            socket.once('drain', pump);
            return;
          }
        }
        if (!socket.destroyed) resolve('holding');
      };
      pump();
    });
  });
  return { socket, settled };
}

/** Opens `count` connections that say nothing; resolves once all are open. */
async function idlePeers(port: number, count: number): Promise<Socket[]> {
  const sockets: Socket[] = [];
  const opened: Promise<void>[] = [];
  for (let i = 0; i < count; i += 1) {
    const socket = connect({ host: '127.0.0.1', port });
    socket.on('error', () => undefined);
    sockets.push(socket);
    opened.push(
      new Promise((resolve) => {
        socket.once('connect', () => resolve());
        socket.once('close', () => resolve());
      }),
    );
  }
  await within(Promise.all(opened), `${count} idle connections to open`);
  return sockets;
}

async function underAttack(
  server: ServerProcess,
  port: number,
  limitBytes: number,
  marginBytes: number,
  what: string,
  cluster: LocalCluster,
  tell: (message: string) => void,
): Promise<void> {
  const pid = server.pid!;
  const hostiles = Array.from({ length: HOSTILE }, (_, i) => hostilePeer(port, i));
  try {
    const outcomes = await within(
      Promise.all(hostiles.map((hostile) => hostile.settled)),
      'every hostile peer to send its share of the frame or be closed',
      // 200 peers × 36 MiB through loopback: minutes on a loaded machine.
      RUN_WAIT_MS,
    );
    const rss = rssBytes(pid);
    tell(
      `${what}: ${(rss / MiB).toFixed(0)} MiB resident, ${outcomes.filter((o) => o === 'holding').length} of ${HOSTILE} peers holding`,
    );
    assert.ok(
      rss < limitBytes + marginBytes,
      `${what}: ${(rss / MiB).toFixed(0)} MiB resident with ${HOSTILE} hostile peers ` +
        `(${outcomes.filter((o) => o === 'holding').length} still holding), limit ${(limitBytes / MiB).toFixed(0)} MiB + ${marginBytes / MiB} MiB`,
    );
    // Still serving, with whatever hostile connections it kept.
    await runVerifiedJob(cluster.masterUrl, JOB);
    assert.ok(rssBytes(pid) < limitBytes + marginBytes, `${what}: still bounded after the job`);
  } finally {
    for (const hostile of hostiles) hostile.socket.destroy();
  }
}

describe('hostile peers on real processes', () => {
  let cluster: LocalCluster;
  before(async () => {
    cluster = await LocalCluster.start({
      workers: 1,
      conf: ['svc.network.connect.timeout=2s'],
      workerConf: [`svc.worker.memory.size=${WORKER_BUDGET}`, `svc.network.port.maxConnections=${IDLE / 2}`],
    });
  });
  after(async () => {
    await cluster?.stop();
  });

  const workerPort = (service: 'rpc' | 'push' | 'fetch' | 'replicate'): number =>
    Number(cluster.workerIds[0]!.split(':')[['rpc', 'push', 'fetch', 'replicate'].indexOf(service) + 1]);

  it(`a worker with ${HOSTILE} peers holding partial 120 MiB frames stays under its budget + 256 MiB and serves`, async (t) => {
    await underAttack(
      cluster.workers[0]!,
      workerPort('push'),
      WORKER_BUDGET,
      256 * MiB,
      'worker',
      cluster,
      (m) => t.diagnostic(m),
    );
    const shed = cluster.workers[0]!.seen(
      (line) => line.event === 'transport.connectionClosed' && line.cause === 'receiveMemoryFull',
    );
    const summarised = cluster.workers[0]!.seen(
      (line) => line.event === 'log.repeated' && line.cause === 'receiveMemoryFull',
    );
    assert.ok(shed.length + summarised.length > 0, 'the worker gave up the largest partly received frames');
    const text = await (await fetch(`${cluster.workerHttpUrl(0)}/metrics/prometheus`)).text();
    const counted = text
      .split('\n')
      .filter(
        (line) =>
          line.startsWith('metrics_PartialFrameGivenUpCount_Count') && line.includes('receiveMemoryFull'),
      )
      .reduce((sum, line) => sum + Number(line.slice(line.lastIndexOf(' ') + 1)), 0);
    assert.ok(counted > 0, `PartialFrameGivenUpCount{cause="receiveMemoryFull"} counts them (${counted})`);
  });

  it(`the master with ${HOSTILE} such peers stays under its limit + 256 MiB and serves`, async (t) => {
    await underAttack(
      cluster.master,
      cluster.masterPort,
      MASTER_LIMIT,
      MASTER_MARGIN,
      'master',
      cluster,
      (m) => t.diagnostic(m),
    );
  });

  it(`${IDLE} idle connections write a handful of lines, the rest counted in summaries`, async (t) => {
    const worker = cluster.workers[0]!;
    const seen = worker.lineCount;
    const startedAt = performance.now();
    const sockets = await idlePeers(workerPort('fetch'), IDLE);
    try {
      const counted = (line: LogLine): number => (line.event === 'log.repeated' ? Number(line.count) : 1);
      const isAbout = (line: LogLine): boolean =>
        line.cause === 'noHandshake' || line.cause === 'tooManyConnections';
      // Every connection is either refused at the cap or closed for saying nothing; wait until all are told.
      let told = 0;
      await worker.waitFor(
        (line) => isAbout(line) && (told += counted(line)) >= IDLE,
        'every idle connection counted in a line or a summary',
        seen,
      );
      const lines = worker
        .seen(() => true)
        .slice(seen)
        .filter(isAbout);
      const refused = lines.filter((line) => line.cause === 'tooManyConnections');
      assert.ok(refused.length > 0, 'connections past svc.network.port.maxConnections were refused');
      // Per cause and summary interval (svc.log.summary.interval, 10 s): three lines, then one summary. A slow host
      // spreads the closes over more intervals; the bound follows, and stays far below one line per connection.
      const intervals = Math.ceil((performance.now() - startedAt) / SUMMARY_INTERVAL_MS) + 1;
      const bound = 2 * 4 * intervals;
      t.diagnostic(
        `${lines.length} lines for ${IDLE} idle connections (${refused.length} about refusals) over ${intervals} intervals`,
      );
      assert.ok(lines.length <= bound, `${lines.length} lines for ${IDLE} idle connections (bound ${bound})`);
    } finally {
      for (const socket of sockets) socket.destroy();
    }
  });
});
