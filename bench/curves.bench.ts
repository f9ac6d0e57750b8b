/**
 * Scaling curves (issue 37): push throughput into one worker (memory tier) against the partitions of a shuffle
 * (100 to 20,000) and against the batch size (1 KiB to 1 MiB), svc and the bare sink side by side at every point,
 * drawn as charts in bench/results/ (`curve-partitions.svg`/`.png`, `curve-batch-size.svg`/`.png`) and written as
 * JSON beside them.
 *
 * Each point is one run of bench/dataplane.bench.ts (a process of its own, its same-run bare baseline included):
 * - partitions: its many-partitions scenario, `--many-partitions <n>` (64 MiB in maps of 32 MiB, 64 KiB batches);
 * - batch size: its small-batches scenario, `--small-batch <b>` over 256 MiB in 4 maps of 64 MiB into 32 partitions,
 *   so that every map writes 2 MiB to each partition and even 1 MiB batches fill.
 *
 * The PNGs are drawn from the SVGs by @resvg/resvg-js (a devDependency: prebuilt, no native build); without it the
 * SVGs alone are written and the command to add it is printed.
 *
 *   npm run bench -- curves [--only partitions|batch-size] [--partitions 100,500,...] [--batches 1k,4k,...]
 *                           [--rounds n] [--out <dir>] [--many-size 64m] [--batch-total 256m]
 *
 * Exit code (see bench/run.ts): 0, or 1 on error. No goal: the curves are reported.
 */
import { execFileSync, spawnSync } from 'node:child_process';
import { mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { loadavg, tmpdir } from 'node:os';
import path from 'node:path';
import { parseArgs } from 'node:util';
import { parseBytes } from '../conf/values.ts';
import { bytesTick, chartSvg, countTick, type Chart, type CurvePoint } from './curves/plot.ts';
import { machineInfo } from './dataplane/proc.ts';

const HERE = import.meta.dirname;
const RESVG = '@resvg/resvg-js';
const RESVG_INSTALL = 'npm install -D @resvg/resvg-js@2.6.2';

const { values: flags } = parseArgs({
  args: process.argv.slice(2),
  strict: true,
  options: {
    only: { type: 'string' },
    partitions: { type: 'string', default: '100,500,1000,2000,5000,10000,20000' },
    batches: { type: 'string', default: '1k,4k,16k,64k,256k,1m' },
    'many-size': { type: 'string', default: '64m' },
    'batch-total': { type: 'string', default: '256m' },
    'batch-map-size': { type: 'string', default: '64m' },
    rounds: { type: 'string', default: '1' },
    out: { type: 'string', default: path.join(HERE, 'results') },
  },
});

function bytes(text: string): number {
  const parsed = parseBytes(text);
  if (!parsed.ok) throw new Error(`'${text}' is not a size (${parsed.expected})`);
  return parsed.value;
}

interface Measured {
  readonly svc: number | undefined;
  readonly bare: number | undefined;
  readonly svcError?: string;
}

interface DataplaneJson {
  readonly rounds: readonly {
    readonly comparisons: readonly {
      readonly scenario: string;
      readonly svc?: { readonly mibPerSecond: number };
      readonly svcError?: string;
      readonly bare: { readonly mibPerSecond: number };
    }[];
  }[];
}

function median(values: readonly number[]): number | undefined {
  if (values.length === 0) return undefined;
  const sorted = [...values].sort((a, b) => a - b);
  return sorted[Math.floor(sorted.length / 2)];
}

/** One point: a run of dataplane.bench.ts with `flags`, the medians of its rounds' `scenario`. */
function point(scenario: string, dataplaneFlags: readonly string[], work: string): Measured {
  const json = path.join(work, `${scenario}-${dataplaneFlags.join('_').replace(/[^\w.-]/g, '')}.json`);
  const run = spawnSync(
    process.execPath,
    [
      '--import',
      'tsx',
      '--expose-gc',
      path.join(HERE, 'dataplane.bench.ts'),
      '--only',
      scenario,
      '--rounds',
      String(flags.rounds),
      '--json',
      json,
      ...dataplaneFlags,
    ],
    { encoding: 'utf8', env: process.env },
  );
  // 0 or 2 (a goal missed): a result either way; anything else is the harness's failure.
  if (run.status !== 0 && run.status !== 2) {
    throw new Error(
      `dataplane.bench ${dataplaneFlags.join(' ')} exited ${String(run.status)}:\n${run.stdout}\n${run.stderr}`,
    );
  }
  const result = JSON.parse(readFileSync(json, 'utf8')) as DataplaneJson;
  const comparisons = result.rounds.flatMap((round) =>
    round.comparisons.filter((c) => c.scenario === scenario),
  );
  const svcError = comparisons.find((c) => c.svcError !== undefined)?.svcError;
  return {
    svc:
      svcError === undefined
        ? median(comparisons.flatMap((c) => (c.svc ? [c.svc.mibPerSecond] : [])))
        : undefined,
    bare: median(comparisons.map((c) => c.bare.mibPerSecond)),
    ...(svcError === undefined ? {} : { svcError: svcError.split('\n')[0]! }),
  };
}

interface Curve {
  readonly name: string;
  readonly chart: Chart;
  readonly errors: Record<string, string>;
}

function curve(
  name: string,
  xs: readonly number[],
  scenario: string,
  flagsOf: (x: number) => string[],
  chart: Omit<Chart, 'points'>,
  work: string,
): Curve {
  const points: CurvePoint[] = [];
  const errors: Record<string, string> = {};
  for (const x of xs) {
    const measured = point(scenario, flagsOf(x), work);
    const ratio =
      measured.svc !== undefined && measured.bare
        ? ` (${((measured.svc / measured.bare) * 100).toFixed(0)} %)`
        : '';
    console.log(
      `  ${name} ${chart.xTick(x).padStart(8)}: svc ${measured.svc?.toFixed(1) ?? 'FAILED'} MiB/s${ratio}, ` +
        `bare ${measured.bare?.toFixed(1) ?? '-'} MiB/s`,
    );
    if (measured.svcError !== undefined) errors[String(x)] = measured.svcError;
    points.push({ x, svc: measured.svc, bare: measured.bare });
  }
  return { name, chart: { ...chart, points }, errors };
}

/** The rasteriser if it is installed (a devDependency the project may not have yet). */
async function rasteriser(): Promise<((svg: string) => Uint8Array) | undefined> {
  try {
    const { Resvg } = (await import(RESVG)) as {
      Resvg: new (svg: string, options: object) => { render(): { asPng(): Uint8Array } };
    };
    return (svg) =>
      new Resvg(svg, { font: { loadSystemFonts: true, defaultFontFamily: 'DejaVu Sans' } }).render().asPng();
  } catch {
    return undefined;
  }
}

async function main(): Promise<void> {
  const machine = machineInfo();
  const loadBefore = loadavg();
  const commit = execFileSync('git', ['rev-parse', '--short', 'HEAD'], {
    cwd: HERE,
    encoding: 'utf8',
  }).trim();
  const date = new Date().toISOString().slice(0, 10);
  const context = `${date}, tree ${commit}, ${machine.nproc} cores (${machine.cpuModel}), load ${loadBefore[0]!.toFixed(1)}`;
  console.log(`curves: ${context}`);
  const work = mkdtempSync(path.join(tmpdir(), 'svc-bench-curves-'));
  const curves: Curve[] = [];
  try {
    if (flags.only === undefined || flags.only === 'partitions') {
      const size = bytes(flags['many-size']);
      curves.push(
        curve(
          'partitions',
          flags.partitions.split(',').map(Number),
          'many-partitions',
          (p) => ['--many-partitions', String(p), '--many-size', String(size)],
          {
            title: 'Push throughput against partitions per shuffle',
            subtitle: `one worker, memory tier, ${bytesTick(size)} in maps of 32 MiB, 64 KiB batches; ${context}`,
            xLabel: 'partitions per shuffle (log scale)',
            xTick: countTick,
          },
          work,
        ),
      );
    }
    if (flags.only === undefined || flags.only === 'batch-size') {
      const total = bytes(flags['batch-total']);
      const mapSize = bytes(flags['batch-map-size']);
      curves.push(
        curve(
          'batch-size',
          flags.batches.split(',').map(bytes),
          'small-batches',
          (b) => [
            '--small-batch',
            String(b),
            '--small-size',
            String(total),
            '--small-map-size',
            String(mapSize),
          ],
          {
            title: 'Push throughput against batch size',
            subtitle: `one worker, memory tier, ${bytesTick(total)} in maps of ${bytesTick(mapSize)}, 32 partitions; ${context}`,
            xLabel: 'batch size, svc.client.push.buffer.max.size (log scale)',
            xTick: bytesTick,
          },
          work,
        ),
      );
    }
  } finally {
    rmSync(work, { recursive: true, force: true });
  }
  mkdirSync(flags.out, { recursive: true });
  const render = await rasteriser();
  for (const { name, chart, errors } of curves) {
    const svg = chartSvg(chart);
    const base = path.join(flags.out, `curve-${name}`);
    writeFileSync(`${base}.svg`, svg);
    writeFileSync(
      `${base}.json`,
      `${JSON.stringify({ name, context, machine, loadBefore, loadAfter: loadavg(), points: chart.points, errors }, null, 2)}\n`,
    );
    if (render !== undefined) writeFileSync(`${base}.png`, render(svg));
    console.log(
      `${name}: ${path.relative(process.cwd(), base)}.svg${render === undefined ? '' : ', .png'}, .json`,
    );
  }
  if (render === undefined) console.log(`no PNG: ${RESVG} is not installed (${RESVG_INSTALL})`);
  console.log(
    `load average at the end ${loadavg()
      .map((x) => x.toFixed(2))
      .join(' ')}`,
  );
}

main().then(
  () => process.exit(0),
  (error: unknown) => {
    console.error(error);
    process.exit(1);
  },
);
