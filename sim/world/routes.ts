import type { NodeId, Principal } from '../../core/machines/effects.ts';
import type { PlantedBug } from '../../core/planted-bugs.ts';
import {
  nameTheftRefusal,
  routeExpired,
  routeSweepDue,
  routeTakeoverRefusal,
  type ConnectionIdentity,
  type SpeakerRules,
} from '../../core/protocol/speakers.ts';

/**
 * The runtime transport's routing, as the world applies it (runtime/transport/transport.ts): a node's replies go
 * back on the connection it last spoke on, a node without an address (a task) is reached only that way, routes of
 * silent nodes are forgotten, and who may speak as a node or take over its route is the core's rule
 * (core/protocol/speakers.ts). A connection is the process that sent (its node and incarnation); a forged one (the
 * intruder's) belongs to no node of the world and stays open.
 */
export interface TransportModel {
  /** svc.auth.enabled. */
  readonly authenticated: boolean;
  /** Routes of nodes silent for longer than this are forgotten (the runtime's 2 × svc.network.timeout). */
  readonly routeIdleMs: number;
  readonly plantedBug?: PlantedBug;
  /** How long a worker trusts an application's secret it learnt (svc.worker.auth.secretCache.expiry); default 60 s. */
  readonly secretCacheExpiryMs?: number;
}

/** The connection an envelope arrived on. */
export interface Speaker {
  /** The process whose connection it is: the sending node, or an outsider (the intruder). */
  readonly via: NodeId;
  readonly incarnation: number;
  readonly identity: ConnectionIdentity;
  readonly principal: Principal | undefined;
}

interface Route {
  via: NodeId;
  incarnation: number;
  principal: Principal | undefined;
  spokeAt: number;
}

/** Whether the connection of `via`'s process `incarnation` is still open. */
export type ConnectionOpen = (via: NodeId, incarnation: number) => boolean;

/** One node's (one process's) route table; a restarted process starts with an empty one. */
export class Routes {
  private readonly table = new Map<NodeId, Route>();
  private lastSweep: number;
  private readonly rules: SpeakerRules;

  constructor(
    private readonly model: TransportModel,
    now: number,
  ) {
    this.lastSweep = now;
    this.rules = {
      authenticated: model.authenticated,
      ...(model.plantedBug === undefined ? {} : { plantedBug: model.plantedBug }),
    };
  }

  get size(): number {
    return this.table.size;
  }

  /** Nodes that have a route here now, the one that spoke last first (what a snooping intruder could learn). */
  nodes(): NodeId[] {
    return [...this.table.entries()].sort(([, a], [, b]) => b.spokeAt - a.spokeAt).map(([node]) => node);
  }

  /**
   * An envelope from `from` arrived on `speaker`'s connection at `now`: why it is refused (the connection is then
   * closed, and its routes with it), or undefined when it is taken, `from`'s route now being that connection.
   */
  arrived(from: NodeId, speaker: Speaker, now: number, open: ConnectionOpen): string | undefined {
    const theft = nameTheftRefusal(this.rules, speaker.identity, speaker.principal, from);
    if (theft !== undefined) return this.refuse(speaker, theft);
    const route = this.table.get(from);
    if (route !== undefined && route.via === speaker.via && route.incarnation === speaker.incarnation) {
      route.spokeAt = now;
    } else {
      const holder =
        route === undefined
          ? undefined
          : { principal: route.principal, open: open(route.via, route.incarnation) };
      const takeover = routeTakeoverRefusal(this.rules, from, holder, speaker.principal);
      if (takeover !== undefined) return this.refuse(speaker, takeover);
      this.table.set(from, {
        via: speaker.via,
        incarnation: speaker.incarnation,
        principal: speaker.principal,
        spokeAt: now,
      });
    }
    this.sweep(now);
    return undefined;
  }

  /** The open connection a message to `to` goes on, or undefined when `to` has no route (or its connection closed). */
  route(to: NodeId, open: ConnectionOpen): { readonly via: NodeId } | undefined {
    const route = this.table.get(to);
    if (route === undefined || !open(route.via, route.incarnation)) return undefined;
    return route;
  }

  private refuse(speaker: Speaker, reason: string): string {
    for (const [node, route] of this.table) {
      if (route.via === speaker.via && route.incarnation === speaker.incarnation) this.table.delete(node);
    }
    return reason;
  }

  private sweep(now: number): void {
    const idleMs = this.model.routeIdleMs;
    if (!routeSweepDue(this.lastSweep, now, idleMs)) return;
    this.lastSweep = now;
    for (const [node, route] of this.table) {
      if (routeExpired(route.spokeAt, now, idleMs)) this.table.delete(node);
    }
  }
}
