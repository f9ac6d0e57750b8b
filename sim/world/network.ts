import type { NodeId } from '../../core/machines/effects.ts';
import type { Rng } from '../../core/rng.ts';
import { exponential } from './random.ts';

/** How the network behaves in one run (drawn per seed by the swarm). Probabilities are per message. */
export interface NetworkRates {
  /** Fixed one-way latency, ms. */
  readonly latencyMs: number;
  /** Mean of the exponential jitter added to each message, ms. */
  readonly jitterMs: number;
  readonly drop: number;
  readonly duplicate: number;
  /** Probability that a message may overtake earlier ones on its link (otherwise links are FIFO, like TCP). */
  readonly reorder: number;
}

export const CALM_NETWORK: NetworkRates = {
  latencyMs: 0.3,
  jitterMs: 0.2,
  drop: 0,
  duplicate: 0,
  reorder: 0,
};

/**
 * One side of a partition: listed nodes, a membership test (for groups whose nodes come and go, such as an
 * application's tasks), or — for the second side only — every node not on the first side.
 */
export type PartitionSide = readonly NodeId[] | ((node: NodeId) => boolean);

interface Partition {
  readonly id: number;
  readonly a: (node: NodeId) => boolean;
  /** undefined = every node not in `a`. */
  readonly b: ((node: NodeId) => boolean) | undefined;
  /** Only messages from `a` to `b` are lost; those from `b` to `a` still arrive. */
  readonly oneWay: boolean;
}

/**
 * Links between nodes: latency, loss, duplication, reordering and partitions (both ways, or one way). It only decides when (and how many
 * times) a message arrives; whether the destination is alive to receive it is the world's business.
 */
export class Network {
  private readonly partitions: Partition[] = [];
  /** The latest arrival time on each link, by sender then receiver (nested maps: no key string per message). */
  private readonly lastArrival = new Map<NodeId, Map<NodeId, number>>();
  private nextPartitionId = 1;

  constructor(
    private readonly rng: Rng,
    private rates: NetworkRates,
  ) {}

  /** Replaces the rates (the fault plan turns probabilistic faults off when the storm ends). */
  setRates(rates: NetworkRates): void {
    this.rates = rates;
  }

  /** Cuts every link between side `a` and side `b`, both ways; returns an id for `heal`. */
  partition(a: PartitionSide, b: PartitionSide | 'rest'): number {
    const id = this.nextPartitionId++;
    this.partitions.push({
      id,
      a: membership(a),
      b: b === 'rest' ? undefined : membership(b),
      oneWay: false,
    });
    return id;
  }

  /**
   * Loses every message from side `from` to side `to` and none the other way (a blackhole route on one side, a
   * one-way firewall rule); `rest` is every node not on the other side. Returns an id for `heal`.
   */
  dropFromTo(from: PartitionSide | 'rest', to: PartitionSide | 'rest'): number {
    if (from === 'rest' && to === 'rest')
      throw new RangeError('a one-way partition needs at least one side named');
    const id = this.nextPartitionId++;
    if (from === 'rest') {
      const receivers = membership(to as PartitionSide);
      this.partitions.push({ id, a: (node) => !receivers(node), b: receivers, oneWay: true });
    } else {
      this.partitions.push({
        id,
        a: membership(from),
        b: to === 'rest' ? undefined : membership(to),
        oneWay: true,
      });
    }
    return id;
  }

  /** Heals one partition, or all of them when no id is given. */
  heal(id?: number): void {
    if (id === undefined) {
      this.partitions.length = 0;
      return;
    }
    const index = this.partitions.findIndex((p) => p.id === id);
    if (index >= 0) this.partitions.splice(index, 1);
  }

  get partitionCount(): number {
    return this.partitions.length;
  }

  /** Whether a partition currently cuts the link from `from` to `to` (one way). A node always reaches itself. */
  blocked(from: NodeId, to: NodeId): boolean {
    if (from === to) return false;
    for (const p of this.partitions) {
      if (cuts(p, from, to) || (!p.oneWay && cuts(p, to, from))) return true;
    }
    return false;
  }

  /**
   * Arrival times of one message sent now: none (dropped or partitioned), one, or two (duplicated). Partitions lose
   * messages silently, as a real cut does: the sender learns only through its own timeouts.
   */
  arrivals(from: NodeId, to: NodeId, now: number): number[] {
    if (this.blocked(from, to)) return [];
    const rates = this.rates;
    // Every message draws the same numbers whatever the rates, so that calming one fault (while shrinking) leaves
    // the fate of every message under the other faults exactly as it was.
    const dropped = this.rng.next() < rates.drop;
    const duplicated = this.rng.next() < rates.duplicate;
    const first = this.draw();
    const second = this.draw();
    if (dropped) return [];
    const arrivals = [this.arrival(from, to, now, first)];
    if (duplicated) arrivals.push(this.arrival(from, to, now, second));
    return arrivals;
  }

  /** The one-way delay of a connection attempt (for refusals reported back to the sender). */
  roundTrip(): number {
    return 2 * this.rates.latencyMs;
  }

  private draw(): { readonly jitter: number; readonly overtakes: boolean } {
    const jitter = exponential(this.rng, this.rates.jitterMs);
    return { jitter, overtakes: this.rng.next() < this.rates.reorder };
  }

  private arrival(
    from: NodeId,
    to: NodeId,
    now: number,
    draw: { jitter: number; overtakes: boolean },
  ): number {
    const at = now + this.rates.latencyMs + draw.jitter;
    if (draw.overtakes) return at;
    let links = this.lastArrival.get(from);
    if (links === undefined) {
      links = new Map();
      this.lastArrival.set(from, links);
    }
    const fifo = Math.max(at, links.get(to) ?? 0);
    links.set(to, fifo);
    return fifo;
  }
}

function cuts(p: Partition, from: NodeId, to: NodeId): boolean {
  return p.a(from) && (p.b === undefined ? !p.a(to) : p.b(to));
}

function membership(side: PartitionSide): (node: NodeId) => boolean {
  if (typeof side === 'function') return side;
  const members = new Set(side);
  return (node) => members.has(node);
}
