// The driver's handle on one executor process: spawns it, sends it tasks, and hands its answers to a listener.
// Lines that are not part of the protocol (the client library's logs, stderr) go to the executor's log file.
import { spawn, type ChildProcess } from 'node:child_process';
import { createWriteStream, type WriteStream } from 'node:fs';
import { createInterface } from 'node:readline';
import { ownModuleCommand } from '../own-entry.ts';
import { decodeLine, encodeLine, type FromExecutor, type ToExecutor } from './protocol.ts';

const EXECUTOR = ownModuleCommand('demo/executor');

export class ExecutorProcess {
  readonly child: ChildProcess;
  private readonly log: WriteStream;
  private readonly lastLines: string[] = [];
  private readonly exit: Promise<number | null>;
  exitCode: number | null | undefined = undefined;
  private readyWaiter: { resolve: () => void; reject: (error: Error) => void } | undefined;

  constructor(
    readonly name: string,
    logFile: string,
    private readonly onMessage: (message: FromExecutor, from: ExecutorProcess) => void,
    private readonly onExit: (from: ExecutorProcess, code: number | null) => void,
  ) {
    this.log = createWriteStream(logFile, { flags: 'a' });
    this.child = spawn(EXECUTOR[0]!, EXECUTOR.slice(1), { stdio: ['pipe', 'pipe', 'pipe'] });
    this.child.stdin!.on('error', () => undefined); // an executor that died: its exit says so
    createInterface({ input: this.child.stdout! }).on('line', (line) => {
      const message = decodeLine<FromExecutor>(line);
      if (message === undefined) this.note(line);
      else if (message.type === 'ready') this.readyWaiter?.resolve();
      else if (message.type === 'fatal' && this.readyWaiter !== undefined) {
        this.readyWaiter.reject(new Error(`${this.name} could not start: ${message.error}`));
      } else this.onMessage(message, this);
    });
    createInterface({ input: this.child.stderr! }).on('line', (line) => this.note(`[stderr] ${line}`));
    this.exit = new Promise((resolve) => {
      this.child.on('exit', (code, signal) => {
        this.exitCode = code ?? (signal === null ? null : -1);
        this.log.end();
        this.readyWaiter?.reject(
          new Error(`${this.name} exited (code ${code}, signal ${signal}) before it was ready${this.tail()}`),
        );
        this.onExit(this, this.exitCode);
        resolve(this.exitCode);
      });
    });
  }

  get running(): boolean {
    return this.exitCode === undefined;
  }

  /** Sends the init line and resolves once the executor is ready. */
  start(init: Extract<ToExecutor, { type: 'init' }>): Promise<void> {
    const ready = new Promise<void>((resolve, reject) => {
      this.readyWaiter = {
        resolve: () => {
          this.readyWaiter = undefined;
          resolve();
        },
        reject: (error) => {
          this.readyWaiter = undefined;
          reject(error);
        },
      };
    });
    this.send(init);
    return ready;
  }

  send(message: ToExecutor): void {
    if (this.running) this.child.stdin!.write(encodeLine(message));
  }

  /** The last lines it logged, for an error message. */
  tail(): string {
    return this.lastLines.length === 0 ? '' : `; its last lines:\n  ${this.lastLines.join('\n  ')}`;
  }

  /** Asks it to exit once its tasks end; SIGKILL if it has not within `graceMs`. */
  async stop(graceMs = 5_000): Promise<void> {
    if (!this.running) return;
    this.send({ type: 'exit' });
    this.child.stdin!.end();
    const timer = setTimeout(() => this.kill('SIGKILL'), graceMs);
    await this.exit;
    clearTimeout(timer);
  }

  kill(signal: NodeJS.Signals): void {
    if (this.running) this.child.kill(signal);
  }

  exited(): Promise<number | null> {
    return this.exit;
  }

  private note(line: string): void {
    this.log.write(`${line}\n`);
    this.lastLines.push(line.length > 500 ? `${line.slice(0, 500)}…` : line);
    if (this.lastLines.length > 8) this.lastLines.shift();
  }
}
