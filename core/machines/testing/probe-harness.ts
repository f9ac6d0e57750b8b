import type { Message, MessageOf } from '../../protocol/messages.ts';
import type { Envelope, NodeId } from '../effects.ts';
import {
  InMemoryCluster,
  type ClusterOptions,
  type NodeHandle,
  type NodeOptions,
  type Probe,
} from './in-memory-cluster.ts';

/**
 * One machine under test in an InMemoryCluster, with probes playing every peer: a test sends it messages as a peer,
 * reads what it sent to each peer, and answers requests by hand. Test-only, like the cluster.
 */
export class ProbeHarness<S> {
  readonly cluster: InMemoryCluster;
  readonly node: NodeHandle<S>;
  private readonly probes = new Map<NodeId, Probe>();
  private readonly answered = new Set<Envelope>();

  constructor(id: NodeId, options: NodeOptions<S>, clusterOptions: ClusterOptions = {}) {
    this.cluster = new InMemoryCluster(clusterOptions);
    this.node = this.cluster.addNode(id, options);
  }

  /** The probe with this id, created on first use. */
  probe(id: NodeId): Probe {
    let probe = this.probes.get(id);
    if (probe === undefined) {
      probe = this.cluster.addProbe(id);
      this.probes.set(id, probe);
    }
    return probe;
  }

  start(): void {
    this.cluster.start(this.node.id);
  }

  /** Runs the cluster for `ms` of virtual time. */
  advance(ms: number): void {
    this.cluster.run({ maxTime: this.cluster.now + ms });
  }

  /** Peer `from` sends `message` to the machine (as a request when `requestId` is given). */
  send(from: NodeId, message: Message, requestId?: number): void {
    this.probe(from);
    this.cluster.inject({
      from,
      to: this.node.id,
      message,
      ...(requestId === undefined ? {} : { requestId }),
    });
  }

  /**
   * Answers every request of `type` in `probe`'s inbox not answered yet with `make(request)` (undefined: leave it
   * unanswered for now). Returns how many were answered.
   */
  answer<T extends Message['type']>(
    probe: Probe,
    type: T,
    make: (request: Envelope<MessageOf<T>>) => Message | undefined,
  ): number {
    let answered = 0;
    for (const envelope of probe.inbox) {
      if (envelope.message.type !== type || this.answered.has(envelope)) continue;
      const message = make(envelope as Envelope<MessageOf<T>>);
      if (message === undefined) continue;
      this.answered.add(envelope);
      this.cluster.inject({
        from: probe.id,
        to: this.node.id,
        message,
        ...(envelope.requestId === undefined ? {} : { inReplyTo: envelope.requestId }),
      });
      answered += 1;
    }
    return answered;
  }

  /** Requests of `type` in the probe's inbox that have not been answered yet. */
  pending<T extends Message['type']>(probe: Probe, type: T): Envelope<MessageOf<T>>[] {
    return probe.inbox.filter(
      (e): e is Envelope<MessageOf<T>> => e.message.type === type && !this.answered.has(e),
    );
  }

  /** Every message of `type` the probe received, in order. */
  received<T extends Message['type']>(probe: Probe, type: T): MessageOf<T>[] {
    return probe.inbox.filter((e) => e.message.type === type).map((e) => e.message as MessageOf<T>);
  }

  /** The last message of `type` the probe received; throws when there is none. */
  last<T extends Message['type']>(probe: Probe, type: T): MessageOf<T> {
    const all = this.received(probe, type);
    const last = all[all.length - 1];
    if (last === undefined) throw new Error(`${probe.id} received no ${type}`);
    return last;
  }
}
