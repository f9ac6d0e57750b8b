/**
 * svc's data plane, issue 15's measurement harness: every figure of the issue's table beside a bare baseline measured
 * in the same run with the same process layout (a client process pushing or reading over loopback TCP into a server
 * process), the baseline's bytes being the same framed stream built with svc's own encoders.
 *
 *   figure                                            baseline                                     goal
 *   push into one worker, memory tier, 64 KiB batches a node:net sink that discards                >= 75 %
 *   push into one worker, disk tier                   a sink appending to a file, same directory   >= 75 %
 *   push with replication (two workers)               two sinks, each relaying to the other        >= 60 %
 *   fetch of committed partitions                     bare TCP reads of the same files             >= 85 %
 *   npm start's job end to end                        the same bytes through bare sinks            >= 60 %
 *   worker CPU seconds per GiB pushed                 the discarding sink's                        <= 1.5x
 *   peak worker RSS while pushing                     configured memory + 256 MiB                  <=
 *   peak RSS of a map's executor (1,000 partitions)   its writer's budget + 256 MiB                <=
 *   peak RSS of a reducer reading one partition       its read-ahead (chunks x chunk size) + 256   <=
 *   small 4 KiB batches                               the discarding sink                          >= 70 %
 *   10,000 partitions per shuffle                     the discarding sink                          >= 60 %
 *   the worker's event-loop delay p99 there           -                                            <= 50 ms
 *   p50 / p99 push round trip, event-loop delay of the other runs                                  reported
 *   client + worker CPU seconds per GiB pushed        the bare client's and sink's                 reported
 *
 * bench/dataplane/ holds the parts: options.ts (flags, --help), scenarios.ts (the runs), client.ts and sink.ts (the
 * child processes), workload.ts (the stream), proc.ts (/proc), probe.mjs (event-loop delay), profile.ts
 * (--profile), report.ts (rows, tables). docs/performance.md describes the method and today's figures.
 *
 * Exit code (see bench/run.ts): 0 every goal met, 2 a goal missed, 1 error.
 */
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { defaultJsonPath, HELP, parseOptions, type Options } from './dataplane/options.ts';
import { heapProfileFiles, heapText, summariseHeapProfile } from './dataplane/heap-profile.ts';
import { machineInfo } from './dataplane/proc.ts';
import { measureMemoryPasses, type MemoryPasses } from './dataplane/floor.ts';
import { compiledEntries, sourceEntries } from './dataplane/compiled.ts';
import {
  clientMemoryRow,
  cpuFloorRows,
  cpuRow,
  keepingRows,
  detailTable,
  e2eRow,
  failedRow,
  loopRow,
  medianRows,
  profileText,
  rowsTable,
  rssRow,
  rttRows,
  throughputRow,
  totalCpuRow,
  type Row,
} from './dataplane/report.ts';
import {
  collectProfiles,
  e2e,
  manyPartitions,
  mapMemory,
  readMemory,
  pushDiskAndFetch,
  pushMemory,
  pushReplicated,
  rss,
  smallBatches,
  SvcFailure,
  type ClientMemoryFigure,
  type Comparison,
  type Context,
  type E2eFigure,
  type RssFigure,
} from './dataplane/scenarios.ts';

const GOAL_MISSED = 2;

/**
 * The results as the repository's Prettier would write them, so that a results file inside the tree never fails
 * `npm run lint` (plain two-space JSON when Prettier is not installed).
 */
async function formatted(json: string, file: string): Promise<string> {
  try {
    const prettier = await import('prettier');
    const config = (await prettier.resolveConfig(file)) ?? {};
    return await prettier.format(json, { ...config, parser: 'json' });
  } catch {
    return `${JSON.stringify(JSON.parse(json), null, 2)}\n`;
  }
}
const RSS_SLACK = 256 * 2 ** 20;

let options: Options | undefined;
try {
  options = parseOptions(process.argv.slice(2), process.env.SVC_BENCH_DATAPLANE);
} catch (error) {
  console.error(`dataplane.bench: ${(error as Error).message}\n\n${HELP}`);
  process.exit(1);
}
if (options === undefined) {
  console.log(HELP);
  process.exit(0);
}
const o = options;

const repoRoot = path.resolve(import.meta.dirname, '..');
mkdirSync(o.dir, { recursive: true });
const runDir = mkdtempSync(path.join(o.dir, 'svc-dataplane-'));
const probeDir = path.join(runDir, 'probes');
mkdirSync(probeDir);
const profileDir = o.profile ? (o.profileDir ?? path.join(runDir, 'profiles')) : undefined;
if (profileDir !== undefined) mkdirSync(profileDir, { recursive: true });
// Every process the run starts inherits this environment (./dataplane/probe.mjs reads it).
const heapProfileDir = o.heapProfile !== false ? (o.profileDir ?? path.join(runDir, 'profiles')) : undefined;
if (heapProfileDir !== undefined) {
  mkdirSync(heapProfileDir, { recursive: true });
  process.env.SVC_BENCH_HEAP_PROF_DIR = heapProfileDir;
  if (o.heapProfile === 'promoted') process.env.SVC_BENCH_HEAP_PROF_PROMOTED = '1';
}
const entries = o.tsx ? sourceEntries() : compiledEntries();
const ctx: Context = {
  options: o,
  runDir,
  probeDir,
  profileDir,
  repoRoot,
  entries,
  log: (line) => console.log(line),
};

const started = new Date();
const machine = machineInfo();
console.log(
  `dataplane: ${machine.nproc} cores (${machine.cpuModel}), ${(machine.memTotalBytes / 2 ** 30).toFixed(1)} GiB RAM, ` +
    `node ${machine.node}, linux ${machine.kernel}; data under ${runDir}; processes ${entries.describe}` +
    (o.profile ? '; PROFILING (figures are slower under the profiler)' : ''),
);
console.log(`scenarios: ${o.scenarios.join(', ')}\n`);

/** What one round measured. */
interface Round {
  readonly comparisons: Comparison[];
  rss?: RssFigure;
  /** map-memory and read-memory: a map's executor and a reducer, each in its own process. */
  readonly clientMemory: ClientMemoryFigure[];
  e2e?: E2eFigure;
  /** The unavoidable memory passes, timed in this process right after push-memory (./dataplane/floor.ts). */
  memoryPasses?: MemoryPasses;
  /** Figures svc failed to produce, by scenario (rss, e2e, map-memory, read-memory; a push's is in its comparison). */
  readonly svcFailures: Map<string, string>;
}

async function runRound(round: Round): Promise<void> {
  for (const scenario of o.scenarios) {
    switch (scenario) {
      case 'push-memory':
        round.comparisons.push(await pushMemory(ctx));
        round.memoryPasses = measureMemoryPasses();
        console.log(
          `memory passes here (256 MiB, fastest of 4): CRC-32 ${(1 / round.memoryPasses.checksumSecondsPerGiB).toFixed(1)} ` +
            `GiB/s, copy ${(1 / round.memoryPasses.copySecondsPerGiB).toFixed(1)} GiB/s`,
        );
        break;
      case 'push-disk': {
        const result = await pushDiskAndFetch(ctx, o.scenarios.includes('fetch'));
        round.comparisons.push(result.push);
        if (result.fetch !== undefined) round.comparisons.push(result.fetch);
        break;
      }
      case 'fetch':
        break; // with push-disk, whose files it reads
      case 'push-replicated':
        round.comparisons.push(await pushReplicated(ctx));
        break;
      case 'small-batches':
        round.comparisons.push(await smallBatches(ctx));
        break;
      case 'many-partitions':
        round.comparisons.push(await manyPartitions(ctx));
        break;
      case 'rss':
        try {
          round.rss = await rss(ctx);
        } catch (error) {
          if (!(error instanceof SvcFailure)) throw error;
          round.svcFailures.set('rss', error.message);
          console.log(`  svc FAILED: ${error.message.split('\n')[0]}`);
        }
        break;
      case 'map-memory':
      case 'read-memory':
        try {
          round.clientMemory.push(await (scenario === 'map-memory' ? mapMemory(ctx) : readMemory(ctx)));
        } catch (error) {
          if (!(error instanceof SvcFailure)) throw error;
          round.svcFailures.set(scenario, error.message);
          console.log(`  svc FAILED: ${error.message.split('\n')[0]}`);
        }
        break;
      case 'e2e':
        try {
          round.e2e = await e2e(ctx);
        } catch (error) {
          if (!(error instanceof SvcFailure)) throw error;
          round.svcFailures.set('e2e', error.message);
          console.log(`  svc FAILED: ${error.message.split('\n')[0]}`);
        }
        break;
    }
    collectProfiles(ctx);
    globalThis.gc?.();
  }
}

/** The rows from one round's measurements. */
function rowsOf(round: Round): Row[] {
  const rows: Row[] = [];
  const byScenario = (name: string) => round.comparisons.find((c) => c.scenario === name);
  const pushMemoryRun = byScenario('push-memory');
  if (pushMemoryRun !== undefined) rows.push(throughputRow(pushMemoryRun, 0.75));
  const pushDiskRun = byScenario('push-disk');
  if (pushDiskRun !== undefined) rows.push(throughputRow(pushDiskRun, 0.75));
  const replicatedRun = byScenario('push-replicated');
  if (replicatedRun !== undefined) rows.push(throughputRow(replicatedRun, 0.6));
  const fetchRun = byScenario('fetch');
  if (fetchRun !== undefined) rows.push(throughputRow(fetchRun, 0.85));
  if (round.e2e !== undefined) rows.push(e2eRow(round.e2e, 0.6));
  const e2eFailure = round.svcFailures.get('e2e');
  if (e2eFailure !== undefined) {
    rows.push(failedRow("npm start's job end to end", 'MiB/s', '>= 60 %', e2eFailure));
  }
  if (pushMemoryRun !== undefined) rows.push(cpuRow(pushMemoryRun, 1.5));
  if (pushMemoryRun !== undefined && round.memoryPasses !== undefined)
    rows.push(...cpuFloorRows(pushMemoryRun, round.memoryPasses));
  for (const run of [pushMemoryRun, replicatedRun]) {
    if (run !== undefined) rows.push(totalCpuRow(run), ...keepingRows(run));
  }
  if (round.rss !== undefined) rows.push(rssRow(round.rss, RSS_SLACK), ...rttRows(round.rss));
  const rssFailure = round.svcFailures.get('rss');
  if (rssFailure !== undefined) {
    rows.push(failedRow('peak worker RSS while pushing', 'MiB', '<= configured + 256 MiB', rssFailure));
  }
  for (const figure of round.clientMemory) rows.push(clientMemoryRow(figure, RSS_SLACK));
  const clientMemoryGoals = {
    'map-memory': "peak RSS of a map's executor writing into 1000 partitions",
    'read-memory': 'peak RSS of a reducer reading one partition',
  };
  for (const [scenario, figure] of Object.entries(clientMemoryGoals)) {
    const failure = round.svcFailures.get(scenario);
    if (failure !== undefined) rows.push(failedRow(figure, 'MiB', '<= budget + 256 MiB', failure));
  }
  const smallBatchesRun = byScenario('small-batches');
  if (smallBatchesRun !== undefined) rows.push(throughputRow(smallBatchesRun, 0.7));
  const manyPartitionsRun = byScenario('many-partitions');
  if (manyPartitionsRun !== undefined) rows.push(throughputRow(manyPartitionsRun, 0.6));
  for (const run of round.comparisons) {
    if (run.scenario !== 'fetch')
      rows.push(loopRow(run, run.scenario === 'many-partitions' ? 50 : undefined));
  }
  return rows;
}

const rounds: Round[] = [];
let failure: unknown;
try {
  for (let r = 0; r < o.rounds; r += 1) {
    if (o.rounds > 1) console.log(`\n--- round ${r + 1} of ${o.rounds}`);
    const round: Round = { comparisons: [], clientMemory: [], svcFailures: new Map() };
    rounds.push(round);
    await runRound(round);
  }
} catch (error) {
  failure = error;
  console.error(
    `\ndataplane.bench failed: ${error instanceof Error ? (error.stack ?? error.message) : String(error)}`,
  );
}

const rows = medianRows(rounds.map(rowsOf));
const last = rounds[rounds.length - 1] ?? {
  comparisons: [],
  clientMemory: [],
  svcFailures: new Map<string, string>(),
};
const comparisons = last.comparisons;
const rssFigure = last.rss;
const e2eFigure = last.e2e;

if (rows.length > 0) {
  console.log(`\n${rowsTable(rows)}`);
  if (comparisons.length > 0 || rssFigure !== undefined)
    console.log(`\n${detailTable(comparisons, rssFigure)}`);
  console.log(
    '\nsrv = the worker(s) or bare sink(s); cli = the client process. CPU from /proc/<pid>/stat, RSS sampled from ' +
      "/proc/<pid>/status every 50 ms; srv bg = CPU outside the main threads (V8's optimising compiler and " +
      "collector helpers, libuv's pool); event-loop delay from perf_hooks.monitorEventLoopDelay (10 ms resolution); " +
      'srv wait = time the main threads were runnable but waited for a CPU (/proc/<pid>/task/<pid>/schedstat).',
  );
  for (const figure of last.clientMemory) {
    console.log(
      `${figure.scenario}: ${(figure.bytes / 2 ** 20).toFixed(0)} MiB in ${figure.seconds.toFixed(1)} s ` +
        `(${figure.mibPerSecond.toFixed(1)} MiB/s), ${figure.cpuSeconds.toFixed(1)} CPU s; peak RSS sampled ` +
        `${(figure.sampledPeakRssBytes / 2 ** 20).toFixed(0)} MiB, VmHWM ${(figure.hwmBytes / 2 ** 20).toFixed(0)} MiB ` +
        `(the process's whole life); ${figure.budget}`,
    );
  }
  if (e2eFigure !== undefined) {
    console.log(
      `e2e: svc ${e2eFigure.svcSeconds.toFixed(1)} s (map ${String(e2eFigure.svcMapSeconds)} s, reduce ` +
        `${String(e2eFigure.svcReduceSeconds)} s; ${e2eFigure.processes.svc}); bare ${e2eFigure.bareSeconds.toFixed(1)} s ` +
        `(push ${e2eFigure.barePushSeconds.toFixed(1)} s, read ${e2eFigure.bareReadSeconds.toFixed(1)} s; ` +
        `${e2eFigure.processes.bare})`,
    );
  }
  if (o.profile) console.log(profileText(comparisons, rssFigure));
  if (heapProfileDir !== undefined) {
    console.log(heapText(heapProfileFiles(heapProfileDir).map((file) => summariseHeapProfile(file))));
  }
  if (o.rounds > 1) {
    console.log(
      `\nThe first table gives each figure's median round (ratios of every round in 'rounds'); the detail is the ` +
        'last round.',
    );
  }
}

const missed = rows.filter((row) => row.met === false);
for (const row of rows.filter((r) => r.met !== undefined)) {
  const outcome = row.failed !== undefined ? 'FAILED     ' : row.met === true ? 'goal met   ' : 'GOAL MISSED';
  console.log(`${outcome}: ${row.figure} (${row.goal})`);
}
for (const row of rows.filter((r) => r.failed !== undefined)) {
  console.log(`\nsvc failed "${row.figure}":\n  ${row.failed!.split('\n').slice(0, 12).join('\n  ')}`);
}

if (!o.noJson) {
  const file = o.json ?? defaultJsonPath(import.meta.dirname, started);
  mkdirSync(path.dirname(file), { recursive: true });
  const json = JSON.stringify({
    benchmark: 'dataplane',
    date: started.toISOString(),
    machine,
    options: o,
    rows,
    rounds,
    failed: failure === undefined ? undefined : failure instanceof Error ? failure.message : 'unknown error',
  });
  writeFileSync(file, await formatted(json, file));
  console.log(`\nresults: ${path.relative(process.cwd(), file)}`);
}

if (!o.keep) rmSync(runDir, { recursive: true, force: true });
else console.log(`data kept under ${runDir}`);
process.exit(failure !== undefined ? 1 : missed.length > 0 ? GOAL_MISSED : 0);
