#!/usr/bin/env node
// The real install, as an operator and an application developer do it (.ci/run; issue 36): `npm pack` each published
// package (packages/), install the tarballs with `npm install --omit=dev` from the registry into empty directories
// (no link to this repository's node_modules): the client alone, to weigh it (at most 15 packages, nothing built
// natively), then the three together. From that install: a master and two workers started by the installed `svc`,
// the documented word count (examples/word-count.mjs) run by the installed client against them and checked, and the
// installed conformance suite run with npx against the same cluster. Plain Node.js: nothing here runs through tsx,
// and nothing installed has it.
import { execFile, spawn } from 'node:child_process';
import {
  cpSync,
  existsSync,
  mkdirSync,
  mkdtempSync,
  readdirSync,
  readFileSync,
  rmSync,
  statSync,
  writeFileSync,
} from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { createInterface } from 'node:readline';
import { clearTimeout, setTimeout } from 'node:timers';
import { promisify } from 'node:util';

const run = promisify(execFile);
const ROOT = path.resolve(import.meta.dirname, '..');
const STARTUP_MS = 120_000;
const CONFORMANCE_MS = 900_000;
const CLIENT_MAX_PACKAGES = 15;
const PACKAGES = ['client', 'server', 'conformance'];
const started = [];

function env() {
  const clean = { ...process.env };
  delete clean.NODE_OPTIONS;
  return clean;
}

/**
 * Starts `svc <args>` from the installed package; resolves once it has printed a line for each of `events` (JSON
 * logs), with the first line of each by event.
 */
function server(app, name, args, events) {
  const event = events.join(', ');
  const seen = {};
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
        if (events.includes(parsed.event) && !(parsed.event in seen)) seen[parsed.event] = parsed;
        if (events.every((wanted) => wanted in seen)) {
          clearTimeout(timer);
          resolve(seen);
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

/** `npm install --omit=dev` of `tarballs` into a new empty application `name`; returns its folder. */
async function install(work, name, tarballs) {
  const app = path.join(work, name);
  mkdirSync(app);
  writeFileSync(path.join(app, 'package.json'), JSON.stringify({ name, private: true, type: 'module' }));
  const at = Date.now();
  const { stdout, stderr } = await run(
    'npm',
    ['install', '--omit=dev', '--no-audit', '--no-fund', '--foreground-scripts', ...tarballs],
    { cwd: app, env: env(), maxBuffer: 64 * 2 ** 20 },
  );
  const listed = await run('npm', ['ls', '--all', '--parseable', '--omit=dev'], { cwd: app, env: env() });
  const packages = listed.stdout.trim().split('\n').length - 1;
  const mib = sizeOf(path.join(app, 'node_modules')) / 2 ** 20;
  console.log(
    `[install-check] ${name}: installed in ${((Date.now() - at) / 1000).toFixed(1)} s: ${packages} packages, ` +
      `${mib.toFixed(1)} MiB`,
  );
  return { app, packages, output: stdout + stderr };
}

/** Packages of the install that build native code when installed: a binding.gyp, or an install script. */
function nativeBuilds(app) {
  const found = [];
  const visit = (modules) => {
    if (!existsSync(modules)) return;
    for (const entry of readdirSync(modules)) {
      if (entry.startsWith('.')) continue;
      if (entry.startsWith('@')) {
        visit(path.join(modules, entry));
        continue;
      }
      const home = path.join(modules, entry);
      const manifest = JSON.parse(readFileSync(path.join(home, 'package.json'), 'utf8'));
      const scripts = manifest.scripts ?? {};
      if (
        existsSync(path.join(home, 'binding.gyp')) ||
        scripts.install ||
        scripts.preinstall ||
        scripts.postinstall
      ) {
        found.push(manifest.name);
      }
      visit(path.join(home, 'node_modules'));
    }
  };
  visit(path.join(app, 'node_modules'));
  return found;
}

const work = mkdtempSync(path.join(tmpdir(), 'svc-install-check-'));
try {
  console.log(
    `[install-check] npm pack ${PACKAGES.map((name) => `packages/${name}`).join(' ')} (each builds first)`,
  );
  const packed = await run(
    'npm',
    ['pack', '--json', '--pack-destination', work, ...PACKAGES.flatMap((name) => ['-w', `packages/${name}`])],
    { cwd: ROOT, env: env(), maxBuffer: 64 * 2 ** 20 },
  );
  const tarballs = Object.fromEntries(
    JSON.parse(packed.stdout.slice(packed.stdout.indexOf('['))).map((entry) => [
      entry.name.replace('@svc-shuffle/', ''),
      path.join(work, entry.filename),
    ]),
  );

  const client = await install(work, 'client-alone', [tarballs.client]);
  const built = nativeBuilds(client.app);
  if (client.packages > CLIENT_MAX_PACKAGES || built.length > 0) {
    throw new Error(
      `the client installs ${client.packages} packages (at most ${CLIENT_MAX_PACKAGES}), ` +
        `native builds: ${built.join(', ') || 'none'}`,
    );
  }
  for (const forbidden of ['tsx', 'typescript', 'fastify', '@nxtedition/rocksdb', 'classic-level']) {
    if (existsSync(path.join(client.app, 'node_modules', forbidden))) {
      throw new Error(`the client alone installs ${forbidden}`);
    }
  }

  const { app } = await install(work, 'app', [tarballs.client, tarballs.server, tarballs.conformance]);
  for (const dev of ['tsx', 'typescript', 'memfs', 'seedrandom', 'fast-check']) {
    if (existsSync(path.join(app, 'node_modules', dev)))
      throw new Error(`${dev} is installed with --omit=dev`);
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
    ['listening'],
  );
  const url = `svc://127.0.0.1:${master.listening.rpc.port}`;
  const workers = await Promise.all(
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
        ['listening', 'worker.registered'],
      ),
    ),
  );
  const text = 'the quick brown fox jumps over the lazy dog\nThe dog sleeps; the fox runs\nÉté, été\n';
  writeFileSync(path.join(app, 'input.txt'), text);
  cpSync(path.join(ROOT, 'examples', 'word-count.mjs'), path.join(app, 'word-count.mjs'));
  const { stdout } = await run(process.execPath, ['word-count.mjs', url, 'input.txt'], {
    cwd: app,
    env: env(),
  });
  const got = stdout.trimEnd().split('\n');
  const want = expectedCounts(text);
  if (JSON.stringify(got) !== JSON.stringify(want)) {
    throw new Error(`the word count printed\n${got.join('\n')}\ninstead of\n${want.join('\n')}`);
  }
  console.log('[install-check] the word count from the installed client: verified');

  // The conformance package as an operator runs it: npx, from the application that installed it, so nothing is
  // fetched. (npx --no would take the suite's flags for npm's own.)
  const httpOf = (lines) => `http://127.0.0.1:${lines.listening.http.port}`;
  const conformanceArgs = [
    '@svc-shuffle/conformance',
    '--master',
    url,
    '--master',
    httpOf(master),
    ...workers.flatMap((line) => ['--worker', httpOf(line)]),
    '--json',
    path.join(work, 'conformance.json'),
  ];
  console.log(`[install-check] npx ${conformanceArgs.join(' ')}`);
  const conformance = await run('npx', conformanceArgs, {
    cwd: app,
    env: env(),
    timeout: CONFORMANCE_MS,
    maxBuffer: 64 * 2 ** 20,
  }).catch((error) => error);
  const summary = (conformance.stdout ?? '').split('\n').filter((line) => line.startsWith('release '));
  console.log(summary.join('\n'));
  if (conformance instanceof Error) {
    throw new Error(`the installed conformance suite failed:\n${conformance.stdout}\n${conformance.stderr}`);
  }
  console.log(
    '[install-check] OK: a master and two workers from the installed svc, the word count verified, ' +
      'the installed conformance suite passed',
  );
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
