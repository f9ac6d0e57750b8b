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
