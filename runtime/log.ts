import { pino, type DestinationStream, type Logger } from 'pino';

export type { Logger } from 'pino';

export const LOG_LEVELS = ['fatal', 'error', 'warn', 'info', 'debug', 'trace', 'silent'] as const;
export type LogLevelName = (typeof LOG_LEVELS)[number];

/**
 * One JSON line per event on stdout (pino), readable with `pino-pretty`. Every line carries `role` and `node`, and
 * an `event` field that scripts and tests match on (`listening`, `worker.registered`, …). Writes are synchronous so
 * that the line announcing a port is out before anyone can connect, and nothing is lost at exit.
 *
 * `base` is a line's default, not a prefix: a line that names `role` or `node` itself (a worker knows its node id
 * only once its ports are bound) carries its own value, and every key appears once in a line (pino writes its
 * `base` bindings and the line's fields side by side, so that a line naming `node` had it twice).
 */
export function createLogger(
  level: LogLevelName,
  base: Readonly<Record<string, unknown>>,
  destination: DestinationStream = pino.destination({ dest: 1, sync: true }),
): Logger {
  const defaults = { ...base };
  return pino(
    {
      level,
      base: null,
      messageKey: 'msg',
      timestamp: pino.stdTimeFunctions.isoTime,
      mixin: () => ({ ...defaults }),
      mixinMergeStrategy: (line: object, mixed: object) => Object.assign(mixed, line),
    },
    destination,
  );
}

/**
 * A logger that writes at info whatever the process's level: for the few lines scripts and tests wait on (a
 * server's `listening` line with its bound ports), which must not vanish under `--log-level warn`.
 */
export function announce(logger: Logger): Logger {
  return logger.child({}, { level: 'info' });
}
