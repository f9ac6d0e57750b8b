import type { Logger } from '../log.ts';

/**
 * SIGTERM and SIGINT: the first runs the role's own way of stopping (a worker's configured exit), the second exits
 * at once, for an operator who does not want to wait.
 */
export function onStopSignals(logger: Logger, stop: (signal: NodeJS.Signals) => void): void {
  let received = false;
  const handler = (signal: NodeJS.Signals): void => {
    if (received) {
      logger.warn({ event: 'process.forcedExit', signal }, `second ${signal}: exiting now`);
      process.exit(130);
    }
    received = true;
    logger.info({ event: 'process.stopping', signal }, `${signal}: stopping`);
    stop(signal);
  };
  process.on('SIGTERM', handler);
  process.on('SIGINT', handler);
}
