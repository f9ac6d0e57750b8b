// `svc demo` as a user runs it: a child process that starts its own cluster and executors, runs a small job, and
// exits; interrupted, it stops everything and removes its directory; with --keep, the cluster waits for Ctrl-C.
import assert from 'node:assert/strict';
import { spawn, type ChildProcess } from 'node:child_process';
import { existsSync, readdirSync, readFileSync, rmSync } from 'node:fs';
import path from 'node:path';
import { createInterface } from 'node:readline';
import { fileURLToPath } from 'node:url';
import { afterEach, describe, it } from 'node:test';
import { RUN_WAIT_MS } from '../cluster/server-process.ts';
import { within } from '../testing/deadline.ts';
import { etcdSkipReason } from '../testing/etcd.ts';

const CLI = fileURLToPath(new URL('../cli/main.ts', import.meta.url));
const SMALL = ['--size', '8m', '--maps', '4', '--reduces', '6', '--progress', 'lines'];

interface Run {
  readonly child: ChildProcess;
  readonly lines: string[];
  /**
   * Resolves with the first output line (stdout or stderr) that matches, or rejects if the process exits first or
   * no such line comes within RUN_WAIT_MS.
   */
  waitFor(pattern: RegExp): Promise<string>;
  /** The exit code; each read is a wait of its own, which fails after RUN_WAIT_MS (a whole small demo fits). */
  readonly exit: Promise<number | null>;
}

const started: Run[] = [];
const dirs: string[] = [];

function svcDemo(args: readonly string[]): Run {
  const child = spawn(process.execPath, ['--import', 'tsx', CLI, 'demo', ...args], {
    stdio: ['ignore', 'pipe', 'pipe'],
    env: { ...process.env, CI: '' },
  });
  const lines: string[] = [];
  const waiters = new Set<{
    pattern: RegExp;
    resolve: (line: string) => void;
    reject: (error: Error) => void;
  }>();
  const onLine = (line: string) => {
    lines.push(line);
    for (const waiter of waiters) {
      if (!waiter.pattern.test(line)) continue;
      waiters.delete(waiter);
      waiter.resolve(line);
    }
  };
  createInterface({ input: child.stdout }).on('line', onLine);
  createInterface({ input: child.stderr }).on('line', onLine);
  const exited = new Promise<number | null>((resolve) =>
    child.on('exit', (code) => {
      for (const waiter of waiters)
        waiter.reject(new Error(`svc demo exited (${code}) first:\n${lines.join('\n')}`));
      waiters.clear();
      resolve(code);
    }),
  );
  const run: Run = {
    child,
    lines,
    get exit() {
      return within(exited, `svc demo ${args.join(' ')} to exit`, RUN_WAIT_MS);
    },
    waitFor: (pattern) => {
      const seen = lines.find((line) => pattern.test(line));
      if (seen !== undefined) return Promise.resolve(seen);
      if (child.exitCode !== null)
        return Promise.reject(new Error(`svc demo exited first:\n${lines.join('\n')}`));
      return within(
        new Promise((resolve, reject) => waiters.add({ pattern, resolve, reject })),
        `svc demo to print ${String(pattern)}`,
        RUN_WAIT_MS,
      );
    },
  };
  started.push(run);
  return run;
}

/** The directory the demo's cluster uses, from its "data under" line. */
async function dataDir(run: Run): Promise<string> {
  const line = await run.waitFor(/data under /);
  const dir = /data under (\S+)/.exec(line)![1]!;
  dirs.push(dir);
  return dir;
}

afterEach(async () => {
  // Whatever happened, nothing started here outlives its test: a second SIGINT makes the demo kill its children.
  for (const run of started.splice(0)) {
    if (run.child.exitCode === null && run.child.signalCode === null) {
      run.child.kill('SIGINT');
      const timer = setTimeout(() => run.child.kill('SIGINT'), 10_000);
      await run.exit;
      clearTimeout(timer);
    }
  }
  for (const dir of dirs.splice(0)) rmSync(dir, { recursive: true, force: true });
});

describe('svc demo', () => {
  it('runs a small job on a local cluster, verifies it and prints its throughput', async () => {
    const run = svcDemo(SMALL);
    const dir = await dataDir(run);
    const code = await run.exit;
    const output = run.lines.join('\n');
    assert.equal(code, 0, output);
    assert.match(output, /verification OK: 6 partitions, 8192 records/);
    assert.match(output, /map phase: +4 maps, 8\.0 MiB in [\d.]+ s: [\d.]+ MiB\/s/);
    assert.match(output, /reduce phase: 6 reduces, 8\.0 MiB in [\d.]+ s: [\d.]+ MiB\/s/);
    assert.match(output, /worker-0 \S+: [\d.]+ MiB in \d+ files/);
    assert.equal(existsSync(dir), false, 'the temporary directory is removed');
  });

  it('refuses a bad flag with a clear message before starting anything', async () => {
    const run = svcDemo(['--size', '12q']);
    assert.equal(await run.exit, 1);
    assert.match(run.lines.join('\n'), /'12q' is not a size/);
    const tooSmall = svcDemo(['--size', '1k', '--maps', '4']);
    assert.equal(await tooSmall.exit, 2);
    assert.match(tooSmall.lines.join('\n'), /fewer than one per map/);
    const oneWorker = svcDemo(['--workers', '1']);
    assert.equal(await oneWorker.exit, 2);
    assert.match(oneWorker.lines.join('\n'), /replication keeps each partition on two workers/);
  });

  it('stops everything and removes its directory on Ctrl-C, exiting 130', async () => {
    const run = svcDemo(['--size', '4g', '--maps', '64', '--reduces', '8', '--progress', 'lines']);
    const dir = await dataDir(run);
    await run.waitFor(/^application /);
    run.child.kill('SIGINT');
    assert.equal(await run.exit, 130, run.lines.join('\n'));
    assert.equal(existsSync(dir), false, 'the temporary directory is removed');
  });

  it('with --keep, leaves the cluster up and prints its addresses until Ctrl-C', async () => {
    const run = svcDemo([...SMALL, '--keep']);
    const dir = await dataDir(run);
    await run.waitFor(/press Ctrl-C/);
    const output = run.lines.join('\n');
    assert.match(output, /verification OK/);
    assert.match(output, /master +svc:\/\/127\.0\.0\.1:\d+/);
    assert.match(output, /worker-2 +127\.0\.0\.1:\d+:\d+:\d+:\d+ +data /);
    run.child.kill('SIGINT');
    assert.equal(await run.exit, 0, run.lines.join('\n'));
    assert.equal(existsSync(dir), true, '--keep keeps the directory');
  });

  it('with --auth, runs the job with every connection proven and never prints a secret', async () => {
    const run = svcDemo([...SMALL, '--auth', '--keep']);
    const dir = await dataDir(run);
    await run.waitFor(/press Ctrl-C/);
    const output = run.lines.join('\n');
    assert.match(output, /authentication on/);
    assert.match(output, /verification OK: 6 partitions, 8192 records/);
    const secret = readFileSync(path.join(dir, 'internal-secret'), 'utf8').trim();
    const logs = readdirSync(path.join(dir, 'logs')).map((name) =>
      readFileSync(path.join(dir, 'logs', name), 'utf8'),
    );
    for (const text of [output, ...logs]) {
      assert.ok(!text.includes(secret), 'the internal secret is never printed or logged');
      assert.ok(
        !/authentication\.refused|AUTHENTICATION_FAILED/.test(text),
        'nothing of the job was refused',
      );
    }
    run.child.kill('SIGINT');
    assert.equal(await run.exit, 0, run.lines.join('\n'));
  });

  it(
    'with --ha, runs the job on a group of three masters on an etcd it starts, then stops them all',
    { skip: etcdSkipReason },
    async () => {
      const run = svcDemo([...SMALL, '--ha']);
      const dir = await dataDir(run);
      const code = await run.exit;
      const output = run.lines.join('\n');
      assert.equal(code, 0, output);
      assert.match(output, /a group of 3 masters on etcd 127\.0\.0\.1:\d+: m1 leads, m2 and m3 follow/);
      assert.match(output, /verification OK: 6 partitions, 8192 records/);
      assert.equal(existsSync(dir), false, 'the temporary directory, etcd’s data with it, is removed');
    },
  );
});
