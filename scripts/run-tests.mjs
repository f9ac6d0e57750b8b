#!/usr/bin/env node
// Runs every *.test.ts file with node's built-in test runner (through tsx) and exits with its status.
// Node 20 cannot glob test files itself, so the list is gathered here. Extra arguments narrow the run:
//   npm test -- core/slots        (only test files whose path contains "core/slots")
import { spawnSync } from 'node:child_process';
import { readdirSync } from 'node:fs';
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
const result = spawnSync(
  process.execPath,
  // A test that hangs (a process that never answers) fails after the timeout instead of holding CI to its limit.
  [
    '--import',
    'tsx',
    '--test',
    `--test-reporter=${reporter}`,
    '--test-concurrency=2',
    '--test-timeout=300000',
    ...files,
  ],
  { cwd: root, stdio: 'inherit' },
);
process.exit(result.status ?? 1);
