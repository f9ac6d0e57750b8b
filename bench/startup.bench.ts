/**
 * A server's start, compiled against through tsx: the time from spawning `svc master` / `svc worker` to its
 * `listening` line (the worker's to `worker.registered`), and its resident memory at idle, a few seconds after it
 * started. The two ways alternate round by round, so that the machine's load falls on both alike. The compiled way
 * is what the server package runs (packages/server/dist/, `npm run build server`, which this benchmark runs first);
 * tsx is what the source tree runs. Reported, no goal: docs/operations.md quotes it.
 *
 * Exit code (see bench/run.ts): 0, or 1 on error.
 */
import { execFileSync } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { setTimeout as delay } from 'node:timers/promises';
import { ServerProcess, STARTUP_WAIT_MS } from '../runtime/cluster/server-process.ts';

const ROOT = path.resolve(import.meta.dirname, '..');
const ROUNDS = Number(process.env.SVC_BENCH_STARTUP_ROUNDS ?? 3);
const IDLE_MS = 5_000;

type Way = 'compiled' | 'tsx';

interface Sample {
  readonly masterMs: number;
  readonly workerMs: number;
  readonly masterRssMiB: number;
  readonly workerRssMiB: number;
}

function rssMiB(pid: number | undefined): number {
  const status = readFileSync(`/proc/${pid}/status`, 'utf8');
  const kib = Number(/^VmRSS:\s+(\d+) kB/m.exec(status)?.[1]);
  return kib / 1024;
}

function command(way: Way): readonly string[] | undefined {
  // undefined: ServerProcess's own command, the TypeScript through tsx in this source tree.
  return way === 'compiled'
    ? [process.execPath, path.join(ROOT, 'packages', 'server', 'dist', 'runtime', 'cli', 'main.js')]
    : undefined;
}

async function round(way: Way, dir: string): Promise<Sample> {
  const started: ServerProcess[] = [];
  const spawn = (name: string, args: string[]): ServerProcess => {
    const cmd = command(way);
    const server = new ServerProcess({
      name,
      args,
      logFile: path.join(dir, `${way}-${name}.log`),
      ...(cmd === undefined ? {} : { command: cmd }),
    });
    started.push(server);
    return server;
  };
  try {
    let at = performance.now();
    const master = spawn('master', [
      'master',
      ...['svc.master.host=127.0.0.1', 'svc.master.port=0', 'svc.master.http.port=0'].flatMap((c) => [
        '--conf',
        c,
      ]),
      '--conf',
      `svc.master.state.dir=${path.join(dir, `${way}-state`)}`,
    ]);
    const listening = await master.waitForEvent('listening', STARTUP_WAIT_MS);
    const masterMs = performance.now() - at;
    at = performance.now();
    const worker = spawn('worker', [
      'worker',
      `svc://127.0.0.1:${(listening.rpc as { port: number }).port}`,
      ...['svc.worker.host=127.0.0.1', 'svc.worker.http.port=0'].flatMap((c) => ['--conf', c]),
      '--conf',
      `svc.worker.storage.dirs=${path.join(dir, `${way}-disk`)}`,
    ]);
    await worker.waitForEvent('worker.registered', STARTUP_WAIT_MS);
    const workerMs = performance.now() - at;
    await delay(IDLE_MS);
    return { masterMs, workerMs, masterRssMiB: rssMiB(master.pid), workerRssMiB: rssMiB(worker.pid) };
  } finally {
    await Promise.all(started.map((server) => server.stop()));
  }
}

function median(values: readonly number[]): number {
  const sorted = [...values].sort((a, b) => a - b);
  return sorted[Math.floor(sorted.length / 2)]!;
}

execFileSync(process.execPath, [path.join(ROOT, 'scripts', 'build.mjs'), 'server'], {
  cwd: ROOT,
  stdio: 'inherit',
});
const dir = mkdtempSync(path.join(tmpdir(), 'svc-bench-startup-'));
try {
  const samples: Record<Way, Sample[]> = { compiled: [], tsx: [] };
  for (let i = 0; i < ROUNDS; i++) {
    for (const way of i % 2 === 0 ? (['compiled', 'tsx'] as const) : (['tsx', 'compiled'] as const)) {
      samples[way].push(await round(way, dir));
    }
  }
  console.log(`server start, median of ${ROUNDS} rounds (ways alternating):`);
  console.log('way       master to listening  worker to registered  master RSS idle  worker RSS idle');
  for (const way of ['compiled', 'tsx'] as const) {
    const of = (pick: (s: Sample) => number) => median(samples[way].map(pick));
    console.log(
      `${way.padEnd(9)} ${`${of((s) => s.masterMs).toFixed(0)} ms`.padStart(19)}  ` +
        `${`${of((s) => s.workerMs).toFixed(0)} ms`.padStart(20)}  ` +
        `${`${of((s) => s.masterRssMiB).toFixed(0)} MiB`.padStart(15)}  ` +
        `${`${of((s) => s.workerRssMiB).toFixed(0)} MiB`.padStart(15)}`,
    );
  }
} finally {
  rmSync(dir, { recursive: true, force: true });
}
