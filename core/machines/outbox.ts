import type { Message } from '../protocol/messages.ts';
import type { Rng } from '../rng.ts';
import type { Effect, Envelope, Input, LogLevel, NodeId } from './effects.ts';

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

/** The one answer to an operator command: success and a message saying what was done and what was not. */
export function adminReply(
  out: Outbox,
  commandId: number | undefined,
  success: boolean,
  message: string,
): void {
  out.effects.push({ kind: 'adminReply', commandId, success, message });
}

/**
 * An input that arrived before `start` is a driver error: it is logged, and an operator command still gets its one
 * answer, so that no caller waits for a reply that never comes.
 */
export function inputBeforeStart(out: Outbox, role: string, input: Input): void {
  log(out, 'error', `${role}.inputBeforeStart`, {
    input: input.kind,
    hint: 'a driver must deliver start first',
  });
  if (input.kind === 'admin') adminReply(out, input.commandId, false, `the ${role} has not started yet`);
}

/** Records (`records`, `recordsEnd`) are a map task's inputs alone: another machine given them logs a driver error. */
export function refuseRecords(out: Outbox, role: string, input: Input): void {
  log(out, 'error', `${role}.recordsUnexpected`, {
    input: input.kind,
    hint: 'only a map task takes the records an application writes',
  });
}

/** The answer of a machine that takes no operator commands (the client side: lifecycle manager and tasks). */
export function refuseAdmin(out: Outbox, role: string, input: Extract<Input, { kind: 'admin' }>): void {
  adminReply(
    out,
    input.commandId,
    false,
    `the ${role} takes no operator commands; send ${input.command.type} to the master or a worker`,
  );
}

export function setTimer(out: Outbox, name: string, at: number): void {
  out.effects.push({ kind: 'setTimer', name, at });
}

export function cancelTimer(out: Outbox, name: string): void {
  out.effects.push({ kind: 'cancelTimer', name });
}

/**
 * Sets `key` to `value` in `map`, or removes it when `value` is undefined, in place, and returns the same map.
 * Insertion order is kept (an existing key keeps its place).
 *
 * For a machine's own state only: a machine owns its state (see machine.ts), so a step updates its maps in place
 * instead of copying them (copying a shuffle's file map on every push dominated the simulator's profile). The state
 * types expose these maps as ReadonlyMap so that everyone else reads them only; every one of them is a Map the
 * machine itself created.
 */
export function setEntry<K, V>(map: ReadonlyMap<K, V>, key: K, value: V | undefined): ReadonlyMap<K, V> {
  const owned = map as Map<K, V>;
  if (value === undefined) owned.delete(key);
  else owned.set(key, value);
  return owned;
}
