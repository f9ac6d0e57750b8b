import type { Message } from '../../protocol/messages.ts';
import type { NodeId } from '../effects.ts';
import { cancelTimer, setEntry, setTimer, type Outbox } from '../outbox.ts';

/**
 * The requests a machine has sent and still awaits, each with what it was for (`P`) and a timeout timer named
 * `req:<id>`, because networks drop messages. A reply settles its request; a reply to an id that is no longer open
 * (it timed out and was retried under a new id) is stale and must be ignored by the caller.
 *
 * Part of its machine's state, which the machine owns (machine.ts): asking and settling update the table's map in
 * place (a map task keeps a request open per partition, and copying that map on every reply was quadratic).
 */
export interface RequestTable<P> {
  readonly nextId: number;
  readonly open: ReadonlyMap<number, OpenRequest<P>>;
}

export interface OpenRequest<P> {
  readonly id: number;
  readonly to: NodeId;
  readonly message: Message;
  readonly purpose: P;
  /** 1 for the first try; a retry re-sends with attempt + 1 under a new id. */
  readonly attempt: number;
}

const TIMER_PREFIX = 'req:';

export function emptyRequests<P>(): RequestTable<P> {
  return { nextId: 1, open: new Map() };
}

/** Sends `message` as a request and arms its timeout; returns the table with the request open. */
export function ask<P>(
  table: RequestTable<P>,
  out: Outbox,
  request: { readonly to: NodeId; readonly message: Message; readonly purpose: P; readonly attempt?: number },
  timeoutMs: number,
): RequestTable<P> {
  const id = table.nextId;
  out.effects.push({ kind: 'send', to: request.to, message: request.message, requestId: id });
  setTimer(out, requestTimer(id), out.now + timeoutMs);
  const open = setEntry(table.open, id, {
    id,
    to: request.to,
    message: request.message,
    purpose: request.purpose,
    attempt: request.attempt ?? 1,
  });
  return { nextId: id + 1, open };
}

/** Closes a request (its reply arrived, or the send failed) and cancels its timer; `request` is undefined when stale. */
export function settle<P>(
  table: RequestTable<P>,
  out: Outbox,
  id: number | undefined,
): { table: RequestTable<P>; request?: OpenRequest<P> } {
  const request = id === undefined ? undefined : table.open.get(id);
  if (request === undefined) return { table };
  cancelTimer(out, requestTimer(request.id));
  setEntry(table.open, request.id, undefined);
  return { table, request };
}

/** The request whose timeout a timer named `name` is, closed; undefined when the timer is not a request timeout. */
export function expire<P>(
  table: RequestTable<P>,
  name: string,
): { table: RequestTable<P>; request?: OpenRequest<P> } {
  if (!name.startsWith(TIMER_PREFIX)) return { table };
  const request = table.open.get(Number(name.slice(TIMER_PREFIX.length)));
  if (request === undefined) return { table };
  setEntry(table.open, request.id, undefined);
  return { table, request };
}

export function requestTimer(id: number): string {
  return `${TIMER_PREFIX}${id}`;
}
