import { excludeWorkers, parseWorkerEventType, sendWorkerEvent } from '../../lifecycle/index.ts';
import type { AdminCommand } from '../effects.ts';
import { adminReply, log } from '../outbox.ts';
import { withWorkers, type MasterOutbox } from './outbox.ts';
import { setQuotaSettings } from './quota.ts';
import type { MasterState } from './state.ts';

/**
 * Operator commands at the master (POST /api/v1/workers/exclude and /workers/events). Each gets one answer: success
 * when it applied to every worker it named, and a message listing what was done and every worker it could not
 * apply to, with the reason. The outcome is logged too; an event reaches its worker in the worker's next heartbeat
 * reply.
 */
export function handleMasterAdmin(
  s: MasterState,
  out: MasterOutbox,
  command: AdminCommand,
  commandId?: number,
): MasterState {
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
      adminReply(
        out,
        commandId,
        problems === 0,
        describe([
          ['excluded', lists.added],
          ['no longer excluded', lists.removed],
          ['already excluded', lists.alreadyExcluded],
          ['were not excluded', lists.notExcluded],
          ['unknown to this master (not registered, not lost)', lists.unknown],
          ['both added and removed, so left as they were', lists.conflicting],
        ]),
      );
      const changed = [...lists.added, ...lists.removed];
      return changed.length > 0 ? withWorkers(s, out, registry, changed) : s;
    }
    case 'workerEvent': {
      let type;
      try {
        type = parseWorkerEventType(command.eventType);
      } catch (error) {
        const message = error instanceof Error ? error.message : String(error);
        log(out, 'error', 'master.admin.badEventType', { message });
        adminReply(out, commandId, false, message);
        return s;
      }
      const { registry, ...lists } = sendWorkerEvent(s.durable.workers, type, command.workers, out.now);
      const problems = lists.refused.length + lists.unknown.length;
      log(out, problems > 0 ? 'warn' : 'info', 'master.admin.workerEvent', { eventType: type, ...lists });
      adminReply(
        out,
        commandId,
        problems === 0,
        describe([
          [`${type} sent`, lists.applied],
          ['unchanged', lists.unchanged.map((entry) => `${entry.worker} (${entry.note})`)],
          ['refused', lists.refused.map((entry) => `${entry.worker} (${entry.reason})`)],
          ['unknown to this master', lists.unknown],
        ]),
      );
      return lists.applied.length > 0 ? withWorkers(s, out, registry, lists.applied) : s;
    }
    case 'quotaSettings':
      return setQuotaSettings(s, out, command.settings, commandId);
    case 'exit':
    case 'congestionWatermarks':
      log(out, 'warn', 'master.admin.unsupported', {
        command: command.type,
        hint: `${command.type} is a worker command; send it to the worker`,
      });
      adminReply(
        out,
        commandId,
        false,
        `${command.type} is a worker command: send it to the worker, not the master`,
      );
      return s;
  }
}

/** `excluded: a, b; unknown to this master: c`, leaving out empty groups; `nothing to do` when all are empty. */
function describe(groups: readonly (readonly [string, readonly string[]])[]): string {
  const parts = groups
    .filter(([, items]) => items.length > 0)
    .map(([label, items]) => `${label}: ${items.join(', ')}`);
  return parts.length > 0 ? parts.join('; ') : 'nothing to do';
}
