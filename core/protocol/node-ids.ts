import type { AppId, ShuffleId } from '../domain/ids.ts';
import { workerKey, type WorkerId } from '../domain/worker.ts';
import type { NodeId } from '../machines/effects.ts';

/** Addresses of the roles. One naming scheme, so that traces, drivers and machines agree on who is who. */
export function masterNodeId(index = 0): NodeId {
  return `master-${index}`;
}

/** A worker's node id is its identity: one node serves its rpc, push, fetch and replicate ports. */
export function workerNodeId(worker: WorkerId): NodeId {
  return workerKey(worker);
}

export function lifecycleManagerNodeId(appId: AppId): NodeId {
  return `lm-${appId}`;
}

export function mapTaskNodeId(appId: AppId, shuffleId: ShuffleId, mapId: number, attemptId: number): NodeId {
  return `map-${appId}-${shuffleId}-${mapId}-${attemptId}`;
}

export function reduceTaskNodeId(appId: AppId, shuffleId: ShuffleId, partitionId: number): NodeId {
  return `reduce-${appId}-${shuffleId}-${partitionId}`;
}

/** The application's driver: the engine's own voice toward its lifecycle manager (unregistering, mostly). */
export function driverNodeId(appId: AppId): NodeId {
  return `driver-${appId}`;
}

/** Trailing `-<integer>` parts of each kind of task id (shuffle, map, attempt; shuffle, partition). */
const TASK_ID_PARTS: readonly (readonly [prefix: string, numbers: number])[] = [
  ['map-', 3],
  ['reduce-', 2],
];

/**
 * The application a client node id belongs to (`lm-<app>`, `driver-<app>`, `map-<app>-…`, `reduce-<app>-…`), or
 * undefined for any other id (a master, a worker, a name of no application's). With authentication on, a
 * connection that proved application A may speak only as A's nodes, so that nobody can hold another
 * application's node names and the replies meant for them (docs/protocol.md, Authentication).
 */
export function applicationOfNode(node: NodeId): AppId | undefined {
  for (const prefix of ['lm-', 'driver-']) {
    if (node.startsWith(prefix) && node.length > prefix.length) return node.slice(prefix.length);
  }
  for (const [prefix, numbers] of TASK_ID_PARTS) {
    if (!node.startsWith(prefix)) continue;
    let rest = node.slice(prefix.length);
    for (let i = 0; i < numbers; i += 1) {
      const dash = rest.lastIndexOf('-');
      if (dash <= 0 || !/^(0|[1-9][0-9]*)$/.test(rest.slice(dash + 1))) return undefined;
      rest = rest.slice(0, dash);
    }
    return rest;
  }
  return undefined;
}
