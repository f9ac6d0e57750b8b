import type { NodeId } from '../machines/effects.ts';
import type { PlantedBug } from '../planted-bugs.ts';

export interface UnansweredRequestsOptions {
  /** Test-only (core/planted-bugs.ts): `unanswered-not-failed` makes `ended` fail nothing. */
  readonly plantedBug?: PlantedBug;
}

interface Waiting<R> {
  readonly request: R;
  /** When it was asked (the driver's clock, ms). */
  readonly at: number;
}

/**
 * The requests each peer was asked and has not answered, kept by the driver that carries them (the runtime's
 * transport per outbound connection, the simulator's world per process) so that both fail them the same way. When
 * the peer ends (its connection closes, its process dies, or, later, it is given up on as silent) every request it
 * owed is failed at its sender at once: an answer can come on no other connection (answers go back where their
 * request came from), and a sender left to its own deadline waits out a whole timeout per request (a primary
 * pushing to a dead replica, a client to a dead worker).
 *
 * `Peer` is whatever ends as one: a connection for the runtime, a process for the simulator. `R` is what the
 * driver needs to tell the sender (an envelope). The requests' deadlines stay in the machines that asked; this
 * keeps when each was asked, so that a driver can tell how long a peer has owed an answer.
 */
export class UnansweredRequests<Peer, R> {
  private readonly byPeer = new Map<Peer, Map<string, Waiting<R>>>();

  constructor(private readonly options: UnansweredRequestsOptions = {}) {}

  /** `asker`'s request `requestId` went to `peer` at `now`; a request asked again under its key replaces it. */
  asked(peer: Peer, asker: NodeId, requestId: number, request: R, now: number): void {
    let waiting = this.byPeer.get(peer);
    if (waiting === undefined) {
      waiting = new Map();
      this.byPeer.set(peer, waiting);
    }
    waiting.set(keyOf(asker, requestId), { request, at: now });
  }

  /** `peer` answered `asker`'s request `requestId`; false when it owed no such answer (a late or second one). */
  answered(peer: Peer, asker: NodeId, requestId: number): boolean {
    return this.byPeer.get(peer)?.delete(keyOf(asker, requestId)) ?? false;
  }

  /**
   * `peer` ended: the requests it owed, in the order they were asked, each to be failed at its sender now. The peer
   * is forgotten with them: what is asked of it later is asked of a new peer.
   */
  ended(peer: Peer): R[] {
    const waiting = this.byPeer.get(peer);
    if (waiting === undefined) return [];
    this.byPeer.delete(peer);
    if (this.options.plantedBug === 'unanswered-not-failed') return [];
    const requests: R[] = [];
    for (const { request } of waiting.values()) requests.push(request);
    return requests;
  }

  /** How many requests `peer` owes an answer to. */
  waiting(peer: Peer): number {
    return this.byPeer.get(peer)?.size ?? 0;
  }

  /** When the longest-waiting request `peer` owes was asked; undefined when it owes none. */
  waitingSince(peer: Peer): number | undefined {
    let oldest: number | undefined;
    for (const { at } of this.byPeer.get(peer)?.values() ?? []) {
      if (oldest === undefined || at < oldest) oldest = at;
    }
    return oldest;
  }
}

function keyOf(asker: NodeId, requestId: number): string {
  return `${asker}#${requestId}`;
}
