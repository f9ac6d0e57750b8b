/**
 * A master under load (issue 37): a load-generator process (./master-load/generator.ts) simulating 1,000 workers
 * heartbeating at the default interval and 100 applications registering shuffles of 1,000 partitions, each node on
 * its own connection speaking svc's real wire, against a real master process (compiled, as an installed package
 * runs it: packages/server/dist/, `npm run build`, run first); then the same generator against a bare echo server
 * (./master-load/echo.ts: the same framing, every frame written back undecoded), the same-run baseline.
 *
 * Phases, each measured on both sides: the workers connect and register; the heartbeats alone for `--heartbeat-window`
 * (the server's CPU per 1,000 heartbeats); every application registers and asks slots for its first shuffle at the
 * same moment (a burst); then for `--steady` seconds each application registers a new shuffle every
 * `--shuffle-interval` from a random phase, keeping `--live-shuffles` (RegisterShuffle's p99, the goal, is this
 * phase's). RegisterShuffle's figure is the master's part of it, RequestSlots' round trip (the lifecycle manager's
 * reservation on the workers is the workers' load, left out here). RSS: the largest VmRSS sampled every 50 ms.
 *
 *   npm run bench -- master-load [--workers 1000] [--apps 100] [--partitions 1000] [--heartbeat-window 30]
 *                                [--steady 30] [--shuffle-interval 10] [--live-shuffles 2] [--replicate on|off]
 *                                [--tsx] [--no-build] [--cpu-prof <dir>] [--node-arg=<flag> ...]
 *                                [--master-log <file>] [--json <file> | --no-json] [--help]
 *
 * `--node-arg` passes a flag to the master's node (repeat it for more); `--master-log` keeps the master's log (kept
 * in a temporary directory, removed, otherwise). With `--node-arg=--trace-gc` the collector's trace lands in that
 * log: how docs/performance.md tells the master's live heap from its garbage.
 *
 * Exit code (see bench/run.ts): 0 the goal met, 2 missed (or the master refused the load), 1 error.
 */
import { execFileSync } from 'node:child_process';
import { mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { loadavg, tmpdir } from 'node:os';
import path from 'node:path';
import { parseArgs } from 'node:util';
import { ServerProcess, STARTUP_WAIT_MS } from '../runtime/cluster/server-process.ts';
import { Child } from './dataplane/children.ts';
import { cpuSeconds, machineInfo, memoryOf, RssSampler } from './dataplane/proc.ts';
import { defaultJsonPath } from './dataplane/options.ts';
import type {
  Counts,
  FromEcho,
  FromGenerator,
  LoadShape,
  Percentiles,
  ToEcho,
  ToGenerator,
} from './master-load/protocol.ts';

const GOAL_MISSED = 2;
const GOAL_P99_MS = 50;
const ROOT = path.resolve(import.meta.dirname, '..');
const HERE = path.join(import.meta.dirname, 'master-load');
const MiB = 2 ** 20;

const { values: flags } = parseArgs({
  args: process.argv.slice(2),
  strict: true,
  options: {
    workers: { type: 'string', default: '1000' },
    apps: { type: 'string', default: '100' },
    partitions: { type: 'string', default: '1000' },
    'heartbeat-window': { type: 'string', default: '30' },
    steady: { type: 'string', default: '30' },
    'shuffle-interval': { type: 'string', default: '10' },
    'live-shuffles': { type: 'string', default: '2' },
    'heartbeat-interval': { type: 'string', default: '30' },
    replicate: { type: 'string', default: 'on' },
    tsx: { type: 'boolean', default: false },
    'no-build': { type: 'boolean', default: false },
    'cpu-prof': { type: 'string' },
    'node-arg': { type: 'string', multiple: true, default: [] },
    'master-log': { type: 'string' },
    help: { type: 'boolean', default: false },
    json: { type: 'string' },
    'no-json': { type: 'boolean', default: false },
  },
});

if (flags.help) {
  // The usage is this file's own header, so that the two cannot drift apart.
  const header = readFileSync(import.meta.filename, 'utf8').split('*/')[0]!;
  console.log(
    header
      .replace(/^\/\*\*\n/, '')
      .replace(/^ \* ?/gm, '')
      .trimEnd(),
  );
  process.exit(0);
}

function whole(name: keyof typeof flags): number {
  const n = Number(flags[name]);
  if (!Number.isFinite(n) || n <= 0)
    throw new Error(`--${name} '${String(flags[name])}' is not a positive number`);
  return n;
}

const shape: LoadShape = {
  workers: whole('workers'),
  // svc.master.heartbeat.worker.timeout (120 s) / 4: what a worker does by default.
  heartbeatIntervalMs: whole('heartbeat-interval') * 1000,
  apps: whole('apps'),
  appHeartbeatIntervalMs: 10_000,
  partitions: whole('partitions'),
  replicate: flags.replicate !== 'off',
  liveShufflesPerApp: whole('live-shuffles'),
};
const heartbeatWindowS = whole('heartbeat-window');
const steadyS = whole('steady');
const shuffleIntervalMs = whole('shuffle-interval') * 1000;
const compiled = !flags.tsx;
const nodeArgs = flags['node-arg'];
const profileDir = flags['cpu-prof'] === undefined ? undefined : path.resolve(flags['cpu-prof']);

type Generator = Child<ToGenerator, FromGenerator>;

/** What one side measured. */
interface SideFigures {
  readonly server: string;
  readonly registerWorkersMs: number;
  readonly heartbeats: number;
  readonly heartbeatRtt: Percentiles;
  readonly serverCpuPer1000Heartbeats: number;
  readonly burst: Percentiles;
  readonly steady: Percentiles;
  readonly steadyServerCpuSeconds: number;
  readonly serverPeakRssMiB: number;
  readonly serverEndRssMiB: number;
  readonly generatorCpuSeconds: number;
  readonly counts: Counts;
}

function cpuOf(pid: number): number {
  const { user, system } = cpuSeconds(pid);
  return user + system;
}

function expect<T extends FromGenerator['type']>(
  answer: FromGenerator,
  type: T,
): Extract<FromGenerator, { type: T }> {
  if (answer.type !== type) throw new Error(`generator answered ${answer.type}, expected ${type}`);
  return answer as Extract<FromGenerator, { type: T }>;
}

/** Runs the load against a server listening on `port` (process `pid`). */
async function drive(server: string, pid: number, port: number, probeDir: string): Promise<SideFigures> {
  const generator: Generator = await Child.start<ToGenerator, FromGenerator>({
    name: `generator (${server})`,
    entry: ['--import', 'tsx', path.join(HERE, 'generator.ts')],
    probeDir,
  });
  const rss = new RssSampler([pid]);
  try {
    const generatorCpu0 = cpuOf(generator.pid);
    console.log(`  ${server}: ${shape.workers} workers registering`);
    const registered = expect(await generator.ask({ type: 'workers', port, shape }), 'workers-registered');
    const cpu0 = cpuOf(pid);
    console.log(`  ${server}: heartbeats alone for ${heartbeatWindowS} s`);
    await new Promise((resolve) => setTimeout(resolve, heartbeatWindowS * 1000));
    const afterHeartbeats = expect(await generator.ask({ type: 'counts' }), 'counts');
    const cpu1 = cpuOf(pid);
    console.log(`  ${server}: ${shape.apps} applications register a shuffle at once`);
    const burst = expect(await generator.ask({ type: 'burst' }), 'registered');
    const cpu2 = cpuOf(pid);
    console.log(
      `  ${server}: a shuffle per application every ${shuffleIntervalMs / 1000} s for ${steadyS} s`,
    );
    const steady = expect(
      await generator.ask({ type: 'steady', seconds: steadyS, shuffleIntervalMs }),
      'registered',
    );
    const cpu3 = cpuOf(pid);
    const end = expect(await generator.ask({ type: 'counts' }), 'counts');
    const peak = rss.stop().get(pid) ?? 0;
    return {
      server,
      registerWorkersMs: registered.ms,
      heartbeats: afterHeartbeats.counts.heartbeats,
      heartbeatRtt: end.heartbeatRtt,
      serverCpuPer1000Heartbeats: ((cpu1 - cpu0) / Math.max(1, afterHeartbeats.counts.heartbeats)) * 1000,
      burst: burst.registerShuffle,
      steady: steady.registerShuffle,
      steadyServerCpuSeconds: cpu3 - cpu2,
      serverPeakRssMiB: peak / MiB,
      serverEndRssMiB: memoryOf(pid).rss / MiB,
      generatorCpuSeconds: cpuOf(generator.pid) - generatorCpu0,
      counts: end.counts,
    };
  } finally {
    rss.stop();
    await generator.stop({ type: 'exit' });
  }
}

async function echoSide(probeDir: string): Promise<SideFigures> {
  const echo = await Child.start<ToEcho, FromEcho>({
    name: 'echo',
    entry: ['--import', 'tsx', path.join(HERE, 'echo.ts')],
    probeDir,
  });
  try {
    const answer = await echo.ask({ type: 'port' });
    if (answer.type !== 'port') throw new Error(`echo answered ${answer.type}`);
    return await drive('echo', echo.pid, answer.port, probeDir);
  } finally {
    await echo.stop({ type: 'exit' });
  }
}

async function masterSide(dir: string, probeDir: string): Promise<SideFigures> {
  const master = new ServerProcess({
    name: 'master',
    args: [
      'master',
      ...['svc.master.host=127.0.0.1', 'svc.master.port=0', 'svc.master.http.port=0'].flatMap((c) => [
        '--conf',
        c,
      ]),
      '--conf',
      `svc.master.state.dir=${path.join(dir, 'master-state')}`,
    ],
    logFile:
      flags['master-log'] === undefined ? path.join(dir, 'master.log') : path.resolve(flags['master-log']),
    ...(compiled || profileDir !== undefined || nodeArgs.length > 0
      ? {
          command: [
            process.execPath,
            ...nodeArgs,
            // V8's profile of the master alone, written when it stops (node refuses --cpu-prof in NODE_OPTIONS).
            ...(profileDir === undefined ? [] : ['--cpu-prof', `--cpu-prof-dir=${profileDir}`]),
            ...(compiled
              ? [path.join(ROOT, 'packages', 'server', 'dist', 'runtime', 'cli', 'main.js')]
              : ['--import', 'tsx', path.join(ROOT, 'runtime', 'cli', 'main.ts')]),
          ],
        }
      : {}),
  });
  try {
    const listening = await master.waitForEvent('listening', STARTUP_WAIT_MS);
    const port = (listening.rpc as { port: number }).port;
    return await drive('master', master.pid!, port, probeDir);
  } finally {
    await master.stop();
  }
}

const ms = (x: number): string => `${x.toFixed(1)} ms`;
const pct = (p: Percentiles): string => `${ms(p.p50)} / ${ms(p.p99)} / ${ms(p.max)} (${p.count})`;

function report(master: SideFigures, echo: SideFigures): string {
  const rows: [string, (s: SideFigures) => string][] = [
    ['workers registered in', (s) => `${(s.registerWorkersMs / 1000).toFixed(1)} s`],
    ['heartbeats in the window', (s) => String(s.heartbeats)],
    ['server CPU per 1,000 heartbeats', (s) => `${(s.serverCpuPer1000Heartbeats * 1000).toFixed(0)} ms`],
    ['heartbeat round trip p50 / p99 / max (n)', (s) => pct(s.heartbeatRtt)],
    ['RegisterShuffle, burst: p50 / p99 / max (n)', (s) => pct(s.burst)],
    ['RegisterShuffle, steady: p50 / p99 / max (n)', (s) => pct(s.steady)],
    ['server CPU in the steady phase', (s) => `${s.steadyServerCpuSeconds.toFixed(2)} s`],
    [
      'server RSS peak / at the end',
      (s) => `${s.serverPeakRssMiB.toFixed(0)} / ${s.serverEndRssMiB.toFixed(0)} MiB`,
    ],
    ['generator CPU, whole run', (s) => `${s.generatorCpuSeconds.toFixed(1)} s`],
    ['refusals', (s) => String(s.counts.refusals)],
  ];
  const width = Math.max(...rows.map(([label]) => label.length));
  const lines = [`${''.padEnd(width)}  ${'master'.padEnd(34)}  echo (baseline)`];
  for (const [label, cell] of rows)
    lines.push(`${label.padEnd(width)}  ${cell(master).padEnd(34)}  ${cell(echo)}`);
  return lines.join('\n');
}

async function main(): Promise<number> {
  if (compiled && !flags['no-build']) {
    execFileSync(process.execPath, [path.join(ROOT, 'scripts', 'build.mjs')], {
      cwd: ROOT,
      stdio: 'inherit',
    });
  }
  const machine = machineInfo();
  const load = loadavg();
  console.log(
    `master-load: ${machine.nproc} cores (${machine.cpuModel}), node ${machine.node}; load average ` +
      `${load.map((x) => x.toFixed(2)).join(' ')}; master ${compiled ? 'compiled (dist/)' : 'through tsx'}\n` +
      `  ${shape.workers} workers heartbeating every ${shape.heartbeatIntervalMs / 1000} s, ${shape.apps} applications, ` +
      `${shape.partitions} partitions a shuffle, replication ${shape.replicate ? 'on' : 'off'}`,
  );
  const dir = mkdtempSync(path.join(tmpdir(), 'svc-bench-master-load-'));
  const probeDir = path.join(dir, 'probes');
  mkdirSync(probeDir);
  try {
    const echo = await echoSide(probeDir);
    const master = await masterSide(dir, probeDir);
    const loadAfter = loadavg();
    console.log(`\n${report(master, echo)}\n`);
    console.log(`load average at the end ${loadAfter.map((x) => x.toFixed(2)).join(' ')}`);
    if (master.counts.firstRefusal !== undefined) console.log(`first refusal: ${master.counts.firstRefusal}`);
    const met = master.steady.p99 <= GOAL_P99_MS && master.counts.refusals === 0;
    console.log(
      `goal: RegisterShuffle p99 <= ${GOAL_P99_MS} ms under the load: ${ms(master.steady.p99)} ` +
        `(echo ${ms(echo.steady.p99)}): ${met ? 'met' : 'MISSED'}` +
        (master.counts.refusals === 0 ? '' : ` (${master.counts.refusals} refusals)`),
    );
    if (!flags['no-json']) {
      const file = flags.json ?? defaultJsonPath(import.meta.dirname, new Date(), 'master-load');
      mkdirSync(path.dirname(file), { recursive: true });
      const result = { machine, loadBefore: load, loadAfter, shape, heartbeatWindowS, steadyS, master, echo };
      writeFileSync(file, `${JSON.stringify(result, null, 2)}\n`);
      console.log(`results: ${path.relative(process.cwd(), file)}`);
    }
    return met ? 0 : GOAL_MISSED;
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}

main().then(
  (code) => process.exit(code),
  (error: unknown) => {
    console.error(error);
    process.exit(1);
  },
);
