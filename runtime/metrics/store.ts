import { SlidingWindow } from './window.ts';

/**
 * The values that arrive between scrapes (the machine's `metric` effects and the driver's observations): counters,
 * gauges set by someone, and timer or histogram windows, each by name and label set. Plain accumulators: no
 * prom-client, no clock; rendering reads them (./registry.ts).
 */

export type Labels = Readonly<Record<string, string>>;

export interface Series<T> {
  readonly labels: Labels;
  readonly value: T;
}

export type WindowKind = 'timer' | 'histogram';

/** A label set as a map key: the same labels in any order give the same key. */
export function labelKey(labels: Labels | undefined): string {
  if (labels === undefined) return '';
  const keys = Object.keys(labels);
  if (keys.length === 0) return '';
  return JSON.stringify(keys.sort().map((key) => [key, labels[key]]));
}

interface MutableSeries<T> {
  readonly labels: Labels;
  value: T;
}

export interface MetricStoreOptions {
  /** Samples a timer keeps (`svc.metrics.timer.slidingWindow.size`). */
  readonly windowSize: number;
  /** Fraction of timer observations recorded (`svc.metrics.sample.rate`); histograms record every one. */
  readonly sampleRate: number;
  /** Draws in [0, 1) to sample timers; only consulted when sampleRate is below 1. */
  readonly random: () => number;
}

export class MetricStore {
  private readonly counterSeries = new Map<string, Map<string, MutableSeries<number>>>();
  private readonly gaugeSeries = new Map<string, Map<string, MutableSeries<number>>>();
  private readonly windowSeries = new Map<
    string,
    { readonly kind: WindowKind; readonly series: Map<string, MutableSeries<SlidingWindow>> }
  >();

  constructor(private readonly options: MetricStoreOptions) {
    if (!(options.sampleRate >= 0 && options.sampleRate <= 1)) {
      throw new RangeError(`the timer sample rate is in [0, 1], got ${options.sampleRate}`);
    }
    // Fails here rather than on the first observation.
    new SlidingWindow(options.windowSize);
  }

  /** Adds `by` (finite, not negative; anything else is ignored) to a counter, creating it at 0. */
  inc(name: string, by = 1, labels?: Labels): void {
    if (!Number.isFinite(by) || by < 0) return;
    numberSeries(this.counterSeries, name, labels).value += by;
  }

  /** Sets a gauge (a finite value; anything else is ignored). */
  set(name: string, value: number, labels?: Labels): void {
    if (!Number.isFinite(value)) return;
    numberSeries(this.gaugeSeries, name, labels).value = value;
  }

  /** Records one value of a timer (ms) or histogram; the first observation decides the metric's kind. */
  observe(name: string, kind: WindowKind, value: number, labels?: Labels): void {
    if (!Number.isFinite(value)) return;
    let metric = this.windowSeries.get(name);
    if (metric === undefined) {
      metric = { kind, series: new Map() };
      this.windowSeries.set(name, metric);
    }
    const window = entryOf(metric.series, labels, () => new SlidingWindow(this.options.windowSize));
    if (
      metric.kind === 'timer' &&
      this.options.sampleRate < 1 &&
      this.options.random() >= this.options.sampleRate
    ) {
      return;
    }
    window.value.record(value);
  }

  /** Declares a counter (at 0) so that it is rendered before its first increment. */
  declareCounter(name: string): void {
    numberSeries(this.counterSeries, name, undefined);
  }

  /** Declares a timer or histogram (empty) so that it is rendered before its first observation. */
  declareWindow(name: string, kind: WindowKind): void {
    if (this.windowSeries.has(name)) return;
    this.windowSeries.set(name, {
      kind,
      series: new Map([['', { labels: {}, value: new SlidingWindow(this.options.windowSize) }]]),
    });
  }

  counters(): ReadonlyMap<string, readonly Series<number>[]> {
    return values(this.counterSeries);
  }

  gauges(): ReadonlyMap<string, readonly Series<number>[]> {
    return values(this.gaugeSeries);
  }

  windows(): ReadonlyMap<
    string,
    { readonly kind: WindowKind; readonly series: readonly Series<SlidingWindow>[] }
  > {
    return new Map(
      [...this.windowSeries].map(([name, metric]) => [
        name,
        { kind: metric.kind, series: [...metric.series.values()] },
      ]),
    );
  }
}

/** The series of `labels` among `byKey`, created with `initial()` when new. */
function entryOf<T>(
  byKey: Map<string, MutableSeries<T>>,
  labels: Labels | undefined,
  initial: () => T,
): MutableSeries<T> {
  const key = labelKey(labels);
  let entry = byKey.get(key);
  if (entry === undefined) {
    entry = { labels: { ...labels }, value: initial() };
    byKey.set(key, entry);
  }
  return entry;
}

/** The series of metric `name` and `labels`, created at 0 when new. */
function numberSeries(
  byName: Map<string, Map<string, MutableSeries<number>>>,
  name: string,
  labels: Labels | undefined,
): MutableSeries<number> {
  let byKey = byName.get(name);
  if (byKey === undefined) {
    byKey = new Map();
    byName.set(name, byKey);
  }
  return entryOf(byKey, labels, () => 0);
}

function values(
  byName: ReadonlyMap<string, ReadonlyMap<string, MutableSeries<number>>>,
): ReadonlyMap<string, readonly Series<number>[]> {
  return new Map(
    [...byName].map(([name, byKey]) => [
      name,
      [...byKey.values()].map((entry) => ({ labels: entry.labels, value: entry.value })),
    ]),
  );
}
