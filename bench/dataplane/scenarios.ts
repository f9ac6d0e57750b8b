/**
 * The runs behind each figure: the svc side (a LocalCluster and a client process) and the bare side (sink processes
 * and a client process) of the same workload, measured the same way:
 *
 * - time: as the client process sees it, from its first byte to the last acknowledgement (svc: every map won and
 *   the shuffle committed; bare: every sink answered after its file was synced and its relay peer answered);
 * - CPU: utime + stime of each server process (workers or sinks) and of the client, from /proc/<pid>/stat before
 *   and after;
 * - memory: each server's VmRSS sampled every 50 ms, and its VmHWM;
 * - event-loop delay: perf_hooks.monitorEventLoopDelay in each server and client, through ./probe.mjs (loaded with
 *   --import: through NODE_OPTIONS for the workers LocalCluster spawns), reset when the measurement starts and read
 *   when it ends;
 * - with --profile, the CPU profile of each process (V8's sampler, started by ./probe.mjs), summarised over the
 *   measurement's window.
 */
import { spawn } from 'node:child_process';
import { mkdirSync, readdirSync, readFileSync, rmSync, statSync } from 'node:fs';
import path from 'node:path';
import { clientTierConf, LocalCluster, type Tier } from '../../runtime/cluster/local-cluster.ts';
import { scrapeGauge } from '../../runtime/metrics/testing.ts';
import { pollUntil } from '../../runtime/testing/poll.ts';
import { Child, PROBE_URL } from './children.ts';
import type { ChildEntries } from './compiled.ts';
import type { Options } from './options.ts';
import {
  cpuSeconds,
  mainThreadCpuSeconds,
  mainThreadWaitSeconds,
  memoryOf,
  minorFaultsOf,
  RssSampler,
  switchesOf,
} from './proc.ts';
import { nowUs, profileFileOf, summariseProfile, type ProfileSummary, type Window } from './profile.ts';
import type {
  Endpoint,
  FromClient,
  FromSink,
  Percentiles,
  PushResult,
  ReadResult,
  SinkMode,
  SinkPorts,
  ToClient,
  ToSink,
  WriteResult,
} from './protocol.ts';
import { describeWorkload, recordBytesOf, workloadOf, type Workload } from './workload.ts';

const MIB = 2 ** 20;
const GIB = 2 ** 30;
const HOST = '127.0.0.1';

export interface Context {
  readonly options: Options;
  /** Where this run's clusters and sinks keep their data. */
  readonly runDir: string;
  readonly probeDir: string;
  /** Set when profiling: where every process writes its .cpuprofile. */
  readonly profileDir: string | undefined;
  readonly repoRoot: string;
  /** How the clients, the sinks and the servers run: compiled, or the source through tsx (./compiled.ts). */
  readonly entries: ChildEntries;
  readonly log: (line: string) => void;
}

export interface LoopDelay extends Percentiles {
  readonly pid: number;
  /** Garbage collections in the same interval, by kind (minor, major, incremental, weakcb). */
  readonly gc?: Readonly<Record<string, { readonly count: number; readonly ms: number }>>;
}

export interface ProfiledProcess {
  readonly role: string;
  readonly summary: ProfileSummary;
}

/** One side (svc or bare) of one measurement. */
export interface Side {
  readonly seconds: number;
  /** The bytes the throughput is computed over: record bytes for pushes, file bytes for reads. */
  readonly bytes: number;
  readonly mibPerSecond: number;
  /** CPU seconds of the server processes (workers or sinks), summed, during the measurement. */
  readonly serverCpuSeconds: number;
  /** The part of it spent in the kernel (stime): socket and file system calls. */
  readonly serverSystemCpuSeconds: number;
  /**
   * The part of it outside the servers' main threads: V8's optimising compiler and collector helpers, libuv's pool.
   * A sink's is near nothing; a worker's is mostly the compiler while its code is still getting hot.
   */
  readonly serverBackgroundCpuSeconds: number;
  /** Context switches of the server processes' threads: voluntary (waiting) and involuntary (preempted). */
  readonly serverContextSwitches: { readonly voluntary: number; readonly involuntary: number };
  /**
   * Seconds the servers' main threads waited for a CPU while runnable (summed): event-loop delay that comes from
   * the machine (the client, other processes, the servers' own helper threads), not from the server's code.
   * Absent where the kernel keeps no scheduler statistics.
   */
  readonly serverRunQueueWaitSeconds?: number;
  readonly serverCpuPerGiB: number;
  readonly clientCpuSeconds: number;
  /** Minor page faults during the measurement: the server processes' summed, and the client's. */
  readonly minorFaults: { readonly server: number; readonly client: number };
  /** The largest resident set a server process had during the measurement (50 ms samples). */
  readonly serverPeakRssBytes: number;
  /** The largest VmHWM (peak resident set since the process started) of a server process. */
  readonly serverHwmBytes: number;
  /** The server process with the worst p99 event-loop delay. */
  readonly serverLoop?: LoopDelay;
  readonly clientLoop?: LoopDelay;
  readonly rtt?: Percentiles;
  readonly messages?: number;
  readonly batches?: number;
  readonly notes?: Readonly<Record<string, unknown>>;
  profiles?: ProfiledProcess[];
}

export interface Comparison {
  readonly scenario: string;
  readonly what: string;
  /** Undefined when svc failed to complete the run (`svcError` says how). */
  readonly svc?: Side;
  readonly svcError?: string;
  readonly bare: Side;
  /** push-memory: the same stream into a sink that keeps what it receives (the floor for a memory tier's CPU). */
  readonly keeping?: Side;
}

/** svc failed the run (a task failed, a process exited): a figure svc could not produce, not a harness error. */
export class SvcFailure extends Error {}

function svcFailure(error: unknown): SvcFailure {
  if (error instanceof SvcFailure) return error;
  return new SvcFailure(error instanceof Error ? error.message : String(error));
}

export interface RssFigure {
  readonly pushedBytes: number;
  readonly configuredBytes: number;
  readonly side: Side;
}

export interface E2eFigure {
  readonly what: string;
  readonly svcSeconds: number;
  readonly svcMapSeconds: number | undefined;
  readonly svcReduceSeconds: number | undefined;
  readonly bareSeconds: number;
  readonly barePushSeconds: number;
  readonly bareReadSeconds: number;
  readonly bytes: number;
  readonly processes: { readonly svc: string; readonly bare: string };
}

// ------------------------------------------------------------------ processes

type Client = Child<ToClient, FromClient>;
type SinkChild = Child<ToSink, FromSink>;

interface Sink {
  readonly child: SinkChild;
  readonly ports: SinkPorts;
  readonly dir: string;
  /** The files it wrote are deleted once it stops (see stopAll). */
  readonly removeAtStop: boolean;
}

async function startClient(ctx: Context, name: string): Promise<Client> {
  return Child.start<ToClient, FromClient>({
    name,
    entry: ctx.entries.client,
    probeDir: ctx.probeDir,
    ...(ctx.profileDir === undefined ? {} : { cpuProfileDir: ctx.profileDir }),
  });
}

async function startSinks(
  ctx: Context,
  name: string,
  count: number,
  mode: SinkMode,
  relay: boolean,
  dirOf: (index: number) => string,
): Promise<Sink[]> {
  const sinks = await Promise.all(
    Array.from({ length: count }, async (_, index): Promise<Sink> => {
      const child = await Child.start<ToSink, FromSink>({
        name: `${name}-sink-${index}`,
        entry: ctx.entries.sink,
        probeDir: ctx.probeDir,
        ...(ctx.profileDir === undefined ? {} : { cpuProfileDir: ctx.profileDir }),
      });
      const dir = dirOf(index);
      mkdirSync(dir, { recursive: true });
      const ready = await child.ask({ type: 'sink-init', mode, dir, chunkBytes: ctx.options.chunk });
      if (ready.type !== 'sink-ready') throw new Error(`sink ${index}: unexpected ${ready.type}`);
      return { child, ports: ready.ports, dir, removeAtStop: mode === 'file' && !ctx.options.keep };
    }),
  );
  if (relay && count > 1) {
    await Promise.all(
      sinks.map((sink, i) =>
        sink.child.ask({
          type: 'relay-to',
          relay: { host: HOST, port: sinks[(i + 1) % count]!.ports.relay },
        }),
      ),
    );
  }
  return sinks;
}

/**
 * Stops the clients and sinks, and deletes the files the sinks wrote, as a svc cluster's stop deletes its workers':
 * no side's files outlive its row, to be written back or held in the page cache during another side's measurement
 * (until 3 December the bare job's 2 GiB a round stayed until the benchmark's end; docs/performance.md, "Method").
 */
async function stopAll(clients: readonly (Client | undefined)[], sinks: readonly Sink[]): Promise<void> {
  await Promise.all([
    ...clients.map((client) => client?.stop({ type: 'exit' })),
    ...sinks.map((sink) => sink.child.stop({ type: 'exit' })),
  ]);
  for (const sink of sinks) if (sink.removeAtStop) rmSync(sink.dir, { recursive: true, force: true });
}

/**
 * A LocalCluster whose workers (and master) load ./probe.mjs through NODE_OPTIONS (event-loop delay, and the CPU
 * profile when profiling): ServerProcess passes this process's environment on, so runtime/ needs no hook for either.
 */
async function startCluster(
  ctx: Context,
  name: string,
  workers: number,
  tier: Tier,
  workerConf: readonly string[],
  conf: readonly string[] = [],
): Promise<LocalCluster> {
  const saved = {
    options: process.env.NODE_OPTIONS,
    probe: process.env.SVC_BENCH_PROBE_DIR,
    profile: process.env.SVC_BENCH_CPU_PROF_DIR,
  };
  process.env.NODE_OPTIONS = [saved.options ?? '', `--import=${PROBE_URL}`]
    .filter((word) => word.length > 0)
    .join(' ');
  process.env.SVC_BENCH_PROBE_DIR = ctx.probeDir;
  if (ctx.profileDir !== undefined) process.env.SVC_BENCH_CPU_PROF_DIR = ctx.profileDir;
  try {
    return await LocalCluster.start({
      workers,
      tier,
      dir: path.join(ctx.runDir, name),
      conf,
      workerConf: [`svc.shuffle.chunk.size=${ctx.options.chunk}`, ...workerConf],
      keepDir: ctx.options.keep,
      ...(ctx.entries.server === undefined ? {} : { serverCommand: ctx.entries.server }),
    });
  } finally {
    restoreEnv('NODE_OPTIONS', saved.options);
    restoreEnv('SVC_BENCH_PROBE_DIR', saved.probe);
    restoreEnv('SVC_BENCH_CPU_PROF_DIR', saved.profile);
  }
}

function restoreEnv(name: string, value: string | undefined): void {
  if (value === undefined) delete process.env[name];
  else process.env[name] = value;
}

function workerPids(cluster: LocalCluster): number[] {
  return cluster.workers.map((worker) => worker.pid ?? 0);
}

/**
 * Worker settings under which a push of `bytes` stays in the memory tier: a memory budget well above it, 90 % of it
 * for memory files, eviction only near the top, and files allowed to grow to the whole push (the defaults, 1g, 0.5
 * from LocalCluster and 8m files, would move most of a 1 GiB push to disk).
 */
function memoryTierConf(bytes: number): string[] {
  const budget = Math.ceil((bytes / 0.8 + 256 * MIB) / MIB);
  return [
    `svc.worker.memory.size=${budget}m`,
    'svc.worker.directMemoryRatioForMemoryFileStorage=0.9',
    'svc.worker.memoryFileStorage.evict.ratio=0.95',
    `svc.worker.memoryFileStorage.maxFileSize=${Math.ceil(bytes / MIB) + 1}m`,
  ];
}

// ------------------------------------------------------------------ measuring

/** The event-loop probes: SIGUSR2 makes a probe write its histogram since the previous one and start afresh. */
class Probes {
  private readonly seqs = new Map<number, number>();

  constructor(private readonly dir: string) {}

  /** Ends the current interval of each process's probe; resolves with what each measured in it. */
  async mark(pids: readonly number[]): Promise<Map<number, LoopDelay>> {
    const expected = new Map<number, number>();
    for (const pid of pids) {
      if (!catchesSigusr2(pid)) continue; // no probe there: SIGUSR2 would kill it
      process.kill(pid, 'SIGUSR2');
      const seq = (this.seqs.get(pid) ?? 0) + 1;
      this.seqs.set(pid, seq);
      expected.set(pid, seq);
    }
    const found = new Map<number, LoopDelay>();
    const deadline = performance.now() + 10_000;
    while (found.size < expected.size && performance.now() < deadline) {
      for (const [pid, seq] of expected) {
        if (found.has(pid)) continue;
        try {
          const summary = JSON.parse(
            readFileSync(path.join(this.dir, `${pid}.json`), 'utf8'),
          ) as LoopDelay & {
            seq: number;
          };
          if (summary.seq >= seq) {
            found.set(pid, {
              pid,
              count: summary.count,
              p50: summary.p50,
              p90: summary.p90,
              p99: summary.p99,
              max: summary.max,
              mean: summary.mean,
              ...(summary.gc === undefined ? {} : { gc: summary.gc }),
            });
          }
        } catch {
          // not written yet
        }
      }
      if (found.size < expected.size) await new Promise((resolve) => setTimeout(resolve, 10));
    }
    return found;
  }
}

function catchesSigusr2(pid: number): boolean {
  try {
    const status = readFileSync(`/proc/${pid}/status`, 'utf8');
    const mask = /^SigCgt:\s+([0-9a-f]+)$/m.exec(status)?.[1];
    return mask !== undefined && (BigInt(`0x${mask}`) & (1n << 11n)) !== 0n;
  } catch {
    return false;
  }
}

let probes: Probes | undefined;

interface Measured<T> {
  readonly result: T;
  readonly window: Window;
  readonly serverCpu: number;
  readonly serverSystemCpu: number;
  /** The servers' CPU outside their main threads (node's event loop): V8's compiler and collector, libuv's pool. */
  readonly serverBackgroundCpu: number;
  readonly serverSwitches: { readonly voluntary: number; readonly involuntary: number };
  /** NaN where the kernel keeps no scheduler statistics. */
  readonly serverWait: number;
  readonly clientCpu: number;
  readonly minorFaults: { readonly server: number; readonly client: number };
  readonly peakRss: number;
  readonly hwm: number;
  readonly serverLoop: LoopDelay | undefined;
  readonly clientLoop: LoopDelay | undefined;
}

async function measure<T>(
  ctx: Context,
  servers: readonly number[],
  clients: readonly number[],
  run: () => Promise<T>,
): Promise<Measured<T>> {
  probes ??= new Probes(ctx.probeDir);
  await probes.mark([...servers, ...clients]);
  const sum = (pids: readonly number[]) =>
    pids.reduce(
      (total, pid) => {
        const cpu = cpuSeconds(pid);
        return { user: total.user + cpu.user, system: total.system + cpu.system };
      },
      { user: 0, system: 0 },
    );
  const switches = () =>
    servers.reduce(
      (total, pid) => {
        const counts = switchesOf(pid);
        return {
          voluntary: total.voluntary + counts.voluntary,
          involuntary: total.involuntary + counts.involuntary,
        };
      },
      { voluntary: 0, involuntary: 0 },
    );
  const faults = (pids: readonly number[]) => pids.reduce((total, pid) => total + minorFaultsOf(pid), 0);
  const serverFaults0 = faults(servers);
  const clientFaults0 = faults(clients);
  const switches0 = switches();
  const mainThreads = () => servers.reduce((total, pid) => total + mainThreadCpuSeconds(pid), 0);
  const waits = () => servers.reduce((total, pid) => total + mainThreadWaitSeconds(pid), 0);
  const serverMain0 = mainThreads();
  const serverWait0 = waits();
  const serverCpu0 = sum(servers);
  const clientCpu0 = sum(clients);
  const sampler = new RssSampler(servers);
  const fromUs = nowUs();
  const result = await run();
  const toUs = nowUs();
  const peaks = sampler.stop();
  const switches1 = switches();
  const minorFaults = { server: faults(servers) - serverFaults0, client: faults(clients) - clientFaults0 };
  const serverCpu1 = sum(servers);
  const serverMain1 = mainThreads();
  const serverWait1 = waits();
  const serverCpu = serverCpu1.user + serverCpu1.system - serverCpu0.user - serverCpu0.system;
  const serverSystemCpu = serverCpu1.system - serverCpu0.system;
  const clientCpu1 = sum(clients);
  const clientCpu = clientCpu1.user + clientCpu1.system - clientCpu0.user - clientCpu0.system;
  const loops = await probes.mark([...servers, ...clients]);
  const worst = (pids: readonly number[]) =>
    pids
      .map((pid) => loops.get(pid))
      .filter((loop) => loop !== undefined)
      .sort((a, b) => b.p99 - a.p99)[0];
  return {
    result,
    window: { fromUs, toUs },
    serverCpu,
    serverSystemCpu,
    serverBackgroundCpu: serverCpu - (serverMain1 - serverMain0),
    serverSwitches: {
      voluntary: switches1.voluntary - switches0.voluntary,
      involuntary: switches1.involuntary - switches0.involuntary,
    },
    serverWait: serverWait1 - serverWait0,
    clientCpu,
    minorFaults,
    peakRss: Math.max(0, ...peaks.values()),
    hwm: Math.max(0, ...servers.map((pid) => memoryOf(pid).hwm)),
    serverLoop: worst(servers),
    clientLoop: worst(clients),
  };
}

function sideOf(measured: Measured<unknown>, ms: number, bytes: number, extra: Partial<Side> = {}): Side {
  const seconds = ms / 1000;
  return {
    seconds,
    bytes,
    mibPerSecond: bytes / MIB / seconds,
    serverCpuSeconds: measured.serverCpu,
    serverSystemCpuSeconds: measured.serverSystemCpu,
    serverBackgroundCpuSeconds: measured.serverBackgroundCpu,
    serverContextSwitches: measured.serverSwitches,
    ...(Number.isNaN(measured.serverWait) ? {} : { serverRunQueueWaitSeconds: measured.serverWait }),
    serverCpuPerGiB: measured.serverCpu / (bytes / GIB),
    clientCpuSeconds: measured.clientCpu,
    minorFaults: measured.minorFaults,
    serverPeakRssBytes: measured.peakRss,
    serverHwmBytes: measured.hwm,
    ...(measured.serverLoop === undefined ? {} : { serverLoop: measured.serverLoop }),
    ...(measured.clientLoop === undefined ? {} : { clientLoop: measured.clientLoop }),
    ...extra,
  };
}

function pushed(answer: FromClient): PushResult {
  if (answer.type !== 'pushed') throw new Error(`expected a push result, got ${answer.type}`);
  return answer;
}

function read(answer: FromClient): ReadResult {
  if (answer.type !== 'read') throw new Error(`expected a read result, got ${answer.type}`);
  return answer;
}

/** Profiles to summarise once their processes exited (a profile is written at exit). */
interface PendingProfile {
  readonly side: Side;
  readonly role: string;
  readonly pid: number;
  readonly window: Window;
}

const pendingProfiles: PendingProfile[] = [];

function profileLater(ctx: Context, side: Side, window: Window, processes: Record<string, number>): void {
  if (ctx.profileDir === undefined) return;
  for (const [role, pid] of Object.entries(processes)) pendingProfiles.push({ side, role, pid, window });
}

/** Summarises the profiles of processes that have exited (call after each scenario). */
export function collectProfiles(ctx: Context): void {
  if (ctx.profileDir === undefined) return;
  for (const pending of pendingProfiles.splice(0)) {
    const file = profileFileOf(ctx.profileDir, pending.pid);
    if (file === undefined) {
      ctx.log(`  (no CPU profile from ${pending.role}, pid ${pending.pid})`);
      continue;
    }
    const summary = summariseProfile(file, pending.window, ctx.repoRoot);
    pending.side.profiles = [...(pending.side.profiles ?? []), { role: pending.role, summary }];
  }
}

/**
 * What each side pushes before its measurement, into a shuffle of its own, on the processes the measurement uses:
 *
 * - `whole` (the memory push, replication, small batches): the measured workload itself, after which svc's client
 *   unregisters the shuffle and the measurement waits until every worker has dropped it (`untilReleased`). A
 *   worker's and a client's hot code runs once per message, about a thousand times per GiB, and V8 optimises a
 *   function only once it has run hot for a while: after a warm-up of an eighth of the records (a few dozen merged
 *   pushes) the measured GiB was also the one in which some 110 functions per worker were compiled, a fifth to a
 *   quarter of the workers' CPU on V8's compiler threads, their code unoptimised until then (docs/performance.md,
 *   "Method"). A long-lived worker or executor pays that once, in its first shuffles; after two whole warm-ups the
 *   measurement comes near such processes. Released, the warm-up leaves the memory tier as empty as the
 *   measurement would have found it.
 * - `eighth` (the disk push, many partitions, rss): as many partitions and the same batches with an eighth of the
 *   records (at least one per partition), left on the worker. A whole warm-up on disk would leave a GiB of dirty
 *   pages for the kernel to write back during the measurement; the release of 10,000 files leaves their records
 *   for the collector in a measurement of under a second; the rss row measures memory, not speed.
 *
 * Every push row but the disk push and rss warms up twice (`PushSpec.warmUpShuffles`): a worker's first commit and
 * release throw away code its pushes had optimised (Node's streams meet a socket of another shape, the codec an
 * array of another map) and V8 compiles that code again through the next shuffle's pushes. After one whole warm-up
 * some 90 compilations per worker still fell in the replicated push's measured GiB, after two about 40; many
 * partitions 34 and 19 (`--trace-opt`, docs/performance.md "Method"). The disk push's second warm-up would leave
 * more dirty pages behind, the rss row's more memory held.
 *
 * Either warms the paths the measurement takes at the size it takes them: a worker or client that has served one
 * shuffle of 10,000 partitions answers the next one's reserve and commit from optimised code (encoding a commit
 * answer of 10,000 files took 40-47 ms the first time, 2 ms after).
 */
type WarmUp = 'whole' | 'eighth';

function warmUpOf(spec: PushSpec): Workload {
  const workload = spec.workload;
  if (spec.warmUp === 'whole') return workload;
  return {
    ...workload,
    maps: Math.min(2, workload.maps),
    recordsPerPartition: Math.max(1, Math.floor(workload.recordsPerPartition / 8)),
    mapIds: undefined,
  };
}

/** The shuffle ids a push side warms up on (the measurement's is 1). */
function warmUpShuffles(spec: PushSpec): readonly number[] {
  return spec.warmUpShuffles === 2 ? [0, 2] : [0];
}

/** How long the workers may take to drop a released warm-up's shuffle: many heartbeats of a releasing cluster. */
const RELEASE_TIMEOUT_MS = 60_000;
const RELEASE_POLL_MS = 50;

/**
 * The heartbeat timeout of clusters whose warm-up is released: a worker learns that the master no longer has a
 * shuffle from its heartbeat's answer, sent every quarter of it (2 s here, 30 s by default), and the measurement
 * waits for that. A heartbeat is one small message: at one every 2 s it costs the measurement nothing measurable.
 */
const RELEASING_CLUSTER_CONF = ['svc.master.heartbeat.worker.timeout=8s'];

/** Resolves once no worker holds a byte in its memory tier: the released warm-up's files are gone. */
async function untilReleased(ctx: Context, cluster: LocalCluster): Promise<void> {
  const started = performance.now();
  let held = 0;
  await pollUntil(
    async () => {
      const bytes = await Promise.all(
        cluster.workers.map((_, i) => scrapeGauge(cluster.workerHttpUrl(i), 'MemoryFileStorageSize')),
      );
      held = bytes.reduce((sum, b) => sum + b, 0);
      return held === 0;
    },
    () => `the workers still hold ${held} bytes of the warm-up's shuffle after it was unregistered`,
    { timeoutMs: RELEASE_TIMEOUT_MS, intervalMs: RELEASE_POLL_MS },
  );
  ctx.log(`  warm-up released in ${((performance.now() - started) / 1000).toFixed(1)} s`);
}

/** The --deadline of a svc run that moves `bytes`: by default 60 s plus 1 s per 16 MiB. */
function deadlineSeconds(ctx: Context, bytes: number): number {
  return ctx.options.deadlineSeconds ?? Math.ceil(60 + bytes / (16 * MIB));
}

/** Rejects with SvcFailure when `work` takes longer than the --deadline. */
async function withinDeadline<T>(ctx: Context, what: string, bytes: number, work: Promise<T>): Promise<T> {
  const seconds = deadlineSeconds(ctx, bytes);
  let timer: NodeJS.Timeout | undefined;
  const deadline = new Promise<never>((_, reject) => {
    timer = setTimeout(
      () => reject(new SvcFailure(`${what} did not finish within ${seconds} s (--deadline)`)),
      seconds * 1000,
    );
  });
  try {
    return await Promise.race([work, deadline]);
  } finally {
    clearTimeout(timer);
  }
}

// ------------------------------------------------------------------ the two sides of a push

interface PushSpec {
  readonly name: string;
  readonly workload: Workload;
  readonly workers: number;
  readonly tier: Tier;
  readonly workerConf: readonly string[];
  readonly mapSlots: number;
  readonly replicate: boolean;
  readonly warmUp: WarmUp;
  /** How many warm-up shuffles, one after the other (see `WarmUp`). */
  readonly warmUpShuffles: 1 | 2;
}

async function barePushSide(
  ctx: Context,
  spec: PushSpec,
  mode: SinkMode,
): Promise<{ side: Side; sinks: Sink[]; client: Client }> {
  const dir = path.join(ctx.runDir, `${spec.name}-bare`);
  const sinks = await startSinks(ctx, spec.name, spec.workers, mode, spec.replicate, (i) =>
    path.join(dir, `sink-${i}`),
  );
  let client: Client | undefined;
  try {
    client = await startClient(ctx, `${spec.name}-bare-client`);
    const endpoints: Endpoint[] = sinks.map((sink) => ({ host: HOST, port: sink.ports.push }));
    for (const _ of warmUpShuffles(spec))
      pushed(await client.ask({ type: 'bare-push', sinks: endpoints, workload: warmUpOf(spec) }));
    const c = client;
    const measured = await measure(
      ctx,
      sinks.map((sink) => sink.child.pid),
      [c.pid],
      async () => pushed(await c.ask({ type: 'bare-push', sinks: endpoints, workload: spec.workload })),
    );
    const result = measured.result;
    const side = sideOf(measured, result.ms, result.recordBytes, {
      messages: result.messages,
      batches: result.batches,
      notes: { streamBytes: result.streamBytes, acks: result.acks },
    });
    profileLater(ctx, side, measured.window, {
      ...Object.fromEntries(sinks.map((sink, i) => [`sink-${i}`, sink.child.pid])),
      client: c.pid,
    });
    return { side, sinks, client };
  } catch (error) {
    await stopAll([client], sinks);
    throw error;
  }
}

interface SvcPush {
  readonly side: Side;
  readonly cluster: LocalCluster;
  readonly client: Client;
}

async function svcPushSide(ctx: Context, spec: PushSpec): Promise<SvcPush> {
  const cluster = await startCluster(
    ctx,
    `${spec.name}-svc`,
    spec.workers,
    spec.tier,
    spec.workerConf,
    spec.warmUp === 'whole' ? RELEASING_CLUSTER_CONF : [],
  );
  let client: Client | undefined;
  try {
    client = await startClient(ctx, `${spec.name}-svc-client`);
    const c = client;
    await c.ask({
      type: 'svc-init',
      master: cluster.masterUrl,
      conf: {
        ...clientTierConf(spec.tier),
        'svc.client.push.replicate.enabled': String(spec.replicate),
        'svc.client.push.buffer.max.size': String(spec.workload.batchBytes),
        'svc.client.push.merge.maxSize': String(spec.workload.mergeBytes),
        ...(ctx.options.window === undefined
          ? {}
          : { 'svc.client.push.maxInFlightPerPartition': String(ctx.options.window) }),
        'svc.shuffle.chunk.size': String(ctx.options.chunk),
      },
    });
    for (const shuffleId of warmUpShuffles(spec)) {
      pushed(
        await c.ask({
          type: 'svc-push',
          shuffleId,
          workload: warmUpOf(spec),
          mapSlots: spec.mapSlots,
          release: spec.warmUp === 'whole',
        }),
      );
      if (spec.warmUp === 'whole') await untilReleased(ctx, cluster);
    }
    const measured = await measure(ctx, workerPids(cluster), [c.pid], async () =>
      pushed(
        await withinDeadline(
          ctx,
          `the ${spec.name} push`,
          recordBytesOf(spec.workload),
          c.ask({ type: 'svc-push', shuffleId: 1, workload: spec.workload, mapSlots: spec.mapSlots }),
        ),
      ),
    );
    const result = measured.result;
    const side = sideOf(measured, result.ms, result.recordBytes, {
      messages: result.messages,
      batches: result.batches,
      ...(result.rtt === undefined ? {} : { rtt: result.rtt }),
      notes: { payloadBytes: result.streamBytes, committed: result.committed },
    });
    profileLater(ctx, side, measured.window, {
      ...Object.fromEntries(workerPids(cluster).map((pid, i) => [`worker-${i}`, pid])),
      client: c.pid,
    });
    return { side, cluster, client: c };
  } catch (error) {
    await client?.stop({ type: 'exit' });
    await cluster.stop();
    throw svcFailure(error);
  }
}

async function pushComparison(
  ctx: Context,
  spec: PushSpec,
  mode: SinkMode,
  what: string,
): Promise<Comparison> {
  ctx.log(`${spec.name}: ${describeWorkload(spec.workload)}`);
  const bare = await barePushSide(ctx, spec, mode);
  await stopAll([bare.client], bare.sinks);
  ctx.log(`  bare: ${bare.side.mibPerSecond.toFixed(1)} MiB/s`);
  try {
    const svc = await svcPushSide(ctx, spec);
    await svc.client.stop({ type: 'exit' });
    await svc.cluster.stop();
    ctx.log(`  svc:  ${svc.side.mibPerSecond.toFixed(1)} MiB/s`);
    return { scenario: spec.name, what, svc: svc.side, bare: bare.side };
  } catch (error) {
    if (!(error instanceof SvcFailure)) throw error;
    ctx.log(`  svc:  FAILED: ${error.message.split('\n')[0]}`);
    return { scenario: spec.name, what, svcError: error.message, bare: bare.side };
  }
}

function standardWorkload(ctx: Context, totalBytes: number): Workload {
  const o = ctx.options;
  return workloadOf({
    totalBytes,
    mapBytes: o.mapSize,
    partitions: o.partitions,
    recordBytes: o.recordSize,
    batchBytes: o.batch,
    mergeBytes: o.merge,
    spread: o.spread,
  });
}

// ------------------------------------------------------------------ scenarios

export async function pushMemory(ctx: Context): Promise<Comparison> {
  const o = ctx.options;
  const spec: PushSpec = {
    name: 'push-memory',
    workload: standardWorkload(ctx, o.size),
    workers: 1,
    tier: 'memory',
    workerConf: memoryTierConf(o.size),
    mapSlots: o.mapSlots,
    replicate: false,
    warmUp: 'whole',
    warmUpShuffles: 2,
  };
  return withKeepingSide(
    ctx,
    spec,
    await pushComparison(ctx, spec, 'discard', 'push into one worker, memory tier'),
  );
}

export async function pushReplicated(ctx: Context): Promise<Comparison> {
  const o = ctx.options;
  const spec: PushSpec = {
    name: 'push-replicated',
    workload: standardWorkload(ctx, o.replicatedSize),
    workers: 2,
    tier: 'memory',
    workerConf: memoryTierConf(o.replicatedSize),
    mapSlots: o.mapSlots,
    replicate: true,
    warmUp: 'whole',
    warmUpShuffles: 2,
  };
  const what = 'push with replication (two workers, memory tier)';
  return withKeepingSide(ctx, spec, await pushComparison(ctx, spec, 'discard', what));
}

/**
 * Adds what keeping the bytes costs by itself: the same bare push into sinks that check every byte and copy it into
 * memory faulted in at start, the least a memory tier does (a replicating pair keeps each byte twice).
 */
async function withKeepingSide(ctx: Context, spec: PushSpec, comparison: Comparison): Promise<Comparison> {
  const keeping = await barePushSide(ctx, spec, 'keep');
  await stopAll([keeping.client], keeping.sinks);
  ctx.log(`  bare, keeping: ${keeping.side.mibPerSecond.toFixed(1)} MiB/s`);
  return { ...comparison, keeping: keeping.side };
}

export async function smallBatches(ctx: Context): Promise<Comparison> {
  const o = ctx.options;
  return pushComparison(
    ctx,
    {
      name: 'small-batches',
      workload: workloadOf({
        totalBytes: o.smallSize,
        mapBytes: o.smallMapSize,
        partitions: o.partitions,
        recordBytes: o.recordSize,
        batchBytes: o.smallBatch,
        mergeBytes: o.merge,
        spread: o.spread,
      }),
      workers: 1,
      tier: 'memory',
      workerConf: memoryTierConf(o.smallSize),
      mapSlots: o.smallMapSlots,
      replicate: false,
      warmUp: 'whole',
      warmUpShuffles: 2,
    },
    'discard',
    'small batches, many maps (one worker, memory tier)',
  );
}

export async function manyPartitions(ctx: Context): Promise<Comparison> {
  const o = ctx.options;
  return pushComparison(
    ctx,
    {
      name: 'many-partitions',
      workload: workloadOf({
        totalBytes: o.manySize,
        mapBytes: o.manyMapSize,
        partitions: o.manyPartitions,
        recordBytes: o.recordSize,
        batchBytes: o.batch,
        mergeBytes: o.merge,
        spread: o.spread,
      }),
      workers: 1,
      tier: 'memory',
      workerConf: memoryTierConf(o.manySize),
      mapSlots: o.mapSlots,
      replicate: false,
      warmUp: 'eighth',
      warmUpShuffles: 2,
    },
    'discard',
    'many partitions per shuffle (one worker, memory tier)',
  );
}

/** Files under `root`, relative to it (the partition files a worker's disk directory holds). */
function filesUnder(root: string, prefix = ''): string[] {
  const found: string[] = [];
  for (const entry of readdirSync(path.join(root, prefix), { withFileTypes: true })) {
    const relative = path.join(prefix, entry.name);
    if (entry.isDirectory()) found.push(...filesUnder(root, relative));
    else if (entry.isFile()) found.push(relative);
  }
  return found;
}

/** The disk push, then (with `fetch`) the reads of its committed files, while the worker still holds them. */
export async function pushDiskAndFetch(
  ctx: Context,
  fetch: boolean,
): Promise<{ push: Comparison; fetch?: Comparison }> {
  const o = ctx.options;
  const spec: PushSpec = {
    name: 'push-disk',
    workload: standardWorkload(ctx, o.size),
    workers: 1,
    tier: 'disk',
    workerConf: [],
    mapSlots: o.mapSlots,
    replicate: false,
    warmUp: 'eighth',
    warmUpShuffles: 1,
  };
  ctx.log(`push-disk: ${describeWorkload(spec.workload)}`);
  const bare = await barePushSide(ctx, spec, 'file');
  await stopAll([bare.client], bare.sinks);
  ctx.log(`  bare: ${bare.side.mibPerSecond.toFixed(1)} MiB/s`);
  let svc: SvcPush;
  try {
    svc = await svcPushSide(ctx, spec);
  } catch (error) {
    if (!(error instanceof SvcFailure)) throw error;
    ctx.log(`  svc:  FAILED: ${error.message.split('\n')[0]}`);
    const what = 'push into one worker, disk tier';
    return { push: { scenario: 'push-disk', what, svcError: error.message, bare: bare.side } };
  }
  ctx.log(`  svc:  ${svc.side.mibPerSecond.toFixed(1)} MiB/s`);
  const push: Comparison = {
    scenario: 'push-disk',
    what: 'push into one worker, disk tier',
    svc: svc.side,
    bare: bare.side,
  };
  if (!fetch) {
    await svc.client.stop({ type: 'exit' });
    await svc.cluster.stop();
    return { push };
  }
  let sink: Sink | undefined;
  let bareClient: Client | undefined;
  try {
    const workers = workerPids(svc.cluster);
    const c = svc.client;
    let svcRead: Measured<ReadResult> | undefined;
    let svcReadError: string | undefined;
    try {
      read(await c.ask({ type: 'svc-read', shuffleId: 0, workload: warmUpOf(spec), slots: o.readSlots }));
      svcRead = await measure(ctx, workers, [c.pid], async () =>
        read(
          await withinDeadline(
            ctx,
            'the read',
            recordBytesOf(spec.workload),
            c.ask({ type: 'svc-read', shuffleId: 1, workload: spec.workload, slots: o.readSlots }),
          ),
        ),
      );
    } catch (error) {
      svcReadError = error instanceof Error ? error.message : String(error);
      ctx.log(`  svc read FAILED: ${svcReadError.split('\n')[0]}`);
    }
    // The same files, as they lie in the worker's disk directory (after the svc read: both read from page cache).
    const root = path.join(svc.cluster.dir, 'worker-0', 'disk-1');
    // <root>/svc-worker/shuffle_data/<appId>-<shuffleId>/<partition>-<epoch>-<mode>: shuffle 1's, not the warm-up's.
    const shuffle1 = filesUnder(root).filter((file) => path.basename(path.dirname(file)).endsWith('-1'));
    if (shuffle1.length === 0) throw new Error(`no files of shuffle 1 under ${root}`);
    const fileBytes = shuffle1.reduce((sum, file) => sum + statSync(path.join(root, file)).size, 0);
    [sink] = await startSinks(ctx, 'fetch', 1, 'discard', false, () => root);
    bareClient = await startClient(ctx, 'fetch-bare-client');
    const server = { host: HOST, port: sink!.ports.serve };
    const b = bareClient;
    read(await b.ask({ type: 'bare-read', files: [{ server, file: shuffle1[0]! }], slots: 1 }));
    const bareRead = await measure(ctx, [sink!.child.pid], [b.pid], async () =>
      read(
        await b.ask({
          type: 'bare-read',
          files: shuffle1.map((file) => ({ server, file })),
          slots: o.readSlots,
        }),
      ),
    );
    if (bareRead.result.bytes !== fileBytes) {
      throw new Error(`the bare read got ${bareRead.result.bytes} of the files' ${fileBytes} bytes`);
    }
    const svcSide =
      svcRead === undefined
        ? undefined
        : sideOf(svcRead, svcRead.result.ms, fileBytes, {
            notes: {
              recordBytes: svcRead.result.bytes,
              records: svcRead.result.records,
              files: shuffle1.length,
            },
          });
    const bareSide = sideOf(bareRead, bareRead.result.ms, fileBytes, { notes: { files: shuffle1.length } });
    if (svcSide !== undefined)
      profileLater(ctx, svcSide, svcRead!.window, { 'worker-0': workers[0]!, client: c.pid });
    profileLater(ctx, bareSide, bareRead.window, { 'sink-0': sink!.child.pid, client: b.pid });
    ctx.log(
      `fetch: ${shuffle1.length} files, ${(fileBytes / MIB).toFixed(0)} MiB: bare ${bareSide.mibPerSecond.toFixed(1)} ` +
        `MiB/s, svc ${svcSide === undefined ? 'FAILED' : `${svcSide.mibPerSecond.toFixed(1)} MiB/s`}`,
    );
    return {
      push,
      fetch: {
        scenario: 'fetch',
        what: `fetch of committed partitions (chunks of ${o.chunk / MIB} MiB), ${o.readSlots} at a time`,
        ...(svcSide === undefined ? { svcError: svcReadError ?? 'failed' } : { svc: svcSide }),
        bare: bareSide,
      },
    };
  } finally {
    await stopAll([bareClient, svc.client], sink === undefined ? [] : [sink]);
    await svc.cluster.stop();
  }
}

/** Peak worker RSS pushing into the memory tier at the configured budget (files beyond it go to disk). */
export async function rss(ctx: Context): Promise<RssFigure> {
  const o = ctx.options;
  const spec: PushSpec = {
    name: 'rss',
    workload: standardWorkload(ctx, o.rssSize),
    workers: 1,
    tier: 'memory',
    workerConf: [`svc.worker.memory.size=${Math.ceil(o.rssWorkerMemory / MIB)}m`],
    mapSlots: o.mapSlots,
    replicate: false,
    // The row is the worker's memory under a budget smaller than the push, not its speed: a short warm-up will do.
    warmUp: 'eighth',
    warmUpShuffles: 1,
  };
  ctx.log(
    `rss: ${describeWorkload(spec.workload)}; svc.worker.memory.size ${(o.rssWorkerMemory / MIB).toFixed(0)} MiB`,
  );
  const svc = await svcPushSide(ctx, spec); // a failure: SvcFailure, reported by the caller
  await svc.client.stop({ type: 'exit' });
  await svc.cluster.stop();
  ctx.log(
    `  peak worker RSS ${(Math.max(svc.side.serverPeakRssBytes, svc.side.serverHwmBytes) / MIB).toFixed(0)} MiB`,
  );
  return { pushedBytes: recordBytesOf(spec.workload), configuredBytes: o.rssWorkerMemory, side: svc.side };
}

// ------------------------------------------------------------------ npm start's job

const DEMO_MAPS = 8;
const DEMO_REDUCES = 32;
const DEMO_WORKERS = 3;
const DEMO_EXECUTORS = 2;
const DEMO_RECORD_BYTES = 16 + 1008;

/** `svc demo` as npm start runs it (but for the size), timed by its own "job wall time" line. */
async function runDemo(
  ctx: Context,
): Promise<{ seconds: number; mapSeconds?: number; reduceSeconds?: number; output: string }> {
  const [node, ...cli] = ctx.entries.cli;
  const args = [
    ...cli,
    'demo',
    '--size',
    String(ctx.options.e2eSize),
    '--maps',
    String(DEMO_MAPS),
    '--reduces',
    String(DEMO_REDUCES),
    '--workers',
    String(DEMO_WORKERS),
    '--executors',
    String(DEMO_EXECUTORS),
    '--replication',
    'on',
    '--tier',
    'disk',
    '--progress',
    'none',
  ];
  const started = performance.now();
  const child = spawn(node!, args, { stdio: ['ignore', 'pipe', 'pipe'], env: process.env });
  let output = '';
  child.stdout.on('data', (chunk: Buffer) => (output += chunk.toString('utf8')));
  child.stderr.on('data', (chunk: Buffer) => (output += chunk.toString('utf8')));
  // SIGTERM makes the demo stop everything it started (exit 130); it then counts as failed.
  const limitMs = deadlineSeconds(ctx, ctx.options.e2eSize) * 3 * 1000;
  const timer = setTimeout(() => child.kill('SIGTERM'), limitMs);
  const code = await new Promise<number | null>((resolve) => child.on('exit', resolve));
  clearTimeout(timer);
  const wall = (performance.now() - started) / 1000;
  if (wall * 1000 >= limitMs) throw new SvcFailure(`svc demo did not finish within ${limitMs / 1000} s`);
  if (code !== 0) {
    throw new SvcFailure(
      `svc demo exited with ${String(code)}:\n${output.split('\n').slice(-30).join('\n')}`,
    );
  }
  const match = /job wall time ([\d.]+) s \(map ([\d.]+) s, reduce ([\d.]+) s\)/.exec(output);
  if (match === null) {
    ctx.log(
      '  (no "job wall time" line in the demo output: timing the whole process, cluster start included)',
    );
    return { seconds: wall, output };
  }
  return {
    seconds: Number(match[1]),
    mapSeconds: Number(match[2]),
    reduceSeconds: Number(match[3]),
    output,
  };
}

/**
 * The bare job: the demo's bytes (freshly generated per map, framed as svc frames them) pushed by 2 client
 * processes into 3 sinks, partition p to sink p mod 3, each sink appending to a file and relaying to the next
 * (replication), then each client reading its files back from the sinks' serve ports.
 */
async function bareJob(
  ctx: Context,
): Promise<{ seconds: number; push: number; read: number; bytes: number }> {
  const total = ctx.options.e2eSize;
  const recordsPerPartition = Math.max(1, Math.floor(total / DEMO_MAPS / DEMO_REDUCES / DEMO_RECORD_BYTES));
  const workload: Workload = {
    maps: DEMO_MAPS,
    partitions: DEMO_REDUCES,
    recordBytes: DEMO_RECORD_BYTES,
    recordsPerPartition,
    batchBytes: 64 * 1024,
    // The demo's (the registry's default).
    mergeBytes: 2 * MIB,
    generate: true,
  };
  const dir = path.join(ctx.runDir, 'e2e-bare');
  const sinks = await startSinks(ctx, 'e2e', DEMO_WORKERS, 'file', true, (i) => path.join(dir, `sink-${i}`));
  const clients: Client[] = [];
  try {
    for (let i = 0; i < DEMO_EXECUTORS; i += 1) clients.push(await startClient(ctx, `e2e-bare-client-${i}`));
    const endpoints = sinks.map((sink) => ({ host: HOST, port: sink.ports.push }));
    const mapsOf = (c: number) =>
      Array.from({ length: DEMO_MAPS }, (_, m) => m).filter((m) => m % DEMO_EXECUTORS === c);
    const started = performance.now();
    const pushes = await Promise.all(
      clients.map(async (client, c) =>
        pushed(
          await client.ask({
            type: 'bare-push',
            sinks: endpoints,
            workload: { ...workload, mapIds: mapsOf(c) },
          }),
        ),
      ),
    );
    const pushSeconds = (performance.now() - started) / 1000;
    const readStarted = performance.now();
    const reads = await Promise.all(
      clients.map(async (client, c) =>
        read(
          await client.ask({
            type: 'bare-read',
            files: (pushes[c]!.acks ?? []).map((ack, s) => ({
              server: { host: HOST, port: sinks[s]!.ports.serve },
              file: ack.file!,
            })),
            slots: 4,
          }),
        ),
      ),
    );
    const readSeconds = (performance.now() - readStarted) / 1000;
    const bytes = reads.reduce((sum, r) => sum + r.bytes, 0);
    return { seconds: pushSeconds + readSeconds, push: pushSeconds, read: readSeconds, bytes };
  } finally {
    await stopAll(clients, sinks);
  }
}

export async function e2e(ctx: Context): Promise<E2eFigure> {
  const size = ctx.options.e2eSize;
  ctx.log(
    `e2e: svc demo --size ${(size / MIB).toFixed(0)}m, ${DEMO_MAPS} x ${DEMO_REDUCES}, replication on, ` +
      `${DEMO_WORKERS} workers, ${DEMO_EXECUTORS} executors, disk tier`,
  );
  const bare = await bareJob(ctx);
  ctx.log(
    `  bare: ${bare.seconds.toFixed(1)} s (push ${bare.push.toFixed(1)} s, read ${bare.read.toFixed(1)} s)`,
  );
  const svc = await runDemo(ctx);
  ctx.log(`  svc:  ${svc.seconds.toFixed(1)} s`);
  return {
    what: `npm start's job end to end (${(size / MIB).toFixed(0)} MiB, ${DEMO_MAPS} x ${DEMO_REDUCES}, replication on)`,
    svcSeconds: svc.seconds,
    svcMapSeconds: svc.mapSeconds,
    svcReduceSeconds: svc.reduceSeconds,
    bareSeconds: bare.seconds,
    barePushSeconds: bare.push,
    bareReadSeconds: bare.read,
    bytes: size,
    processes: {
      svc: `driver + master + ${DEMO_WORKERS} workers + ${DEMO_EXECUTORS} executors + verifier`,
      bare: `benchmark + ${DEMO_WORKERS} sinks + ${DEMO_EXECUTORS} clients`,
    },
  };
}

// ------------------------------------------------------------------ a streaming client's own memory

/** Partitions of the map-memory scenario's shuffle (the issue's figure). */
const MAP_MEMORY_PARTITIONS = 1000;
/** Maps that write the read-memory scenario's partition between them. */
const READ_MEMORY_MAPS = 8;

/** The peak resident memory of one client process (a map's executor, or a reducer) against its budget. */
export interface ClientMemoryFigure {
  readonly scenario: 'map-memory' | 'read-memory';
  readonly what: string;
  /** Record bytes the measured process wrote or read. */
  readonly bytes: number;
  readonly seconds: number;
  readonly mibPerSecond: number;
  /** The client's own budget: unacknowledged bytes of a map task, or read-ahead chunks times the chunk size. */
  readonly budgetBytes: number;
  readonly budget: string;
  /** The process's VmRSS sampled every 50 ms during the write or read, and its VmHWM (peak since it started). */
  readonly sampledPeakRssBytes: number;
  readonly hwmBytes: number;
  readonly cpuSeconds: number;
}

/** The client's settings in both scenarios: disk tier, replication off, the benchmark's batch and chunk sizes. */
function clientMemoryConf(ctx: Context): Record<string, string> {
  const o = ctx.options;
  return {
    ...clientTierConf('disk'),
    'svc.client.push.replicate.enabled': 'false',
    'svc.client.push.buffer.max.size': String(o.batch),
    'svc.client.push.merge.maxSize': String(o.merge),
    'svc.client.push.maxUnacknowledgedBytes': String(o.mapBudget),
    'svc.client.fetch.maxReqsInFlight': String(o.readAhead),
    'svc.shuffle.chunk.size': String(o.chunk),
  };
}

/**
 * A one-worker disk cluster, an application in a driver process, and `run` given a way to start executor-only
 * processes (each the process of one map stage or one reducer); everything is stopped afterwards.
 */
async function withClientProcesses<T>(
  ctx: Context,
  name: string,
  run: (startExecutor: (role: string) => Promise<Client>) => Promise<T>,
): Promise<T> {
  const conf = clientMemoryConf(ctx);
  const clients: Client[] = [];
  let cluster: LocalCluster | undefined;
  try {
    cluster = await startCluster(ctx, `${name}-svc`, 1, 'disk', []);
    const driver = await startClient(ctx, `${name}-driver`);
    clients.push(driver);
    const ready = await driver.ask({ type: 'svc-init', master: cluster.masterUrl, conf });
    if (ready.type !== 'svc-ready') throw new Error(`the driver answered ${ready.type}`);
    return await run(async (role) => {
      const executor = await startClient(ctx, `${name}-${role}`);
      clients.push(executor);
      await executor.ask({ type: 'svc-executor', app: ready.app, conf });
      return executor;
    });
  } catch (error) {
    throw svcFailure(error);
  } finally {
    await Promise.all(clients.map((client) => client.stop({ type: 'exit' })));
    await cluster?.stop();
  }
}

/** Runs `work` in process `pid`, sampling its RSS and CPU; reads its VmHWM before it may exit. */
async function measureProcess<T>(
  pid: number,
  work: () => Promise<T>,
): Promise<{ result: T; sampledPeak: number; hwm: number; cpuSeconds: number }> {
  const cpu0 = cpuSeconds(pid);
  const sampler = new RssSampler([pid]);
  let result: T;
  try {
    result = await work();
  } finally {
    sampler.stop();
  }
  const cpu1 = cpuSeconds(pid);
  return {
    result,
    sampledPeak: sampler.stop().get(pid) ?? 0,
    hwm: memoryOf(pid).hwm,
    cpuSeconds: cpu1.user + cpu1.system - cpu0.user - cpu0.system,
  };
}

function wrote(answer: FromClient): WriteResult {
  if (answer.type !== 'wrote') throw new Error(`expected a write result, got ${answer.type}`);
  return answer;
}

function clientMemoryFigure(
  scenario: ClientMemoryFigure['scenario'],
  what: string,
  measured: { sampledPeak: number; hwm: number; cpuSeconds: number },
  bytes: number,
  ms: number,
  budgetBytes: number,
  budget: string,
): ClientMemoryFigure {
  const seconds = ms / 1000;
  return {
    scenario,
    what,
    bytes,
    seconds,
    mibPerSecond: bytes / MIB / seconds,
    budgetBytes,
    budget,
    sampledPeakRssBytes: measured.sampledPeak,
    hwmBytes: measured.hwm,
    cpuSeconds: measured.cpuSeconds,
  };
}

/**
 * One map attempt in its own executor process writes --map-memory-size into 1,000 partitions through the streaming
 * writer, waiting for 'drain' whenever write() says false: its peak RSS against svc.client.push.maxUnacknowledgedBytes.
 */
export async function mapMemory(ctx: Context): Promise<ClientMemoryFigure> {
  const o = ctx.options;
  const bytes = o.mapMemorySize;
  ctx.log(
    `map-memory: one map writing ${(bytes / MIB).toFixed(0)} MiB into ${MAP_MEMORY_PARTITIONS} partitions ` +
      `(records of ${o.recordSize} B), budget ${(o.mapBudget / MIB).toFixed(0)} MiB, 1 worker, disk tier`,
  );
  return withClientProcesses(ctx, 'map-memory', async (startExecutor) => {
    const mapper = await startExecutor('executor');
    const measured = await measureProcess(mapper.pid, async () =>
      wrote(
        await withinDeadline(
          ctx,
          'the map-memory map',
          bytes,
          mapper.ask({
            type: 'svc-write-maps',
            shuffleId: 0,
            maps: 1,
            partitions: MAP_MEMORY_PARTITIONS,
            mapIds: [0],
            bytesPerMap: bytes,
            recordBytes: o.recordSize,
            slots: 1,
          }),
        ),
      ),
    );
    const figure = clientMemoryFigure(
      'map-memory',
      `peak RSS of a map's executor writing ${(measured.result.recordBytes / MIB).toFixed(0)} MiB into ` +
        `${MAP_MEMORY_PARTITIONS} partitions`,
      measured,
      measured.result.recordBytes,
      measured.result.ms,
      o.mapBudget,
      `svc.client.push.maxUnacknowledgedBytes ${(o.mapBudget / MIB).toFixed(0)} MiB`,
    );
    ctx.log(
      `  ${figure.mibPerSecond.toFixed(1)} MiB/s; executor peak RSS ${(peakOf(figure) / MIB).toFixed(0)} MiB`,
    );
    return figure;
  });
}

/**
 * One reducer in its own process reads a partition of --read-memory-size (written first by 8 maps in another
 * process) through the streaming reader: its peak RSS against the read-ahead (svc.client.fetch.maxReqsInFlight
 * chunks of svc.shuffle.chunk.size).
 */
export async function readMemory(ctx: Context): Promise<ClientMemoryFigure> {
  const o = ctx.options;
  const bytesPerMap = Math.floor(o.readMemorySize / READ_MEMORY_MAPS);
  const budgetBytes = o.readAhead * o.chunk;
  ctx.log(
    `read-memory: one reducer reading a ${(o.readMemorySize / MIB).toFixed(0)} MiB partition (${READ_MEMORY_MAPS} ` +
      `maps x ${(bytesPerMap / MIB).toFixed(0)} MiB), read-ahead ${o.readAhead} x ${(o.chunk / MIB).toFixed(0)} ` +
      'MiB chunks, 1 worker, disk tier',
  );
  return withClientProcesses(ctx, 'read-memory', async (startExecutor) => {
    const mapper = await startExecutor('maps');
    const shape = { shuffleId: 0, maps: READ_MEMORY_MAPS, partitions: 1 };
    const written = wrote(
      await withinDeadline(
        ctx,
        'the read-memory maps',
        o.readMemorySize,
        mapper.ask({
          type: 'svc-write-maps',
          ...shape,
          mapIds: Array.from({ length: READ_MEMORY_MAPS }, (_, m) => m),
          bytesPerMap,
          recordBytes: o.recordSize,
          slots: o.mapSlots,
        }),
      ),
    );
    ctx.log(
      `  maps wrote ${(written.recordBytes / MIB).toFixed(0)} MiB in ${(written.ms / 1000).toFixed(1)} s`,
    );
    await mapper.stop({ type: 'exit' });
    const reducer = await startExecutor('reducer');
    const measured = await measureProcess(reducer.pid, async () =>
      read(
        await withinDeadline(
          ctx,
          'the read-memory read',
          written.recordBytes,
          reducer.ask({ type: 'svc-read-partition', ...shape, partitionId: 0 }),
        ),
      ),
    );
    if (measured.result.bytes !== written.recordBytes) {
      throw new SvcFailure(
        `the reducer read ${measured.result.bytes} of the ${written.recordBytes} bytes written`,
      );
    }
    const figure = clientMemoryFigure(
      'read-memory',
      `peak RSS of a reducer reading a ${(measured.result.bytes / MIB).toFixed(0)} MiB partition`,
      measured,
      measured.result.bytes,
      measured.result.ms,
      budgetBytes,
      `read-ahead ${o.readAhead} x ${(o.chunk / MIB).toFixed(0)} MiB`,
    );
    ctx.log(
      `  ${figure.mibPerSecond.toFixed(1)} MiB/s; reducer peak RSS ${(peakOf(figure) / MIB).toFixed(0)} MiB`,
    );
    return figure;
  });
}

/** The larger of the sampled peak and VmHWM (which also sees peaks between samples). */
export function peakOf(figure: ClientMemoryFigure): number {
  return Math.max(figure.sampledPeakRssBytes, figure.hwmBytes);
}
