#!/usr/bin/env node
// Runs every *.test.ts file with node's built-in test runner (through tsx) and exits with its status.
// Node 20 cannot glob test files itself, so the list is gathered here. Extra arguments narrow the run:
//   npm test -- core/slots        (only test files whose path contains "core/slots")
import { spawnSync } from 'node:child_process';
import { mkdtempSync, readdirSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';

const root = path.resolve(import.meta.dirname, '..');
const skip = new Set(['node_modules', '.git', 'fixtures', 'coverage']);

function collect(dir, out) {
  for (const entry of readdirSync(dir, { withFileTypes: true })) {
    if (skip.has(entry.name) || entry.name.startsWith('.')) continue;
    const full = path.join(dir, entry.name);
    if (entry.isDirectory()) collect(full, out);
    else if (entry.name.endsWith('.test.ts')) out.push(path.relative(root, full));
  }
  return out;
}

const filters = process.argv.slice(2);
const files = collect(root, [])
  .filter((f) => filters.length === 0 || filters.some((needle) => f.includes(needle)))
  .sort();
if (files.length === 0) {
  console.error(`no test files match ${filters.join(' ') || '*.test.ts'}`);
  process.exit(1);
}

const reporter = process.env.SVC_TEST_REPORTER ?? 'spec';
const scratch = mkdtempSync(path.join(tmpdir(), 'svc-tests-'));
const durationsFile = path.join(scratch, 'durations.json');
const lifetimesFile = path.join(scratch, 'lifetimes.jsonl');
const started = Date.now();
const result = spawnSync(
  process.execPath,
  [
    '--import',
    'tsx',
    // Names a test whose code never yields (which no timeout can interrupt) and ends its file at once.
    '--import',
    './scripts/test-watchdog.mjs',
    // Gives every fast-check property a time bound of its own.
    '--import',
    './scripts/property-time-limit.mjs',
    // Each file's process says how long it lived: the slowest files below.
    '--import',
    './scripts/file-lifetime.mjs',
    // Ends a file's process at its 'exit' event: node 20 can spin for ever in its handle cleanup after it.
    '--import',
    './scripts/end-at-exit.mjs',
    '--test',
    `--test-reporter=${reporter}`,
    '--test-reporter-destination=stdout',
    '--test-reporter=./scripts/file-durations-reporter.mjs',
    `--test-reporter-destination=${durationsFile}`,
    '--test-concurrency=2',
    // A test that hangs (a process that never answers) fails after the timeout instead of holding CI to its limit.
    // Node applies it to each test and to each file as a whole, so it bounds the slowest file too.
    '--test-timeout=300000',
    ...files,
  ],
  { cwd: root, stdio: 'inherit', env: { ...process.env, SVC_TEST_LIFETIMES: lifetimesFile } },
);
printSlowestFiles(durationsFile, lifetimesFile, Date.now() - started);
rmSync(scratch, { recursive: true, force: true });
process.exit(result.status ?? 1);

/** After the runner's own summary (which CI parses), the ten files that took longest, to show where time goes. */
function printSlowestFiles(file, lifetimes, totalMs) {
  let durations;
  try {
    durations = JSON.parse(readFileSync(file, 'utf8'));
  } catch {
    return; // The runner ended before its reporters finished; its own output says why.
  }
  // A process's own lifetime where it wrote one; the runner's time for a process it killed.
  let lines = [];
  try {
    lines = readFileSync(lifetimes, 'utf8').split('\n').filter(Boolean);
  } catch {
    // No file ended on its own.
  }
  for (const line of lines) {
    const { file: name, ms } = JSON.parse(line);
    durations[name] = ms;
  }
  const slowest = Object.entries(durations)
    .sort(([, a], [, b]) => b - a)
    .slice(0, 10);
  const seconds = (ms) => `${(ms / 1000).toFixed(1)} s`.padStart(8);
  console.log(
    `\nthe ten slowest test files (wall time, two files at a time; the whole run ${seconds(totalMs).trim()}):`,
  );
  for (const [name, ms] of slowest) console.log(`${seconds(ms)}  ${path.relative(root, name)}`);
}
