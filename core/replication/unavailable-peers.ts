import type { WorkerKey } from '../domain/index.ts';

/**
 * Replica workers a primary failed to connect to, with the time of the failure. Within
 * `svc.worker.replicate.fastFail.duration` (default 60 s) of that time, pushes that would forward to the peer fail
 * at once with CREATE_CONNECTION_FAIL_REPLICA instead of waiting for another connect timeout each.
 */
export type UnavailablePeers = ReadonlyMap<WorkerKey, number>;

export function markPeerUnavailable(peers: UnavailablePeers, peer: WorkerKey, now: number): UnavailablePeers {
  const next = new Map(peers);
  next.delete(peer);
  next.set(peer, now);
  return next;
}

/** Inside the window: `now - since < windowMs`. At exactly `windowMs` the peer is tried again. */
export function isPeerUnavailable(
  peers: UnavailablePeers,
  peer: WorkerKey,
  now: number,
  windowMs: number,
): boolean {
  const since = peers.get(peer);
  return since !== undefined && now - since < windowMs;
}

/** Forgets peers whose window has passed (the worker runs this periodically; the REST view lists the rest). */
export function purgeUnavailablePeers(
  peers: UnavailablePeers,
  now: number,
  windowMs: number,
): UnavailablePeers {
  const next = new Map<WorkerKey, number>();
  for (const [peer, since] of peers) if (now - since < windowMs) next.set(peer, since);
  return next.size === peers.size ? peers : next;
}

/**
 * The marks a reserve lifts: a primary whose peer is marked gets a new chance to reach it, since the master placed
 * the peer after the failure as a registered worker in service. Without this a worker killed and started again on
 * the same address (or a connection cut for a moment) stayed unreachable for the whole window although it was back:
 * every replicated shuffle placed on the pair failed its pushes, and the applications excluded the healthy peer (the
 * chaos soak's graceful-restart finding, docs/chaos.md). A peer still down fails the next connect and is marked
 * again, so a reserve costs at most one more connect attempt.
 */
export function liftForReserve(
  peers: UnavailablePeers,
  placedPeers: Iterable<WorkerKey>,
): { peers: UnavailablePeers; lifted: WorkerKey[] } {
  if (peers.size === 0) return { peers, lifted: [] };
  const lifted = [...new Set(placedPeers)].filter((peer) => peers.has(peer));
  if (lifted.length === 0) return { peers, lifted };
  const next = new Map(peers);
  for (const peer of lifted) next.delete(peer);
  return { peers: next, lifted };
}
