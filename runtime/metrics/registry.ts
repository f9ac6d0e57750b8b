import { performance } from 'node:perf_hooks';
import { collectDefaultMetrics, Counter, Gauge, Registry } from 'prom-client';
import type { PartitionMode, StorageType } from '../../core/domain/index.ts';
import type { Effect } from '../../core/machines/effects.ts';
import type { MasterState } from '../../core/machines/master/state.ts';
import type { WorkerMachineState } from '../../core/machines/worker/state.ts';
import type { MetricRole } from '../../core/release/metric-names.ts';
import { METRIC_ROLE_LABEL, type PrometheusSuffix } from '../../core/release/prometheus.ts';
import { assertWithinHistory } from '../../core/release/timeline.ts';
import type { Release } from '../../core/release/version.ts';
import { METRIC_CATALOGUE, seriesFamilies, specOf, type MetricKind } from './catalogue.ts';
import { ProcessGauges } from './process-gauges.ts';
import {
  deviceGauges,
  masterGauges,
  workerGauges,
  type DeviceSpace,
  type GaugeSample,
} from './projections.ts';
import { MetricStore, type Labels, type Series, type WindowKind } from './store.ts';
import { QUANTILES, type SlidingWindow, type WindowSnapshot } from './window.ts';

/** A `metric` effect of a core machine, as NodeDriver hands it to `services.onMetric`. */
export type MetricEffect = Extract<Effect, { kind: 'metric' }>;

export interface MetricsOptions {
  /** The release the server presents (its ResolvedConfig's `release`): metrics render under that release's names. */
  readonly release: Release;
  /**
   * The `instance` label, `<host>:<httpPort>`. A function is read at every collection, for a port known only once
   * the HTTP server listens.
   */
  readonly instance: string | (() => string);
  /** `svc.metrics.extraLabels` (parseExtraLabels), added to every series. */
  readonly extraLabels?: Readonly<Record<string, string>>;
  /** `svc.metrics.timer.slidingWindow.size`: samples each timer keeps. Default 4096. */
  readonly timerWindowSize?: number;
  /** `svc.metrics.sample.rate`: fraction of timer observations recorded. Default 1. */
  readonly sampleRate?: number;
  /** Draws in [0, 1) for timer sampling. Default Math.random. */
  readonly random?: () => number;
  /** Millisecond clock for the pause times. Default performance.now. */
  readonly now?: () => number;
  /** The driver's backlog (NodeDriver's `backlog`), read at every collection as DriverBacklog. */
  readonly backlog?: () => number;
  /** Connections accepted on each port and open, read at every collection as ActiveConnectionCount. */
  readonly connections?: () => readonly { readonly service: string; readonly count: number }[];
  /** Export the process gauges (event loop, memory). Default true. */
  readonly processGauges?: boolean;
}

export interface MasterMetricsOptions extends MetricsOptions {
  readonly role: 'master';
  /** The master machine's current state (NodeDriver's `state`), read at every collection. */
  readonly state: () => MasterState;
  /** `svc.master.userResourceConsumption.metrics.enabled`: per-user usage gauges. Default off. */
  readonly userResourceMetrics?: boolean;
}

export interface WorkerMetricsOptions extends MetricsOptions {
  readonly role: 'worker';
  /** The worker machine's current state (NodeDriver's `state`), read at every collection. */
  readonly state: () => WorkerMachineState;
  /** The filesystems of the worker's disks, read at every collection (statfsDevices). */
  readonly devices?: () => Promise<readonly DeviceSpace[]> | readonly DeviceSpace[];
}

/** One metric family as JSON (`json()`): the shape of prom-client's getMetricsAsJSON, without its aggregator. */
export interface MetricJson {
  readonly name: string;
  readonly help: string;
  readonly type: string;
  readonly values: readonly { readonly labels: Labels; readonly value: number }[];
}

/** One process's metrics registry. */
export interface ServerMetrics {
  readonly role: MetricRole;
  readonly release: Release;
  /** Takes every `metric` effect of the machine: give it to NodeDriver as `services.onMetric`. */
  readonly onMetric: (effect: MetricEffect) => void;
  /** Every metric in the Prometheus text exposition format (version 0.0.4). */
  render(): Promise<string>;
  /** The Content-Type of `render()`'s text. */
  readonly contentType: string;
  /** Every metric as JSON: one entry per family, each series with its labels and value. */
  json(): Promise<MetricJson[]>;
  /** Stops the event-loop monitor. */
  close(): void;
  /** The prom-client registry behind render and json (refreshed by them, not by prom-client's own calls). */
  readonly registry: Registry;
}

/** What the worker's driver observes around the machine (reference section 10.3). */
export interface WorkerObservations {
  /** A push (PushData or PushMergedData) received for `mode` copies, with its payload bytes. */
  observePush(mode: PartitionMode, bytes: number): void;
  /** A push for `mode` copies answered `elapsedMs` after it arrived. */
  observePushAnswered(mode: PartitionMode, elapsedMs: number): void;
  /** A chunk read for a reader (FetchChunk, or OpenStream's first chunk): its bytes and the time since the request. */
  observeFetchChunk(bytes: number, elapsedMs: number): void;
  /** A write (`bytes` > 0) or flush (`bytes` 0) of a partition file on `tier` completed after `elapsedMs`. */
  observeFileIo(tier: StorageType, bytes: number, elapsedMs: number): void;
  /** Back-pressure stopped (`paused`) or resumed reading push or replication connections. */
  observePause(service: 'push' | 'replicate', paused: boolean): void;
}

export type MasterMetrics = ServerMetrics;
export type WorkerMetrics = ServerMetrics & WorkerObservations;

const LABEL_NAME = /^[A-Za-z_][A-Za-z0-9_]*$/;
const RESERVED_LABELS = new Set(['role', 'instance', 'applicationId', 'mountpoint']);

/**
 * `svc.metrics.extraLabels` items (`name=value`, as `conf.getList` gives them) as labels. Throws on an item that
 * is not `name=value` or names a label svc sets itself.
 */
export function parseExtraLabels(items: readonly string[]): Record<string, string> {
  const labels: Record<string, string> = {};
  for (const item of items) {
    const at = item.indexOf('=');
    const name = at < 0 ? item : item.slice(0, at);
    if (at < 0 || !LABEL_NAME.test(name) || name.startsWith('__')) {
      throw new RangeError(`svc.metrics.extraLabels: '${item}' is not name=value (for example zone=a)`);
    }
    labels[name] = item.slice(at + 1);
  }
  checkExtraLabels(labels);
  return labels;
}

function checkExtraLabels(labels: Readonly<Record<string, string>>): void {
  for (const name of Object.keys(labels)) {
    if (!LABEL_NAME.test(name) || name.startsWith('__')) {
      throw new RangeError(`svc.metrics.extraLabels: '${name}' is not a label name`);
    }
    if (RESERVED_LABELS.has(name)) {
      throw new RangeError(`svc.metrics.extraLabels: '${name}' is a label svc sets itself`);
    }
  }
}

/** Which counters a completed write on each tier moves (reference: Local/Hdfs/Oss/S3 Flush Count and Size). */
const FLUSH_COUNTERS: Readonly<Record<StorageType, { count: string; size: string } | undefined>> = {
  MEMORY: undefined,
  HDD: { count: 'LocalFlushCount', size: 'LocalFlushSize' },
  SSD: { count: 'LocalFlushCount', size: 'LocalFlushSize' },
  HDFS: { count: 'HdfsFlushCount', size: 'HdfsFlushSize' },
  OSS: { count: 'OssFlushCount', size: 'OssFlushSize' },
  S3: { count: 'S3FlushCount', size: 'S3FlushSize' },
};

const PUSH_SIZE: Readonly<Record<PartitionMode, string>> = {
  PRIMARY: 'PrimaryPushDataSize',
  REPLICA: 'ReplicaPushDataSize',
};
const PUSH_TIME: Readonly<Record<PartitionMode, string>> = {
  PRIMARY: 'PrimaryPushDataTime',
  REPLICA: 'ReplicaPushDataTime',
};
const PAUSE_NAMES = {
  push: { count: 'PausePushData', status: 'PausePushDataStatus', time: 'PausePushDataTime' },
  replicate: {
    count: 'PausePushDataAndReplicate',
    status: 'PausePushDataAndReplicateStatus',
    time: 'PausePushDataAndReplicateTime',
  },
} as const;

/**
 * The metrics registry of one master or worker process: the machine's `metric` effects, gauges projected from its
 * state at every collection, the driver's observations and the process gauges, rendered under the contract's names
 * for the server's release with the labels role, instance and the extra labels. It only counts and projects.
 */
export function createMetrics(options: MasterMetricsOptions): MasterMetrics;
export function createMetrics(options: WorkerMetricsOptions): WorkerMetrics;
export function createMetrics(
  options: MasterMetricsOptions | WorkerMetricsOptions,
): MasterMetrics | WorkerMetrics {
  const { role, release } = options;
  assertWithinHistory(release);
  const extraLabels = { ...options.extraLabels };
  checkExtraLabels(extraLabels);
  const instance = options.instance;
  const now = options.now ?? (() => performance.now());
  const store = new MetricStore({
    windowSize: options.timerWindowSize ?? 4096,
    sampleRate: options.sampleRate ?? 1,
    random: options.random ?? Math.random,
  });
  // Every unlabelled counter and timer of the role is rendered from the start, at 0.
  for (const spec of METRIC_CATALOGUE) {
    if (spec.role !== role || spec.labels !== undefined) continue;
    if (spec.source !== 'machine' && spec.source !== 'driver') continue;
    if (spec.kind === 'counter') store.declareCounter(spec.name);
    if (spec.kind === 'timer' || spec.kind === 'histogram') store.declareWindow(spec.name, spec.kind);
  }
  const processGauges = options.processGauges === false ? undefined : new ProcessGauges();
  const pauses = {
    push: { paused: false, since: 0, totalMs: 0 },
    replicate: { paused: false, since: 0, totalMs: 0 },
  };

  const projected = async (): Promise<GaugeSample[]> => {
    const backlog: GaugeSample[] = [
      { name: 'DriverBacklog', value: options.backlog?.() ?? 0 },
      ...(options.connections?.() ?? []).map(({ service, count }) => ({
        name: 'ActiveConnectionCount',
        value: count,
        labels: { service },
      })),
    ];
    if (options.role === 'master') {
      return [
        ...masterGauges(options.state(), { userResources: options.userResourceMetrics === true }),
        ...backlog,
      ];
    }
    const gauges = workerGauges(options.state());
    gauges.push(...backlog);
    if (options.devices !== undefined) gauges.push(...deviceGauges(await options.devices()));
    const at = now();
    for (const service of ['push', 'replicate'] as const) {
      const pause = pauses[service];
      const names = PAUSE_NAMES[service];
      gauges.push({ name: names.status, value: pause.paused ? 1 : 0 });
      gauges.push({ name: names.time, value: pause.totalMs + (pause.paused ? at - pause.since : 0) });
    }
    return gauges;
  };

  const collect = async (): Promise<Family[]> => {
    const own = await projected();
    if (processGauges !== undefined) own.push(...processGauges.collect());
    const statics: Labels = {
      ...extraLabels,
      role: METRIC_ROLE_LABEL[role],
      instance: typeof instance === 'string' ? instance : instance(),
    };
    const families = new FamilySet(role, release, statics);
    families.addNumbers('gauge', groupByName(own));
    families.addNumbers('gauge', store.gauges());
    families.addNumbers('counter', store.counters());
    families.addWindows(store.windows());
    return families.list();
  };

  const registry = new Registry();
  // Node's own process metrics under prom-client's standard names (process_open_fds, process_max_fds,
  // nodejs_eventloop_lag_seconds, …): what operators' existing Node dashboards and alerts query (docs/metrics.md).
  if (processGauges !== undefined) collectDefaultMetrics({ register: registry });
  const bridge = new PromBridge(registry);
  const base: ServerMetrics = {
    role,
    release,
    onMetric: (effect) => {
      switch (effect.op) {
        case 'inc':
          store.inc(effect.name, effect.value, effect.labels);
          return;
        case 'set':
          store.set(effect.name, effect.value, effect.labels);
          return;
        case 'observe':
          store.observe(
            effect.name,
            windowKind(specOf(role, effect.name)?.kind),
            effect.value,
            effect.labels,
          );
          return;
      }
    },
    render: async () => {
      bridge.sync(await collect());
      return registry.metrics();
    },
    contentType: registry.contentType,
    json: async () => {
      bridge.sync(await collect());
      return (await registry.getMetricsAsJSON()).map((family) => ({
        name: family.name,
        help: family.help,
        type: String(family.type),
        values: family.values.map((value) => ({
          labels: Object.fromEntries(Object.entries(value.labels).map(([k, v]) => [k, String(v)])),
          value: value.value,
        })),
      }));
    },
    close: () => processGauges?.close(),
    registry,
  };
  if (role === 'master') return base;
  const observations: WorkerObservations = {
    observePush: (mode, bytes) => store.inc(PUSH_SIZE[mode], bytes),
    observePushAnswered: (mode, elapsedMs) => store.observe(PUSH_TIME[mode], 'timer', elapsedMs),
    observeFetchChunk: (bytes, elapsedMs) => {
      store.observe('FetchChunkTime', 'timer', elapsedMs);
      store.observe('FetchChunkTransferSize', 'histogram', bytes);
      store.inc('FetchChunkSize', bytes);
    },
    observeFileIo: (tier, bytes, elapsedMs) => {
      const counters = FLUSH_COUNTERS[tier];
      if (counters === undefined) return;
      store.observe('FlushDataTime', 'timer', elapsedMs);
      if (bytes <= 0) return;
      store.inc(counters.count);
      store.inc(counters.size, bytes);
    },
    observePause: (service, paused) => {
      const pause = pauses[service];
      if (pause.paused === paused) return;
      const at = now();
      if (paused) {
        pause.since = at;
        store.inc(PAUSE_NAMES[service].count);
      } else {
        pause.totalMs += at - pause.since;
      }
      pause.paused = paused;
    },
  };
  return { ...base, ...observations };
}

/** The statistic of a window rendered under `suffix` (Max, Mean, Min or a percentile). */
function statistic(snapshot: WindowSnapshot, suffix: PrometheusSuffix): number {
  if (suffix === 'Max') return snapshot.max;
  if (suffix === 'Mean') return snapshot.mean;
  if (suffix === 'Min') return snapshot.min;
  const quantile = QUANTILES.find((q) => q.suffix === suffix);
  if (quantile === undefined) throw new RangeError(`a timer or histogram has no statistic ${suffix}`);
  return snapshot.quantiles[quantile.suffix];
}

function windowKind(kind: MetricKind | undefined): WindowKind {
  return kind === 'histogram' ? 'histogram' : 'timer';
}

function groupByName(samples: readonly GaugeSample[]): Map<string, Series<number>[]> {
  const byName = new Map<string, Series<number>[]>();
  for (const sample of samples) {
    let series = byName.get(sample.name);
    if (series === undefined) {
      series = [];
      byName.set(sample.name, series);
    }
    series.push({ labels: sample.labels ?? {}, value: sample.value });
  }
  return byName;
}

/** One Prometheus family at one collection: its rendered name, type, help and series (static labels included). */
interface Family {
  readonly name: string;
  readonly type: 'counter' | 'gauge';
  readonly help: string;
  readonly series: readonly Series<number>[];
}

/**
 * The families of one collection, by rendered name. A family already added wins over a later one of the same name:
 * the state's gauges are added first, so a gauge the machine also emits as an effect (IsDecommissioningWorker, the
 * master's worker counts) is rendered from the state.
 */
class FamilySet {
  private readonly families = new Map<string, Family>();

  constructor(
    private readonly role: MetricRole,
    private readonly release: Release,
    private readonly statics: Labels,
  ) {}

  addNumbers(kind: 'counter' | 'gauge', byName: ReadonlyMap<string, readonly Series<number>[]>): void {
    for (const [name, series] of byName) {
      const [family] = seriesFamilies(this.role, this.release, name, kind);
      this.add(family!.name, family!.type, this.help(name), series);
    }
  }

  addWindows(
    byName: ReadonlyMap<
      string,
      { readonly kind: WindowKind; readonly series: readonly Series<SlidingWindow>[] }
    >,
  ): void {
    for (const [name, { kind, series }] of byName) {
      const snapshots = series.map((s) => ({ labels: s.labels, snapshot: s.value.snapshot() }));
      // Timers are in ms, rounded to 2 decimals as the reference renders them.
      const shown = (value: number): number => (kind === 'timer' ? Math.round(value * 100) / 100 : value);
      for (const family of seriesFamilies(this.role, this.release, name, kind)) {
        const values = snapshots.map(({ labels, snapshot }) => ({
          labels,
          value: family.suffix === 'Count' ? snapshot.count : shown(statistic(snapshot, family.suffix)),
        }));
        this.add(family.name, family.type, `${this.help(name)} (${family.suffix})`, values);
      }
    }
  }

  list(): Family[] {
    return [...this.families.values()];
  }

  private add(
    name: string,
    type: 'counter' | 'gauge',
    help: string,
    series: readonly Series<number>[],
  ): void {
    if (this.families.has(name)) return;
    this.families.set(name, {
      name,
      type,
      help,
      series: series.map((s) => ({ labels: sortedLabels({ ...s.labels, ...this.statics }), value: s.value })),
    });
  }

  private help(name: string): string {
    return specOf(this.role, name)?.help ?? `${name}, as the ${this.role} machine reports it.`;
  }
}

/**
 * Labels in the reference's order: sorted by their rendered `name="value"` text. A name that is not a valid label
 * name (a machine's future label, say) has its other characters replaced by `_`, as metric names do.
 */
function sortedLabels(labels: Labels): Labels {
  const named = Object.entries(labels).map(([name, value]): [string, string] => [
    LABEL_NAME.test(name) ? name : `_${name.replace(/[^A-Za-z0-9_]/g, '_')}`,
    value,
  ]);
  const rendered = ([name, value]: [string, string]): string => `${name}="${value}"`;
  named.sort((a, b) => (rendered(a) < rendered(b) ? -1 : rendered(a) > rendered(b) ? 1 : 0));
  return Object.fromEntries(named);
}

/**
 * Keeps one prom-client Counter or Gauge per family in the registry and sets their values to a collection's. A
 * family whose label names, type or help change is registered anew; one that disappeared is removed.
 */
class PromBridge {
  private readonly metrics = new Map<
    string,
    { readonly signature: string; readonly metric: Counter | Gauge }
  >();

  constructor(private readonly registry: Registry) {}

  sync(families: readonly Family[]): void {
    const seen = new Set<string>();
    for (const family of families) {
      seen.add(family.name);
      const labelNames = [...new Set(family.series.flatMap((s) => Object.keys(s.labels)))].sort();
      const signature = `${family.type}\n${family.help}\n${labelNames.join(',')}`;
      let entry = this.metrics.get(family.name);
      if (entry === undefined || entry.signature !== signature) {
        if (entry !== undefined) this.registry.removeSingleMetric(family.name);
        const config = { name: family.name, help: family.help, labelNames, registers: [this.registry] };
        entry = { signature, metric: family.type === 'counter' ? new Counter(config) : new Gauge(config) };
        this.metrics.set(family.name, entry);
      }
      const { metric } = entry;
      metric.reset();
      for (const { labels, value } of family.series) {
        if (metric instanceof Counter) metric.inc(labels, value);
        else metric.set(labels, value);
      }
    }
    for (const name of [...this.metrics.keys()]) {
      if (seen.has(name)) continue;
      this.registry.removeSingleMetric(name);
      this.metrics.delete(name);
    }
  }
}
