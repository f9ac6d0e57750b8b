/**
 * Runs every `bench/*.bench.ts` (or those whose name contains one of the arguments) and summarises.
 *
 *   npm run bench                 every benchmark
 *   npm run bench -- offer-slots  only bench/offer-slots.bench.ts
 *   npm run bench -- dataplane --only fetch --rounds 3
 *                                 names first, then flags (from the first argument that starts with -), which
 *                                 every selected benchmark receives
 *
 * Each benchmark runs in its own process (with --expose-gc, so it may collect garbage between measurements), one
 * after the other, so that one's heap and JIT state cannot slow the next and benchmarks never share the cores. A benchmark prints its own results, each beside a baseline
 * measured in the same run, and reports through its exit code: 0 when its goals are met, GOAL_MISSED (2) when it ran
 * but missed a goal, anything else when it failed. The runner exits non-zero if any benchmark missed or failed.
 */
import { spawnSync } from 'node:child_process';
import { readdirSync } from 'node:fs';
import path from 'node:path';

/** The exit code a benchmark uses for "ran, but missed a goal" (a literal there too: importing this file runs it). */
const GOAL_MISSED = 2;

const benchDir = import.meta.dirname;
const args = process.argv.slice(2);
const firstFlag = args.findIndex((arg) => arg.startsWith('-'));
const filters = firstFlag === -1 ? args : args.slice(0, firstFlag);
const flags = firstFlag === -1 ? [] : args.slice(firstFlag);
const files = readdirSync(benchDir)
  .filter((name) => name.endsWith('.bench.ts'))
  .filter((name) => filters.length === 0 || filters.some((needle) => name.includes(needle)))
  .sort();

if (files.length === 0) {
  console.error(`no benchmark in bench/ matches ${filters.join(' ') || '*.bench.ts'}`);
  process.exit(1);
}

const outcomes: { file: string; outcome: string }[] = [];
for (const file of files) {
  console.log(`\n=== ${file}`);
  const started = performance.now();
  const result = spawnSync(
    process.execPath,
    ['--import', 'tsx', '--expose-gc', path.join(benchDir, file), ...flags],
    {
      stdio: 'inherit',
    },
  );
  const seconds = ((performance.now() - started) / 1000).toFixed(1);
  const outcome =
    result.status === 0
      ? 'goals met'
      : result.status === GOAL_MISSED
        ? 'GOAL MISSED'
        : `FAILED (${result.error?.message ?? (result.signal ? `signal ${result.signal}` : `exit ${result.status}`)})`;
  outcomes.push({ file, outcome: `${outcome} in ${seconds} s` });
}

console.log('\n=== summary');
for (const { file, outcome } of outcomes) console.log(`${file.padEnd(32)} ${outcome}`);
process.exitCode = outcomes.every(({ outcome }) => outcome.startsWith('goals met')) ? 0 : 1;
