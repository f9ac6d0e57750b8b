// Progress of a long run of seeds (`npm run sim -- --seeds N` or `--soak`), on stderr so that stdout keeps only the
// verdicts and the summary. On a terminal: a bar; elsewhere (CI logs, a pipe): one line every 30 seconds.
import cliProgress from 'cli-progress';

export interface SeedProgress {
  /** One more seed finished (`failed`: it broke an invariant). */
  seedDone(failed: boolean): void;
  /** Prints a line (a failing seed) without tearing the bar. */
  print(line: string): void;
  stop(): void;
}

export interface ProgressOptions {
  /** Seeds to run; undefined for a soak, whose bar counts minutes instead. */
  readonly seeds?: number;
  readonly minutes?: number;
  readonly stream?: NodeJS.WriteStream;
}

const NOT_A_TERMINAL_EVERY_MS = 30_000;

export function seedProgress(options: ProgressOptions): SeedProgress {
  const stream = options.stream ?? process.stderr;
  const soak = options.seeds === undefined;
  const started = performance.now();
  let seeds = 0;
  let failing = 0;
  const bar = new cliProgress.SingleBar(
    {
      stream,
      format: soak
        ? 'soak |{bar}| {value}/{total} s | {seeds} seeds, {failing} failing | {rate} seeds/minute'
        : 'seeds |{bar}| {value}/{total} | {failing} failing | {rate} seeds/minute | ETA {eta_formatted}',
      noTTYOutput: true,
      notTTYSchedule: NOT_A_TERMINAL_EVERY_MS,
      hideCursor: false,
      etaBuffer: 200,
      formatTime: formatDuration,
    },
    cliProgress.Presets.shades_classic,
  );
  const payload = () => {
    const minutes = (performance.now() - started) / 60_000;
    return { seeds, failing, rate: minutes > 0 ? Math.round(seeds / minutes) : 0 };
  };
  const value = () => (soak ? Math.floor((performance.now() - started) / 1000) : seeds);
  const total = soak ? Math.round((options.minutes ?? 0) * 60) : options.seeds;
  bar.start(total, 0, payload());
  return {
    seedDone(failed) {
      seeds += 1;
      if (failed) failing += 1;
      bar.update(Math.min(value(), total), payload());
    },
    print(line) {
      if (!stream.isTTY) {
        console.log(line);
        return;
      }
      // Clear the bar's line and print; the next update draws the bar again below.
      stream.write('\r\x1b[2K');
      console.log(line);
    },
    stop() {
      bar.update(Math.min(value(), total), payload());
      bar.stop();
    },
  };
}

/** Whole seconds as `1h 05m`, `9m 07s` or `42s` (the library's own rounds 599.6 s to "9m60s"). */
export function formatDuration(seconds: number): string {
  const total = Math.max(0, Math.round(seconds));
  const hours = Math.floor(total / 3600);
  const minutes = Math.floor((total % 3600) / 60);
  const rest = total % 60;
  const two = (n: number) => String(n).padStart(2, '0');
  if (hours > 0) return `${hours}h ${two(minutes)}m`;
  if (minutes > 0) return `${minutes}m ${two(rest)}s`;
  return `${rest}s`;
}
