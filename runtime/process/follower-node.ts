// The master's node on the data port of a master that does not lead its group: every request is answered as the
// core decides (core/ha/follow-leader.ts, `followerAnswer`): NotLeader with the leader's address to a peer that
// follows a leader, a refusal older peers handle to any other. One-way messages are dropped: their senders repeat
// them to the leader (heartbeats) or they concern a master that no longer serves them.
import { followerAnswer } from '../../core/ha/follow-leader.ts';
import type { NodeId } from '../../core/machines/effects.ts';
import type { HostedNode } from '../driver/node-host.ts';
import type { WireEnvelope } from '../wire/index.ts';

export function followerNode(options: {
  readonly nodeId: NodeId;
  /** This member's id in the group (svc.master.ha.node.id). */
  readonly member: string;
  /** The leader as the election last named it (`<id>@<host>:<port>`), or null. */
  readonly leader: () => string | null;
  readonly send: (envelope: WireEnvelope) => void;
}): HostedNode {
  return {
    id: options.nodeId,
    input(input) {
      if (input.kind !== 'receive' || input.envelope.requestId === undefined) return;
      const envelope = input.envelope;
      options.send({
        from: options.nodeId,
        to: envelope.from,
        inReplyTo: input.envelope.requestId,
        message: followerAnswer({
          member: options.member,
          leader: options.leader(),
          peerFollowsLeader: envelope.peerFollowsLeader === true,
        }),
      });
    },
  };
}
