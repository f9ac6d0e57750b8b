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

/**
 * SIGTERM or SIGINT while a master of a group waits to be elected, before the server exists to take them
 * (`onStopSignals` is installed once its start returns): `stop` closes what the campaign opened (its lease is
 * revoked, so that no other master waits a TTL for its election key), then the process exits 0. Once `elected`
 * settles the server's own handlers take over.
 */
export function exitOnStopSignalsUntil(
  logger: Logger,
  elected: Promise<unknown>,
  stop: () => Promise<void>,
): void {
  const handler = (signal: NodeJS.Signals): void => {
    remove();
    logger.info({ event: 'process.stopping', signal }, `${signal} before this master was elected: stopping`);
    void stop().finally(() => process.exit(0));
  };
  const remove = (): void => {
    process.off('SIGTERM', handler);
    process.off('SIGINT', handler);
  };
  process.on('SIGTERM', handler);
  process.on('SIGINT', handler);
  elected.then(remove, remove);
}
