import type { Envelope, Input, NodeId } from '../../core/machines/effects.ts';
import type { WireEnvelope } from '../wire/index.ts';

/** What the host needs of a node: somewhere to put its inputs. */
export interface HostedNode {
  readonly id: NodeId;
  input(input: Input): void;
}

/**
 * The nodes one process runs (a server runs one; an executor runs a task node per running task), so that the
 * transport can hand each arrived envelope, and each send that failed, to the node it concerns.
 */
export class NodeHost {
  private readonly nodes = new Map<NodeId, HostedNode>();

  add(node: HostedNode): void {
    if (this.nodes.has(node.id)) throw new Error(`node ${node.id} already runs in this process`);
    this.nodes.set(node.id, node);
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

  sendFailed(envelope: WireEnvelope): void {
    this.nodes.get(envelope.from)?.input({
      kind: 'sendFailed',
      to: envelope.to,
      message: envelope.message,
      ...(envelope.requestId === undefined ? {} : { requestId: envelope.requestId }),
    });
  }
}
