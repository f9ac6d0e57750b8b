// Servers the suite starts itself (rules about start-up, decommission and exit): a child process of the target's
// `serverCommand`, given `master` or `worker` and `--conf key=value` settings. The suite's launcher protocol: the
// server prints a JSON line with "event":"listening" and its management address ("http": {"port": N}) once it
// serves, or exits when it refuses to start. Everything started here is stopped by stop().
import { spawn, type ChildProcess } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';

export const START_TIMEOUT_MS = 60_000;

export interface Started {
  readonly kind: 'listening';
  readonly server: OwnServer;
  readonly httpUrl: string;
  /** The listening line, parsed. */
  readonly line: Record<string, unknown>;
}
export interface Refused {
  readonly kind: 'exited';
  readonly code: number | null;
  readonly output: string;
}

export class OwnServer {
  readonly output: string[] = [];
  private readonly exit: Promise<number | null>;

  constructor(readonly child: ChildProcess) {
    this.exit = new Promise((resolve) => child.once('exit', (code) => resolve(code)));
    for (const stream of [child.stdout, child.stderr]) {
      let rest = '';
      stream?.setEncoding('utf8');
      stream?.on('data', (chunk: string) => {
        const lines = (rest + chunk).split('\n');
        rest = lines.pop() ?? '';
        this.output.push(...lines);
        this.waiters.forEach((w) => w());
      });
    }
  }

  private readonly waiters = new Set<() => void>();

  exited(): Promise<number | null> {
    return this.exit;
  }

  get running(): boolean {
    return this.child.exitCode === null && this.child.signalCode === null;
  }

  /** Resolves with the first output line `match` accepts (from the beginning), or undefined if the process exits. */
  async waitForLine(
    match: (line: string) => boolean,
    timeoutMs = START_TIMEOUT_MS,
  ): Promise<string | undefined> {
    const found = () => this.output.find(match);
    if (found() !== undefined) return found();
    return new Promise((resolve, reject) => {
      const timer = setTimeout(() => {
        this.waiters.delete(check);
        reject(
          new Error(`no such line within ${timeoutMs} ms; last output: ${this.output.slice(-5).join(' | ')}`),
        );
      }, timeoutMs);
      const check = () => {
        const line = found();
        if (line !== undefined) done(line);
      };
      const done = (line: string | undefined) => {
        clearTimeout(timer);
        this.waiters.delete(check);
        resolve(line);
      };
      this.waiters.add(check);
      void this.exit.then(() => done(found()));
    });
  }

  async stop(): Promise<void> {
    if (this.running) {
      this.child.kill('SIGTERM');
      const timer = setTimeout(() => this.child.kill('SIGKILL'), 10_000);
      await this.exit;
      clearTimeout(timer);
    }
  }
}

function listeningLine(text: string): Record<string, unknown> | undefined {
  if (!text.includes('"listening"')) return undefined;
  try {
    const parsed = JSON.parse(text) as Record<string, unknown>;
    return parsed.event === 'listening' ? parsed : undefined;
  } catch {
    return undefined;
  }
}

/** A scratch directory for the suite's own servers, removed by `dispose`. */
export function scratchDir(): { dir: string; dispose: () => void } {
  const dir = mkdtempSync(path.join(tmpdir(), 'svc-conformance-'));
  return { dir, dispose: () => rmSync(dir, { recursive: true, force: true }) };
}

/** Starts a server and waits until it listens or exits. */
export async function startServer(
  command: readonly string[],
  role: 'master' | 'worker',
  args: readonly string[],
  settings: readonly string[],
): Promise<Started | Refused> {
  const [program, ...first] = command;
  if (program === undefined) throw new Error('the server command is empty');
  const child = spawn(program, [...first, role, ...args, ...settings.flatMap((s) => ['--conf', s])], {
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  const server = new OwnServer(child);
  const line = await server.waitForLine((text) => listeningLine(text) !== undefined);
  if (line === undefined) {
    return { kind: 'exited', code: await server.exited(), output: server.output.join('\n') };
  }
  const parsed = listeningLine(line)!;
  const http = parsed.http as { host?: string; port?: number } | undefined;
  return { kind: 'listening', server, line: parsed, httpUrl: `http://127.0.0.1:${http?.port ?? 0}` };
}

/** Settings that put a master entirely on loopback, on free ports, with its state under `dir`. */
export function masterSettings(dir: string): string[] {
  return [
    'svc.master.host=127.0.0.1',
    'svc.master.port=0',
    'svc.master.http.host=127.0.0.1',
    'svc.master.http.port=0',
    `svc.master.state.dir=${path.join(dir, 'master-state')}`,
  ];
}

/** Settings for a worker on loopback, on free ports, with its disk and recovery store under `dir`. */
export function workerSettings(dir: string): string[] {
  return [
    'svc.worker.host=127.0.0.1',
    ...['rpc', 'push', 'fetch', 'replicate'].map((service) => `svc.worker.${service}.port=0`),
    'svc.worker.http.host=127.0.0.1',
    'svc.worker.http.port=0',
    `svc.worker.storage.dirs=${path.join(dir, 'disk-1')}`,
    `svc.worker.graceful.shutdown.recoverPath=${path.join(dir, 'recover')}`,
  ];
}
