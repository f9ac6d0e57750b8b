/**
 * The data-plane benchmark's flags. bench/run.ts passes none to a benchmark, so they are also read from the
 * environment variable SVC_BENCH_DATAPLANE (e.g. `SVC_BENCH_DATAPLANE='--rss-size 4g' npm run bench -- dataplane`);
 * flags on the command line come after it and win.
 */
import { tmpdir } from 'node:os';
import path from 'node:path';
import { parseArgs } from 'node:util';
import { parseBytes } from '../../conf/values.ts';

export const SCENARIOS = [
  'push-memory',
  'push-disk',
  'fetch',
  'push-replicated',
  'small-batches',
  'many-partitions',
  'rss',
  'map-memory',
  'read-memory',
  'e2e',
] as const;
export type Scenario = (typeof SCENARIOS)[number];

export interface Options {
  readonly scenarios: readonly Scenario[];
  /** Record bytes of the 1-worker memory and disk pushes (and the fetch of the disk push's files). */
  readonly size: number;
  readonly replicatedSize: number;
  readonly smallSize: number;
  readonly manySize: number;
  readonly rssSize: number;
  /** The worker's svc.worker.memory.size in the RSS run (the configured memory the goal adds 256 MiB to). */
  readonly rssWorkerMemory: number;
  /** What the map-memory scenario's one map writes (into 1,000 partitions). */
  readonly mapMemorySize: number;
  /** The partition the read-memory scenario's reducer reads. */
  readonly readMemorySize: number;
  /** svc.client.push.maxUnacknowledgedBytes in map-memory and read-memory (the map's budget). */
  readonly mapBudget: number;
  /** svc.client.fetch.maxReqsInFlight in map-memory and read-memory (the reducer's read-ahead, in chunks). */
  readonly readAhead: number;
  readonly e2eSize: number;
  readonly partitions: number;
  readonly manyPartitions: number;
  readonly mapSize: number;
  readonly smallMapSize: number;
  readonly manyMapSize: number;
  readonly recordSize: number;
  readonly batch: number;
  readonly smallBatch: number;
  readonly merge: number;
  /** svc.client.push.maxInFlightPerPartition; undefined: the key's default. */
  readonly window: number | undefined;
  /** svc's maps write record i to partition i mod partitions instead of partition after partition. */
  readonly spread: boolean;
  readonly mapSlots: number;
  readonly smallMapSlots: number;
  readonly readSlots: number;
  readonly chunk: number;
  /**
   * A svc push or read that takes longer counts as failed (the 10,000-partition push can run for minutes); default
   * 60 s plus 1 s per 16 MiB moved.
   */
  readonly deadlineSeconds: number | undefined;
  /** Every scenario this many times, alternating svc and bare; the table gives each figure's median round. */
  readonly rounds: number;
  /** Run the clients, sinks and servers from the TypeScript source through tsx rather than compiled. */
  readonly tsx: boolean;
  readonly profile: boolean;
  readonly profileDir: string | undefined;
  /** `all`: every allocation; `promoted`: what outlived a scavenge; false: no heap profile. */
  readonly heapProfile: 'all' | 'promoted' | false;
  readonly json: string | undefined;
  readonly noJson: boolean;
  readonly dir: string;
  readonly keep: boolean;
}

export const HELP = `bench/dataplane.bench.ts: svc's data plane beside bare node:net baselines, same run, same process layout

  npm run bench -- dataplane
  npm run bench -- dataplane <flags>
  SVC_BENCH_DATAPLANE='<flags>' npm run bench -- dataplane
  node --import tsx --expose-gc bench/dataplane.bench.ts [flags]

Every figure runs real processes on loopback: a client process (bench/dataplane/client.ts) against a master and
workers (runtime/cluster/local-cluster.ts), then the same bytes from a client process against bare sinks
(bench/dataplane/sink.ts: node:net and node:fs only). Speeds are compared only as ratios of the two sides of one
run. Exit 0 when every goal is met, 2 when one is missed, 1 on an error.

Scenarios (--only / --skip take a comma-separated list):
  push-memory      1 worker, memory tier, 64 KiB batches vs a discarding sink; also worker CPU s/GiB,
                   event-loop delay, push round trips
  push-disk        1 worker, disk tier vs a sink appending to a file in the same directory (fdatasync at the end)
  fetch            reading the disk push's committed partitions vs bare TCP reads of the same files
  push-replicated  2 workers, replication on vs 2 sinks each relaying to the other
  small-batches    4 KiB batches, many maps (per-message costs) vs a discarding sink
  many-partitions  10,000 partitions per shuffle vs a discarding sink
  rss              peak worker RSS pushing --rss-size into the memory tier at the default memory budget
  map-memory       peak RSS of one map's executor process writing --map-memory-size into 1,000 partitions
                   through the streaming writer (waiting for 'drain'), 1 worker, disk tier, no replication
  read-memory      peak RSS of one reducer process reading a partition of --read-memory-size (8 maps wrote it)
                   through the streaming reader, 1 worker, disk tier, no replication
  e2e              npm start's job (svc demo: 8 maps x 32 reduces, replication on, 3 workers, disk tier) vs the
                   same bytes pushed and read back through 3 relaying file sinks by 2 client processes

Sizes (bytes: 1g, 256m, 64k):
  --size <b>               memory and disk push (and fetch)          default 1g
  --replicated-size <b>    replicated push                           default 1g
  --small-size <b>         small-batches push                        default 256m
  --many-size <b>          many-partitions push                      default 64m
  --rss-size <b>           RSS run (the issue's figure is 4g)        default 1g
  --rss-worker-memory <b>  svc.worker.memory.size in the RSS run     default 1g
  --map-memory-size <b>    map-memory's one map                      default 4g
  --read-memory-size <b>   read-memory's partition                   default 4g
  --map-budget <b>         svc.client.push.maxUnacknowledgedBytes there   default 64m (the key's default)
  --read-ahead <n>         svc.client.fetch.maxReqsInFlight there    default 4 (the key's default)
  --e2e-size <b>           the demo job                              default 1g
  --partitions <n>         partitions of the pushes                  default 32
  --many-partitions <n>    partitions of many-partitions             default 10000
  --map-size <b>           bytes per map                             default 128m
  --small-map-size <b>     bytes per map in small-batches            default 4m
  --many-map-size <b>      bytes per map in many-partitions          default 32m
  --record-size <b>        bytes per record (1020: 64 records fill 64 KiB exactly)   default 1020
  --batch <b>              svc.client.push.buffer.max.size           default 64k
  --small-batch <b>        the same in small-batches                 default 4k
  --merge <b>              svc.client.push.merge.maxSize             default 2m
  --window <n>             svc.client.push.maxInFlightPerPartition   default: the key's default
  --spread                 svc's maps write record i to partition i mod partitions (as a map hashing its
                           records does), not partition after partition; the bare stream is the same
  --map-slots <n>          maps a client runs at once                default 2
  --small-map-slots <n>    the same in small-batches                 default 8
  --read-slots <n>         partitions (files) read at once           default 4
  --chunk <b>              svc.shuffle.chunk.size (and the bare file server's piece size)   default 8m
  --deadline <s>           a svc push or read taking longer counts as failed
                           default 60 s + 1 s per 16 MiB it moves (the demo: 3x that)

Rounds:
  --rounds <n>             run every scenario n times (svc and bare side by side each time) and report each
                           figure's median round, with every round's ratio beside it   default 1

Output:
  --profile                CPU-profile workers and clients (--cpu-prof) and print each side's top self-time
                           functions during the measurement (figures are slower under the profiler)
  --profile-dir <dir>      keep the .cpuprofile files there (default: a temporary directory, removed)
  --heap-profile           sample every process's allocations (V8's sampling heap profiler, freed objects
                           included) and print each one's top allocation sites, over its whole life; the
                           files (HEAP.<pid>.json) go to --profile-dir too (./dataplane/heap-profile.ts)
  --heap-profile-promoted  the same, but only what outlived the young generation (objects freed by a scavenge
                           left out): what the collector copies and promotes, the costly part of collection
  --json <file>            where to write the JSON results (default bench/results/dataplane-<date>.json)
  --no-json                write no JSON
  --dir <dir>              where clusters and sinks keep data (default: the system's temporary directory)
  --keep                   keep the data directories
  --tsx                    run the clients, sinks and servers from the source through tsx (default: compiled
                           first, as deployed: ./dataplane/compiled.ts)
  --only <list>, --skip <list>
  --help
`;

function bytes(name: string, text: string): number {
  const parsed = parseBytes(text);
  if (!parsed.ok) throw new Error(`--${name} '${text}' is not a size (${parsed.expected})`);
  return parsed.value;
}

function count(name: string, text: string, min = 1): number {
  const n = Number(text);
  if (!Number.isSafeInteger(n) || n < min)
    throw new Error(`--${name} '${text}' is not a whole number >= ${min}`);
  return n;
}

function scenarioList(name: string, text: string): Scenario[] {
  const names = text
    .split(',')
    .map((s) => s.trim())
    .filter((s) => s.length > 0);
  for (const scenario of names) {
    if (!(SCENARIOS as readonly string[]).includes(scenario)) {
      throw new Error(`--${name}: '${scenario}' is none of ${SCENARIOS.join(', ')}`);
    }
  }
  return names as Scenario[];
}

const STRING_FLAGS = [
  'only',
  'skip',
  'size',
  'replicated-size',
  'small-size',
  'many-size',
  'rss-size',
  'rss-worker-memory',
  'map-memory-size',
  'read-memory-size',
  'map-budget',
  'read-ahead',
  'e2e-size',
  'partitions',
  'many-partitions',
  'map-size',
  'small-map-size',
  'many-map-size',
  'record-size',
  'batch',
  'small-batch',
  'merge',
  'window',
  'map-slots',
  'small-map-slots',
  'read-slots',
  'chunk',
  'deadline',
  'rounds',
  'profile-dir',
  'json',
  'dir',
] as const;

/** Parses the flags; `undefined` when --help was asked for. Throws on a bad flag. */
export function parseOptions(argv: readonly string[], env: string | undefined): Options | undefined {
  const fromEnv = (env ?? '').split(/\s+/).filter((word) => word.length > 0);
  const stringFlags: Record<string, { type: 'string' }> = Object.fromEntries(
    STRING_FLAGS.map((flag) => [flag, { type: 'string' as const }]),
  );
  const parsed = parseArgs({
    args: [...fromEnv, ...argv],
    strict: true,
    allowPositionals: false,
    options: {
      ...stringFlags,
      profile: { type: 'boolean' },
      'heap-profile': { type: 'boolean' },
      'heap-profile-promoted': { type: 'boolean' },
      'no-json': { type: 'boolean' },
      tsx: { type: 'boolean' },
      keep: { type: 'boolean' },
      spread: { type: 'boolean' },
      help: { type: 'boolean', short: 'h' },
    },
  });
  const values = parsed.values as Record<string, string | boolean | undefined>;
  if (values.help === true) return undefined;
  const text = (flag: (typeof STRING_FLAGS)[number]): string | undefined => {
    const value = values[flag];
    return typeof value === 'string' ? value : undefined;
  };
  const size = (flag: (typeof STRING_FLAGS)[number], fallback: string) => bytes(flag, text(flag) ?? fallback);
  const whole = (flag: (typeof STRING_FLAGS)[number], fallback: number) => {
    const value = text(flag);
    return value === undefined ? fallback : count(flag, value);
  };
  const only = text('only');
  const skip = new Set(text('skip') === undefined ? [] : scenarioList('skip', text('skip')!));
  const chosen = (only === undefined ? [...SCENARIOS] : scenarioList('only', only)).filter(
    (s) => !skip.has(s),
  );
  // fetch reads what push-disk wrote: asking for it runs that push too.
  const scenarios = SCENARIOS.filter(
    (s) => chosen.includes(s) || (s === 'push-disk' && chosen.includes('fetch')),
  );
  return {
    scenarios,
    size: size('size', '1g'),
    replicatedSize: size('replicated-size', '1g'),
    smallSize: size('small-size', '256m'),
    manySize: size('many-size', '64m'),
    rssSize: size('rss-size', '1g'),
    rssWorkerMemory: size('rss-worker-memory', '1g'),
    mapMemorySize: size('map-memory-size', '4g'),
    readMemorySize: size('read-memory-size', '4g'),
    mapBudget: size('map-budget', '64m'),
    readAhead: whole('read-ahead', 4),
    e2eSize: size('e2e-size', '1g'),
    partitions: whole('partitions', 32),
    manyPartitions: whole('many-partitions', 10_000),
    mapSize: size('map-size', '128m'),
    smallMapSize: size('small-map-size', '4m'),
    manyMapSize: size('many-map-size', '32m'),
    recordSize: size('record-size', '1020'),
    batch: size('batch', '64k'),
    smallBatch: size('small-batch', '4k'),
    merge: size('merge', '2m'),
    window: text('window') === undefined ? undefined : whole('window', 1),
    spread: values.spread === true,
    mapSlots: whole('map-slots', 2),
    smallMapSlots: whole('small-map-slots', 8),
    readSlots: whole('read-slots', 4),
    chunk: size('chunk', '8m'),
    deadlineSeconds: text('deadline') === undefined ? undefined : whole('deadline', 0),
    rounds: whole('rounds', 1),
    profile: values.profile === true,
    profileDir: text('profile-dir'),
    heapProfile:
      values['heap-profile-promoted'] === true ? 'promoted' : values['heap-profile'] === true ? 'all' : false,
    json: text('json'),
    noJson: values['no-json'] === true,
    dir: text('dir') ?? tmpdir(),
    keep: values.keep === true,
    tsx: values.tsx === true,
  };
}

/** Where a bench writes its figures unless told: `bench/results/<name>-<UTC time>.json`. */
export function defaultJsonPath(benchDir: string, date: Date, name = 'dataplane'): string {
  const stamp = date
    .toISOString()
    .replace(/:/g, '-')
    .replace(/\.\d+Z$/, 'Z');
  return path.join(benchDir, 'results', `${name}-${stamp}.json`);
}
