import { shuffleKey, workerKey, type WorkerKey } from '../../core/domain/index.ts';
import type { Effect, Input, NodeId } from '../../core/machines/effects.ts';
import {
  MASTER_STATE_PREFIX,
  workerEntryKey,
  type WorkerSection,
} from '../../core/machines/master/layout.ts';
import type { MessageType } from '../../core/protocol/messages.ts';
import type { Observer, World } from '../world/world.ts';

type AdminCommand = Extract<Input, { kind: 'admin' }>['command'];

const EXCLUDED = 'excluded by the operator';
const IN_EVENT = 'in the operator’s worker event';
/** The master's own verdict (its `master.worker.lost` log); only a new registration brings the worker back. */
const DECLARED_LOST = 'lost (declared so by the master itself';

/** The worker's exit report (its last heartbeat, in state Exit); only a new registration brings it back. */
const STOPPED = 'stopped (its last heartbeat reported its exit)';

/**
 * What a worker's own report tells the master, until it registers again or a heartbeat it sent after the report
 * says it is back in Normal state (a decommission or shutdown the operator called off).
 */
/** The sections of a master's stored state that say a worker is out of use (core/machines/master/layout.ts). */
const STORED_SECTIONS = ['lost', 'stopped', 'shutdown', 'decommissioning'] as const;

const REPORTS: ReadonlyMap<MessageType, string> = new Map<MessageType, string>([
  ['ReportWorkerUnavailable', 'shutting down (it reported so)'],
  ['ReportWorkerDecommission', 'decommissioning (it reported so)'],
  ['ReportWorkerLost', 'lost (it reported its exit)'],
]);

/**
 * no-slots-on-unavailable, checked against what each decider had been told (never against its internals):
 * - the master: workers it was told are shutting down, decommissioning or lost (their own reports, until they
 *   register again or report Normal state in a heartbeat sent after the report: a stale heartbeat overtaken by the
 *   report on the network does not count), workers the operator excluded (until the operator lifts it) and workers
 *   the master itself declared lost (until they register again) get nothing in an offer, neither locations nor
 *   padding. This knowledge is kept across master restarts as far as the master's store holds it: an operator's
 *   exclusion (acknowledged, so stored) and a worker's shutdown do not end because the master restarted, but a report
 *   or a verdict whose write a crash lost before it was confirmed is forgotten, as the master forgets it.
 * - the master, independently of what it declared: a worker it has heard nothing from (no registration, no
 *   heartbeat) for more than twice its worker heartbeat timeout, counted from its own latest start, gets nothing.
 *   The master checks for silent workers once every timeout, so by then it must have found this one lost; a master
 *   that never declares anyone lost is caught here.
 * - the master: a worker the requesting client listed in its RequestSlots as excluded
 *   (`svc.client.shuffle.register.filterExcludedWorker.enabled`) gets nothing in the answer to that request.
 * - each lifecycle manager: a worker its last application heartbeat listed as excluded, unknown (the master's lost
 *   workers) or shutting down gets no revived location (a reserve the master did not offer that way). The workers a
 *   lifecycle manager excludes on its own after push failures are not checked here: when they end depends on the
 *   cause and on later successes (core/client/worker-status.ts), which a checker could only restate.
 */
export function noSlotsOnUnavailable(
  isMaster: (node: NodeId) => boolean,
  isLifecycleManager: (node: NodeId) => boolean,
  /** The master's `svc.master.heartbeat.worker.timeout` (ms), as it runs now. */
  workerHeartbeatTimeoutMs: (master: NodeId) => number,
): Observer {
  const toldMaster = new Map<WorkerKey, string>();
  const lmKnows = new Map<NodeId, Map<WorkerKey, string>>();
  /** `lm|partitionId|epoch|mode|worker` for every copy the master offered (any shuffle: errs towards silence). */
  const offered = new Set<string>();
  /**
   * Workers the master accepted a registration from. The master refuses to exclude a worker it never knew (a typo
   * must not create a phantom exclusion; docs/core/machines-master-worker.md), so only these can be excluded.
   */
  const registered = new Set<WorkerKey>();
  /**
   * Request id of each worker's latest registration or heartbeat sent so far: ids grow within an incarnation, and a
   * restarted worker registers first, so the entry follows the current incarnation.
   */
  const lastRequestSent = new Map<WorkerKey, number>();
  /** For each worker's latest report: the id of the last request it had sent before it; later ones are newer. */
  const reportedAfterHeartbeat = new Map<WorkerKey, number>();
  /** When the master last received a registration or heartbeat of each worker, and when it last started. */
  const heardAt = new Map<WorkerKey, number>();
  let masterStartedAt = 0;
  /** The excluded workers of each RequestSlots the master has not answered yet, by `client|requestId`. */
  const clientExcluded = new Map<string, ReadonlySet<string>>();

  /** Which master declared each worker lost (a group's next leader may not know; it may not have stored it). */
  const declaredBy = new Map<string, NodeId>();
  /** Workers whose own report or Exit a master heard since the last master start (known after one if it was stored). */
  const stopsHeard = new Set<string>();
  /** The operator commands each master took and has not answered yet, in order (one reply each). */
  const pendingAdmin = new Map<NodeId, AdminCommand[]>();
  /** What an operator's command forbids binds once the master acknowledged it (one a deposed leader never did). */
  const acknowledged = (command: AdminCommand): void => {
    if (command.type === 'excludeWorkers') {
      for (const key of command.add) if (registered.has(key)) toldMaster.set(key, EXCLUDED);
    }
    if (command.type === 'workerEvent' && !endsEvent(command.eventType)) {
      for (const key of command.workers) {
        if (toldMaster.get(key) !== EXCLUDED) toldMaster.set(key, `${IN_EVENT} ${command.eventType}`);
      }
    }
  };
  /**
   * What it lifts frees the worker as soon as the master takes it: the master may offer the worker in the same
   * step, before its acknowledgement (held behind the persist) leaves.
   */
  const taken = (command: AdminCommand): void => {
    if (command.type === 'excludeWorkers') {
      for (const key of command.remove) if (toldMaster.get(key) === EXCLUDED) toldMaster.delete(key);
    }
    if (command.type === 'workerEvent' && endsEvent(command.eventType)) {
      for (const key of command.workers)
        if (toldMaster.get(key)?.startsWith(IN_EVENT)) toldMaster.delete(key);
    }
  };

  /**
   * A master ended with commands unanswered: each may or may not have been stored (a write whose answer was lost), so
   * what they touch is no longer known either way.
   */
  const unknownOutcomes = (node: NodeId): void => {
    for (const command of pendingAdmin.get(node) ?? []) {
      const workers =
        command.type === 'excludeWorkers'
          ? [...command.add, ...command.remove]
          : command.type === 'workerEvent'
            ? command.workers
            : [];
      for (const key of workers) {
        const why = toldMaster.get(key);
        if (why === EXCLUDED || why?.startsWith(IN_EVENT) === true) toldMaster.delete(key);
      }
    }
    pendingAdmin.delete(node);
  };

  return {
    onDeparture(node: NodeId, effect: Effect) {
      if (effect.kind !== 'adminReply' || !isMaster(node)) return;
      const queue = pendingAdmin.get(node);
      const command = queue?.shift();
      if (command !== undefined && effect.success) {
        acknowledged(command);
        // Again at its acknowledgement: a lift taken while an exclusion before it was still unacknowledged.
        taken(command);
        // And the lifts the master took after this command, still unanswered: it applied them in order, so an
        // exclusion acknowledged now does not bind a worker whose lift it already took (both arrive together
        // when an operator's commands waited for a new leader).
        for (const later of queue ?? []) taken(later);
      }
    },
    onCrash(node: NodeId) {
      unknownOutcomes(node);
    },
    onExit(node: NodeId) {
      unknownOutcomes(node);
    },
    inputs: [
      'admin',
      ...REPORTS.keys(),
      'RegisterWorker',
      'WorkerHeartbeat',
      'RequestSlots',
      'ApplicationHeartbeatResponse',
      'RequestSlotsResponse',
    ],
    onStart(node: NodeId, world: World) {
      if (isMaster(node)) masterStartedAt = world.now;
      pendingAdmin.delete(node);
      if (!isMaster(node)) return;
      // A master's store is all it starts from: what it heard or decided is forgotten unless its write was confirmed
      // before it ended (a crash loses the write in flight; the reply it held behind that write never left).
      const stored = (worker: string, sections: readonly WorkerSection[]): boolean =>
        sections.some((section) =>
          world.coordination.has(workerEntryKey(MASTER_STATE_PREFIX, section, worker)),
        );
      // Another master of a group starts leading: what the last one declared lost may never have been stored, and
      // it judges every worker afresh (their timeouts restart). A restarted master keeps its own stored verdicts.
      for (const [worker, by] of declaredBy) {
        if (by === node && stored(worker, ['lost'])) continue;
        declaredBy.delete(worker);
        if (toldMaster.get(worker)?.startsWith(DECLARED_LOST) === true) toldMaster.delete(worker);
      }
      // A worker's own report or Exit binds the master now starting (the one that heard it, restarted, or another
      // of a group) only if it was stored (in any section but the registered workers').
      for (const worker of stopsHeard) {
        stopsHeard.delete(worker);
        const why = toldMaster.get(worker);
        if (why !== STOPPED && ![...REPORTS.values()].includes(why ?? '')) continue;
        if (!stored(worker, STORED_SECTIONS)) toldMaster.delete(worker);
      }
    },
    onInput(node: NodeId, input: Input, world: World) {
      if (isMaster(node)) {
        // An operator's command counts once the master acknowledged it (its reply left): one a deposed leader of
        // a group took and never confirmed was never the group's, and the operator asks again.
        if (input.kind === 'admin') {
          pendingAdmin.set(node, [...(pendingAdmin.get(node) ?? []), input.command]);
          taken(input.command);
        }
        if (input.kind !== 'receive') return;
        const message = input.envelope.message;
        const reported = REPORTS.get(message.type);
        if (reported !== undefined && 'worker' in message) {
          toldMaster.set(workerKey(message.worker), reported);
          stopsHeard.add(workerKey(message.worker));
        } else if (message.type === 'RegisterWorker') {
          const key = workerKey(message.worker);
          heardAt.set(key, world.now);
          if (toldMaster.get(key) !== EXCLUDED) toldMaster.delete(key);
        } else if (message.type === 'WorkerHeartbeat') {
          const key = workerKey(message.worker);
          heardAt.set(key, world.now);
          const why = toldMaster.get(key);
          // Its last heartbeat says Exit: stopped, until it registers again (an operator's exclusion stays).
          if (message.state === 'Exit' && why !== EXCLUDED) {
            toldMaster.set(key, STOPPED);
            stopsHeard.add(key);
            return;
          }
          const sentAfterReport =
            (input.envelope.requestId ?? 0) > (reportedAfterHeartbeat.get(key) ?? Infinity);
          if (
            message.state === 'Normal' &&
            why !== undefined &&
            why !== EXCLUDED &&
            !why.startsWith(IN_EVENT) &&
            !why.startsWith(DECLARED_LOST) &&
            why !== STOPPED &&
            sentAfterReport
          )
            toldMaster.delete(key);
        } else if (message.type === 'RequestSlots') {
          clientExcluded.set(
            `${input.envelope.from}|${input.envelope.requestId ?? ''}`,
            new Set(message.excludedWorkers),
          );
        }
        return;
      }
      if (isLifecycleManager(node) && input.kind === 'receive') {
        const message = input.envelope.message;
        if (message.type === 'ApplicationHeartbeatResponse') {
          const known = new Map<WorkerKey, string>();
          for (const worker of message.unknownWorkers)
            known.set(workerKey(worker), 'lost (unknown to the master)');
          for (const worker of message.excludedWorkers) known.set(workerKey(worker), 'excluded');
          for (const worker of message.shuttingWorkers) known.set(workerKey(worker), 'shutting down');
          lmKnows.set(node, known);
        } else if (message.type === 'RequestSlotsResponse') {
          for (const resource of message.workerResource) {
            const key = workerKey(resource.worker);
            for (const location of [...resource.primaries, ...resource.replicas]) {
              offered.add(`${node}|${location.partitionId}|${location.epoch}|${location.mode}|${key}`);
            }
          }
        }
      }
    },
    effects: [
      'RequestSlotsResponse',
      'ReserveSlots',
      'RegisterWorkerResponse',
      'RegisterWorker',
      'WorkerHeartbeat',
      'log',
      ...REPORTS.keys(),
    ],
    onEffect(node: NodeId, effect: Effect, world: World) {
      if (effect.kind === 'log') {
        if (isMaster(node) && effect.event === 'master.worker.lost') {
          const worker = effect.fields?.['worker'];
          const cause = effect.fields?.['cause'];
          if (typeof worker === 'string') {
            toldMaster.set(worker, `${DECLARED_LOST}: ${String(cause)})`);
            declaredBy.set(worker, node);
          }
        }
        return;
      }
      if (effect.kind !== 'send') return;
      const message = effect.message;
      if (message.type === 'WorkerHeartbeat' || message.type === 'RegisterWorker') {
        lastRequestSent.set(workerKey(message.worker), effect.requestId ?? 0);
        return;
      }
      if (REPORTS.has(message.type) && 'worker' in message) {
        const key = workerKey(message.worker);
        reportedAfterHeartbeat.set(key, lastRequestSent.get(key) ?? 0);
        return;
      }
      if (isMaster(node) && message.type === 'RegisterWorkerResponse') {
        if (message.success) registered.add(effect.to);
        return;
      }
      if (isMaster(node) && message.type === 'RequestSlotsResponse') {
        const request = `${effect.to}|${effect.inReplyTo ?? ''}`;
        const excludedByClient = clientExcluded.get(request);
        clientExcluded.delete(request);
        const silenceLimit = 2 * workerHeartbeatTimeoutMs(node);
        for (const resource of message.workerResource) {
          const key = workerKey(resource.worker);
          const silentFor = world.now - Math.max(heardAt.get(key) ?? -Infinity, masterStartedAt);
          const told = toldMaster.get(key);
          const why =
            told !== undefined
              ? `the master had been told is ${told}`
              : excludedByClient?.has(key) === true
                ? `${effect.to} excluded in its RequestSlots`
                : silentFor > silenceLimit
                  ? `the master had not heard from for ${silentFor} ms, more than twice its worker heartbeat ` +
                    `timeout (${silenceLimit / 2} ms): it must have found the worker lost by then`
                  : undefined;
          if (why === undefined) continue;
          const what =
            resource.primaries.length + resource.replicas.length > 0
              ? `${resource.primaries.length} primaries and ${resource.replicas.length} replicas`
              : 'a padding slot';
          world.fail({
            invariant: 'no-slots-on-unavailable',
            node,
            detail: `offered ${what} on ${key} to ${effect.to}, which ${why}`,
          });
          return;
        }
      }
      if (isLifecycleManager(node) && message.type === 'ReserveSlots') {
        const known = lmKnows.get(node);
        const why = known?.get(effect.to);
        if (why === undefined) return;
        for (const location of [...message.primaries, ...message.replicas]) {
          const asOffered = `${node}|${location.partitionId}|${location.epoch}|${location.mode}|${effect.to}`;
          if (offered.has(asOffered)) continue;
          world.fail({
            invariant: 'no-slots-on-unavailable',
            node,
            detail:
              `reserved partition ${location.partitionId} epoch ${location.epoch} ${location.mode} of ` +
              `${shuffleKey(message.appId, message.shuffleId)} on ${effect.to}, which the master's last heartbeat ` +
              `answer listed as ${why}`,
          });
          return;
        }
      }
    },
  };
}

function endsEvent(eventType: string): boolean {
  return eventType === 'None' || eventType === 'Recommission';
}
