#!/usr/bin/env node
// The real install, as an operator and an application developer do it (.ci/run; issue 36): `npm pack` the project,
// `npm install --omit=dev` the tarball into an empty directory from the registry (no link to this repository's
// node_modules), start a master and two workers from the installed `svc` binary, run the documented word count
// (examples/word-count.mjs) from the installed client against them and check its output. Prints what the install
// weighs. Plain Node.js: nothing here runs through tsx, and the installed package has none.
import { execFile, spawn } from 'node:child_process';
import { cpSync, mkdtempSync, readdirSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { createInterface } from 'node:readline';
import { clearTimeout, setTimeout } from 'node:timers';
import { promisify } from 'node:util';

const run = promisify(execFile);
const ROOT = path.resolve(import.meta.dirname, '..');
const STARTUP_MS = 120_000;
const started = [];

function env() {
  const clean = { ...process.env };
  delete clean.NODE_OPTIONS;
  return clean;
}

/** Starts `svc <args>` from the installed package; resolves with its first line carrying `event` (JSON logs). */
function server(app, name, args, event) {
  const child = spawn(path.join(app, 'node_modules', '.bin', 'svc'), args, { cwd: app, env: env() });
  started.push(child);
  const lines = [];
  return new Promise((resolve, reject) => {
    const timer = setTimeout(
      () => reject(new Error(`${name}: no ${event} in ${STARTUP_MS} ms:\n${lines.join('\n')}`)),
      STARTUP_MS,
    );
    child.on('exit', (code) => {
      clearTimeout(timer);
      reject(new Error(`${name} exited (${code}) before ${event}:\n${lines.slice(-20).join('\n')}`));
    });
    child.stderr.on('data', (chunk) => lines.push(String(chunk)));
    createInterface({ input: child.stdout }).on('line', (line) => {
      lines.push(line);
      try {
        const parsed = JSON.parse(line);
        if (parsed.event === event) {
          clearTimeout(timer);
          resolve(parsed);
        }
      } catch {
        // not a log line
      }
    });
  });
}

function sizeOf(dir) {
  let bytes = 0;
  for (const entry of readdirSync(dir, { withFileTypes: true })) {
    const full = path.join(dir, entry.name);
    if (entry.isDirectory()) bytes += sizeOf(full);
    else if (entry.isFile()) bytes += statSync(full).size;
  }
  return bytes;
}

function expectedCounts(text) {
  const counts = new Map();
  for (const word of text.toLowerCase().match(/[\p{L}\p{N}']+/gu) ?? [])
    counts.set(word, (counts.get(word) ?? 0) + 1);
  return [...counts].sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0)).map(([w, c]) => `${w}\t${c}`);
}

const work = mkdtempSync(path.join(tmpdir(), 'svc-install-check-'));
try {
  console.log('[install-check] npm pack (builds dist/)');
  const packed = await run('npm', ['pack', '--json', '--pack-destination', work], { cwd: ROOT, env: env() });
  const [{ filename }] = JSON.parse(packed.stdout.slice(packed.stdout.indexOf('[')));
  const app = path.join(work, 'app');
  cpSync(path.join(ROOT, 'examples', 'word-count.mjs'), path.join(work, 'word-count.mjs'));
  rmSync(app, { recursive: true, force: true });
  await run('mkdir', ['-p', app]);
  writeFileSync(
    path.join(app, 'package.json'),
    JSON.stringify({ name: 'install-check', private: true, type: 'module' }),
  );
  console.log(`[install-check] npm install --omit=dev ${filename}`);
  const at = Date.now();
  await run('npm', ['install', '--omit=dev', '--no-audit', '--no-fund', path.join(work, filename)], {
    cwd: app,
    env: env(),
    maxBuffer: 64 * 2 ** 20,
  });
  const modules = path.join(app, 'node_modules');
  const listed = await run('npm', ['ls', '--all', '--parseable', '--omit=dev'], { cwd: app, env: env() });
  const packages = listed.stdout.trim().split('\n').length - 1;
  console.log(
    `[install-check] installed in ${((Date.now() - at) / 1000).toFixed(1)} s: ${packages} packages, ` +
      `${(sizeOf(modules) / 2 ** 20).toFixed(0)} MiB`,
  );
  for (const dev of ['tsx', 'typescript', 'memfs', 'seedrandom']) {
    if (readdirSync(modules).includes(dev))
      console.log(`[install-check] note: ${dev} is installed (a production dependency)`);
  }

  const dir = (name) => path.join(work, name);
  const master = await server(
    app,
    'master',
    [
      'master',
      ...['svc.master.host=127.0.0.1', 'svc.master.port=0', 'svc.master.http.port=0'].flatMap((c) => [
        '--conf',
        c,
      ]),
      '--conf',
      `svc.master.state.dir=${dir('master-state')}`,
    ],
    'listening',
  );
  const url = `svc://127.0.0.1:${master.rpc.port}`;
  await Promise.all(
    [1, 2].map((i) =>
      server(
        app,
        `worker-${i}`,
        [
          'worker',
          url,
          ...['svc.worker.host=127.0.0.1', 'svc.worker.http.port=0'].flatMap((c) => ['--conf', c]),
          '--conf',
          `svc.worker.storage.dirs=${dir(`worker-${i}`)}`,
          '--conf',
          `svc.worker.graceful.shutdown.recoverPath=${dir(`recover-${i}`)}`,
        ],
        'worker.registered',
      ),
    ),
  );
  const text = 'the quick brown fox jumps over the lazy dog\nThe dog sleeps; the fox runs\nÉté, été\n';
  writeFileSync(path.join(app, 'input.txt'), text);
  cpSync(path.join(work, 'word-count.mjs'), path.join(app, 'word-count.mjs'));
  const { stdout } = await run(process.execPath, ['word-count.mjs', url, 'input.txt'], {
    cwd: app,
    env: env(),
  });
  const got = stdout.trimEnd().split('\n');
  const want = expectedCounts(text);
  if (JSON.stringify(got) !== JSON.stringify(want)) {
    throw new Error(`the word count printed\n${got.join('\n')}\ninstead of\n${want.join('\n')}`);
  }
  console.log(`[install-check] OK: a master and two workers from the installed svc, the word count verified`);
} catch (error) {
  console.error(`[install-check] FAILED: ${error instanceof Error ? error.message : String(error)}`);
  process.exitCode = 1;
} finally {
  for (const child of started) child.kill('SIGTERM');
  await Promise.all(
    started.map((child) => (child.exitCode === null ? new Promise((r) => child.on('exit', r)) : null)),
  );
  rmSync(work, { recursive: true, force: true });
}
