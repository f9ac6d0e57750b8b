/**
 * The data-plane benchmark's rows (issue 15's table) from the scenarios' measurements, printed as tables and kept
 * as JSON for CI history.
 */
import type { MemoryPasses } from './floor.ts';
import {
  peakOf,
  type ClientMemoryFigure,
  type Comparison,
  type E2eFigure,
  type RssFigure,
  type Side,
} from './scenarios.ts';

const MIB = 2 ** 20;

export interface Row {
  readonly figure: string;
  /** svc's figure and the baseline's, in `unit`. */
  readonly measured: number;
  readonly baseline?: number;
  readonly unit: string;
  /** measured / baseline. */
  readonly ratio?: number;
  readonly goal: string;
  /** Undefined for a figure that is only reported (and met); false when missed or svc failed. */
  readonly met?: boolean;
  /** svc could not produce the figure: why (counts as missed). */
  readonly failed?: string;
  /** With --rounds: each round's ratio (or measured value, for a row without a ratio). */
  readonly rounds?: readonly number[];
}

/**
 * One row per figure over several rounds: the round whose ratio (or measured value) is the median, with every
 * round's value beside it. A figure svc failed to produce in any round stays failed.
 */
export function medianRows(rounds: readonly (readonly Row[])[]): Row[] {
  if (rounds.length <= 1) return [...(rounds[0] ?? [])];
  const figures: string[] = [];
  const byFigure = new Map<string, Row[]>();
  for (const rows of rounds) {
    for (const row of rows) {
      const key = row.figure;
      if (!byFigure.has(key)) {
        figures.push(key);
        byFigure.set(key, []);
      }
      byFigure.get(key)!.push(row);
    }
  }
  return figures.map((figure) => {
    const rows = byFigure.get(figure)!;
    const value = (row: Row) => row.ratio ?? row.measured;
    const values = rows.map(value);
    const failed = rows.find((row) => row.failed !== undefined);
    if (failed !== undefined) return { ...failed, rounds: values };
    const sorted = [...rows].sort((a, b) => value(a) - value(b));
    return { ...sorted[Math.floor((sorted.length - 1) / 2)]!, rounds: values };
  });
}

/** A row for a figure svc failed to produce. */
export function failedRow(figure: string, unit: string, goal: string, error: string, baseline?: number): Row {
  return {
    figure,
    measured: Number.NaN,
    ...(baseline === undefined ? {} : { baseline }),
    unit,
    goal,
    met: false,
    failed: error,
  };
}

/** A throughput row: the goal is a least share of the baseline's. */
export function throughputRow(comparison: Comparison, least: number | undefined): Row {
  const goal = least === undefined ? 'reported' : `>= ${Math.round(least * 100)} %`;
  const svc = comparison.svc;
  if (svc === undefined) {
    return failedRow(
      comparison.what,
      'MiB/s',
      goal,
      comparison.svcError ?? 'failed',
      comparison.bare.mibPerSecond,
    );
  }
  const ratio = svc.mibPerSecond / comparison.bare.mibPerSecond;
  return {
    figure: comparison.what,
    measured: svc.mibPerSecond,
    baseline: comparison.bare.mibPerSecond,
    unit: 'MiB/s',
    ratio,
    goal,
    ...(least === undefined ? {} : { met: ratio >= least }),
  };
}

export function cpuRow(comparison: Comparison, most: number): Row {
  const figure = 'worker CPU seconds per GiB pushed (memory tier)';
  const svc = comparison.svc;
  if (svc === undefined) {
    return failedRow(figure, 'CPU s/GiB', `<= ${most}x`, comparison.svcError ?? 'failed');
  }
  const ratio = svc.serverCpuPerGiB / comparison.bare.serverCpuPerGiB;
  return {
    figure,
    measured: svc.serverCpuPerGiB,
    baseline: comparison.bare.serverCpuPerGiB,
    unit: 'CPU s/GiB',
    ratio,
    goal: `<= ${most}x`,
    met: ratio <= most,
  };
}

/**
 * The worker's CPU floor in this run, against the discarding sink (the CPU goal's baseline): the sink's CPU plus
 * the memory passes no worker that checks every batch can skip (one CRC-32 pass), and then also the copy into the
 * memory tier's pool. A floor at or above the goal's factor means the goal leaves nothing for the protocol itself.
 */
export function cpuFloorRows(comparison: Comparison, passes: MemoryPasses): Row[] {
  const sink = comparison.bare.serverCpuPerGiB;
  const checked = sink + passes.checksumSecondsPerGiB;
  const kept = checked + passes.copySecondsPerGiB;
  const row = (figure: string, measured: number): Row => ({
    figure,
    measured,
    baseline: sink,
    unit: 'CPU s/GiB',
    ratio: measured / sink,
    goal: 'reported',
  });
  return [
    row('worker CPU floor: the discarding sink + one CRC-32 pass over every byte', checked),
    row('worker CPU floor: the same + one copy of every byte into the pool', kept),
  ];
}

/**
 * The sinks that keep what they receive against the discarding ones (what checking every byte and copying it into
 * memory costs by itself, in throughput and in server CPU), and svc against the keeping sinks: with a memory tier,
 * the first two are the same run's floor, how close svc can come to the discarding baseline on this machine.
 */
export function keepingRows(comparison: Comparison): Row[] {
  const keeping = comparison.keeping;
  if (keeping === undefined) return [];
  const bare = comparison.bare;
  const rows: Row[] = [
    {
      figure: `bare push keeping the bytes, against discarding them (${comparison.scenario})`,
      measured: keeping.mibPerSecond,
      baseline: bare.mibPerSecond,
      unit: 'MiB/s',
      ratio: keeping.mibPerSecond / bare.mibPerSecond,
      goal: 'reported',
    },
    {
      figure: `sink(s) keeping the bytes, CPU s/GiB, against discarding (${comparison.scenario})`,
      measured: keeping.serverCpuPerGiB,
      baseline: bare.serverCpuPerGiB,
      unit: 'CPU s/GiB',
      ratio: keeping.serverCpuPerGiB / bare.serverCpuPerGiB,
      goal: 'reported',
    },
  ];
  const svc = comparison.svc;
  if (svc !== undefined) {
    rows.push({
      figure: `svc against the bare push keeping the bytes (${comparison.scenario})`,
      measured: svc.mibPerSecond,
      baseline: keeping.mibPerSecond,
      unit: 'MiB/s',
      ratio: svc.mibPerSecond / keeping.mibPerSecond,
      goal: 'reported',
    });
    rows.push({
      figure: `worker(s) CPU s/GiB against the sink(s) keeping the bytes (${comparison.scenario})`,
      measured: svc.serverCpuPerGiB,
      baseline: keeping.serverCpuPerGiB,
      unit: 'CPU s/GiB',
      ratio: svc.serverCpuPerGiB / keeping.serverCpuPerGiB,
      goal: 'reported',
    });
  }
  return rows;
}

/**
 * Every measured process's CPU (the worker(s) and the client) per GiB pushed, beside the bare processes'. When the
 * machine's cores are all busy (2 cores, a client and one or two servers), throughput cannot exceed cores over this
 * figure, so bare / svc bounds the throughput ratio: the figure says how far CPU alone is from a goal.
 */
export function totalCpuRow(comparison: Comparison): Row {
  const figure = `client + worker CPU seconds per GiB pushed (${comparison.scenario})`;
  const svc = comparison.svc;
  if (svc === undefined) return failedRow(figure, 'CPU s/GiB', 'reported', comparison.svcError ?? 'failed');
  const perGiB = (side: Side) => (side.serverCpuSeconds + side.clientCpuSeconds) / (side.bytes / 2 ** 30);
  const measured = perGiB(svc);
  const baseline = perGiB(comparison.bare);
  return { figure, measured, baseline, unit: 'CPU s/GiB', ratio: measured / baseline, goal: 'reported' };
}

export function rssRow(figure: RssFigure, slackBytes: number): Row {
  const peak = Math.max(figure.side.serverPeakRssBytes, figure.side.serverHwmBytes);
  const limit = figure.configuredBytes + slackBytes;
  return {
    figure:
      `peak worker RSS while pushing ${(figure.pushedBytes / MIB).toFixed(0)} MiB` +
      (figure.pushedBytes < 4 * 2 ** 30 ? ' (issue: 4 GiB; --rss-size 4g)' : ''),
    measured: peak / MIB,
    baseline: limit / MIB,
    unit: 'MiB',
    ratio: peak / limit,
    goal: `<= configured ${(figure.configuredBytes / MIB).toFixed(0)} MiB + ${(slackBytes / MIB).toFixed(0)} MiB`,
    met: peak <= limit,
  };
}

/** A client process's peak RSS (map executor or reducer) against its own budget + the slack. */
export function clientMemoryRow(figure: ClientMemoryFigure, slackBytes: number): Row {
  const peak = peakOf(figure);
  const limit = figure.budgetBytes + slackBytes;
  return {
    figure: figure.what + (figure.bytes < 4 * 2 ** 30 ? ` (issue: 4 GiB; --${figure.scenario}-size 4g)` : ''),
    measured: peak / MIB,
    baseline: limit / MIB,
    unit: 'MiB',
    ratio: peak / limit,
    goal: `<= ${figure.budget} + ${(slackBytes / MIB).toFixed(0)} MiB`,
    met: peak <= limit,
  };
}

export function rttRows(figure: RssFigure): Row[] {
  const rtt = figure.side.rtt;
  if (rtt === undefined) return [];
  return [
    { figure: 'p50 push round trip under that load', measured: rtt.p50, unit: 'ms', goal: 'reported' },
    { figure: 'p99 push round trip under that load', measured: rtt.p99, unit: 'ms', goal: 'reported' },
  ];
}

export function e2eRow(figure: E2eFigure, least: number): Row {
  const measured = figure.bytes / MIB / figure.svcSeconds;
  const baseline = figure.bytes / MIB / figure.bareSeconds;
  return {
    figure: figure.what,
    measured,
    baseline,
    unit: 'MiB/s',
    ratio: measured / baseline,
    goal: `>= ${Math.round(least * 100)} %`,
    met: measured / baseline >= least,
  };
}

/** The worker's event-loop delay p99 in a run; with `mostMs`, a goal (a run without the figure misses it). */
export function loopRow(comparison: Comparison, mostMs?: number): Row {
  const svc = comparison.svc?.serverLoop;
  const bare = comparison.bare.serverLoop;
  const measured = svc?.p99 ?? Number.NaN;
  return {
    figure: `worker event-loop delay p99 under load (${comparison.scenario})`,
    measured,
    ...(bare === undefined ? {} : { baseline: bare.p99 }),
    unit: 'ms',
    goal: mostMs === undefined ? 'reported' : `<= ${mostMs} ms`,
    ...(mostMs === undefined ? {} : { met: measured <= mostMs }),
  };
}

// ------------------------------------------------------------------ printing

function pad(text: string, width: number, right = false): string {
  return right ? text.padStart(width) : text.padEnd(width);
}

function number(value: number | undefined, digits = 1): string {
  if (value === undefined || !Number.isFinite(value)) return '-';
  return value.toFixed(digits);
}

export function table(headers: readonly string[], rows: readonly (readonly string[])[]): string {
  const widths = headers.map((header, i) =>
    Math.max(header.length, ...rows.map((row) => (row[i] ?? '').length)),
  );
  const line = (cells: readonly string[]) =>
    cells.map((cell, i) => pad(cell, widths[i]!, i > 0 && /^[-\d.]/.test(cell))).join('  ');
  return [line(headers), widths.map((w) => '-'.repeat(w)).join('  '), ...rows.map(line)].join('\n');
}

export function rowsTable(rows: readonly Row[]): string {
  const withRounds = rows.some((row) => row.rounds !== undefined);
  return table(
    ['figure', 'svc', 'baseline', 'unit', 'ratio', 'goal', 'result', ...(withRounds ? ['rounds'] : [])],
    rows.map((row) => [
      row.figure,
      number(row.measured, row.unit === 'MiB' ? 0 : row.unit === 'ms' ? 2 : 1),
      number(row.baseline, row.unit === 'MiB' ? 0 : row.unit === 'ms' ? 2 : 1),
      row.unit,
      row.ratio === undefined ? '-' : `${(row.ratio * 100).toFixed(0)} %`,
      row.goal,
      row.failed !== undefined ? 'FAILED' : row.met === undefined ? 'reported' : row.met ? 'met' : 'MISSED',
      ...(withRounds
        ? [
            (row.rounds ?? [])
              .map((v) => (row.ratio === undefined ? number(v, 1) : `${(v * 100).toFixed(0)}%`))
              .join(' '),
          ]
        : []),
    ]),
  );
}

/** Milliseconds of garbage collection in the measurement, all kinds, with the major (mark-compact) part. */
function gcCell(loop: Side['serverLoop']): string {
  if (loop?.gc === undefined) return '-';
  const all = Object.values(loop.gc).reduce((sum, kind) => sum + kind.ms, 0);
  return `${number(all, 0)} (${number(loop.gc.major?.ms ?? 0, 0)})`;
}

function sideCells(label: string, side: Side): string[] {
  return [
    label,
    number(side.seconds, 2),
    number(side.mibPerSecond),
    `${number(side.serverCpuSeconds, 2)} (${number(side.serverSystemCpuSeconds, 2)})`,
    number(side.serverBackgroundCpuSeconds, 2),
    number(side.serverCpuPerGiB, 2),
    number(side.clientCpuSeconds, 2),
    number(Math.max(side.serverPeakRssBytes, 0) / MIB, 0),
    side.serverLoop === undefined
      ? '-'
      : `${number(side.serverLoop.p50, 1)}/${number(side.serverLoop.p99, 1)}/${number(side.serverLoop.max, 0)}`,
    side.clientLoop === undefined
      ? '-'
      : `${number(side.clientLoop.p50, 1)}/${number(side.clientLoop.p99, 1)}/${number(side.clientLoop.max, 0)}`,
    gcCell(side.serverLoop),
    gcCell(side.clientLoop),
    side.rtt === undefined ? '-' : `${number(side.rtt.p50, 2)}/${number(side.rtt.p99, 2)}`,
    side.messages === undefined ? '-' : String(side.messages),
    `${side.serverContextSwitches.voluntary}/${side.serverContextSwitches.involuntary}`,
    side.serverRunQueueWaitSeconds === undefined ? '-' : number(side.serverRunQueueWaitSeconds * 1000, 0),
    `${number(side.minorFaults.server / 1000, 1)}/${number(side.minorFaults.client / 1000, 1)}`,
  ];
}

/** Every measurement's detail: both sides' time, CPU, memory, event loop and messages. */
export function detailTable(comparisons: readonly Comparison[], rss: RssFigure | undefined): string {
  const rows: string[][] = [];
  for (const c of comparisons) {
    if (c.svc !== undefined) rows.push(sideCells(`${c.scenario} svc`, c.svc));
    else rows.push([`${c.scenario} svc`, 'FAILED']);
    rows.push(sideCells(`${c.scenario} bare`, c.bare));
    if (c.keeping !== undefined) rows.push(sideCells(`${c.scenario} bare, keeping`, c.keeping));
  }
  if (rss !== undefined) rows.push(sideCells('rss svc', rss.side));
  return table(
    [
      'run',
      's',
      'MiB/s',
      'srv CPU s (sys)',
      'srv bg CPU s',
      'srv CPU s/GiB',
      'cli CPU s',
      'srv RSS MiB',
      'srv loop p50/p99/max ms',
      'cli loop p50/p99/max ms',
      'srv GC ms (major)',
      'cli GC ms (major)',
      'RTT p50/p99 ms',
      'messages',
      'srv ctx sw vol/invol',
      'srv wait ms',
      'page faults k srv/cli',
    ],
    rows,
  );
}

export function profileText(comparisons: readonly Comparison[], rss: RssFigure | undefined): string {
  const sides: { label: string; side: Side }[] = [];
  for (const c of comparisons) {
    if (c.svc !== undefined) sides.push({ label: `${c.scenario} svc`, side: c.svc });
    sides.push({ label: `${c.scenario} bare`, side: c.bare });
    if (c.keeping !== undefined) sides.push({ label: `${c.scenario} bare, keeping`, side: c.keeping });
  }
  if (rss !== undefined) sides.push({ label: 'rss svc', side: rss.side });
  const parts: string[] = [];
  for (const { label, side } of sides) {
    for (const { role, summary } of side.profiles ?? []) {
      parts.push(
        `\n--- ${label}, ${role}: ${number(summary.busyMs / 1000, 2)} s busy of ${number(summary.windowMs / 1000, 2)} s ` +
          `(${summary.file})`,
      );
      parts.push(
        table(
          ['area', 'self s', 'share'],
          summary.areas
            .slice(0, 12)
            .map((a) => [a.area, number(a.selfMs / 1000, 2), `${(a.share * 100).toFixed(1)} %`]),
        ),
      );
      parts.push(
        table(
          ['function', 'self s', 'share'],
          summary.top
            .slice(0, 20)
            .map((f) => [f.name, number(f.selfMs / 1000, 2), `${(f.share * 100).toFixed(1)} %`]),
        ),
      );
    }
  }
  return parts.join('\n');
}
