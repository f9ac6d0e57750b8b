// Where a client library's own log lines go. An application owns its stdout (its output, often piped on), so the
// library never writes there: it logs through the application's logger when given one, else JSON lines on stderr,
// warnings and errors only unless asked for more.
import { pino, type DestinationStream } from 'pino';
import { PUSH_MOVED_EVENT } from '../../core/machines/client/map-task.ts';
import { RepeatedLog } from '../log-repeats.ts';
import { createLogger, type Logger, type LogLevelName } from '../log.ts';

/**
 * Lines of expected moves (a partition continuing on another worker as the cluster asked: a split, a worker leaving),
 * which come one per push while an episode lasts: the first of each cause in a summary interval is written, the rest
 * are counted into one `log.repeated` line at its end (as the servers do for repeated warnings, ../log-repeats.ts).
 */
const SUMMARISED_EVENTS: ReadonlySet<string> = new Set([PUSH_MOVED_EVENT]);
const DEFAULT_SUMMARY_INTERVAL_MS = 10_000;

/**
 * The logger an application hands in (`logger` of startApplication and connectExecutor). A pino logger fits as it
 * is, and so does any object with these methods taking pino's arguments: the fields of the event first (`event`,
 * `node`, `role`, …), then the message.
 */
export interface ClientLogger {
  error(fields: Record<string, unknown>, message: string): void;
  warn(fields: Record<string, unknown>, message: string): void;
  info?(fields: Record<string, unknown>, message: string): void;
  debug?(fields: Record<string, unknown>, message: string): void;
}

const METHOD_OF_LEVEL: Record<number, keyof ClientLogger> = {
  10: 'debug',
  20: 'debug',
  30: 'info',
  40: 'warn',
  50: 'error',
  60: 'error',
};

/**
 * The library's logger for one client piece: its lines (at `level`, default `warn`) go to `handed` when the
 * application gave a logger, else to stderr as pino JSON lines.
 */
export function clientLogger(
  handed: ClientLogger | undefined,
  level: LogLevelName | undefined,
  base: Readonly<Record<string, unknown>>,
  summaryIntervalMs: number = DEFAULT_SUMMARY_INTERVAL_MS,
): Logger {
  return summarising(destinationFor(handed), level ?? 'warn', base, summaryIntervalMs);
}

/** A logger over `destination` whose expected-move lines go through a RepeatedLog (SUMMARISED_EVENTS). */
function summarising(
  destination: DestinationStream,
  level: LogLevelName,
  base: Readonly<Record<string, unknown>>,
  intervalMs: number,
): Logger {
  // Through createLogger, so that a line naming `node` itself (a task's driver) carries that key once.
  const repeats = new RepeatedLog(createLogger(level, base, destination), { intervalMs, burst: 1 });
  return createLogger(level, base, {
    write(line: string) {
      const parsed = JSON.parse(line) as Record<string, unknown> & { event?: unknown; msg?: string };
      if (typeof parsed.event !== 'string' || !SUMMARISED_EVENTS.has(parsed.event)) {
        destination.write(line);
        return;
      }
      const { level: _level, time: _time, msg, ...fields } = parsed;
      const event = parsed.event;
      const cause = typeof fields.cause === 'string' ? fields.cause : '';
      repeats.info(cause, { ...fields, event }, msg ?? event);
    },
  });
}

function destinationFor(handed: ClientLogger | undefined): DestinationStream {
  if (handed === undefined) return pino.destination({ dest: 2, sync: true });
  if (typeof handed.warn !== 'function' || typeof handed.error !== 'function') {
    throw new TypeError(
      'the logger handed to the svc client needs warn(fields, message) and error(fields, message)',
    );
  }
  return {
    write(line: string) {
      const {
        level: number,
        msg,
        time: _time,
        ...fields
      } = JSON.parse(line) as Record<string, unknown> & {
        level: number;
        msg?: string;
      };
      const method = METHOD_OF_LEVEL[number] ?? 'error';
      // A logger without info or debug gets none of those lines: they are optional detail.
      handed[method]?.call(handed, fields, msg ?? '');
    },
  };
}
