import type { Message } from '../protocol/messages.ts';
import type { Rng } from '../rng.ts';
import type { Effect, Envelope, LogLevel, NodeId } from './effects.ts';

/**
 * What one step of a machine has decided so far: the effects, in the order the driver must execute them, plus the
 * step's clock and random source. Handlers append to it; the step returns its effects. Local to one step, never
 * stored in a state. Shared by every machine so that all of them emit effects the same way.
 */
export interface Outbox {
  readonly now: number;
  readonly rng: Rng;
  readonly effects: Effect[];
}

export function newOutbox(now: number, rng: Rng): Outbox {
  return { now, rng, effects: [] };
}

/** Who to answer: the requester's node and the id of its request (absent for a message that expects no reply). */
export interface ReplyTo {
  readonly node: NodeId;
  readonly requestId: number | undefined;
}

export function replyToOf(envelope: Envelope): ReplyTo {
  return { node: envelope.from, requestId: envelope.requestId };
}

export function send(out: Outbox, to: NodeId, message: Message, requestId?: number): void {
  out.effects.push(
    requestId === undefined ? { kind: 'send', to, message } : { kind: 'send', to, message, requestId },
  );
}

/** A one-way message: no reply expected, so no request id and no timer. */
export function tell(out: Outbox, to: NodeId, message: Message): void {
  send(out, to, message);
}

/** Answers a request; a one-way message (no requestId) gets its answer all the same, marked as a reply to nothing. */
export function reply(out: Outbox, to: ReplyTo, message: Message): void {
  out.effects.push(
    to.requestId === undefined
      ? { kind: 'send', to: to.node, message }
      : { kind: 'send', to: to.node, message, inReplyTo: to.requestId },
  );
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

export function gauge(out: Outbox, name: string, value: number): void {
  out.effects.push({ kind: 'metric', name, op: 'set', value });
}

export function setTimer(out: Outbox, name: string, at: number): void {
  out.effects.push({ kind: 'setTimer', name, at });
}

export function cancelTimer(out: Outbox, name: string): void {
  out.effects.push({ kind: 'cancelTimer', name });
}

/** A copy of `map` with `key` set to `value`, or removed when `value` is undefined. Insertion order is kept. */
export function withEntry<K, V>(map: ReadonlyMap<K, V>, key: K, value: V | undefined): ReadonlyMap<K, V> {
  const copy = new Map(map);
  if (value === undefined) copy.delete(key);
  else copy.set(key, value);
  return copy;
}
