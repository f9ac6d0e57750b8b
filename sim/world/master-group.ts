// The cluster's master as a group of masters (high availability): the world's part of it. The processes that talk
// to the master (workers, lifecycle managers) follow its leader through the core's following
// (core/ha/leader-following.ts), the same bookkeeping the runtime's transport runs: a request to the master goes to
// the member the core names, a NotLeader answer or a failed send is the core's to carry out. Their machines see one
// master (`masterId`) that answers, or a failed send. The members' leadership (when each acts, what it answers
// while it does not, where its persists go) is sim/ha/cluster-group.ts's, through `MasterGroupHooks`.
import type { Envelope, Input, NodeId } from '../../core/machines/effects.ts';
import type { Message } from '../../core/protocol/messages.ts';
import { LeaderFollowing, type FollowedEnvelope, type FollowLine } from '../../core/ha/leader-following.ts';

/** What a member of the group answers a request while its process does not act as leader. */
export type StandbyAnswer =
  /** It runs as a follower: this answer (the core's `followerAnswer`). */
  | { readonly kind: 'answer'; readonly message: Message }
  /** It runs but reads nothing (frozen): the request waits in vain. */
  | { readonly kind: 'silent' }
  /** No process listens: the connection is refused. */
  | { readonly kind: 'refused' };

/** The group's leadership, as the world asks it (sim/ha/cluster-group.ts). */
export interface MasterGroupHooks {
  /** The id every other process addresses the master by; no node has it. */
  readonly masterId: NodeId;
  /** The members' node ids, in the order every process is given them. */
  readonly members: readonly NodeId[];
  /** Asked for a request to a member whose machine does not run (it does not act as leader). */
  standby(member: NodeId): StandbyAnswer;
  /**
   * Asked before a member's machine sees anything (the runtime's driver asks `acting` first): false drops the
   * input, the member stopping as it does.
   */
  mayAct(member: NodeId): boolean;
  /** A member's durable write (its persisted state): `confirm` once the coordination store holds it, never if not. */
  persist(
    member: NodeId,
    changes: readonly { key: string; value: string | null }[],
    confirm: () => void,
  ): void;
  /** A follower moved to another member (a log line of the runtime's). */
  moved?(node: NodeId, line: FollowLine): void;
}

/** A request to send again, on the follower's behalf, to the member the core names now. */
export interface Resend {
  readonly to: NodeId;
  readonly message: Message;
  readonly requestId: number;
}

/** The followers' bookkeeping, one core following per process, and the members' requests they owe answers to. */
export class GroupFollowing {
  private readonly followers = new Map<NodeId, LeaderFollowing<FollowedEnvelope>>();
  /** Per follower: the member each request it was asked came from, for its answer. */
  private readonly askedBy = new Map<NodeId, Map<number, NodeId>>();
  private readonly memberSet: ReadonlySet<NodeId>;

  constructor(readonly hooks: MasterGroupHooks) {
    this.memberSet = new Set(hooks.members);
  }

  isMember(node: NodeId): boolean {
    return this.memberSet.has(node);
  }

  /**
   * Where a send of `from` to the master goes: a reply to the member that asked, a request to the member the core
   * names (remembered for a resend). Undefined: not a send to the master, or `from` is a member.
   */
  addressee(from: NodeId, send: { to: NodeId; requestId?: number; inReplyTo?: number; message: Message }) {
    if (send.to !== this.hooks.masterId || this.memberSet.has(from)) return undefined;
    if (send.inReplyTo !== undefined) {
      const asked = this.askedBy.get(from);
      const member = asked?.get(send.inReplyTo);
      asked?.delete(send.inReplyTo);
      if (member !== undefined) return member;
    }
    const following = this.followerOf(from);
    following.send({ from, to: send.to, message: send.message, ...optionalId(send.requestId) });
    return following.current;
  }

  /**
   * What `node`'s machine sees of an input: what a member sent comes from the master; the core's following takes a
   * NotLeader or a failed send to a member, and may ask for a resend (`resend`) instead.
   */
  arriving(node: NodeId, input: Input, resend: (r: Resend) => void): Input | undefined {
    if (this.memberSet.has(node)) return input;
    const masterId = this.hooks.masterId;
    if (input.kind === 'receive' && this.memberSet.has(input.envelope.from)) {
      const envelope: Envelope = { ...input.envelope, from: masterId };
      if (envelope.requestId !== undefined) this.remember(node, envelope.requestId, input.envelope.from);
      const outcome = this.followerOf(node).received(envelope);
      switch (outcome.kind) {
        case 'pass':
          return { kind: 'receive', envelope };
        case 'consumed':
          return undefined;
        case 'resend':
          resend(this.resendOf(node, outcome.envelope));
          return undefined;
        case 'fail':
          return failedSend(masterId, outcome.envelope);
      }
    }
    if (input.kind === 'sendFailed' && this.memberSet.has(input.to)) {
      const following = this.followerOf(node);
      const failed: FollowedEnvelope = {
        from: node,
        to: masterId,
        message: input.message,
        ...optionalId(input.requestId),
      };
      const outcome = following.sendFailed(failed);
      if (outcome.kind === 'resend') {
        resend(this.resendOf(node, outcome.envelope));
        return undefined;
      }
      following.unreachable(input.to);
      return { ...input, to: masterId };
    }
    return input;
  }

  /** A process starts: a restarted one follows afresh, from the first member, owing nothing. */
  started(node: NodeId): void {
    this.followers.delete(node);
    this.askedBy.delete(node);
  }

  private resendOf(node: NodeId, envelope: FollowedEnvelope): Resend {
    return { to: this.followerOf(node).current, message: envelope.message, requestId: envelope.requestId! };
  }

  private remember(node: NodeId, requestId: number, member: NodeId): void {
    let asked = this.askedBy.get(node);
    if (asked === undefined) {
      asked = new Map<number, NodeId>();
      this.askedBy.set(node, asked);
    }
    asked.set(requestId, member);
    if (asked.size > 1_024) asked.delete(asked.keys().next().value!);
  }

  private followerOf(node: NodeId): LeaderFollowing<FollowedEnvelope> {
    let following = this.followers.get(node);
    if (following === undefined) {
      following = new LeaderFollowing({
        masterId: this.hooks.masterId,
        members: this.hooks.members,
        moved: (line) => this.hooks.moved?.(node, line),
      });
      this.followers.set(node, following);
    }
    return following;
  }
}

function optionalId(requestId: number | undefined): { requestId?: number } {
  return requestId === undefined ? {} : { requestId };
}

function failedSend(masterId: NodeId, envelope: FollowedEnvelope): Input {
  return {
    kind: 'sendFailed',
    to: masterId,
    message: envelope.message,
    ...optionalId(envelope.requestId),
  };
}
