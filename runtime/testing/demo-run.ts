// `svc demo` run as a user runs it, for the demo's tests: a child process whose output lines a test waits on; every
// run a test started is stopped after it (stopDemosAfterEach), whatever happened.
import { spawn, type ChildProcess } from 'node:child_process';
import { rmSync } from 'node:fs';
import { createInterface } from 'node:readline';
import { fileURLToPath } from 'node:url';
import { afterEach } from 'node:test';
import { RUN_WAIT_MS } from '../cluster/server-process.ts';
import { within } from './deadline.ts';

const CLI = fileURLToPath(new URL('../cli/main.ts', import.meta.url));
export const SMALL = ['--size', '8m', '--maps', '4', '--reduces', '6', '--progress', 'lines'];

export interface Run {
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

export function svcDemo(args: readonly string[]): Run {
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
export async function dataDir(run: Run): Promise<string> {
  const line = await run.waitFor(/data under /);
  const dir = /data under (\S+)/.exec(line)![1]!;
  dirs.push(dir);
  return dir;
}

/** Registers, in the calling test file, the hook that stops every demo its tests started and removes their dirs. */
export function stopDemosAfterEach(): void {
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
}
