import type { Effect, Input, NodeId } from '../../core/machines/effects.ts';
import type { Observer, World } from '../world/world.ts';

/** A request the checker saw leave for a running process, not answered yet. */
interface Owed {
  readonly sender: NodeId;
  /** The sender's process when it asked (counted by this checker's own starts). */
  readonly senderProcess: number;
  readonly to: NodeId;
  readonly type: string;
  readonly requestId: number;
}

interface Due extends Owed {
  /** The end of `to`'s process that left it unanswered, and when its sender must have heard. */
  readonly endedAt: number;
  readonly deadline: number;
}

/**
 * unanswered-requests-failed: a request a process took (or that was on its way to it) and had not answered when the
 * process ended (a crash, an exit, a relaunch) is failed at its sender (`sendFailed`) within one network round trip
 * of the end, unless the sender's own process ended first. A sender left to its own deadline waits out a whole
 * timeout per request on a peer that can never answer (issue 34).
 *
 * Kept from what leaves and arrives: requests when they depart for a running process, answers when they depart or
 * reach the sender, `sendFailed` when the sender takes it. Overdue requests are found at the next input anywhere after their deadline.
 */
export function unansweredRequestsFailed(): Observer {
  /** By the process that owes them, then `sender#requestId`. */
  const owed = new Map<NodeId, Map<string, Owed>>();
  /** Requests whose process ended, until their sender hears; by `sender#requestId@to`. */
  const due = new Map<string, Due>();
  let earliest = Infinity;
  const processes = new Map<NodeId, number>();

  const ended = (node: NodeId, world: World): void => {
    const left = owed.get(node);
    if (left === undefined || left.size === 0) return;
    owed.delete(node);
    const deadline = world.now + world.network.roundTrip();
    for (const request of left.values()) {
      due.set(`${request.sender}#${request.requestId}@${request.to}`, {
        ...request,
        endedAt: world.now,
        deadline,
      });
    }
    earliest = Math.min(earliest, deadline);
  };

  const check = (world: World): void => {
    if (world.now <= earliest) return;
    earliest = Infinity;
    for (const [key, request] of due) {
      const senderRuns =
        world.isUp(request.sender) && processes.get(request.sender) === request.senderProcess;
      if (!senderRuns) {
        due.delete(key);
        continue;
      }
      if (world.now > request.deadline) {
        world.fail({
          invariant: 'unanswered-requests-failed',
          node: request.sender,
          detail:
            `${request.to} ended at ${request.endedAt} ms without answering ${request.type} #${request.requestId} ` +
            `of ${request.sender}, and by ${world.now} ms ${request.sender} had not been told (sendFailed)`,
        });
        return;
      }
      earliest = Math.min(earliest, request.deadline);
    }
  };

  return {
    // Every input: any of them may be the first after a deadline.
    onInput(node: NodeId, input: Input, world: World) {
      // An answer that reached the sender settles the request, whoever gave it: the peer's machine, or the peer's
      // refusal of the connection's handshake, which the sender's end answers in the peer's name.
      if (input.kind === 'receive' && input.envelope.inReplyTo !== undefined) {
        const from = input.envelope.from;
        owed.get(from)?.delete(`${node}#${input.envelope.inReplyTo}`);
        due.delete(`${node}#${input.envelope.inReplyTo}@${from}`);
      }
      if (input.kind === 'sendFailed' && input.requestId !== undefined) {
        due.delete(`${node}#${input.requestId}@${input.to}`);
        owed.get(input.to)?.delete(`${node}#${input.requestId}`);
      }
      if (due.size > 0) check(world);
    },
    onDeparture(node: NodeId, effect: Effect, world: World) {
      if (effect.kind !== 'send') return;
      if (effect.inReplyTo !== undefined) {
        owed.get(node)?.delete(`${effect.to}#${effect.inReplyTo}`);
        return;
      }
      if (effect.requestId === undefined || !world.isUp(effect.to)) return;
      let waiting = owed.get(effect.to);
      if (waiting === undefined) {
        waiting = new Map();
        owed.set(effect.to, waiting);
      }
      waiting.set(`${node}#${effect.requestId}`, {
        sender: node,
        senderProcess: processes.get(node) ?? 0,
        to: effect.to,
        type: effect.message.type,
        requestId: effect.requestId,
      });
    },
    onStart(node: NodeId, world: World) {
      // A relaunch ends the process without a crash or an exit.
      ended(node, world);
      processes.set(node, (processes.get(node) ?? 0) + 1);
    },
    onCrash(node: NodeId, world: World) {
      ended(node, world);
    },
    onExit(node: NodeId, _code: number, _reason: string, world: World) {
      ended(node, world);
    },
  };
}
