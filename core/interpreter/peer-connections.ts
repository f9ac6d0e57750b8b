/**
 * Which of the connections a process keeps to one peer address carries a message (svc.<module>.io.numConnectionsPerPeer),
 * decided once for the transport. A peer answers a node on the connection the node last spoke on, so a node that
 * awaits an answer keeps speaking on the connection its request went on: every answer then comes back on the
 * connection its request was written to, and each connection's record of unanswered requests
 * (./unanswered-requests.ts) stays exact. Any other message goes on the least loaded connection, ties in turn.
 */

/** The connections to one peer as the transport sees them when a message is to go. */
export interface PeerConnectionsView {
  /** What each open (or opening) connection carries, in the pool's order: requests unanswered or not yet written. */
  readonly loads: readonly number[];
  /** svc.<module>.io.numConnectionsPerPeer of the module the peer's port serves. */
  readonly wanted: number;
  /** The connection the sending node awaits an answer on, if it awaits one. */
  readonly held?: number;
  /** Where the turn is: the connection a tie goes to first. */
  readonly cursor: number;
}

export interface PeerConnectionChoice {
  /** Connections to open first, appended to the pool (a pool holds `wanted`; a failed one is replaced). */
  readonly open: number;
  /** The connection the message goes on, counted after those opened. */
  readonly index: number;
  /** The turn after this message. */
  readonly cursor: number;
}

export function chooseConnection(view: PeerConnectionsView): PeerConnectionChoice {
  const open = Math.max(0, Math.max(1, view.wanted) - view.loads.length);
  const count = view.loads.length + open;
  if (view.held !== undefined && view.held < view.loads.length) {
    return { open, index: view.held, cursor: view.cursor % count };
  }
  const loadOf = (index: number): number => view.loads[index] ?? 0;
  let best = view.cursor % count;
  for (let step = 1; step < count; step++) {
    const index = (view.cursor + step) % count;
    if (loadOf(index) < loadOf(best)) best = index;
  }
  return { open, index: best, cursor: (best + 1) % count };
}
