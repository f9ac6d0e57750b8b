import { spawn, type ChildProcess } from 'node:child_process';
import { createWriteStream, type WriteStream } from 'node:fs';
import { createInterface } from 'node:readline';
import { fileURLToPath } from 'node:url';
import { allocatorEnvironment } from '../process/allocator.ts';
import { ownModuleCommand } from '../own-entry.ts';

/** svc's own command line, compiled or through tsx as this copy runs (runtime/process/own-entry.ts). */
const CLI = ownModuleCommand('cli/main');

/** The command line of this copy's `svc` servers (`… master`, `… worker`), for launchers outside runtime/. */
export function svcServerCommand(): string[] {
  return [...CLI];
}
/** The test-only entry that takes ServerTestHooks (absent from an installed package: only tests use it). */
const TEST_SERVER = fileURLToPath(new URL('../testing/test-server.ts', import.meta.url));

/**
 * How long a wait for a log line lasts unless the caller says otherwise: the lines tests wait for follow their
 * cause within moments, so that a check that no longer holds fails here, naming the line, instead of hanging to the
 * test runner's global timeout.
 */
export const DEFAULT_WAIT_MS = 30_000;

/** For the lines of a process starting (listening, registered, restored): a cold start under load takes longer. */
export const STARTUP_WAIT_MS = 120_000;

/**
 * For a whole short run of the command line (a small demo, a conformance check): on a loaded machine a cold start
 * alone took over 120 s. Still below the runner's 300 s, so that the wait, not the runner, names what hung.
 */
export const RUN_WAIT_MS = 240_000;

/** One JSON log line of a server (pino): `event` names what happened. */
export interface LogLine {
  readonly event?: string;
  readonly level?: number;
  readonly msg?: string;
  readonly [field: string]: unknown;
}

export interface ServerProcessOptions {
  readonly name: string;
  /** `svc` arguments: `master …` or `worker svc://… …`. */
  readonly args: readonly string[];
  /** Every line the process writes goes to this file as well (kept for diagnosis). */
  readonly logFile: string;
  readonly env?: Readonly<Record<string, string>>;
  /**
   * Runs this command line, `args` appended, instead of svc itself: a wrapper an operator starts svc with (the
   * container's entrypoint, an sbin script in the foreground).
   */
  readonly command?: readonly string[];
  /** Runs the server inside this network namespace (a test host of runtime/cluster/hosts.ts). */
  readonly namespace?: string;
  /**
   * Test-only hooks (runtime/process/master.ts ServerTestHooks): the server runs from runtime/testing/test-server.ts
   * with a planted bug or a separate bind host for a worker's data ports.
   */
  readonly testing?: {
    readonly plantedBug?: string;
    readonly bindHost?: string;
    readonly durableWriteDelayMs?: number;
    readonly scribbleReturnedBodies?: boolean;
  };
}

/**
 * A master or worker running as a child process: its JSON log lines are parsed as they come, so that a caller can
 * wait for an event (`listening`, `worker.registered`, …) instead of sleeping.
 */
export class ServerProcess {
  readonly child: ChildProcess;
  private readonly lines: LogLine[] = [];
  private readonly waiters = new Set<{
    match: (line: LogLine) => boolean;
    resolve: (line: LogLine) => void;
  }>();
  private readonly log: WriteStream;
  private exitWaiters: ((code: number | null) => void)[] = [];
  /** Set once the process exited and its log file was flushed and closed (`exited()` waits for both). */
  private logClosed = false;
  exitCode: number | null | undefined = undefined;
  readonly stderr: string[] = [];

  constructor(readonly options: ServerProcessOptions) {
    this.log = createWriteStream(options.logFile, { flags: 'a' });
    // stdin is a pipe the child watches (SVC_EXIT_WITH_PARENT): when this process dies, even by SIGKILL, the pipe
    // closes and the server stops instead of outliving the cluster that started it.
    const testing = options.testing ?? {};
    const entry =
      testing.plantedBug === undefined &&
      testing.bindHost === undefined &&
      testing.durableWriteDelayMs === undefined &&
      testing.scribbleReturnedBodies !== true
        ? CLI
        : [
            process.execPath,
            '--import',
            'tsx',
            TEST_SERVER,
            ...(testing.plantedBug === undefined ? [] : ['--planted-bug', testing.plantedBug]),
            ...(testing.bindHost === undefined ? [] : ['--bind-host', testing.bindHost]),
            ...(testing.durableWriteDelayMs === undefined
              ? []
              : ['--durable-write-delay', String(testing.durableWriteDelayMs)]),
            ...(testing.scribbleReturnedBodies === true ? ['--scribble-returned-bodies', 'on'] : []),
          ];
    const argv = [...(options.command ?? entry), ...options.args];
    // `ip netns exec` execs the server after entering the namespace: the child's pid and signals are the server's.
    const [command, ...args] =
      options.namespace === undefined ? argv : ['ip', 'netns', 'exec', options.namespace, ...argv];
    this.child = spawn(command!, args, {
      stdio: ['pipe', 'pipe', 'pipe'],
      // The allocator's setting a deployment gives its servers (runtime/process/allocator.ts): an explicit one wins.
      env: { ...allocatorEnvironment(), ...process.env, ...options.env, SVC_EXIT_WITH_PARENT: '1' },
    });
    createInterface({ input: this.child.stdout! }).on('line', (text) => this.onLine(text));
    createInterface({ input: this.child.stderr! }).on('line', (text) => {
      this.stderr.push(text);
      this.writeLog(`[stderr] ${text}\n`);
    });
    this.child.on('exit', (code, signal) => {
      this.exitCode = code ?? (signal === null ? null : -1);
      // The exit is reported once the log file is written and closed: a caller that removes the directory next
      // raced the stream's opening or last write (ENOTEMPTY, the file made again after the removal listed it).
      this.log.end(() => {
        this.logClosed = true;
        for (const waiter of this.exitWaiters) waiter(this.exitCode ?? null);
        this.exitWaiters = [];
      });
      for (const waiter of this.waiters) waiter.resolve({ event: 'process.exited', code, signal });
      this.waiters.clear();
    });
  }

  get pid(): number | undefined {
    return this.child.pid;
  }

  get running(): boolean {
    return this.exitCode === undefined;
  }

  /** Lines seen so far; from line `after` on when given (a `lineCount` read earlier). */
  seen(match: (line: LogLine) => boolean, after = 0): LogLine[] {
    return this.lines.slice(after).filter(match);
  }

  /**
   * Resolves with the first line (already seen or to come) after line `after` that matches. Rejects, naming `what`
   * and this process and quoting its last lines, if the process exits first or no such line comes within
   * `timeoutMs` (DEFAULT_WAIT_MS).
   */
  async waitFor(
    match: (line: LogLine) => boolean,
    what: string,
    after = 0,
    timeoutMs = DEFAULT_WAIT_MS,
  ): Promise<LogLine> {
    const found = this.lines.slice(after).find(match);
    if (found !== undefined) return found;
    const line = await new Promise<LogLine | undefined>((resolve) => {
      if (!this.running) {
        resolve({ event: 'process.exited', code: this.exitCode });
        return;
      }
      const waiter = {
        match,
        resolve: (line: LogLine) => {
          clearTimeout(timer);
          resolve(line);
        },
      };
      const timer = setTimeout(() => {
        this.waiters.delete(waiter);
        resolve(undefined);
      }, timeoutMs);
      this.waiters.add(waiter);
    });
    if (line === undefined) {
      throw new Error(
        `${this.options.name} (pid ${String(this.pid)}) did not log ${what} within ${timeoutMs} ms; ` +
          `last output:\n${this.lastOutput()}`,
      );
    }
    if (line.event === 'process.exited' && !match(line)) {
      throw new Error(
        `${this.options.name} exited (code ${String(line.code)}) before ${what}; last output:\n${this.lastOutput()}`,
      );
    }
    return line;
  }

  /** Resolves with the matching lines after line `after` once there are at least `count` of them (see waitFor). */
  async waitForCount(
    match: (line: LogLine) => boolean,
    count: number,
    what: string,
    after = 0,
    timeoutMs = DEFAULT_WAIT_MS,
  ): Promise<LogLine[]> {
    let found = this.lines.slice(after).filter(match).length;
    if (found < count) {
      await this.waitFor((line) => match(line) && ++found >= count, what, this.lines.length, timeoutMs);
    }
    return this.lines.slice(after).filter(match);
  }

  /** Resolves with the first line of `event` (see waitFor). */
  waitForEvent(event: string, timeoutMs = DEFAULT_WAIT_MS): Promise<LogLine> {
    return this.waitFor((line) => line.event === event, `'${event}'`, 0, timeoutMs);
  }

  /** The last `count` log lines and lines of standard error, for a failure's report. */
  lastOutput(count = 8): string {
    return [...this.lines.slice(-count).map((l) => JSON.stringify(l)), ...this.stderr.slice(-count)].join(
      '\n',
    );
  }

  get lineCount(): number {
    return this.lines.length;
  }

  kill(signal: NodeJS.Signals = 'SIGTERM'): void {
    if (this.running) this.child.kill(signal);
  }

  /**
   * Resolves with the exit code once the process has exited and its log file is closed, however long that takes
   * (stop() bounds it itself).
   */
  exited(): Promise<number | null> {
    if (this.logClosed) return Promise.resolve(this.exitCode ?? null);
    return new Promise((resolve) => this.exitWaiters.push(resolve));
  }

  /** A test's wait for the exit: rejects, naming this process and quoting its last lines, after `timeoutMs`. */
  async waitForExit(timeoutMs = DEFAULT_WAIT_MS): Promise<number | null> {
    let timer: NodeJS.Timeout | undefined;
    const late = new Promise<never>((_resolve, reject) => {
      timer = setTimeout(
        () =>
          reject(
            new Error(
              `${this.options.name} (pid ${String(this.pid)}) did not exit within ${timeoutMs} ms; ` +
                `last output:\n${this.lastOutput()}`,
            ),
          ),
        timeoutMs,
      );
    });
    try {
      return await Promise.race([this.exited(), late]);
    } finally {
      clearTimeout(timer);
    }
  }

  /** SIGTERM, then SIGKILL if it has not exited within `graceMs`. */
  async stop(graceMs = 5_000): Promise<void> {
    if (!this.running) {
      await this.exited();
      return;
    }
    this.kill('SIGTERM');
    const timer = setTimeout(() => this.kill('SIGKILL'), graceMs);
    await this.exited();
    clearTimeout(timer);
  }

  /** A line for the log file; one printed after the exit (its pipe read late) stays in memory only. */
  private writeLog(text: string): void {
    if (!this.log.writableEnded) this.log.write(text);
  }

  private onLine(text: string): void {
    this.writeLog(`${text}\n`);
    let line: LogLine;
    try {
      line = JSON.parse(text) as LogLine;
    } catch {
      line = { event: 'process.text', msg: text };
    }
    this.lines.push(line);
    if (this.lines.length > 20_000) this.lines.splice(0, 10_000);
    for (const waiter of [...this.waiters]) {
      if (waiter.match(line)) {
        this.waiters.delete(waiter);
        waiter.resolve(line);
      }
    }
  }
}
