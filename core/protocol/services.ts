import type { Message } from './messages.ts';

/**
 * Which of a worker's four servers a message goes to (the reference's separate rpc, push, fetch and replicate ports):
 * the runtime's transport addresses it there, and the worker's back-pressure pauses the push and replicate ones
 * (runtime/driver/back-pressure.ts; the simulator's workers alike, sim/world/back-pressure.ts).
 */
export type WorkerService = 'rpc' | 'push' | 'fetch' | 'replicate';

export function workerServiceFor(message: Message): WorkerService {
  switch (message.type) {
    case 'PushData':
    case 'PushMergedData':
      // A primary forwards to its replica with mode REPLICA: the replica's replicate port, so that a worker can
      // throttle client pushes and replication separately.
      return message.mode === 'REPLICA' ? 'replicate' : 'push';
    case 'OpenStream':
    case 'FetchChunk':
    case 'CloseStream':
      return 'fetch';
    // Everything else is control plane; listed so that a new message type must be placed here on purpose.
    case 'RegisterWorker':
    case 'RegisterWorkerResponse':
    case 'WorkerHeartbeat':
    case 'WorkerHeartbeatResponse':
    case 'ReportWorkerUnavailable':
    case 'ReportWorkerDecommission':
    case 'ReportWorkerLost':
    case 'RegisterApplication':
    case 'StatusResponse':
    case 'NotLeader':
    case 'ApplicationHeartbeat':
    case 'ApplicationHeartbeatResponse':
    case 'RequestSlots':
    case 'RequestSlotsResponse':
    case 'UnregisterShuffle':
    case 'UnregisterApplication':
    case 'GetApplicationSecret':
    case 'ApplicationSecretResponse':
    case 'ReserveSlots':
    case 'CommitFiles':
    case 'CommitFilesResponse':
    case 'DestroySlots':
    case 'RegisterShuffle':
    case 'RegisterShuffleResponse':
    case 'Revive':
    case 'ReviveResponse':
    case 'MapperEnd':
    case 'GetReducerFileGroup':
    case 'GetReducerFileGroupResponse':
    case 'PushDataResponse':
    case 'PushMergedDataResponse':
    case 'OpenStreamResponse':
    case 'ChunkData':
      return 'rpc';
  }
}
