import type { Logger } from '../log.ts';
import type { PauseReasons } from './pause-reasons.ts';

/**
 * A server's answer to its driver's full backlog (NodeDriver `onInputsFull`): it stops reading every service that
 * feeds the node until the backlog fell to half its bound, so that peers wait in TCP's window instead of in the
 * process's memory; one warning when reading stops, one line when it resumes.
 */
export function holdWhileBacklogFull(
  pauses: PauseReasons,
  services: readonly string[],
  logger: Logger,
  node: string,
): (full: boolean, backlog: number) => void {
  return (full, backlog) => {
    for (const service of services) pauses.hold('backlog', service, full);
    if (full) {
      logger.warn(
        { event: 'driver.backlog.full', node, backlog, services },
        `${node} has ${backlog} inputs waiting (the durable store is slower than its peers): stopped reading ${services.join(', ')}`,
      );
    } else {
      logger.info(
        { event: 'driver.backlog.drained', node, backlog, services },
        `${node}'s backlog drained: reading ${services.join(', ')} again`,
      );
    }
  };
}
