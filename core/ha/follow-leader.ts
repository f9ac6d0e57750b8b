// Following the leader of a group of masters, from outside it: which member a worker, a lifecycle manager or
// `svc admin` asks next, whether a "not leader" answer sends a request on to the named leader, and what a follower
// answers a request it cannot serve. Pure, so that the runtime's transport and the simulator decide alike
// (docs/high-availability.md, "Following the leader").
import type { Message } from '../protocol/messages.ts';

/**
 * Where a caller of a master group stands: the members it knows (`host:port`, in the order it was given them) and
 * the one it asks now. A single master is a group of one.
 */
export interface MasterCursor {
  readonly members: readonly string[];
  readonly current: number;
}

/** What the caller last heard from (or about) a member. */
export type MasterAnswer =
  /** A follower answered "not leader", naming the leader (`host:port`) or not knowing one (null). */
  | { readonly kind: 'notLeader'; readonly from: string; readonly leader: string | null }
  /** No connection could be opened to a member, or it closed with requests unanswered. */
  | { readonly kind: 'unreachable'; readonly member: string };

export function masterCursor(members: readonly string[]): MasterCursor {
  const distinct = [...new Set(members)];
  if (distinct.length === 0) throw new Error('a master group needs at least one member');
  return { members: distinct, current: 0 };
}

export function currentMaster(cursor: MasterCursor): string {
  return cursor.members[cursor.current]!;
}

/**
 * The member to ask after an answer. A named leader is asked next (added to the members when the caller was not
 * given it: the group's own configuration knows better than the caller's); an unknown leader or an unreachable
 * member moves on to the next member in turn, so that every member is tried once in as many failures. A report
 * about a member that is no longer the current one (a late failure of a connection left behind) changes nothing.
 */
export function followMaster(cursor: MasterCursor, answer: MasterAnswer): MasterCursor {
  const current = currentMaster(cursor);
  switch (answer.kind) {
    case 'unreachable':
      return answer.member === current ? next(cursor) : cursor;
    case 'notLeader': {
      if (answer.leader !== null && answer.leader !== answer.from) {
        const known = cursor.members.indexOf(answer.leader);
        if (known >= 0) return { members: cursor.members, current: known };
        return { members: [...cursor.members, answer.leader], current: cursor.members.length };
      }
      return answer.from === current ? next(cursor) : cursor;
    }
  }
}

function next(cursor: MasterCursor): MasterCursor {
  return { members: cursor.members, current: (cursor.current + 1) % cursor.members.length };
}

/**
 * Whether a request answered "not leader" is sent again, at once, to the member the cursor now names: only to a
 * leader the follower named, and at most once per member of the group (a request is never bounced for ever between
 * members that each believe another leads). Otherwise the request fails at its sender, whose own retry (its request
 * timeout, the next heartbeat) asks the current member later.
 */
export function resendAfterNotLeader(
  cursor: MasterCursor,
  answer: { readonly leader: string | null },
  resentSoFar: number,
): boolean {
  return answer.leader !== null && resentSoFar < cursor.members.length;
}

/**
 * Whether a request whose send failed because no connection reached `sentTo` is sent again, at once, to the member
 * the cursor names now: only when the cursor has moved on from `sentTo`, and to each other member of the group at
 * most once (the first send went to one), so that a caller whose member died follows the group within one request
 * rather than one request later (a worker would otherwise wait a whole heartbeat interval more).
 */
export function resendAfterUnreachable(cursor: MasterCursor, sentTo: string, resentSoFar: number): boolean {
  return currentMaster(cursor) !== sentTo && resentSoFar < cursor.members.length - 1;
}

/** The leader a follower's announcement names (`<id>@<host>:<port>`), as `host:port`; null when unknown. */
export function leaderAddressOf(announced: string | null): string | null {
  if (announced === null || announced === '') return null;
  const at = announced.lastIndexOf('@');
  return at < 0 ? announced : announced.slice(at + 1);
}

/**
 * What a follower answers every request on its data port: `NotLeader` with the leader's address to a peer that
 * said in its handshake that it follows a leader, and to any other (a peer of a release built before groups) the
 * refusal every release already handles, a `StatusResponse` with REQUEST_FAILED whose message names the leader.
 */
export function followerAnswer(options: {
  readonly member: string;
  /** The leader as the election last named it (`<id>@<host>:<port>`), never this member; null: unknown. */
  readonly leader: string | null;
  readonly peerFollowsLeader: boolean;
}): Message {
  const leader = leaderAddressOf(options.leader);
  const message =
    `master ${options.member} does not lead its group; ` +
    (leader === null ? 'no leader is known yet: ask again shortly' : `the leader is ${options.leader}`);
  if (options.peerFollowsLeader) return { type: 'NotLeader', leader: leader ?? '', message };
  return { type: 'StatusResponse', status: 'REQUEST_FAILED', message };
}
