import { excludeWorkers, parseWorkerEventType, sendWorkerEvent } from '../../lifecycle/index.ts';
import type { AdminCommand } from '../effects.ts';
import { log } from '../outbox.ts';
import { withWorkers, type MasterOutbox } from './outbox.ts';
import type { MasterState } from './state.ts';

/**
 * Operator commands at the master (POST /api/v1/workers/exclude and /workers/events, already validated by the
 * management interface). The outcome, including every worker the command could not apply to and why, is logged; an
 * event reaches its worker in the worker's next heartbeat reply.
 */
export function handleMasterAdmin(s: MasterState, out: MasterOutbox, command: AdminCommand): MasterState {
  switch (command.type) {
    case 'excludeWorkers': {
      const outcome = excludeWorkers(
        s.durable.workers,
        { add: command.add, remove: command.remove },
        out.now,
      );
      const { registry, ...lists } = outcome;
      const problems = lists.unknown.length + lists.conflicting.length;
      log(out, problems > 0 ? 'warn' : 'info', 'master.admin.exclude', lists);
      return lists.added.length + lists.removed.length > 0 ? withWorkers(s, out, registry) : s;
    }
    case 'workerEvent': {
      let type;
      try {
        type = parseWorkerEventType(command.eventType);
      } catch (error) {
        log(out, 'error', 'master.admin.badEventType', {
          message: error instanceof Error ? error.message : String(error),
        });
        return s;
      }
      const { registry, ...lists } = sendWorkerEvent(s.durable.workers, type, command.workers, out.now);
      const problems = lists.refused.length + lists.unknown.length;
      log(out, problems > 0 ? 'warn' : 'info', 'master.admin.workerEvent', { eventType: type, ...lists });
      return lists.applied.length > 0 ? withWorkers(s, out, registry) : s;
    }
    case 'exit':
      log(out, 'warn', 'master.admin.unsupported', {
        command: command.type,
        hint: 'exit is a worker command; send it to the worker',
      });
      return s;
  }
}
