/**
 * Many map tasks of one application (issue 37): `svc demo` with 500 maps over 8 executor processes into 3 workers
 * and 2,000 partitions (1 GiB, replication on, disk tier), a real job that verifies every partition. Reported: its
 * map, reduce and whole-job throughput (the demo's own lines, cluster start excluded) and the CPU each process
 * spent over the job, the lifecycle manager's above all: it lives in the demo's driver process, which does little
 * else while the job runs (hands tasks to executors, collects their results).
 *
 * The same-run baseline is dataplane's e2e bare job at this shape: the same bytes (each map's freshly generated,
 * framed and merged as svc frames them: bench/dataplane/workload.ts) pushed by 8 client processes into 3 sinks that
 * append to a file and relay to the next sink (replication), then read back from them. It neither groups nor
 * verifies, and has no lifecycle manager: it is what the machine moves at the same shape without svc's protocol.
 *
 *   npm run bench -- many-maps [--size 1g] [--maps 500] [--partitions 2000] [--executors 8] [--workers 3]
 *                              [--replication on|off] [--json <file> | --no-json]
 *
 * Exit code (see bench/run.ts): 0 when the job verified, 2 when it failed or did not finish, 1 on error. No throughput goal: reported.
 */
import { spawn } from 'node:child_process';
import { mkdirSync, mkdtempSync, readFileSync, readdirSync, rmSync, writeFileSync } from 'node:fs';
import { loadavg, tmpdir } from 'node:os';
import path from 'node:path';
import { parseArgs } from 'node:util';
import { parseBytes } from '../conf/values.ts';
import { Child } from './dataplane/children.ts';
import { sourceEntries } from './dataplane/compiled.ts';
import { cpuSeconds, machineInfo } from './dataplane/proc.ts';
import { defaultJsonPath } from './dataplane/options.ts';
import type { FromClient, FromSink, ToClient, ToSink } from './dataplane/protocol.ts';
import type { Workload } from './dataplane/workload.ts';

const GOAL_MISSED = 2;
const ROOT = path.resolve(import.meta.dirname, '..');
const HOST = '127.0.0.1';
const MiB = 2 ** 20;
/** The demo's record: a 16-byte key and a 1,008-byte value. */
const RECORD_BYTES = 1024;

const { values: flags } = parseArgs({
  args: process.argv.slice(2),
  strict: true,
  options: {
    size: { type: 'string', default: '1g' },
    maps: { type: 'string', default: '500' },
    partitions: { type: 'string', default: '2000' },
    executors: { type: 'string', default: '8' },
    workers: { type: 'string', default: '3' },
    replication: { type: 'string', default: 'on' },
    json: { type: 'string' },
    'no-json': { type: 'boolean', default: false },
  },
});

function whole(name: 'maps' | 'partitions' | 'executors' | 'workers'): number {
  const n = Number(flags[name]);
  if (!Number.isSafeInteger(n) || n < 1)
    throw new Error(`--${name} '${flags[name]}' is not a whole number >= 1`);
  return n;
}

const size = parseBytes(flags.size);
if (!size.ok) throw new Error(`--size '${flags.size}' is not a size (${size.expected})`);
const job = {
  bytes: size.value,
  maps: whole('maps'),
  partitions: whole('partitions'),
  executors: whole('executors'),
  workers: whole('workers'),
  replication: flags.replication !== 'off',
};

function cpuOf(pid: number): number {
  const { user, system } = cpuSeconds(pid);
  return user + system;
}

/** Every descendant of `pid` (Linux: /proc/<pid>/task/<tid>/children), with its command line. */
function descendants(pid: number): { pid: number; cmdline: string }[] {
  const found: { pid: number; cmdline: string }[] = [];
  const visit = (parent: number): void => {
    let tasks: string[];
    try {
      tasks = readdirSync(`/proc/${parent}/task`);
    } catch {
      return;
    }
    for (const task of tasks) {
      let children: string;
      try {
        children = readFileSync(`/proc/${parent}/task/${task}/children`, 'utf8');
      } catch {
        continue;
      }
      for (const child of children
        .split(' ')
        .filter((word) => word.length > 0)
        .map(Number)) {
        let cmdline = '';
        try {
          cmdline = readFileSync(`/proc/${child}/cmdline`, 'utf8').replace(/\0/g, ' ');
        } catch {
          // gone
        }
        found.push({ pid: child, cmdline });
        visit(child);
      }
    }
  };
  visit(pid);
  return found;
}

// The verifier is an executor process too (runtime/demo/README.md): its CPU (about 1 s per GiB) counts with theirs.
type Role = 'driver (lifecycle manager)' | 'master' | 'workers' | 'executors + verifier' | 'other';

function roleOf(cmdline: string): Role {
  if (/cli\/main\.[jt]s master/.test(cmdline) || / master( |$)/.test(cmdline)) return 'master';
  if (/cli\/main\.[jt]s worker/.test(cmdline) || / worker svc:/.test(cmdline)) return 'workers';
  if (cmdline.includes('demo/executor')) return 'executors + verifier';
  return 'other';
}

/** CPU seconds by role of the demo's process tree now (the driver itself, then its descendants). */
function cpuByRole(driver: number): Map<Role, number> {
  const byRole = new Map<Role, number>([['driver (lifecycle manager)', cpuOf(driver)]]);
  for (const { pid, cmdline } of descendants(driver)) {
    const role = roleOf(cmdline);
    byRole.set(role, (byRole.get(role) ?? 0) + cpuOf(pid));
  }
  return byRole;
}

interface SvcFigures {
  readonly jobSeconds: number;
  readonly mapSeconds: number;
  readonly reduceSeconds: number;
  readonly verified: boolean;
  readonly cpuByRole: Record<string, number>;
  readonly output: string;
}

/** Runs the demo; CPU by role is read when the job starts ("application … executors running") and when it ends. */
async function svcJob(): Promise<SvcFigures> {
  const args = [
    '--import',
    'tsx',
    path.join(ROOT, 'runtime', 'cli', 'main.ts'),
    'demo',
    ...['--size', String(job.bytes), '--maps', String(job.maps), '--reduces', String(job.partitions)],
    ...['--executors', String(job.executors), '--workers', String(job.workers)],
    ...['--replication', job.replication ? 'on' : 'off', '--tier', 'disk', '--progress', 'none'],
  ];
  const child = spawn(process.execPath, args, { stdio: ['ignore', 'pipe', 'pipe'], env: process.env });
  const pid = child.pid!;
  let output = '';
  let atStart: Map<Role, number> | undefined;
  let atEnd: Map<Role, number> | undefined;
  child.stdout.on('data', (chunk: Buffer) => {
    const text = chunk.toString('utf8');
    output += text;
    if (atStart === undefined && /executors running up to/.test(output)) atStart = cpuByRole(pid);
    if (atEnd === undefined && /^map phase:/m.test(output)) atEnd = cpuByRole(pid);
  });
  child.stderr.on('data', (chunk: Buffer) => (output += chunk.toString('utf8')));
  const code = await new Promise<number | null>((resolve) => child.on('exit', resolve));
  const timing = /job wall time ([\d.]+) s \(map ([\d.]+) s, reduce ([\d.]+) s\)/.exec(output);
  if (code !== 0 || timing === null || atStart === undefined || atEnd === undefined) {
    throw new Error(`svc demo exited with ${String(code)}:\n${output.split('\n').slice(-30).join('\n')}`);
  }
  const cpu: Record<string, number> = {};
  for (const [role, seconds] of atEnd) cpu[role] = seconds - (atStart.get(role) ?? 0);
  return {
    jobSeconds: Number(timing[1]),
    mapSeconds: Number(timing[2]),
    reduceSeconds: Number(timing[3]),
    verified: /^verification OK/m.test(output),
    cpuByRole: cpu,
    output,
  };
}

interface BareFigures {
  readonly pushSeconds: number;
  readonly readSeconds: number;
  readonly cpuByRole: Record<string, number>;
}

async function bareJob(dir: string, probeDir: string): Promise<BareFigures> {
  const workload: Workload = {
    maps: job.maps,
    partitions: job.partitions,
    recordBytes: RECORD_BYTES,
    recordsPerPartition: Math.max(1, Math.floor(job.bytes / job.maps / job.partitions / RECORD_BYTES)),
    batchBytes: 64 * 1024,
    // svc.client.push.merge.maxSize's default, as the demo runs.
    mergeBytes: 2 * MiB,
    generate: true,
  };
  const sinks = await Promise.all(
    Array.from({ length: job.workers }, async (_, i) => {
      const child = await Child.start<ToSink, FromSink>({
        name: `sink-${i}`,
        entry: sourceEntries().sink,
        probeDir,
      });
      const sinkDir = path.join(dir, `sink-${i}`);
      mkdirSync(sinkDir, { recursive: true });
      const ready = await child.ask({ type: 'sink-init', mode: 'file', dir: sinkDir, chunkBytes: 8 * MiB });
      if (ready.type !== 'sink-ready') throw new Error(`sink ${i}: unexpected ${ready.type}`);
      return { child, ports: ready.ports };
    }),
  );
  const clients: Child<ToClient, FromClient>[] = [];
  try {
    if (job.replication && sinks.length > 1) {
      await Promise.all(
        sinks.map((sink, i) =>
          sink.child.ask({
            type: 'relay-to',
            relay: { host: HOST, port: sinks[(i + 1) % sinks.length]!.ports.relay },
          }),
        ),
      );
    }
    for (let i = 0; i < job.executors; i += 1) {
      clients.push(
        await Child.start<ToClient, FromClient>({
          name: `client-${i}`,
          entry: sourceEntries().client,
          probeDir,
        }),
      );
    }
    const pids = { sinks: sinks.map((s) => s.child.pid), clients: clients.map((c) => c.pid) };
    const sum = (list: number[]) => list.reduce((total, pid) => total + cpuOf(pid), 0);
    const cpu0 = { sinks: sum(pids.sinks), clients: sum(pids.clients) };
    const endpoints = sinks.map((sink) => ({ host: HOST, port: sink.ports.push }));
    const mapsOf = (c: number) =>
      Array.from({ length: job.maps }, (_, m) => m).filter((m) => m % job.executors === c);
    const started = performance.now();
    const pushes = await Promise.all(
      clients.map(async (client, c) => {
        const answer = await client.ask({
          type: 'bare-push',
          sinks: endpoints,
          workload: { ...workload, mapIds: mapsOf(c) },
        });
        if (answer.type !== 'pushed') throw new Error(`client ${c}: unexpected ${answer.type}`);
        return answer;
      }),
    );
    const pushSeconds = (performance.now() - started) / 1000;
    const readStarted = performance.now();
    await Promise.all(
      clients.map(async (client, c) => {
        const answer = await client.ask({
          type: 'bare-read',
          files: (pushes[c]!.acks ?? []).map((ack, s) => ({
            server: { host: HOST, port: sinks[s]!.ports.serve },
            file: ack.file!,
          })),
          slots: 4,
        });
        if (answer.type !== 'read') throw new Error(`client ${c}: unexpected ${answer.type}`);
        return answer;
      }),
    );
    const readSeconds = (performance.now() - readStarted) / 1000;
    return {
      pushSeconds,
      readSeconds,
      cpuByRole: {
        sinks: sum(pids.sinks) - cpu0.sinks,
        clients: sum(pids.clients) - cpu0.clients,
      },
    };
  } finally {
    await Promise.all([
      ...clients.map((client) => client.stop({ type: 'exit' })),
      ...sinks.map((sink) => sink.child.stop({ type: 'exit' })),
    ]);
  }
}

const rate = (bytes: number, seconds: number): string => `${(bytes / MiB / seconds).toFixed(1)} MiB/s`;

async function main(): Promise<number> {
  const machine = machineInfo();
  const loadBefore = loadavg();
  console.log(
    `many-maps: ${machine.nproc} cores (${machine.cpuModel}), node ${machine.node}; load average ` +
      `${loadBefore.map((x) => x.toFixed(2)).join(' ')}\n` +
      `  ${(job.bytes / MiB).toFixed(0)} MiB, ${job.maps} maps over ${job.executors} executors, ` +
      `${job.partitions} partitions, ${job.workers} workers, replication ${job.replication ? 'on' : 'off'}, disk tier`,
  );
  const dir = mkdtempSync(path.join(tmpdir(), 'svc-bench-many-maps-'));
  const probeDir = path.join(dir, 'probes');
  mkdirSync(probeDir);
  try {
    console.log('  bare: pushing and reading back');
    const bare = await bareJob(path.join(dir, 'bare'), probeDir);
    console.log(
      `  bare: push ${bare.pushSeconds.toFixed(1)} s, read ${bare.readSeconds.toFixed(1)} s; CPU ` +
        Object.entries(bare.cpuByRole)
          .map(([role, s]) => `${role} ${s.toFixed(1)} s`)
          .join(', '),
    );
    console.log('  svc: svc demo');
    let svc: SvcFigures;
    try {
      svc = await svcJob();
    } catch (error) {
      // The job did not complete: a figure svc could not produce (counted as missed), not the harness's error.
      console.log(
        `svc FAILED: ${error instanceof Error ? error.message.split('\n').slice(0, 4).join('\n') : String(error)}`,
      );
      return GOAL_MISSED;
    }
    const loadAfter = loadavg();
    const bareSeconds = bare.pushSeconds + bare.readSeconds;
    const lm = svc.cpuByRole['driver (lifecycle manager)'] ?? 0;
    console.log(
      [
        '',
        `                   svc                          bare (baseline)`,
        `map / push phase   ${`${svc.mapSeconds.toFixed(1)} s, ${rate(job.bytes, svc.mapSeconds)}`.padEnd(28)} ` +
          `${bare.pushSeconds.toFixed(1)} s, ${rate(job.bytes, bare.pushSeconds)}`,
        `reduce / read      ${`${svc.reduceSeconds.toFixed(1)} s, ${rate(job.bytes, svc.reduceSeconds)}`.padEnd(28)} ` +
          `${bare.readSeconds.toFixed(1)} s, ${rate(job.bytes, bare.readSeconds)}`,
        `job                ${`${svc.jobSeconds.toFixed(1)} s, ${rate(job.bytes, svc.jobSeconds)}`.padEnd(28)} ` +
          `${bareSeconds.toFixed(1)} s, ${rate(job.bytes, bareSeconds)} ` +
          `(svc ${((bareSeconds / svc.jobSeconds) * 100).toFixed(0)} % of it)`,
        `CPU over the job   ${Object.entries(svc.cpuByRole)
          .map(([role, s]) => `${role} ${s.toFixed(1)} s`)
          .join(', ')}`,
        `                   bare: ${Object.entries(bare.cpuByRole)
          .map(([role, s]) => `${role} ${s.toFixed(1)} s`)
          .join(', ')}`,
        `lifecycle manager  ${lm.toFixed(2)} CPU s over the job, ${((lm / job.maps) * 1000).toFixed(1)} ms per map task`,
        `verification       ${svc.verified ? 'OK' : 'FAILED'}`,
        `load average at the end ${loadAfter.map((x) => x.toFixed(2)).join(' ')}`,
      ].join('\n'),
    );
    if (!flags['no-json']) {
      const file = flags.json ?? defaultJsonPath(import.meta.dirname, new Date(), 'many-maps');
      mkdirSync(path.dirname(file), { recursive: true });
      const { output: _output, ...svcFigures } = svc;
      writeFileSync(
        file,
        `${JSON.stringify({ machine, loadBefore, loadAfter, job, svc: svcFigures, bare }, null, 2)}\n`,
      );
      console.log(`results: ${path.relative(process.cwd(), file)}`);
    }
    return svc.verified ? 0 : GOAL_MISSED;
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
