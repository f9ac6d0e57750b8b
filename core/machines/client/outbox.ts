import type { Message } from '../../protocol/messages.ts';
import type { Effect, LogLevel, NodeId } from '../effects.ts';

/**
 * The effects one step of a client-side machine (lifecycle manager, map task, reduce task) has decided so far, in
 * the order the driver must execute them, with the step's clock. Local to one step, never stored in a state.
 */
export interface Outbox {
  readonly now: number;
  readonly effects: Effect[];
}

export function newOutbox(now: number): Outbox {
  return { now, effects: [] };
}

/** Who to answer: the requester's node and the id of its request (absent for a message that expects no reply). */
export interface ReplyTo {
  readonly node: NodeId;
  readonly requestId: number | undefined;
}

export function reply(out: Outbox, to: ReplyTo, message: Message): void {
  out.effects.push(
    to.requestId === undefined
      ? { kind: 'send', to: to.node, message }
      : { kind: 'send', to: to.node, message, inReplyTo: to.requestId },
  );
}

/** A one-way message: no reply expected, so no request id and no timer. */
export function tell(out: Outbox, to: NodeId, message: Message): void {
  out.effects.push({ kind: 'send', to, message });
}

export function log(
  out: Outbox,
  level: LogLevel,
  event: string,
  fields?: Readonly<Record<string, unknown>>,
): void {
  out.effects.push(
    fields === undefined ? { kind: 'log', level, event } : { kind: 'log', level, event, fields },
  );
}

export function count(out: Outbox, name: string, by = 1, labels?: Readonly<Record<string, string>>): void {
  out.effects.push(
    labels === undefined
      ? { kind: 'metric', name, op: 'inc', value: by }
      : { kind: 'metric', name, op: 'inc', value: by, labels },
  );
}

export function setTimer(out: Outbox, name: string, at: number): void {
  out.effects.push({ kind: 'setTimer', name, at });
}

export function cancelTimer(out: Outbox, name: string): void {
  out.effects.push({ kind: 'cancelTimer', name });
}
