import type { SilentPeerSettings } from '../../core/interpreter/silent-peers.ts';
import type { NodeId, Principal } from '../../core/machines/effects.ts';
import type { PlantedBug } from '../../core/planted-bugs.ts';
import { ReplyRoutes } from '../../core/interpreter/reply-routes.ts';
import {
  nameTheftRefusal,
  type ConnectionIdentity,
  type SpeakerRules,
} from '../../core/protocol/speakers.ts';

/**
 * How the world's connections carry replies: the core's reply routes and speaker rules
 * (core/interpreter/reply-routes.ts, core/protocol/speakers.ts). A connection is the process that sent (its node and
 * incarnation); a forged one (the intruder's) belongs to no node of the world and stays open.
 */
export interface TransportModel {
  /** svc.auth.enabled. */
  readonly authenticated: boolean;
  /** Routes of nodes silent for longer than this are forgotten (core/interpreter/connection-limits.ts). */
  readonly routeIdleMs: number;
  readonly plantedBug?: PlantedBug;
  /** How long a worker trusts an application's secret it learnt (svc.worker.auth.secretCache.expiry); default 60 s. */
  readonly secretCacheExpiryMs?: number;
  /** Each process watches the peers it waits for and gives up on silent ones (core/interpreter/silent-peers.ts). */
  readonly silentPeers?: SilentPeerSettings;
}

/** The connection an envelope arrived on. */
export interface Speaker {
  /** The process whose connection it is: the sending node, or an outsider (the intruder). */
  readonly via: NodeId;
  readonly incarnation: number;
  readonly identity: ConnectionIdentity;
  readonly principal: Principal | undefined;
}

/** Whether the connection of `via`'s process `incarnation` is still open. */
export type ConnectionOpen = (via: NodeId, incarnation: number) => boolean;

/**
 * One node's (one process's) routes: the core's route table (core/interpreter/reply-routes.ts, which the runtime's
 * transport keeps too) over the world's connections, and the core's rule on who may speak as whom. A restarted
 * process starts with an empty one.
 */
export class Routes {
  private readonly table: ReplyRoutes<Speaker>;
  private readonly rules: SpeakerRules;

  constructor(model: TransportModel, now: number, open: ConnectionOpen) {
    this.rules = {
      authenticated: model.authenticated,
      ...(model.plantedBug === undefined ? {} : { plantedBug: model.plantedBug }),
    };
    this.table = new ReplyRoutes(this.rules, model.routeIdleMs, now, {
      key: (speaker) => `${speaker.via}#${speaker.incarnation}`,
      open: (speaker) => open(speaker.via, speaker.incarnation),
      principal: (speaker) => speaker.principal,
    });
  }

  get size(): number {
    return this.table.size;
  }

  /** Nodes that have a route here now, the one that spoke last first (what a snooping intruder could learn). */
  nodes(): NodeId[] {
    return this.table.nodes();
  }

  /**
   * An envelope from `from` arrived on `speaker`'s connection at `now`: why it is refused (the connection is then
   * closed, and its routes with it), or undefined when it is taken, `from`'s route now being that connection.
   */
  arrived(from: NodeId, speaker: Speaker, now: number): string | undefined {
    const refusal =
      nameTheftRefusal(this.rules, speaker.identity, speaker.principal, from) ??
      this.table.spoke(from, speaker, now);
    if (refusal !== undefined) this.table.forget(speaker);
    return refusal;
  }

  /** The open connection a message to `to` goes on, or undefined when `to` has no route (or its connection closed). */
  route(to: NodeId): { readonly via: NodeId } | undefined {
    return this.table.route(to);
  }
}
