// Live progress of the demo's phases: cli-progress bars on a terminal, a plain line every few seconds otherwise,
// nothing at all in CI (or when asked).
import cliProgress from 'cli-progress';
import { mib } from './format.ts';

export type ProgressMode = 'auto' | 'bars' | 'lines' | 'none';

export interface PhaseProgress {
  /** Bytes done so far and tasks finished. */
  update(bytes: number, tasksDone: number): void;
  finish(): void;
}

export interface Progress {
  phase(name: string, totalBytes: number, tasks: number, unit: string): PhaseProgress;
  /** Prints a line without breaking the bars. */
  log(line: string): void;
  stop(): void;
}

/** What `auto` means here: bars on a terminal, nothing in CI, lines otherwise. */
export function resolveProgressMode(
  mode: ProgressMode,
  stream: NodeJS.WriteStream = process.stderr,
  env: NodeJS.ProcessEnv = process.env,
): Exclude<ProgressMode, 'auto'> {
  if (mode !== 'auto') return mode;
  if (stream.isTTY) return 'bars';
  const ci = env.CI;
  return ci !== undefined && ci !== '' && ci !== 'false' && ci !== '0' ? 'none' : 'lines';
}

const LINE_EVERY_MS = 5_000;

export function createProgress(mode: Exclude<ProgressMode, 'auto'>, out: (line: string) => void): Progress {
  switch (mode) {
    case 'bars':
      return barsProgress();
    case 'lines':
      return linesProgress(out);
    case 'none':
      return {
        phase: () => ({ update: () => undefined, finish: () => undefined }),
        log: out,
        stop: () => undefined,
      };
  }
}

function rate(bytes: number, since: number): string {
  const seconds = (performance.now() - since) / 1000;
  return seconds > 0 ? (bytes / 2 ** 20 / seconds).toFixed(1) : '0.0';
}

function barsProgress(): Progress {
  const bars = new cliProgress.MultiBar(
    {
      format: '{phase} {bar} {percentage}% | {mib} of {totalMib} | {done}/{tasks} {unit} | {rate} MiB/s',
      barCompleteChar: '█',
      barIncompleteChar: '░',
      barsize: 24,
      hideCursor: true,
      fps: 8,
      stream: process.stderr,
    },
    cliProgress.Presets.shades_classic,
  );
  return {
    phase(name, totalBytes, tasks, unit) {
      const started = performance.now();
      const payload = (bytes: number, done: number) => ({
        phase: name.padEnd(6),
        mib: mib(bytes).padStart(10),
        totalMib: mib(totalBytes),
        done,
        tasks,
        unit,
        rate: rate(bytes, started).padStart(6),
      });
      const bar = bars.create(Math.max(1, totalBytes), 0, payload(0, 0));
      return {
        update: (bytes, done) => bar.update(Math.min(bytes, totalBytes), payload(bytes, done)),
        finish: () => bar.stop(),
      };
    },
    log: (line) => bars.log(`${line}\n`),
    stop: () => bars.stop(),
  };
}

function linesProgress(out: (line: string) => void): Progress {
  let current: (() => void) | undefined;
  const timer = setInterval(() => current?.(), LINE_EVERY_MS);
  timer.unref();
  return {
    phase(name, totalBytes, tasks, unit) {
      const started = performance.now();
      let bytes = 0;
      let done = 0;
      const print = () => {
        const percent = totalBytes > 0 ? Math.floor((100 * bytes) / totalBytes) : 100;
        out(
          `${name}: ${percent}% | ${mib(bytes)} / ${mib(totalBytes)} | ${done}/${tasks} ${unit} | ${rate(bytes, started)} MiB/s`,
        );
      };
      current = print;
      return {
        update: (b, d) => {
          bytes = Math.min(b, totalBytes);
          done = d;
        },
        finish: () => {
          if (current === print) current = undefined;
        },
      };
    },
    log: out,
    stop: () => clearInterval(timer),
  };
}
