// A worker paused mid-push (SIGSTOP) past the silent-peer timeout, then resumed, must count its own pause as its
// own and not as its peers' silence. Found by the HA chaos soak (seed 93c73dd2, a 20 s `stop-past`): resumed, a
// primary found its replica's worker "silent for 21 s" at its first check, before reading the answers that had
// waited in its socket, failed every replica push at once and got the replica's worker excluded. The fix:
// SilentPeers.resumed (core/interpreter/silent-peers.ts), logged as `transport.resumed`.
//
// The order is arranged so that the pause strikes where meant, each step synced on a log line or state: the
// replica's worker R is stopped first, so that a primary P owes it answers (P's ping to R shows it); then P is
// stopped and R resumed, so R's answers wait in P's socket; P stays stopped until the client gives up on P as
// silent (so P's pause outlasts the timeout); then P resumes.
import assert from 'node:assert/strict';
import { afterEach, describe, it } from 'node:test';
import { workerKey } from '../core/domain/index.ts';
import { LocalCluster } from './cluster/local-cluster.ts';
import type { LogLine } from './cluster/server-process.ts';
import type { MapResult } from './client/shuffle-client.ts';
import { CUT_JOB, keptClientLines, writeMap } from './testing/cut-job.ts';
import { within } from './testing/deadline.ts';
import { pollFor } from './testing/poll.ts';
import { clientSide, readAndVerify, winnersOf, type ClientSide } from './testing/small-job.ts';

const PING_INTERVAL_MS = 400;
const SILENCE_TIMEOUT_MS = 4_000;
const SILENCE = [
  `svc.network.silentPeer.pingInterval=${PING_INTERVAL_MS}ms`,
  `svc.network.silentPeer.timeout=${SILENCE_TIMEOUT_MS}ms`,
];
const SHUFFLE = 0;

/** The ports of a worker id (`host:rpc:push:fetch:replicate`). */
function portsOf(workerId: string): Set<string> {
  return new Set(workerId.split(':').slice(1));
}

/** Whether a transport line's `peer` (`host:port`) is one of `ports`. */
function toward(line: LogLine | Record<string, unknown>, ports: ReadonlySet<string>): boolean {
  return ports.has(String(line.peer).split(':').at(-1) ?? '');
}

function isSilence(line: LogLine | Record<string, unknown>): boolean {
  return line.event === 'transport.connectionClosed' && String(line.reason).startsWith('silent for');
}

describe('a worker paused mid-push past the silent-peer timeout (real processes)', () => {
  let cluster: LocalCluster | undefined;
  const clients: ClientSide[] = [];
  const stopped = new Set<number>();
  afterEach(async () => {
    // Never leave a stopped process behind, even when the test failed.
    for (const index of stopped) cluster?.workers[index]?.kill('SIGCONT');
    stopped.clear();
    for (const client of clients.splice(0)) await client.close().catch(() => undefined);
    await cluster?.stop();
    cluster = undefined;
  });

  it('measures its peers’ silence from its resumption: its replica’s worker is not given up on', async (t) => {
    cluster = await LocalCluster.start({ workers: 3, conf: SILENCE, logLevel: 'debug' });
    const { logger, lines } = keptClientLines();
    const client = await clientSide(cluster.masterUrl, {
      conf: {
        'svc.client.push.replicate.enabled': 'true',
        'svc.network.silentPeer.pingInterval': `${PING_INTERVAL_MS}ms`,
        'svc.network.silentPeer.timeout': `${SILENCE_TIMEOUT_MS}ms`,
      },
      logger,
    });
    clients.push(client);
    const results = new Map<string, MapResult>([await writeMap(client, SHUFFLE, 0)]);

    // R: the worker holding the most replicas; their primaries are on the other workers.
    const replicas = client.app
      .state()
      .shuffles.get(SHUFFLE)!
      .reserved.filter((copy) => copy.mode === 'REPLICA');
    const held = cluster.workerIds.map(
      (id) => replicas.filter((copy) => workerKey(copy.worker) === id).length,
    );
    const r = held.indexOf(Math.max(...held));
    assert.ok(held[r]! > 0, `some worker holds replicas: ${JSON.stringify(held)}`);
    const rPorts = portsOf(cluster.workerIds[r]!);
    const marks = cluster.workers.map((worker) => worker?.lineCount ?? 0);
    cluster.workers[r]!.kill('SIGSTOP');
    stopped.add(r);

    // Map 1 pushes; its primaries forward to R and wait for it. P: the first worker to ping R, so owing it answers.
    const map1 = writeMap(client, SHUFFLE, 1);
    map1.catch(() => undefined); // awaited below; a failure must not go unhandled meanwhile
    const { p, ping } = await pollFor(
      () => {
        for (const [index, worker] of cluster!.workers.entries()) {
          if (index === r || worker === undefined) continue;
          const [line] = worker.seen(
            (seen) => seen.event === 'transport.ping' && toward(seen, rPorts),
            marks[index],
          );
          if (line !== undefined) return { p: index, ping: line };
        }
        return undefined;
      },
      () => 'a worker pinging the stopped replica worker (it owes the worker answers)',
      { timeoutMs: 30_000, intervalMs: 20 },
    );
    // A ping goes to a peer owing answers for a ping interval: P has waited on R since then at the latest.
    const owedSince = Date.parse(String(ping.time)) - PING_INTERVAL_MS;
    const primary = cluster.workers[p]!;
    assert.deepEqual(
      primary.seen((line) => isSilence(line) && toward(line, rPorts), marks[p]),
      [],
      'the primary had not given up on the replica worker before its own pause (stopped too late)',
    );
    const pPorts = portsOf(cluster.workerIds[p]!);
    const clientMark = lines.length;
    primary.kill('SIGSTOP');
    stopped.add(p);
    cluster.workers[r]!.kill('SIGCONT');
    stopped.delete(r);

    // P stays stopped past the timeout: until the client, owed answers by P, gives up on it as silent, and until
    // R's answers are owed for longer than the timeout, so that a first check counting the pause as R's silence
    // would give R up.
    await pollFor(
      () =>
        Date.now() > owedSince + SILENCE_TIMEOUT_MS
          ? lines.slice(clientMark).find((line) => isSilence(line) && toward(line, pPorts))
          : undefined,
      () => `the client giving up on the stopped primary (worker ${p}) as silent`,
      { timeoutMs: 30_000, intervalMs: 20 },
    );
    const resumeMark = primary.lineCount;
    primary.kill('SIGCONT');
    stopped.delete(p);
    const resumed = await primary.waitFor(
      (line) => line.event === 'transport.resumed',
      'transport.resumed after SIGCONT',
      resumeMark,
    );
    const owedMs = Date.parse(String(resumed.time)) - owedSince;
    t.diagnostic(
      `worker ${p} resumed after ${String(resumed.pausedMs)} ms, owed answers by worker ${r} for ${owedMs} ms`,
    );
    assert.ok(
      owedMs > SILENCE_TIMEOUT_MS,
      `R's answers were owed (${owedMs} ms) past the timeout at resumption`,
    );

    results.set(...(await within(map1, 'map 1 to end after the pause', 60_000)));
    for (let mapId = 2; mapId < CUT_JOB.maps; mapId += 1)
      results.set(...(await writeMap(client, SHUFFLE, mapId)));
    await readAndVerify(client.executor, SHUFFLE, CUT_JOB, winnersOf(results));

    assert.deepEqual(
      primary.seen((line) => isSilence(line) && toward(line, rPorts), resumeMark),
      [],
      'the resumed primary did not give up on its replica worker, whose answers waited in its socket',
    );
  });
});
