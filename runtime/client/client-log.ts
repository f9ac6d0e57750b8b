// Where a client library's own log lines go. An application owns its stdout (its output, often piped on), so the
// library never writes there: it logs through the application's logger when given one, else JSON lines on stderr,
// warnings and errors only unless asked for more.
import { pino } from 'pino';
import { createLogger, type Logger, type LogLevelName } from '../log.ts';

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
): Logger {
  // Through createLogger, so that a line naming `node` itself (a task's driver) carries that key once.
  if (handed === undefined) {
    return createLogger(level ?? 'warn', base, pino.destination({ dest: 2, sync: true }));
  }
  if (typeof handed.warn !== 'function' || typeof handed.error !== 'function') {
    throw new TypeError(
      'the logger handed to the svc client needs warn(fields, message) and error(fields, message)',
    );
  }
  return createLogger(level ?? 'warn', base, {
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
  });
}
