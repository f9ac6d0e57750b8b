import type { AppId, ShuffleId, ShuffleKey } from '../domain/ids.ts';
import type { PartitionLocation, PartitionMode } from '../domain/partition.ts';
import type { StatusCode } from '../domain/status.ts';
import type { StorageInfo } from '../domain/storage.ts';
import type { AppConsumption } from '../quota/consumption.ts';
import type { DiskInfo, WorkerEventType, WorkerId, WorkerState } from '../domain/worker.ts';

/**
 * The messages the roles exchange. Every message has a `type` tag; drivers route envelopes without looking inside.
 * Requests carry a requestId in their envelope and the response names it in `inReplyTo`. docs/protocol.md gives
 * the schemas in prose; this union is the single definition both drivers and all machines use.
 *
 * Node ids: the master is `master-<n>`; a worker is its workerKey (host:rpc:push:fetch:replicate; one node serves
 * all four ports); a lifecycle manager is `lm-<appId>`; tasks are `map-...` and `reduce-...` (see ./node-ids.ts).
 */
export interface MessageBase {
  readonly type: string;
}

// ---------------------------------------------------------------- worker ⇄ master

export interface RegisterWorker {
  readonly type: 'RegisterWorker';
  readonly worker: WorkerId;
  readonly disks: readonly DiskInfo[];
  readonly networkLocation: string;
}
export interface RegisterWorkerResponse {
  readonly type: 'RegisterWorkerResponse';
  readonly success: boolean;
  readonly message: string;
}
export interface WorkerHeartbeat {
  readonly type: 'WorkerHeartbeat';
  readonly worker: WorkerId;
  readonly disks: readonly DiskInfo[];
  readonly activeShuffleKeys: readonly ShuffleKey[];
  readonly highWorkload: boolean;
  readonly state: WorkerState;
  /**
   * What each application holds in this worker's live partition files (the reference reports it per user; the
   * master maps applications to their users). Absent: nothing, or a worker that does not report it.
   */
  readonly resourceConsumption?: readonly AppConsumption[];
}
export interface WorkerHeartbeatResponse {
  readonly type: 'WorkerHeartbeatResponse';
  /** False when the master does not know the worker (e.g. after a master restart): the worker registers again. */
  readonly registered: boolean;
  /** Shuffles the worker still holds that the master no longer has: release their slots and clean them up. */
  readonly expiredShuffleKeys: readonly ShuffleKey[];
  /** The operator's pending event for this worker ('None' when there is none). */
  readonly workerEvent: WorkerEventType;
}
/** Sent when a graceful shutdown starts: the master stops offering the worker and lists it as shutting down. */
export interface ReportWorkerUnavailable {
  readonly type: 'ReportWorkerUnavailable';
  readonly worker: WorkerId;
}
export interface ReportWorkerDecommission {
  readonly type: 'ReportWorkerDecommission';
  readonly worker: WorkerId;
}
/** Sent by a worker exiting immediately, so that the master need not wait for the heartbeat timeout. */
export interface ReportWorkerLost {
  readonly type: 'ReportWorkerLost';
  readonly worker: WorkerId;
}

// ---------------------------------------------------------------- lifecycle manager ⇄ master

export interface RegisterApplication {
  readonly type: 'RegisterApplication';
  readonly appId: AppId;
  readonly user: string;
  /**
   * svc addition: the application's secret when authentication is on (svc.auth.enabled). The master keeps the
   * first one an application registers; the application's connections then prove it (docs/protocol.md,
   * Authentication). Absent or empty: none.
   */
  readonly secret?: string;
  /** svc addition: the lifecycle manager's host, listed by `/api/v1/applications/hostnames`. Absent: unknown. */
  readonly hostname?: string;
  /** The tenant the application runs as (`svc.identity.user-specific.tenant`); `user` is its user name. Absent: `default`. */
  readonly tenant?: string;
}
/** Also the reply to any client request the server refuses by release (status CLIENT_RELEASE_REFUSED). */
export interface StatusResponse {
  readonly type: 'StatusResponse';
  readonly status: StatusCode;
  readonly message: string;
}
/**
 * svc addition: the answer of a master that does not lead its group (a follower) to any request, to a peer whose
 * handshake said it follows a leader (core/ha/follow-leader.ts); other peers get a StatusResponse REQUEST_FAILED.
 */
export interface NotLeader {
  readonly type: 'NotLeader';
  /** The leader's address, `host:port`; empty when the follower knows no leader yet. */
  readonly leader: string;
  readonly message: string;
}
export interface ApplicationHeartbeat {
  readonly type: 'ApplicationHeartbeat';
  readonly appId: AppId;
  /** Bytes and files written since the previous heartbeat; they feed the master's estimated partition size. */
  readonly bytesWritten: number;
  readonly fileCount: number;
  /**
   * svc addition: the shuffles the master gave slots for, as the lifecycle manager holds them; a master that lost
   * them (started without its state) registers them again instead of having the workers drop their data. Older
   * clients send none (on the wire: an empty list).
   */
  readonly shuffleIds?: readonly ShuffleId[];
}
export interface ApplicationHeartbeatResponse {
  readonly type: 'ApplicationHeartbeatResponse';
  readonly excludedWorkers: readonly WorkerId[];
  readonly unknownWorkers: readonly WorkerId[];
  /** Shutting down or decommissioning: not to be used for new locations. */
  readonly shuttingWorkers: readonly WorkerId[];
  /**
   * svc addition: every worker the master may offer slots on now, with its rack: the lifecycle manager's revive
   * candidates beyond the shuffle's own workers. Absent from older masters.
   */
  readonly availableWorkers?: readonly AvailableWorker[];
  /**
   * Set when the master interrupts this application's shuffles for a quota (`svc.quota.interruptShuffle.enabled`):
   * why, naming the user, the quota, the usage and the limit. The reference's per-application quota status.
   */
  readonly quotaExceeded?: string;
}
/** A worker the master may offer slots on, and its rack. */
export interface AvailableWorker {
  readonly worker: WorkerId;
  readonly networkLocation: string;
}
export interface RequestSlots {
  readonly type: 'RequestSlots';
  readonly appId: AppId;
  readonly shuffleId: ShuffleId;
  readonly partitionIds: readonly number[];
  readonly replicate: boolean;
  readonly rackAware: boolean;
  /** Mask of svc.storage.availableTypes. */
  readonly availableTypes: number;
  /** Workers this client has excluded itself (worker keys). */
  readonly excludedWorkers: readonly string[];
  readonly maxWorkers: number;
}
export interface WorkerResource {
  readonly worker: WorkerId;
  /** The worker's rack as the master knows it, so that revives can keep a replica off its primary's rack. */
  readonly networkLocation: string;
  readonly primaries: readonly PartitionLocation[];
  readonly replicas: readonly PartitionLocation[];
}
export interface RequestSlotsResponse {
  readonly type: 'RequestSlotsResponse';
  readonly status: StatusCode;
  /** Every worker with locations, then the padding workers (empty lists) that revives may use. */
  readonly workerResource: readonly WorkerResource[];
  /** Partitions that could not be placed, with the reason; empty on SUCCESS. */
  readonly unplaced: readonly { readonly partitionId: number; readonly reason: string }[];
  readonly message: string;
}
export interface UnregisterShuffle {
  readonly type: 'UnregisterShuffle';
  readonly appId: AppId;
  readonly shuffleId: ShuffleId;
}
export interface UnregisterApplication {
  readonly type: 'UnregisterApplication';
  readonly appId: AppId;
}

/**
 * svc addition: a worker asks the master for an application's secret, to check the proof of a connection that
 * claims the application (svc.auth.enabled). Only a server may ask.
 */
export interface GetApplicationSecret {
  readonly type: 'GetApplicationSecret';
  readonly appId: AppId;
}
export interface ApplicationSecretResponse {
  readonly type: 'ApplicationSecretResponse';
  readonly appId: AppId;
  /** False when the master knows no secret for the application (not registered, or registered without one). */
  readonly found: boolean;
  readonly secret: string;
}

// ---------------------------------------------------------------- lifecycle manager ⇄ worker

export interface ReserveSlots {
  readonly type: 'ReserveSlots';
  readonly appId: AppId;
  readonly shuffleId: ShuffleId;
  readonly primaries: readonly PartitionLocation[];
  readonly replicas: readonly PartitionLocation[];
  /** Client's svc.client.shuffle.partitionSplit.threshold and mode. */
  readonly splitThreshold: number;
  readonly splitMode: 'SOFT' | 'HARD';
  /** Whether the application itself enabled the MEMORY tier (svc.storage.availableTypes); see the worker's guard. */
  readonly memoryEnabled: boolean;
  /** svc addition: who the application runs as, for the worker's usage per user (absent: an older client). */
  readonly user?: string;
  /** With `user`: its tenant; absent: the default tenant. */
  readonly tenant?: string;
}
/** A committed partition file: what a reader needs to fetch and verify it. */
export interface CommittedFile {
  readonly uniqueId: string;
  readonly mode: PartitionMode;
  /** Where the file finally is (it may have been evicted from memory to another tier). */
  readonly storage: StorageInfo;
  readonly bytes: number;
  /** Offsets of chunk boundaries (always batch boundaries), starting with 0 and ending with `bytes`. */
  readonly chunkOffsets: readonly number[];
}
export interface CommitFiles {
  readonly type: 'CommitFiles';
  readonly appId: AppId;
  readonly shuffleId: ShuffleId;
  readonly primaryIds: readonly string[];
  readonly replicaIds: readonly string[];
  /** The winning attempt of each map (index = mapId); -1 for a map without one. */
  readonly mapAttempts: readonly number[];
}
export interface CommitFilesResponse {
  readonly type: 'CommitFilesResponse';
  readonly status: StatusCode;
  readonly committedPrimaries: readonly CommittedFile[];
  readonly committedReplicas: readonly CommittedFile[];
  readonly failedPrimaryIds: readonly string[];
  readonly failedReplicaIds: readonly string[];
  readonly message: string;
}
export interface DestroySlots {
  readonly type: 'DestroySlots';
  readonly appId: AppId;
  readonly shuffleId: ShuffleId;
  readonly primaryIds: readonly string[];
  readonly replicaIds: readonly string[];
}

// ---------------------------------------------------------------- tasks ⇄ lifecycle manager

export interface RegisterShuffle {
  readonly type: 'RegisterShuffle';
  readonly appId: AppId;
  readonly shuffleId: ShuffleId;
  readonly numMappers: number;
  readonly numPartitions: number;
}
export interface RegisterShuffleResponse {
  readonly type: 'RegisterShuffleResponse';
  readonly status: StatusCode;
  /** The primary location of every partition (carrying its replica as `peer`). */
  readonly locations: readonly PartitionLocation[];
  readonly message: string;
}
export interface ReviveRequest {
  readonly partitionId: number;
  /** Epoch of the location that failed (-1 when the task has none). */
  readonly epoch: number;
  readonly oldLocation?: PartitionLocation;
  readonly cause: StatusCode;
}
export interface Revive {
  readonly type: 'Revive';
  readonly appId: AppId;
  readonly shuffleId: ShuffleId;
  readonly mapId: number;
  readonly attemptId: number;
  readonly requests: readonly ReviveRequest[];
}
export interface ReviveResult {
  readonly partitionId: number;
  readonly status: StatusCode;
  readonly newLocation?: PartitionLocation;
  /** Whether the old location's worker is still considered usable. */
  readonly oldAvailable: boolean;
}
export interface ReviveResponse {
  readonly type: 'ReviveResponse';
  readonly results: readonly ReviveResult[];
  readonly endedMapIds: readonly number[];
}
/** Per partition, what one map attempt pushed and had acknowledged: the reader verifies it. */
export interface PartitionWritten {
  readonly partitionId: number;
  readonly batches: number;
  readonly bytes: number;
}
export interface MapperEnd {
  readonly type: 'MapperEnd';
  readonly appId: AppId;
  readonly shuffleId: ShuffleId;
  readonly mapId: number;
  readonly attemptId: number;
  readonly numMappers: number;
  readonly written: readonly PartitionWritten[];
}
export interface GetReducerFileGroup {
  readonly type: 'GetReducerFileGroup';
  readonly appId: AppId;
  readonly shuffleId: ShuffleId;
}
export interface ReducerFileGroup {
  readonly partitionId: number;
  /** Committed copies of every epoch of this partition (primary and replica of each). */
  readonly locations: readonly PartitionLocation[];
  /** Each copy's committed file, by the location's uniqueId and mode. */
  readonly files: readonly CommittedFile[];
  /** What each winning map attempt wrote to this partition. */
  readonly expected: readonly (PartitionWritten & { readonly mapId: number })[];
}
export interface GetReducerFileGroupResponse {
  readonly type: 'GetReducerFileGroupResponse';
  /** SUCCESS, STAGE_END_TIMEOUT (not yet ended: ask again), SHUFFLE_DATA_LOST (a partition has no committed copy). */
  readonly status: StatusCode;
  readonly fileGroups: readonly ReducerFileGroup[];
  /** The winning attempt of each map (index = mapId). */
  readonly mapAttempts: readonly number[];
  readonly message: string;
}

// ---------------------------------------------------------------- tasks ⇄ worker (data plane)

/**
 * One batch of one map attempt for one partition. `payload` is a framed batch (header with map, attempt, batch,
 * partition, epoch, length and CRC32, then the bytes; see ./batch-frame.ts) that the worker appends unchanged.
 * The primary forwards the same message with mode REPLICA to its peer.
 */
export interface PushData {
  readonly type: 'PushData';
  readonly shuffleKey: ShuffleKey;
  readonly mode: PartitionMode;
  readonly partitionId: number;
  readonly epoch: number;
  readonly mapId: number;
  readonly attemptId: number;
  readonly batchId: number;
  readonly payload: Uint8Array;
}
export interface PushDataResponse {
  readonly type: 'PushDataResponse';
  readonly status: StatusCode;
  readonly message: string;
}
/** One batch of a merged push: the partition location (id and epoch) it is for, and its frame (as PushData's). */
export interface MergedBatch {
  readonly partitionId: number;
  readonly epoch: number;
  readonly batchId: number;
  readonly payload: Uint8Array;
}
/**
 * Several batches of one map attempt in one message (the reference's PushMergedData). The client groups batches
 * whose primaries are on the same worker and whose replicas are on the same peer worker (or that have none), so
 * that the primary forwards the batches it takes to that peer in one message too (mode REPLICA). Each batch is
 * judged on its own: the worker answers with one status per batch.
 */
export interface PushMergedData {
  readonly type: 'PushMergedData';
  readonly shuffleKey: ShuffleKey;
  readonly mode: PartitionMode;
  readonly mapId: number;
  readonly attemptId: number;
  readonly batches: readonly MergedBatch[];
}
export interface PushMergedDataResponse {
  readonly type: 'PushMergedDataResponse';
  /** One per batch, in the order of the request's batches: what a PushDataResponse would have said of it. */
  readonly statuses: readonly StatusCode[];
  /** Why batches were not written (one clause per distinct reason); empty when every batch succeeded. */
  readonly message: string;
}
export interface OpenStream {
  readonly type: 'OpenStream';
  readonly shuffleKey: ShuffleKey;
  readonly uniqueId: string;
  readonly mode: PartitionMode;
  /**
   * svc addition: answer with the stream's first chunk (`firstChunk`), saving the reader one round trip per copy
   * (most reduce partitions are one chunk). A server that ignores it answers without `firstChunk`, and the reader
   * fetches chunk 0 as usual.
   */
  readonly readFirstChunk?: boolean;
}
export interface OpenStreamResponse {
  readonly type: 'OpenStreamResponse';
  readonly status: StatusCode;
  readonly streamId: number;
  readonly chunkOffsets: readonly number[];
  readonly message: string;
  /** Chunk 0's bytes, when the request asked for them and the stream has a chunk. */
  readonly firstChunk?: Uint8Array;
}
export interface FetchChunk {
  readonly type: 'FetchChunk';
  readonly streamId: number;
  readonly chunkIndex: number;
}
export interface ChunkData {
  readonly type: 'ChunkData';
  readonly status: StatusCode;
  readonly streamId: number;
  readonly chunkIndex: number;
  readonly bytes: Uint8Array;
  readonly message: string;
}
export interface CloseStream {
  readonly type: 'CloseStream';
  readonly streamId: number;
}

export type Message =
  | RegisterWorker
  | RegisterWorkerResponse
  | WorkerHeartbeat
  | WorkerHeartbeatResponse
  | ReportWorkerUnavailable
  | ReportWorkerDecommission
  | ReportWorkerLost
  | RegisterApplication
  | StatusResponse
  | NotLeader
  | ApplicationHeartbeat
  | ApplicationHeartbeatResponse
  | RequestSlots
  | RequestSlotsResponse
  | UnregisterShuffle
  | UnregisterApplication
  | GetApplicationSecret
  | ApplicationSecretResponse
  | ReserveSlots
  | CommitFiles
  | CommitFilesResponse
  | DestroySlots
  | RegisterShuffle
  | RegisterShuffleResponse
  | Revive
  | ReviveResponse
  | MapperEnd
  | GetReducerFileGroup
  | GetReducerFileGroupResponse
  | PushData
  | PushDataResponse
  | PushMergedData
  | PushMergedDataResponse
  | OpenStream
  | OpenStreamResponse
  | FetchChunk
  | ChunkData
  | CloseStream;

export type MessageType = Message['type'];

/** Narrows a message to one type. */
export type MessageOf<T extends MessageType> = Extract<Message, { type: T }>;
