import type { Envelope, Input, NodeId } from '../../core/machines/effects.ts';
import type { WireEnvelope } from '../wire/index.ts';

/** What the host needs of a node: somewhere to put its inputs, and a way to stop it when the process closes. */
export interface HostedNode {
  readonly id: NodeId;
  input(input: Input): void;
  /**
   * Stops the node, its waits rejecting with `reason` (NodeDriver.stop). A client's task node must have it: closing
   * the client stops its running tasks through the host.
   */
  stop?(reason: Error): void;
}

/**
 * The nodes one process runs (a server runs one; an executor runs a task node per running task), so that the
 * transport can hand each arrived envelope, and each send that failed, to the node it concerns.
 */
export class NodeHost {
  private readonly nodes = new Map<NodeId, HostedNode>();
  private closedBy: Error | undefined;

  /** Runs a node here; throws the host's close reason once it is closed (a task started after its client closed). */
  add(node: HostedNode): void {
    if (this.closedBy !== undefined) throw this.closedBy;
    if (this.nodes.has(node.id)) throw new Error(`node ${node.id} already runs in this process`);
    this.nodes.set(node.id, node);
  }

  /**
   * Stops every node that can be stopped, with `reason` (their waits reject with it), and refuses new nodes with
   * it. Returns how many nodes were stopped. A second close keeps the first reason.
   */
  close(reason: Error): number {
    this.closedBy ??= reason;
    let stopped = 0;
    for (const node of [...this.nodes.values()]) {
      if (node.stop === undefined) continue;
      node.stop(this.closedBy);
      stopped += 1;
    }
    return stopped;
  }

  remove(id: NodeId): void {
    this.nodes.delete(id);
  }

  has(id: NodeId): boolean {
    return this.nodes.has(id);
  }

  deliver(envelope: Envelope): boolean {
    const node = this.nodes.get(envelope.to);
    if (node === undefined) return false;
    node.input({ kind: 'receive', envelope });
    return true;
  }

  /** `sent`: the request went out on a connection that closed before its answer came. */
  sendFailed(envelope: WireEnvelope, sent?: boolean): void {
    this.nodes.get(envelope.from)?.input({
      kind: 'sendFailed',
      to: envelope.to,
      message: envelope.message,
      ...(envelope.requestId === undefined ? {} : { requestId: envelope.requestId }),
      ...(sent === true ? { sent } : {}),
    });
  }
}
