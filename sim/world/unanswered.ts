import type { NodeId } from '../../core/machines/effects.ts';
import type { Message } from '../../core/protocol/messages.ts';

/** A request on its way to a process, or taken by it, that it has not answered yet. */
export interface PendingRequest {
  readonly sender: NodeId;
  /** The sender's process when it asked: a later one of the same node waits for nothing. */
  readonly senderIncarnation: number;
  readonly to: NodeId;
  readonly message: Message;
  readonly requestId: number;
}

/**
 * The requests each process has not answered, as the runtime's transport keeps them per connection
 * (runtime/transport/transport.ts, `unanswered`): when the process ends (a crash, an exit, a relaunch) its
 * connections close and every sender hears `sendFailed` at once for what it asked there, instead of waiting for its
 * ask deadline. A request whose answer went out is forgotten.
 */
export class UnansweredRequests {
  private readonly byTarget = new Map<NodeId, Map<string, PendingRequest>>();

  asked(request: PendingRequest): void {
    let pending = this.byTarget.get(request.to);
    if (pending === undefined) {
      pending = new Map<string, PendingRequest>();
      this.byTarget.set(request.to, pending);
    }
    pending.set(`${request.sender}#${request.requestId}`, request);
  }

  /** `replier` answered `requestId` of `asker`. */
  answered(replier: NodeId, asker: NodeId, requestId: number): void {
    this.byTarget.get(replier)?.delete(`${asker}#${requestId}`);
  }

  /** The requests `target` leaves unanswered as its process ends; forgotten with it. */
  endOf(target: NodeId): PendingRequest[] {
    const pending = this.byTarget.get(target);
    if (pending === undefined || pending.size === 0) return [];
    this.byTarget.delete(target);
    return [...pending.values()];
  }
}
