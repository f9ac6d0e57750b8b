/**
 * The limits a process's connections live under, decided once for every driver: how much may wait to be sent to a
 * peer, how many connections one port holds, how long a reply route outlives its node's last word. The drivers
 * count (bytes queued on a socket, connections open, when a node spoke) and apply the verdicts.
 */

/** svc.network.send.maxQueuedBytes's default. */
export const DEFAULT_MAX_QUEUED_BYTES = 256 * 1024 * 1024;

/** Replies waiting above this stop the reading of a connection until they drain: two 8 MiB chunks at most. */
const MAX_SEND_PAUSE_BYTES = 16 * 1024 * 1024;

/**
 * What a connection with `queuedBytes` waiting to be sent does (svc.network.send.maxQueuedBytes = `maxQueuedBytes`):
 * `close` past the bound (its peer reads more slowly than this process writes, and would make it hold without
 * bound); `pause` (stop reading what the peer asks until the queue drained) from half of it, at most two chunks'
 * worth, so that a peer asking faster than it reads is slowed before it is cut off; else `ok`.
 */
export function sendQueueVerdict(queuedBytes: number, maxQueuedBytes: number): 'ok' | 'pause' | 'close' {
  if (queuedBytes > maxQueuedBytes) return 'close';
  if (queuedBytes >= sendPauseBytes(maxQueuedBytes)) return 'pause';
  return 'ok';
}

/** From how many queued bytes reading pauses (see sendQueueVerdict). */
export function sendPauseBytes(maxQueuedBytes: number): number {
  return Math.min(MAX_SEND_PAUSE_BYTES, Math.floor(maxQueuedBytes / 2));
}

/**
 * Whether a port holding `open` connections refuses one more (svc.network.port.maxConnections = `cap`; undefined:
 * no cap). Refused before anything is allocated for it.
 */
export function portFull(open: number, cap: number | undefined): boolean {
  return cap !== undefined && open >= cap;
}

/**
 * How long a reply route to a node without an address (a task) is kept after the node last spoke, when nothing sets
 * it: twice svc.network.timeout, so that a node that spoke within one timeout is still reachable for a whole one.
 */
export function defaultRouteIdleMs(networkTimeoutMs: number): number {
  return 2 * networkTimeoutMs;
}
