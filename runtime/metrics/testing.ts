import { workerKey, type WorkerId } from '../../core/domain/index.ts';
import {
  initialMapTaskState,
  mapTaskWritingAll,
  type MapTaskState,
} from '../../core/machines/client/map-task.ts';
import {
  initialLifecycleManagerState,
  lifecycleManagerMachine,
} from '../../core/machines/lifecycle-manager/index.ts';
import { initialMasterState, masterMachine } from '../../core/machines/master/index.ts';
import type { MasterState } from '../../core/machines/master/state.ts';
import { testMasterConfig } from '../../core/machines/master/testing.ts';
import { InMemoryCluster, type NodeHandle } from '../../core/machines/testing/in-memory-cluster.ts';
import {
  initialWorkerState,
  workerMachine,
  type WorkerMachineState,
} from '../../core/machines/worker/index.ts';
import { testWorkerConfig } from '../../core/machines/worker/testing.ts';
import { lifecycleManagerNodeId, mapTaskNodeId, masterNodeId } from '../../core/protocol/node-ids.ts';
import { CURRENT_RELEASE } from '../../core/release/version.ts';
import { testLifecycleManagerConfig } from '../../core/machines/lifecycle-manager/testing.ts';

/**
 * Test support for runtime/metrics: real machine states after a real shuffle (the core's in-memory cluster), and a
 * checker of the Prometheus text exposition format.
 */

export const SHUFFLE_WORKERS = 3;

export function shuffleWorkerId(i: number): WorkerId {
  return { host: `10.0.0.${i + 1}`, rpcPort: 9097, pushPort: 9091, fetchPort: 9092, replicatePort: 9093 };
}

export interface ShuffleRun {
  readonly cluster: InMemoryCluster;
  readonly master: NodeHandle<MasterState>;
  readonly workers: readonly NodeHandle<WorkerMachineState>[];
}

/**
 * A master, three workers and, per application, a lifecycle manager and `maps` map tasks writing `partitions`
 * partitions (replicated), run until every map task ended. Application i writes records of 16 × (i + 1) bytes, so
 * that the applications hold different amounts of data.
 */
export function runShuffle(
  options: { apps?: readonly string[]; maps?: number; partitions?: number; seed?: number } = {},
): ShuffleRun {
  const apps = options.apps ?? ['app-1'];
  const maps = options.maps ?? 2;
  const partitions = options.partitions ?? 3;
  const cluster = new InMemoryCluster({ seed: options.seed ?? 7 });
  const master = cluster.addNode(masterNodeId(), {
    machine: masterMachine,
    init: () => initialMasterState(testMasterConfig()),
  });
  const workers = Array.from({ length: SHUFFLE_WORKERS }, (_, i) =>
    cluster.addNode(workerKey(shuffleWorkerId(i)), {
      machine: workerMachine,
      init: () => initialWorkerState(testWorkerConfig(shuffleWorkerId(i), { chunkSizeBytes: 256 })),
    }),
  );
  cluster.start(master.id);
  for (const worker of workers) cluster.start(worker.id);
  cluster.run({ maxTime: 1_000 });

  const tasks: NodeHandle<MapTaskState>[] = [];
  for (const [index, appId] of apps.entries()) {
    const lm = lifecycleManagerNodeId(appId);
    const config = testLifecycleManagerConfig(appId);
    cluster.addNode(lm, {
      machine: lifecycleManagerMachine,
      init: () => initialLifecycleManagerState(config),
    });
    cluster.start(lm);
    for (let mapId = 0; mapId < maps; mapId += 1) {
      const record = new Uint8Array(16 * (index + 1)).fill(mapId + 1);
      const task = cluster.addNode(mapTaskNodeId(appId, 0, mapId, 0), {
        machine: mapTaskWritingAll(Array.from({ length: partitions }, () => [record, record, record])),
        init: () =>
          initialMapTaskState({
            release: CURRENT_RELEASE,
            appId,
            shuffleId: 0,
            mapId,
            attemptId: 0,
            numMappers: maps,
            numPartitions: partitions,
            lifecycleManager: lm,
            batchSizeBytes: 64,
            maxUnacknowledgedBytes: 1 << 20,
            mergeSizeBytes: 64,
            maxInFlightPerPartition: 2,
            maxReviveRetries: 5,
            pushTimeoutMs: 120_000,
            requestTimeoutMs: 60_000,
            maxRequestAttempts: 3,
            excludeWorkerOnFailure: false,
          }),
      });
      tasks.push(task);
      cluster.start(task.id);
    }
  }
  const result = cluster.run({
    until: () => tasks.every((task) => task.state().phase === 'won' || task.state().phase === 'failed'),
    maxTime: 600_000,
  });
  if (result.end !== 'condition') throw new Error(`the shuffle did not end: ${result.end}`);
  // Let the commits and the last heartbeats settle.
  cluster.run({ maxTime: cluster.now + 5_000 });
  return { cluster, master, workers };
}

/** One sample of the exposition: metric name, labels and value. */
export interface ExpositionSample {
  readonly name: string;
  readonly labels: Readonly<Record<string, string>>;
  readonly value: number;
}

export interface ExpositionFamily {
  readonly type: string;
  readonly help: string | undefined;
  readonly samples: ExpositionSample[];
}

const METRIC_NAME = /^[a-zA-Z_:][a-zA-Z0-9_:]*$/;
const LABEL_NAME = /^[a-zA-Z_][a-zA-Z0-9_]*$/;
const TYPES = new Set(['counter', 'gauge', 'histogram', 'summary', 'untyped']);

/**
 * Parses the Prometheus text exposition format (version 0.0.4) strictly: HELP and TYPE lines at most once per
 * family and before its samples, samples under a declared family, valid names, quoted and escaped label values, no
 * label repeated, a float value and an optional integer timestamp, no sample repeated. Throws with the line number.
 */
export function parseExposition(text: string): Map<string, ExpositionFamily> {
  const families = new Map<string, ExpositionFamily & { samples: ExpositionSample[] }>();
  const seen = new Set<string>();
  const helps = new Map<string, string>();
  const lines = text.split('\n');
  if (text.length > 0 && !text.endsWith('\n')) throw new Error('the exposition must end with a newline');
  for (const [index, line] of lines.entries()) {
    const fail = (why: string): never => {
      throw new Error(`line ${index + 1}: ${why}: ${line}`);
    };
    if (line.trim() === '') continue;
    if (line.startsWith('#')) {
      const match = /^# (HELP|TYPE) (\S+)(?: (.*))?$/.exec(line);
      if (match === null) continue; // a comment
      const [, keyword, name, rest] = match;
      if (!METRIC_NAME.test(name!)) fail('bad metric name');
      if (keyword === 'HELP') {
        if (helps.has(name!)) fail('second HELP');
        helps.set(name!, rest ?? '');
        continue;
      }
      if (families.has(name!)) fail('second TYPE');
      if (!TYPES.has(rest ?? '')) fail('bad type');
      families.set(name!, { type: rest!, help: undefined, samples: [] });
      continue;
    }
    const match = /^([a-zA-Z_:][a-zA-Z0-9_:]*)(\{.*\})? (\S+)(?: (-?\d+))?$/.exec(line);
    if (match === null) fail('not a sample');
    const [, name, labelText, valueText] = match!;
    // A histogram's or summary's samples carry a suffix on the family's name.
    const base = /^(.*)_(bucket|sum|count)$/.exec(name!)?.[1];
    const histogram = base === undefined ? undefined : families.get(base);
    const family =
      families.get(name!) ??
      (histogram !== undefined && (histogram.type === 'histogram' || histogram.type === 'summary')
        ? histogram
        : fail('sample before its TYPE'));
    const labels = parseLabels(labelText ?? '', fail);
    const value = parseValue(valueText!) ?? fail('bad value');
    const key = `${name}${JSON.stringify(Object.entries(labels).sort())}`;
    if (seen.has(key)) fail('repeated sample');
    seen.add(key);
    family.samples.push({ name: name!, labels, value });
  }
  for (const [name, help] of helps) {
    const family = families.get(name);
    if (family !== undefined) families.set(name, { ...family, help });
  }
  return families;
}

function parseLabels(text: string, fail: (why: string) => never): Record<string, string> {
  const labels: Record<string, string> = {};
  if (text === '') return labels;
  let rest = text.slice(1, -1);
  while (rest.length > 0) {
    const match = /^([a-zA-Z_][a-zA-Z0-9_]*)="((?:[^"\\\n]|\\\\|\\"|\\n)*)"(,?)/.exec(rest);
    if (match === null) fail('bad labels');
    const [whole, name, raw, comma] = match;
    if (!LABEL_NAME.test(name!)) fail('bad label name');
    if (name! in labels) fail('repeated label');
    labels[name!] = raw!.replace(/\\(["\\n])/g, (_, c: string) => (c === 'n' ? '\n' : c));
    rest = rest.slice(whole.length);
    if (comma === '' && rest.length > 0) fail('labels not separated by commas');
  }
  return labels;
}

function parseValue(text: string): number | undefined {
  // Go's ParseFloat, which Prometheus parses values with, takes NaN and Inf in any case (prom-client writes `Nan`).
  if (text.toLowerCase() === 'nan') return NaN;
  if (text === '+Inf' || text === 'Inf') return Infinity;
  if (text === '-Inf') return -Infinity;
  if (!/^[-+]?(\d+\.?\d*|\.\d+)([eE][-+]?\d+)?$/.test(text)) return undefined;
  return Number(text);
}

/** Every sample of every family, flat. */
export function samplesOf(families: ReadonlyMap<string, ExpositionFamily>): ExpositionSample[] {
  return [...families.values()].flatMap((family) => family.samples);
}

/**
 * The one sample of gauge `metrics_<name>_Value` a node's Prometheus endpoint (`<base>/metrics/prometheus`) serves
 * now; throws when the scrape fails or the gauge has no single series.
 */
export function scrapeGauge(base: string, name: string): Promise<number> {
  return scrapeOne(base, `metrics_${name}_Value`);
}

/** The one sample of counter `metrics_<name>_Count` a node serves now (as `scrapeGauge`). */
export function scrapeCounter(base: string, name: string): Promise<number> {
  return scrapeOne(base, `metrics_${name}_Count`);
}

async function scrapeOne(base: string, sampleName: string): Promise<number> {
  const response = await fetch(`${base}/metrics/prometheus`);
  if (response.status !== 200) throw new Error(`${base}/metrics/prometheus answered ${response.status}`);
  const series = samplesOf(parseExposition(await response.text())).filter(
    (sample) => sample.name === sampleName,
  );
  if (series.length !== 1) throw new Error(`${sampleName}: ${series.length} series, expected one`);
  return series[0]!.value;
}
