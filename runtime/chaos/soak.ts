import { mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import type { PlantedBug } from '../../core/planted-bugs.ts';
import { HostNetwork } from '../cluster/hosts.ts';
import { LocalCluster, type Tier } from '../cluster/local-cluster.ts';
import { filesUnder } from '../testing/files-under.ts';
import { FaultInjector, type TimelineEntry } from './injector.ts';
import { jobSpec, runJob, type JobOutcome } from './jobs.ts';
import { overlappingTenures, ShuffleWatch, tenures, type Failover } from './leaders.ts';
import { MasterSupervisor } from './supervisor.ts';
import {
  defaultFaultKinds,
  faultSchedule,
  struckWorkers,
  type FaultKind,
  type ScheduledFault,
} from './schedule.ts';

export interface SoakOptions {
  readonly seed: string;
  readonly durationMs: number;
  readonly workers: number;
  /** Applications running jobs at once. */
  readonly apps: number;
  /** The kinds drawn from (default: defaultFaultKinds(hosts)). */
  readonly kinds?: readonly FaultKind[];
  /**
   * Run the cluster on namespace hosts (runtime/cluster/hosts.ts) instead of loopback behind fault proxies: the
   * master on a host of its own, each worker on its own, the jobs in the root namespace; needs root and `ip netns`.
   */
  readonly hosts?: boolean;
  /**
   * Run the masters as a group of three on an etcd the cluster starts (LocalCluster `masterGroup`; with `hosts`,
   * each member and etcd on a host of their own), restarted by a supervisor when they exit, and draw the leader's
   * faults (`leader-kill`, `leader-freeze`, with `hosts` `leader-partition`) instead of `master-restart`. Needs etcd.
   */
  readonly ha?: boolean;
  /** The tiers jobs draw from (default every tier). */
  readonly tiers?: readonly Tier[];
  /** The share of jobs that replicate (default 0.7). */
  readonly replicateShare?: number;
  /** Test only: servers run with this deliberate bug (docs/chaos.md, "Planted bugs"). */
  readonly plantedBug?: PlantedBug;
  /** Keep the cluster's directory (logs, data) even when every check passed. */
  readonly keep?: boolean;
  /** Where progress lines go (default: stdout). */
  readonly print?: (line: string) => void;
  /** Quiet time after a fault healed before the next (default 3-10 s; a short test soak takes less). */
  readonly settleMs?: readonly [number, number];
  /** Between progress lines (default 10 s). */
  readonly progressEveryMs?: number;
}

/** A check the soak found broken, with what it saw. */
export interface Violation {
  readonly check:
    | 'data-wrong'
    | 'job-failed-under-tolerated-fault'
    | 'memory-over-bound'
    | 'files-left'
    | 'process-left'
    | 'job-hung'
    | 'fault-not-proven'
    | 'two-leaders'
    | 'shuffle-lost';
  readonly detail: string;
  readonly job?: JobOutcome;
}

export interface SoakResult {
  readonly seed: string;
  /** The cluster ran on namespace hosts (`--hosts`). */
  readonly hosts: boolean;
  /** The masters were a group (`--ha`). */
  readonly ha: boolean;
  /** With `ha`: each change of leader the soak saw, and the shuffles it carried over. */
  readonly failovers: readonly Failover[];
  /** With `ha`: the members the supervisor restarted, in order. */
  readonly memberRestarts: readonly string[];
  readonly schedule: readonly ScheduledFault[];
  readonly timeline: readonly TimelineEntry[];
  readonly jobs: readonly JobOutcome[];
  readonly violations: readonly Violation[];
  /** Jobs that failed (or had failed tasks) under faults the design does not promise to survive, and why. */
  readonly excused: readonly string[];
  readonly peakRssMiB: Readonly<Record<string, number>>;
  /** The cluster's directory when kept (a failure keeps it), with its logs under `logs/`. */
  readonly keptDir: string | undefined;
  /** The report printed on failure: seed, timeline, failing jobs, last log lines. */
  readonly report: string;
}

/** The soak's cluster settings: short heartbeats so that stops past the timeout fit in a short soak. */
export const HEARTBEAT_TIMEOUT_MS = 10_000;
const WORKER_MEMORY_MIB = 256;
/** Three of the client's heartbeats (svc.client.application.heartbeatInterval, 10 s). */
const APPLICATION_TIMEOUT_MS = 30_000;
/**
 * What a server process may hold beyond its configured memory: Node.js, tsx's compiled sources, the stores and
 * buffers not counted in svc.worker.memory.size. Measured idle at about 150 MiB per process; the margin leaves
 * room for garbage not yet collected.
 */
export const RSS_MARGIN_MIB = 384;
/** The masters of a group (`ha`): three, as an operator runs them. */
const GROUP_MEMBERS = 3;
/** Faults healed this long before a job started still count against it (revives, exclusions, re-registration). */
const FAULT_SHADOW_MS = 15_000;
/** How long the jobs running at the end may take to finish, and the workers to delete the ended jobs' files. */
const DRAIN_MS = 240_000;
const FILES_GONE_MS = 90_000;

/** Resolves after `ms`, or at once when `signal` aborts (the soak's end cuts every wait short). */
const sleep = (ms: number, signal?: AbortSignal): Promise<void> =>
  new Promise((resolve) => {
    if (signal?.aborted === true) {
      resolve();
      return;
    }
    const done = (): void => {
      clearTimeout(timer);
      signal?.removeEventListener('abort', done);
      resolve();
    };
    const timer = setTimeout(done, ms);
    signal?.addEventListener('abort', done);
  });

function rssMiB(pid: number | undefined): number | undefined {
  if (pid === undefined) return undefined;
  try {
    const match = /VmRSS:\s+(\d+) kB/.exec(readFileSync(`/proc/${pid}/status`, 'utf8'));
    return match === null ? undefined : Math.round(Number(match[1]) / 1024);
  } catch {
    return undefined;
  }
}

function alive(pid: number | undefined): boolean {
  if (pid === undefined) return false;
  try {
    process.kill(pid, 0);
    return true;
  } catch {
    return false;
  }
}

function formatMs(ms: number): string {
  const s = Math.round(ms / 1000);
  return `${Math.floor(s / 60)}m${String(s % 60).padStart(2, '0')}s`;
}

export function describeFault(fault: ScheduledFault): string {
  const target =
    fault.worker !== undefined
      ? `worker-${fault.worker}`
      : fault.kind === 'master-restart'
        ? 'master'
        : 'the leader';
  const extra =
    fault.latencyMs !== undefined
      ? ` +${fault.latencyMs} ms`
      : fault.direction !== undefined
        ? ` ${fault.direction}`
        : fault.drop !== undefined
          ? ` ${fault.drop}`
          : '';
  const struck =
    fault.rack === undefined ? target : `rack [${fault.rack.map((w) => `worker-${w}`).join(', ')}]`;
  return `#${fault.index} ${fault.kind}${extra} ${struck} hold ${fault.holdMs} ms`;
}

/** The workers a job's run overlapped a fault on (and whether the master was struck meanwhile). */
function faultsDuring(job: JobOutcome, timeline: readonly TimelineEntry[]): TimelineEntry[] {
  return timeline.filter(
    (entry) => entry.startMs <= job.endMs && (entry.endMs ?? Infinity) + FAULT_SHADOW_MS >= job.startMs,
  );
}

/**
 * Whether the design promises that `job` finishes without a task failing: it saw no fault, or it replicates and
 * every fault during its run struck one and the same worker (or the master, whose state survives its restart).
 */
export function tolerated(job: JobOutcome, faults: readonly TimelineEntry[]): boolean {
  return notPromisedBecause(job, faults) === undefined;
}

/** Why the design does not promise that `job` finishes (the report's excuse for its failure); undefined: it does. */
export function notPromisedBecause(job: JobOutcome, faults: readonly TimelineEntry[]): string | undefined {
  if (faults.length === 0) return undefined;
  const struck = faults.map((entry) => {
    const workers = struckWorkers(entry.fault);
    return `${entry.fault.kind}${workers.length === 0 ? '' : ` of worker ${workers.join(' and ')}`}`;
  });
  if (!job.spec.replicate) return `it does not replicate, and saw ${struck.join(', ')}`;
  // A fault on a group of workers (a rack cut off) counts as faults on each: both copies may sit in the group.
  const workers = new Set(faults.flatMap((entry) => struckWorkers(entry.fault)));
  return workers.size <= 1
    ? undefined
    : `faults struck ${workers.size} workers during its run (${struck.join(', ')}): both copies may be gone`;
}

/**
 * The full-process chaos soak (docs/chaos.md): a local cluster of child processes, a stream of verified jobs from
 * several applications at once, and the seed's fault schedule injected meanwhile. Returns what it found; the caller
 * decides the exit status.
 */
export async function runSoak(options: SoakOptions): Promise<SoakResult> {
  const print = options.print ?? ((line: string) => console.log(line));
  const hosts = options.hosts ?? false;
  const ha = options.ha ?? false;
  const kinds = options.kinds ?? defaultFaultKinds(hosts, ha);
  const schedule = faultSchedule({
    seed: options.seed,
    durationMs: options.durationMs,
    workers: options.workers,
    replicas: (options.replicateShare ?? 0.7) > 0 ? 2 : 1,
    heartbeatTimeoutMs: HEARTBEAT_TIMEOUT_MS,
    kinds,
    hosts,
    ha,
    ...(options.settleMs === undefined ? {} : { settleMs: options.settleMs }),
  });
  // The master on host 0 and worker i on host i + 1 (LocalCluster), with a group its other members and etcd after
  // them; destroyed below, or by the next soak's sweep when this one is killed.
  const network = hosts
    ? await HostNetwork.create({ hosts: options.workers + 1 + (ha ? GROUP_MEMBERS : 0) })
    : undefined;
  // Each worker has a local disk and the memory tier ('memory'), and all share a DFS directory: every job's tier.
  const dir = mkdtempSync(path.join(tmpdir(), 'svc-chaos-'));
  const dfsDir = path.join(dir, 'dfs');
  let cluster: LocalCluster;
  try {
    cluster = await LocalCluster.start({
      workers: options.workers,
      dir,
      tier: 'memory',
      ...(network === undefined ? { faultProxies: true } : { hosts: network }),
      keepDir: true,
      ...(ha ? { masterGroup: { members: GROUP_MEMBERS } } : {}),
      ...(options.plantedBug === undefined ? {} : { plantedBug: options.plantedBug }),
      conf: [
        `svc.master.heartbeat.worker.timeout=${HEARTBEAT_TIMEOUT_MS}ms`,
        `svc.storage.hdfs.dir=${dfsDir}`,
        // An application whose unregister was lost (it closed while the master was down) is released once silent
        // this long: short, so that the files check sees its files gone (the default is 300 s).
        `svc.master.heartbeat.application.timeout=${APPLICATION_TIMEOUT_MS}ms`,
      ],
      workerConf: [
        `svc.worker.memory.size=${WORKER_MEMORY_MIB}m`,
        'svc.worker.graceful.shutdown.enabled=true',
        'svc.worker.graceful.shutdown.timeout=20s',
        // A crashed worker's leftovers go once the master forgot their shuffles, and this long after its start:
        // short, so that the files check at the end sees them gone.
        'svc.worker.storage.expireDirs.timeout=5s',
      ],
    });
  } catch (error) {
    await network?.destroy();
    throw error;
  }
  const started = Date.now();
  const clock = (): number => Date.now() - started;
  const supervisor = ha ? new MasterSupervisor(cluster, clock, print) : undefined;
  supervisor?.start();
  const shuffleWatch = ha ? new ShuffleWatch(cluster, clock) : undefined;
  shuffleWatch?.start();
  const injector = new FaultInjector(cluster, clock, HEARTBEAT_TIMEOUT_MS, supervisor);
  const jobs: JobOutcome[] = [];
  const violations: Violation[] = [];
  const peak: Record<string, number> = {};
  let stopping = false;
  const ended = new AbortController();
  let nextJob = 0;
  print(
    `[chaos] seed ${options.seed}: ${formatMs(options.durationMs)}, ${options.workers} workers, ${options.apps} ` +
      `applications, ${schedule.length} faults scheduled (${[...new Set(schedule.map((f) => f.kind))].join(', ') || 'none'})` +
      (options.plantedBug === undefined ? '' : `, planted bug ${options.plantedBug}`) +
      (ha ? `, a group of ${GROUP_MEMBERS} masters on etcd ${cluster.etcdEndpoint ?? ''}` : '') +
      (network === undefined ? '' : `, on namespace hosts ${network.subnet}.0/24`) +
      `; cluster in ${cluster.dir}`,
  );

  const sampleMemory = (): void => {
    const masters: [string, number | undefined, undefined][] = ha
      ? cluster.memberIds.map((id) => [`master-${id}`, cluster.member(id).pid, undefined])
      : [['master', cluster.master.pid, undefined]];
    const servers: [string, number | undefined, number | undefined][] = [
      ...masters,
      ...cluster.workers.map(
        (worker, i) => [`worker-${i}`, worker.pid, WORKER_MEMORY_MIB] as [string, number | undefined, number],
      ),
    ];
    for (const [name, pid, configured] of servers) {
      const rss = rssMiB(pid);
      if (rss === undefined) continue;
      peak[name] = Math.max(peak[name] ?? 0, rss);
      const bound = (configured ?? 0) + RSS_MARGIN_MIB;
      if (
        rss > bound &&
        !violations.some((v) => v.check === 'memory-over-bound' && v.detail.startsWith(name))
      )
        violations.push({
          check: 'memory-over-bound',
          detail: `${name} (pid ${pid}) at ${rss} MiB, over its ${configured ?? 0} MiB + ${RSS_MARGIN_MIB} MiB margin`,
        });
    }
    peak.soak = Math.max(peak.soak ?? 0, Math.round(process.memoryUsage().rss / 1024 / 1024));
  };

  const lane = async (): Promise<void> => {
    while (!stopping) {
      const spec = jobSpec(options.seed, nextJob++, {
        ...(options.replicateShare === undefined ? {} : { replicateShare: options.replicateShare }),
        ...(options.tiers === undefined ? {} : { tiers: options.tiers }),
      });
      const outcome = await runJob(spec, cluster.masterUrl, clock);
      jobs.push(outcome);
    }
  };

  const faults = async (): Promise<void> => {
    let quietUntil = 0;
    for (const fault of schedule) {
      const wait = Math.max(fault.atMs, quietUntil) - clock();
      if (wait > 0) await sleep(wait, ended.signal);
      if (stopping) return;
      print(`[chaos] ${formatMs(clock())} fault ${describeFault(fault)}`);
      const entry = await injector.inject(fault);
      // The schedule's quiet time after the heal (a restart may take longer than its hold): the cluster recovers.
      quietUntil = clock() + fault.settleMs;
      print(
        `[chaos] ${formatMs(clock())} healed #${fault.index}${entry.notes.length > 0 ? `: ${entry.notes.join('; ')}` : ''}`,
      );
    }
  };

  const progress = setInterval(() => {
    sampleMemory();
    const verified = jobs.filter((j) => j.status === 'verified').length;
    const current = injector.current;
    print(
      `[chaos] ${formatMs(clock())}/${formatMs(options.durationMs)} jobs ${verified} verified, ` +
        `${jobs.length - verified} not, ${jobs.reduce((n, j) => n + j.reruns, 0)} stage reruns; ` +
        `faults ${injector.timeline.length}/${schedule.length}` +
        (current === undefined ? '' : ` (now ${describeFault(current.fault)})`),
    );
  }, options.progressEveryMs ?? 10_000);
  const memory = setInterval(sampleMemory, 2_000);
  let injectorError: Error | undefined;
  try {
    const lanes = Array.from({ length: options.apps }, () => lane());
    const injecting = faults().catch(
      (error: unknown) => (injectorError = error instanceof Error ? error : new Error(String(error))),
    );
    await sleep(Math.max(0, options.durationMs - clock()));
    stopping = true;
    ended.abort();
    await injecting;
    const drainEnded = new AbortController();
    const drained = await Promise.race([
      Promise.all(lanes).then(() => true),
      sleep(DRAIN_MS, drainEnded.signal).then(() => false),
    ]);
    drainEnded.abort();
    if (!drained)
      violations.push({
        check: 'job-hung',
        detail: `jobs still running ${DRAIN_MS} ms after the soak ended`,
      });
    sampleMemory();
  } finally {
    clearInterval(progress);
    clearInterval(memory);
    shuffleWatch?.stop();
  }
  if (injectorError !== undefined) {
    print(`[chaos] the injector stopped: ${injectorError.message}`);
    // A fault that could not show it struck where meant (no successor, no step-down, no return to the group)
    // proves nothing, and the faults after it never ran.
    violations.push({ check: 'fault-not-proven', detail: injectorError.message.split('\n')[0]! });
  }

  const excused: string[] = [];
  for (const job of jobs) {
    if (job.status === 'wrong-data') {
      violations.push({
        check: 'data-wrong',
        detail: `job ${job.spec.index} (${job.appId}): ${job.verification}`,
        job,
      });
      continue;
    }
    if (job.status !== 'failed' && job.taskFailures.length === 0) continue;
    const what =
      `job ${job.spec.index} (${job.appId}) ${job.status === 'failed' ? 'failed' : 'had failed tasks'}: ` +
      `${job.taskFailures[0] ?? job.verification}`;
    const excuse = notPromisedBecause(job, faultsDuring(job, injector.timeline));
    if (excuse === undefined)
      violations.push({
        check: 'job-failed-under-tolerated-fault',
        detail: `${what}, under faults the design tolerates`,
        job,
      });
    else excused.push(`${what}; excused: ${excuse}`);
  }

  // Every application has ended: the workers must delete every file of theirs.
  const storage = [...cluster.workers.map((_, i) => path.join(cluster.dir, `worker-${i}`, 'disk-1')), dfsDir];
  const deadline = Date.now() + FILES_GONE_MS;
  let left = storage.flatMap((dir) => filesUnder(dir));
  while (left.length > 0 && Date.now() < deadline) {
    await sleep(500);
    left = storage.flatMap((dir) => filesUnder(dir));
  }
  if (left.length > 0)
    violations.push({
      check: 'files-left',
      detail: `${left.length} files ${FILES_GONE_MS} ms after every application ended, e.g. ${left.slice(0, 3).join(', ')}`,
    });

  const lastLines = logTails(cluster);
  await supervisor?.stop();
  const servers = [...cluster.started];
  await cluster.stop({ keepDir: true });
  await network?.destroy();
  if (ha) {
    // Read back from the files once every member has exited: the whole of each log, every start of each member.
    for (const overlap of overlappingTenures(tenures(path.join(cluster.dir, 'logs'))))
      violations.push({ check: 'two-leaders', detail: overlap });
    for (const failover of shuffleWatch?.failovers ?? []) {
      for (const shuffle of failover.missing) {
        // A job still running when the new leader answered, which then did not verify: its shuffle was lost.
        const job = jobs.find((j) => shuffle.startsWith(`${j.appId}-`));
        if (job === undefined || job.status === 'verified' || job.endMs < failover.atMs) continue;
        violations.push({
          check: 'shuffle-lost',
          detail:
            `${shuffle}, listed by ${failover.from}, was not by ${failover.to} at ${failover.atMs} ms, and job ` +
            `${job.spec.index} (running then) ${job.status}: ${job.verification}`,
          job,
        });
      }
    }
  }
  const running = servers.filter((server) => alive(server.pid));
  if (running.length > 0)
    violations.push({
      check: 'process-left',
      detail: running.map((server) => `${server.options.name} pid ${server.pid}`).join(', '),
    });

  const failed = violations.length > 0;
  const keptDir = failed || options.keep === true ? cluster.dir : undefined;
  if (keptDir === undefined) rmSync(cluster.dir, { recursive: true, force: true });
  const result = {
    seed: options.seed,
    hosts,
    ha,
    failovers: shuffleWatch?.failovers ?? [],
    memberRestarts: (supervisor?.restarts ?? []).map(
      (restart) => `${restart.member} (exit ${String(restart.exitCode)})`,
    ),
    schedule,
    timeline: injector.timeline,
    jobs,
    violations,
    excused,
    peakRssMiB: peak,
    keptDir,
    report: '',
  };
  const report = failed ? failureReport(result, lastLines) : '';
  const verified = jobs.filter((j) => j.status === 'verified').length;
  const byKind: Record<string, number> = {};
  for (const entry of injector.timeline) byKind[entry.fault.kind] = (byKind[entry.fault.kind] ?? 0) + 1;
  const group = ha
    ? `; ${result.failovers.length} failovers (${result.failovers.reduce((n, f) => n + f.carried, 0)} shuffles ` +
      `carried over), ${result.memberRestarts.length} member restarts by the supervisor`
    : '';
  print(
    `[chaos] seed ${options.seed}: ${jobs.length} jobs (${verified} verified, ${jobs.reduce((n, j) => n + j.reruns, 0)} ` +
      `stage reruns, ${excused.length} failures excused), ${injector.timeline.length} faults injected ` +
      `${JSON.stringify(byKind)}${group}; peak RSS MiB ${JSON.stringify(peak)}; ` +
      (failed ? `${violations.length} checks FAILED` : 'every check passed'),
  );
  // Failures the liveness rule does not cover are not violations, but an operator reading the report sees them.
  for (const line of excused) print(`[chaos] ${line}`);
  if (failed) {
    print(report);
    writeFileSync(path.join(cluster.dir, 'chaos-report.txt'), `${report}\n`);
  }
  return { ...result, report };
}

/** The last lines of every process's log file (each start has its own file under logs/). */
function logTails(cluster: LocalCluster, lines = 6): string {
  const dir = path.join(cluster.dir, 'logs');
  return readdirSync(dir)
    .sort()
    .map((file) => {
      const text = readFileSync(path.join(dir, file), 'utf8').trimEnd().split('\n').slice(-lines);
      return `--- ${file} (last ${text.length} lines)\n${text.join('\n')}`;
    })
    .join('\n');
}

const SHOWN_PER_CHECK = 5;

function failureReport(result: Omit<SoakResult, 'report'>, lastLines: string): string {
  const out: string[] = [];
  out.push(
    `[chaos] FAILED, seed ${result.seed} (rerun: npm run chaos -- ${result.hosts ? '--hosts ' : ''}${result.ha ? '--ha ' : ''}--seed ${result.seed} …; the same seed`,
  );
  out.push('        replays the same fault schedule and job stream, but not the same timing)');
  out.push(`violations (${result.violations.length}; at most ${SHOWN_PER_CHECK} shown per check):`);
  const shown = result.violations.filter(
    (v, i) => result.violations.slice(0, i).filter((w) => w.check === v.check).length < SHOWN_PER_CHECK,
  );
  for (const v of shown) out.push(`  ${v.check}: ${v.detail}`);
  out.push('fault timeline (ms from the start: struck .. healed):');
  for (const entry of result.timeline)
    out.push(
      `  ${entry.startMs} .. ${entry.endMs ?? 'running'} ${describeFault(entry.fault)}` +
        (entry.notes.length > 0 ? ` [${entry.notes.join('; ')}]` : ''),
    );
  for (const v of shown) {
    const job = v.job;
    if (job === undefined) continue;
    out.push(`job ${job.spec.index} (${job.appId}) ${JSON.stringify(job.spec)}`);
    out.push(
      `  ran ${job.startMs} .. ${job.endMs} ms; status ${job.status}; verification: ${job.verification}`,
    );
    for (const failure of job.taskFailures) out.push(`  task failure: ${failure}`);
    for (const line of job.clientLog.slice(-10)) out.push(`  client: ${line}`);
  }
  out.push('last log lines of each process:');
  out.push(lastLines);
  if (result.keptDir !== undefined) out.push(`logs and data kept in ${result.keptDir}`);
  return out.join('\n');
}
