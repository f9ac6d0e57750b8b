import type { Message, MessageOf } from '../../protocol/messages.ts';
import type { Envelope, NodeId } from '../effects.ts';
import {
  InMemoryCluster,
  type ClusterOptions,
  type NodeHandle,
  type NodeOptions,
  type Probe,
} from './in-memory-cluster.ts';

/** Far above what a harness test's step of virtual time takes (hundreds of events); a bound on a machine that spins. */
const ADVANCE_EVENT_LIMIT = 100_000;

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

  /**
   * Runs the cluster for `ms` of virtual time. A machine that never settles (a timer set again at the same instant, a
   * message answered by itself) would keep the run going without moving the clock: past ADVANCE_EVENT_LIMIT events
   * it fails, naming where the clock stood and the last deliveries and log lines.
   */
  advance(ms: number): void {
    const target = this.cluster.now + ms;
    const result = this.cluster.run({ maxTime: target, maxEvents: ADVANCE_EVENT_LIMIT });
    if (result.end !== 'event-limit') return;
    const delivered = this.cluster.delivered
      .slice(-5)
      .map((d) => `${d.envelope.message.type} to ${d.envelope.to}`);
    const logged = this.cluster.logs.slice(-5).map((l) => `${l.node}: ${l.event}`);
    throw new Error(
      `the cluster did not reach virtual time ${target} within ${ADVANCE_EVENT_LIMIT} events (it stands at ` +
        `${result.now}): a machine that never settles? last deliveries: ${delivered.join(', ') || 'none'}; ` +
        `last log lines: ${logged.join(', ') || 'none'}`,
    );
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
