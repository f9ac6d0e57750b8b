import type { NodeId, Principal } from '../machines/effects.ts';
import {
  routeExpired,
  routeSweepDue,
  routeTakeoverRefusal,
  type SpeakerRules,
} from '../protocol/speakers.ts';

/** How a driver names its connections to the route table. */
export interface RouteConnections<C> {
  /** A key that is the same for every handle of one connection (the runtime: the connection; the simulator: the
   * sending process). */
  key(connection: C): unknown;
  /** Whether the connection is still open. */
  open(connection: C): boolean;
  /** What the connection's handshake proved (undefined: nothing). */
  principal(connection: C): Principal | undefined;
}

interface Route<C> {
  readonly via: C;
  spokeAt: number;
}

/**
 * A process's reply routes, kept once for the runtime's transport and the simulator's world: a node's replies go
 * back on the connection it last spoke on, and a node without an address (a task) is reached only that way. Who may
 * take over a node's route is the core's rule (core/protocol/speakers.ts); routes of nodes silent for longer than
 * `idleMs` are forgotten, swept every so often as nodes speak, since a pooled connection carries task after task and
 * each ends without a word.
 */
export class ReplyRoutes<C> {
  private readonly table = new Map<NodeId, Route<C>>();
  /** The nodes routed through each connection, by its key (what a closed connection takes with it). */
  private readonly byConnection = new Map<unknown, Set<NodeId>>();
  private lastSweep: number;

  constructor(
    private readonly rules: SpeakerRules,
    private readonly idleMs: number,
    now: number,
    private readonly connections: RouteConnections<C>,
  ) {
    this.lastSweep = now;
  }

  get size(): number {
    return this.table.size;
  }

  /** Nodes that have a route now, the one that spoke last first (what a snooping peer could learn). */
  nodes(): NodeId[] {
    return [...this.table.entries()].sort(([, a], [, b]) => b.spokeAt - a.spokeAt).map(([node]) => node);
  }

  /**
   * `from` spoke on `via` at `now`: why its route may not move there (the driver then closes `via`, and `forget`s
   * it), or undefined with `from`'s route now `via`.
   */
  spoke(from: NodeId, via: C, now: number): string | undefined {
    const route = this.table.get(from);
    const key = this.connections.key(via);
    if (route !== undefined && this.connections.key(route.via) === key) {
      route.spokeAt = now;
    } else {
      const holder =
        route === undefined
          ? undefined
          : { principal: this.connections.principal(route.via), open: this.connections.open(route.via) };
      const takeover = routeTakeoverRefusal(this.rules, from, holder, this.connections.principal(via));
      if (takeover !== undefined) return takeover;
      if (route !== undefined) this.unindex(from, route.via);
      this.table.set(from, { via, spokeAt: now });
      let nodes = this.byConnection.get(key);
      if (nodes === undefined) {
        nodes = new Set();
        this.byConnection.set(key, nodes);
      }
      nodes.add(from);
    }
    this.sweep(now);
    return undefined;
  }

  /** The open connection a message to `to` goes on, or undefined when it has none. */
  route(to: NodeId): C | undefined {
    const route = this.table.get(to);
    if (route === undefined || !this.connections.open(route.via)) return undefined;
    return route.via;
  }

  /** The connection closed (or was refused): the routes through it go with it. */
  forget(via: C): void {
    const key = this.connections.key(via);
    const nodes = this.byConnection.get(key);
    if (nodes === undefined) return;
    this.byConnection.delete(key);
    for (const node of nodes) {
      const route = this.table.get(node);
      if (route !== undefined && this.connections.key(route.via) === key) this.table.delete(node);
    }
  }

  private unindex(node: NodeId, via: C): void {
    const key = this.connections.key(via);
    const nodes = this.byConnection.get(key);
    nodes?.delete(node);
    if (nodes?.size === 0) this.byConnection.delete(key);
  }

  private sweep(now: number): void {
    if (!routeSweepDue(this.lastSweep, now, this.idleMs)) return;
    this.lastSweep = now;
    for (const [node, route] of this.table) {
      if (!routeExpired(route.spokeAt, now, this.idleMs)) continue;
      this.table.delete(node);
      this.unindex(node, route.via);
    }
  }
}
