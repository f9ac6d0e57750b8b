/**
 * The benchmark's own child processes (clients and bare sinks): `node --import <probe> <entry>`, the entry compiled
 * or through tsx (./compiled.ts; the probe measures event-loop delay and, when profiling, CPU: ./probe.mjs), an IPC
 * channel for requests and answers (./protocol.ts), their output kept for the error of a child that fails.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { pathToFileURL } from 'node:url';
import path from 'node:path';
import { allocatorEnvironment } from '../../runtime/process/allocator.ts';

const HERE = import.meta.dirname;
export const PROBE_URL = pathToFileURL(path.join(HERE, 'probe.mjs')).href;

export interface ChildOptions {
  readonly name: string;
  /** What `node` runs after the probe: the compiled file, or `--import tsx` and the source (./compiled.ts). */
  readonly entry: readonly string[];
  /** Where the event-loop probe writes (./probe.mjs). */
  readonly probeDir: string;
  /** Directory for a CPU profile of the process (./probe.mjs), when profiling. */
  readonly cpuProfileDir?: string;
}

interface Answer {
  readonly type: string;
}

/** A child answering one request at a time. */
export class Child<In extends { readonly type: string }, Out extends Answer> {
  private readonly process: ChildProcess;
  private readonly output: string[] = [];
  private readonly waiting: { resolve: (message: Out) => void; reject: (error: Error) => void }[] = [];
  private readonly exited: Promise<void>;
  private stopping = false;

  private constructor(readonly options: ChildOptions) {
    this.process = spawn(process.execPath, ['--import', PROBE_URL, ...options.entry], {
      stdio: ['ignore', 'pipe', 'pipe', 'ipc'],
      // Every child (servers, bare sinks, clients alike) gets the allocator setting svc's servers are deployed with
      // (docs/operations.md, Memory and the allocator), so that both sides of a comparison run on the same malloc.
      env: {
        ...allocatorEnvironment(),
        ...process.env,
        SVC_BENCH_PROBE_DIR: options.probeDir,
        ...(options.cpuProfileDir === undefined ? {} : { SVC_BENCH_CPU_PROF_DIR: options.cpuProfileDir }),
      },
    });
    const keep = (chunk: Buffer) => {
      this.output.push(chunk.toString('utf8'));
      if (this.output.length > 200) this.output.splice(0, 100);
    };
    this.process.stdout!.on('data', keep);
    this.process.stderr!.on('data', keep);
    this.process.on('message', (message: Out) => {
      const waiter = this.waiting.shift();
      if (waiter === undefined) {
        // A failure outside any request (a sink's stream): worth seeing, though nobody waits for it.
        if (message.type === 'failed') console.error(`${options.name}: ${JSON.stringify(message)}`);
        return;
      }
      if (message.type === 'failed') {
        const error = (message as unknown as { readonly error?: unknown }).error;
        waiter.reject(new Error(`${options.name}: ${String(error)}`));
      } else waiter.resolve(message);
    });
    this.exited = new Promise((resolve) => {
      this.process.on('exit', (code, signal) => {
        const error = new Error(
          `${options.name} exited (${signal ?? `code ${String(code)}`}); its last output:\n` +
            this.output.join('').split('\n').slice(-30).join('\n'),
        );
        const waiters = this.waiting.splice(0);
        for (const waiter of waiters) waiter.reject(error);
        if (waiters.length === 0 && !this.stopping) console.error(error.message);
        resolve();
      });
    });
  }

  /** Starts the child and waits for its first message (its `ready`). */
  static async start<I extends { readonly type: string }, O extends Answer>(
    options: ChildOptions,
  ): Promise<Child<I, O>> {
    const child = new Child<I, O>(options);
    await child.next();
    return child;
  }

  get pid(): number {
    return this.process.pid ?? 0;
  }

  private next(): Promise<Out> {
    return new Promise((resolve, reject) => this.waiting.push({ resolve, reject }));
  }

  /** Sends a request and resolves with its answer (rejects with the child's error or its exit). */
  ask(message: In): Promise<Out> {
    const answer = this.next();
    this.process.send(message);
    return answer;
  }

  /** Asks the child to exit (`{type: 'exit'}`); SIGKILL after `graceMs`. */
  async stop(exit: In, graceMs = 10_000): Promise<void> {
    if (this.process.exitCode !== null || this.process.signalCode !== null) return;
    this.stopping = true;
    if (this.process.connected) this.process.send(exit);
    const timer = setTimeout(() => this.process.kill('SIGKILL'), graceMs);
    await this.exited;
    clearTimeout(timer);
  }
}
