// The bookkeeping of a process that follows the leader of a group of masters (a worker, a lifecycle manager): the
// cursor, the requests to the master it remembers for a resend, and what each answer or failure does to them. One
// class for every driver: the runtime's transport (runtime/transport/master-follower.ts) and the simulator's world
// (sim/world/master-group.ts) carry out its decisions, so that both follow alike. Pure: the member is a string the
// driver resolves (`host:port` in the runtime, a node id in the simulator), and its log lines are data.
import type { Envelope, NodeId } from '../machines/effects.ts';
import {
  currentMaster,
  followMaster,
  masterCursor,
  resendAfterNotLeader,
  resendAfterUnreachable,
  type MasterAnswer,
  type MasterCursor,
} from './follow-leader.ts';

/** Requests to the master remembered for a resend; the oldest is forgotten past this (its sender times it out). */
export const MAX_REMEMBERED_REQUESTS = 4_096;

/** What the following needs of an envelope: the runtime's wire envelope and the core's envelope both fit. */
export type FollowedEnvelope = Pick<Envelope, 'from' | 'to' | 'requestId' | 'inReplyTo' | 'message'>;

/** The follower moved to another member: one log line's fields and text. */
export interface FollowLine {
  readonly event: 'master.follow';
  readonly from: string;
  readonly to: string;
  readonly why: MasterAnswer['kind'];
  readonly message: string;
}

/** What to do with an envelope that arrived, or a send that failed. */
export type FollowOutcome<E> =
  /** Not the following's business: deliver it (an arrival) or fail it at its sender (a failed send) as usual. */
  | { readonly kind: 'pass' }
  /**
   * Taken here: send `envelope` to the master again, to `current`, as is (it is remembered already, with its count:
   * not through `send`); nothing reaches the machine.
   */
  | { readonly kind: 'resend'; readonly envelope: E }
  /** Taken here: the request `envelope` fails at its sender, as a failed send (a NotLeader it cannot follow). */
  | { readonly kind: 'fail'; readonly envelope: E }
  /** Taken here, and nothing more to do (a NotLeader answering a request no longer remembered). */
  | { readonly kind: 'consumed' };

export interface LeaderFollowingOptions {
  /** The master's node id, as the process's machines address it. */
  readonly masterId: NodeId;
  /** The group's members, in the order the process was given them. */
  readonly members: readonly string[];
  /** The member to ask changed (the driver re-points its address of the master). */
  readonly moved?: (line: FollowLine) => void;
  readonly maxRemembered?: number;
}

interface Remembered<E> {
  readonly envelope: E;
  /** How many times it was sent on already, after NotLeader answers and unreachable members together. */
  readonly resent: number;
  readonly sentTo: string;
}

export class LeaderFollowing<E extends FollowedEnvelope> {
  private cursor: MasterCursor;
  private readonly requests = new Map<string, Remembered<E>>();
  private readonly members: ReadonlySet<string>;

  constructor(private readonly options: LeaderFollowingOptions) {
    this.cursor = masterCursor(options.members);
    this.members = new Set(options.members);
  }

  /** The member the process asks now. */
  get current(): string {
    return currentMaster(this.cursor);
  }

  /** The members known now (the given ones, and any leader a follower named that the process was not given). */
  get known(): readonly string[] {
    return this.cursor.members;
  }

  /**
   * An envelope leaves the process: a request to the master is remembered (with how often it was sent on) before
   * it goes to `current`.
   */
  send(envelope: E): void {
    if (envelope.to !== this.options.masterId || envelope.requestId === undefined) return;
    const key = requestKey(envelope.from, envelope.requestId);
    this.requests.delete(key);
    this.requests.set(key, { envelope, resent: 0, sentTo: this.current });
    if (this.requests.size > (this.options.maxRemembered ?? MAX_REMEMBERED_REQUESTS)) {
      this.requests.delete(this.requests.keys().next().value!);
    }
  }

  /**
   * An envelope arrived: the master's answer ends the request it answers; a NotLeader moves the cursor to the
   * leader it names and sends the request on there (once per member at most), or fails it at its sender.
   */
  received(envelope: FollowedEnvelope): FollowOutcome<E> {
    if (envelope.from !== this.options.masterId || envelope.inReplyTo === undefined) return { kind: 'pass' };
    const key = requestKey(envelope.to, envelope.inReplyTo);
    const request = this.requests.get(key);
    this.requests.delete(key);
    if (envelope.message.type !== 'NotLeader') return { kind: 'pass' };
    const leader = envelope.message.leader === '' ? null : envelope.message.leader;
    this.follow({ kind: 'notLeader', from: request?.sentTo ?? this.current, leader });
    if (request === undefined) return { kind: 'consumed' };
    if (resendAfterNotLeader(this.cursor, { leader }, request.resent)) return this.resend(key, request);
    return { kind: 'fail', envelope: request.envelope };
  }

  /**
   * A send failed (no connection reached its member, or the connection closed before an answer): the cursor moves
   * on from that member, and a request to the master is sent on to the next one, each other member once at most,
   * so that the caller follows the group within this request rather than at its next one.
   */
  sendFailed(envelope: FollowedEnvelope): FollowOutcome<E> {
    if (envelope.to !== this.options.masterId || envelope.requestId === undefined) return { kind: 'pass' };
    const key = requestKey(envelope.from, envelope.requestId);
    const request = this.requests.get(key);
    if (request === undefined) return { kind: 'pass' };
    this.follow({ kind: 'unreachable', member: request.sentTo });
    if (!resendAfterUnreachable(this.cursor, request.sentTo, request.resent)) {
      this.requests.delete(key);
      return { kind: 'pass' };
    }
    return this.resend(key, request);
  }

  /** No connection could be opened to `member`: the cursor moves on when it names it. */
  unreachable(member: string): void {
    if (this.members.has(member) || member === this.current) this.follow({ kind: 'unreachable', member });
  }

  private resend(key: string, request: Remembered<E>): FollowOutcome<E> {
    this.requests.set(key, { ...request, resent: request.resent + 1, sentTo: this.current });
    return { kind: 'resend', envelope: request.envelope };
  }

  private follow(answer: MasterAnswer): void {
    const before = this.current;
    this.cursor = followMaster(this.cursor, answer);
    const after = this.current;
    if (after === before) return;
    this.options.moved?.({
      event: 'master.follow',
      from: before,
      to: after,
      why: answer.kind,
      message:
        answer.kind === 'notLeader'
          ? `master ${before} does not lead: asking ${after}`
          : `master ${before} is unreachable: asking ${after}`,
    });
  }
}

function requestKey(from: NodeId, requestId: number): string {
  return `${from}#${requestId}`;
}
