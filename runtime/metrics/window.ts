/**
 * The samples of one timer or histogram: the last `size` recorded values (the reference's sliding-window reservoir,
 * `svc.metrics.timer.slidingWindow.size`, default 4096) and how many were ever recorded. Its snapshot is the
 * Count/Max/Mean/Min/percentile series of reference section 10.1.
 */
export class SlidingWindow {
  private readonly values: number[] = [];
  private next = 0;
  private recorded = 0;

  constructor(readonly size: number) {
    if (!Number.isSafeInteger(size) || size < 1) {
      throw new RangeError(`a sliding window holds at least one sample, got size ${size}`);
    }
  }

  /** Records one value; past `size` values the oldest is forgotten. */
  record(value: number): void {
    if (this.values.length < this.size) this.values.push(value);
    else this.values[this.next] = value;
    this.next = (this.next + 1) % this.size;
    this.recorded += 1;
  }

  /** Every value recorded so far, including those the window forgot. */
  get count(): number {
    return this.recorded;
  }

  /** The values the window holds, oldest first. */
  samples(): number[] {
    if (this.values.length < this.size) return [...this.values];
    return [...this.values.slice(this.next), ...this.values.slice(0, this.next)];
  }

  snapshot(): WindowSnapshot {
    return snapshotOf(this.samples(), this.recorded);
  }
}

/** The quantiles rendered for a timer or histogram, with the suffix each one is rendered under. */
export const QUANTILES = [
  { suffix: '50thPercentile', quantile: 0.5 },
  { suffix: '75thPercentile', quantile: 0.75 },
  { suffix: '95thPercentile', quantile: 0.95 },
  { suffix: '98thPercentile', quantile: 0.98 },
  { suffix: '99thPercentile', quantile: 0.99 },
  { suffix: '999thPercentile', quantile: 0.999 },
] as const;

export type QuantileSuffix = (typeof QUANTILES)[number]['suffix'];

export interface WindowSnapshot {
  /** Values ever recorded (not only those in the window). */
  readonly count: number;
  readonly max: number;
  readonly mean: number;
  readonly min: number;
  readonly quantiles: Readonly<Record<QuantileSuffix, number>>;
}

/**
 * The statistics of `samples` (any order): max, mean, min and the QUANTILES, each 0 when there is no sample. A
 * quantile interpolates linearly between the two closest ranks, as the reference's snapshot does: position
 * q × (n + 1) among the sorted values (1-based), clamped to the first and last value.
 */
export function snapshotOf(samples: readonly number[], count: number = samples.length): WindowSnapshot {
  // -0 and 0 compare equal, so which one ends first would depend on the samples' order: a statistic is never -0.
  const sorted = samples.map((value) => (value === 0 ? 0 : value)).sort((a, b) => a - b);
  const n = sorted.length;
  const quantiles = Object.fromEntries(
    QUANTILES.map(({ suffix, quantile }) => [suffix, quantileOf(sorted, quantile)]),
  ) as Record<QuantileSuffix, number>;
  if (n === 0) return { count, max: 0, mean: 0, min: 0, quantiles };
  let sum = 0;
  for (const value of sorted) sum += value;
  return { count, max: sorted[n - 1]!, mean: sum / n, min: sorted[0]!, quantiles };
}

/** The `quantile` (0..1) of ascending `sorted` values; 0 for none. */
export function quantileOf(sorted: readonly number[], quantile: number): number {
  if (!(quantile >= 0 && quantile <= 1)) throw new RangeError(`a quantile is in [0, 1], got ${quantile}`);
  const n = sorted.length;
  if (n === 0) return 0;
  const position = quantile * (n + 1);
  if (position < 1) return sorted[0]!;
  if (position >= n) return sorted[n - 1]!;
  const lower = sorted[Math.floor(position) - 1]!;
  const upper = sorted[Math.floor(position)]!;
  return lower + (position - Math.floor(position)) * (upper - lower);
}
