/**
 * A before/after comparison of the data-plane benchmark across two source trees, in one session:
 *
 *   node --import tsx bench/compare-trees.ts <before-tree> [--rounds n] [-- <dataplane flags>]
 *
 * runs `bench/dataplane.bench.ts` of the tree given (an extracted commit, e.g. `git archive <rev> | tar -x -C dir`
 * with a `node_modules` link) and of this tree in turn, `--rounds` times (default 1), with the same flags, then
 * prints one row per figure: each tree's svc figure and its ratio to the bare baseline of its own run, and this
 * tree's figure over the other's. The machine is shared: alternating the trees within one session is what makes the
 * figures comparable (docs/performance.md, Method).
 */
import { spawnSync } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';

interface SvcSide {
  readonly mibPerSecond: number;
  readonly clientCpuSeconds: number;
  readonly serverCpuSeconds: number;
  readonly messages?: number;
}

interface Results {
  readonly rows: Row[];
  readonly rounds: { readonly comparisons: { readonly scenario: string; readonly svc?: SvcSide }[] }[];
}

interface Row {
  readonly figure: string;
  readonly measured?: number;
  readonly baseline?: number;
  readonly unit: string;
  readonly ratio?: number;
}

const args = process.argv.slice(2);
const split = args.indexOf('--');
const own = split === -1 ? args : args.slice(0, split);
const flags = split === -1 ? [] : args.slice(split + 1);
const before = own.find((arg) => !arg.startsWith('-'));
const roundsAt = own.indexOf('--rounds');
const rounds = roundsAt === -1 ? 1 : Number(own[roundsAt + 1]);
if (before === undefined || !(Number.isInteger(rounds) && rounds > 0)) {
  console.error('usage: compare-trees.ts <before-tree> [--rounds n] [-- <dataplane flags>]');
  process.exit(2);
}
const trees = { before: path.resolve(before), after: path.resolve(import.meta.dirname, '..') };
const out = mkdtempSync(path.join(tmpdir(), 'svc-compare-'));

const results: Record<'before' | 'after', Row[][]> = { before: [], after: [] };
const details: Record<'before' | 'after', Results['rounds']> = { before: [], after: [] };
for (let round = 0; round < rounds; round += 1) {
  for (const side of ['before', 'after'] as const) {
    const json = path.join(out, `${side}-${round}.json`);
    console.log(`\n=== round ${round + 1}/${rounds}: ${side} (${trees[side]})`);
    spawnSync(
      process.execPath,
      [
        '--import',
        'tsx',
        '--expose-gc',
        path.join(trees[side], 'bench', 'dataplane.bench.ts'),
        ...flags,
        '--json',
        json,
      ],
      { cwd: trees[side], stdio: 'inherit' },
    );
    try {
      const parsed = JSON.parse(readFileSync(json, 'utf8')) as Results;
      results[side].push(parsed.rows);
      details[side].push(...parsed.rounds);
    } catch {
      console.error(`no results from ${side} in round ${round + 1}`);
    }
  }
}

// A failed run's figures are null in its JSON.
const fmt = (n: number | null | undefined, digits = 1) => (typeof n !== 'number' ? '-' : n.toFixed(digits));
const pct = (n: number | null | undefined) => (typeof n !== 'number' ? '-' : `${(n * 100).toFixed(0)} %`);
console.log(
  `\n| figure | before: svc | before: of bare | after: svc | after: of bare | after / before | rounds (after / before) |`,
);
console.log('| --- | --- | --- | --- | --- | --- | --- |');
const figures = results.after[0]?.map((row) => row.figure) ?? [];
for (const figure of figures) {
  const pick = (side: 'before' | 'after') =>
    results[side].map((rows) => rows.find((row) => row.figure === figure)).filter((row) => row !== undefined);
  const b = pick('before');
  const a = pick('after');
  const median = (rows: Row[], key: 'measured' | 'ratio') => {
    const values = rows.map((row) => row[key]).filter((v): v is number => v !== undefined);
    values.sort((x, y) => x - y);
    return values.length === 0 ? undefined : values[Math.floor((values.length - 1) / 2)];
  };
  const perRound = a.map((row, i) =>
    row.measured !== undefined && b[i]?.measured !== undefined
      ? (row.measured / b[i].measured).toFixed(2)
      : '-',
  );
  const mb = median(b, 'measured');
  const ma = median(a, 'measured');
  const unit = a[0]?.unit ?? '';
  console.log(
    `| ${figure} | ${fmt(mb)} ${unit} | ${pct(median(b, 'ratio'))} | ${fmt(ma)} ${unit} | ` +
      `${pct(median(a, 'ratio'))} | ${ma !== undefined && mb !== undefined && mb > 0 ? (ma / mb).toFixed(2) : '-'} | ` +
      `${perRound.join(' ')} |`,
  );
}

console.log('\n| push (svc side) | messages (before / after) | client CPU s | worker CPU s | MiB/s |');
console.log('| --- | --- | --- | --- | --- |');
const scenarios = details.after[0]?.comparisons.map((c) => c.scenario) ?? [];
for (const scenario of scenarios) {
  const sides = (side: 'before' | 'after') =>
    details[side].map((round) => round.comparisons.find((c) => c.scenario === scenario)?.svc);
  const b = sides('before');
  const a = sides('after');
  const both = (get: (s: SvcSide) => number | undefined, digits: number) =>
    `${b.map((s) => (s === undefined ? '-' : fmt(get(s), digits))).join(', ')} / ` +
    `${a.map((s) => (s === undefined ? '-' : fmt(get(s), digits))).join(', ')}`;
  console.log(
    `| ${scenario} | ${both((s) => s.messages, 0)} | ${both((s) => s.clientCpuSeconds, 2)} | ` +
      `${both((s) => s.serverCpuSeconds, 2)} | ${both((s) => s.mibPerSecond, 1)} |`,
  );
}
rmSync(out, { recursive: true, force: true });
