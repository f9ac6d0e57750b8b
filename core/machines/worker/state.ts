import type {
  AppId,
  PartitionLocation,
  PartitionMode,
  ShuffleId,
  ShuffleKey,
  StatusCode,
} from '../../domain/index.ts';
import { initialLifecycle, type WorkerLifecycle } from '../../lifecycle/worker-states.ts';
import type { ReplicaOutcome, UnavailablePeers } from '../../replication/index.ts';
import {
  emptyCongestion,
  type CongestionState,
  type FilesystemSpace,
  type PartitionSplitMode,
} from '../../storage/index.ts';
import type { FileRef, IoError, NodeId } from '../effects.ts';
import type { WorkerConfig } from './config.ts';

/** Who to answer: the requester's node and the request's id (absent for one-way messages). */
export interface ReplyTo {
  readonly node: NodeId;
  readonly requestId: number | undefined;
}

/**
 * One unit of work on one partition file. A file runs its tasks strictly one after another, so that appends land in
 * the order they were accepted (concurrent appends to one file are not ordered by any file system), chunk offsets
 * are batch boundaries, and a flush covers every write accepted before the commit.
 */
export type FileTask =
  /** Batch `batch` (its index in the push message) of push `pushId`. */
  | { readonly kind: 'write'; readonly pushId: number; readonly batch: number; readonly bytes: Uint8Array }
  | { readonly kind: 'flush'; readonly commitId: number }
  /** Move the file off the memory tier (size limit, memory pressure, or graceful shutdown). */
  | { readonly kind: 'evict'; readonly reason: EvictReason };

export type EvictReason = 'file-size' | 'memory-pressure' | 'shutdown';

/**
 * - `open`: reserved, accepting pushes.
 * - `committing`: a commit asked for it; writes accepted before are still finished, new pushes are refused as they
 *   are for a committed file.
 * - `committed`: flushed and sealed; served to readers, never written again.
 * - `failed`: a write or flush failed; refuses pushes, cannot be committed. The client revives away.
 */
export type FileStatus = 'open' | 'committing' | 'committed' | 'failed';

export interface PartitionFile {
  /** partitionFileName(location): `id-epoch-mode`. Also the key in the shuffle's file map. */
  readonly name: string;
  readonly location: PartitionLocation;
  readonly file: FileRef;
  readonly status: FileStatus;
  /** Why the file failed (with status 'failed'). */
  readonly failure?: string;
  /** Bytes appended successfully; every one of them belongs to a whole, acknowledged batch. */
  readonly bytes: number;
  /** Chunk start offsets so far: [0, ...batch boundaries past each chunk size]; the end is `bytes`. */
  readonly chunkStarts: readonly number[];
  /** Tasks waiting for the file, oldest first. */
  readonly queue: readonly FileTask[];
  /** The op in flight for this file, if any. */
  readonly busyOp?: number;
}

/** A shuffle as one worker sees it: the files it holds, and how the client asked them to be split. */
export interface WorkerShuffle {
  readonly appId: AppId;
  readonly shuffleId: ShuffleId;
  readonly splitThreshold: number;
  readonly splitMode: PartitionSplitMode;
  /** Whether the application enabled the memory tier itself (svc.storage.availableTypes lists MEMORY). */
  readonly memoryEnabled: boolean;
  /** Who the application runs as, when its client said (ReserveSlots): the management interface's usage per user. */
  readonly user: { readonly tenant?: string; readonly name: string } | undefined;
  /** By file name (`id-epoch-mode`), in the order they were reserved. */
  readonly files: ReadonlyMap<string, PartitionFile>;
  /** The winning attempt of each map (index = mapId; -1: none), known once the shuffle was committed here. */
  readonly mapAttempts: readonly number[] | undefined;
}

/** The outcome of one copy's part of a push. */
export type CopyOutcome =
  { readonly ok: true } | { readonly ok: false; readonly error: IoError | 'file-failed' };

/**
 * A push message (PushData, or PushMergedData with its batches) with at least one batch this worker accepted, not
 * yet answered. Each batch is judged on its own; the message is answered once, when every batch's status is known.
 */
export interface PendingPush {
  readonly replyTo: ReplyTo;
  readonly shuffleKey: ShuffleKey;
  readonly mode: PartitionMode;
  readonly mapId: number;
  readonly attemptId: number;
  /** PushData is answered with a PushDataResponse for its one batch, PushMergedData with one status per batch. */
  readonly answer: 'PushDataResponse' | 'PushMergedDataResponse';
  /**
   * One per batch of the message, in its order. The machine owns the array and replaces a batch in its slot when a
   * copy of it ends (like the maps of the state, see setEntry in outbox.ts).
   */
  readonly batches: readonly PushBatch[];
  /** Batches whose status is not known yet; the push is answered when this reaches 0. */
  readonly waiting: number;
}

/** One batch of a push: waiting for its copies, or settled with the status its answer carries. */
export type PushBatch = WaitingBatch | SettledBatch;

export interface WaitingBatch {
  readonly kind: 'waiting';
  /** The partition file it goes to (`id-epoch-mode`). */
  readonly fileName: string;
  readonly batchId: number;
  readonly local: CopyOutcome | 'pending';
  /** 'none' when there is no replica to forward to (no peer, or this is the replica). */
  readonly replica: ReplicaOutcome | 'pending' | 'none';
  /** The split check asked for a soft split: the batch lands, and the answer tells the client to move soon. */
  readonly softSplit: boolean;
}

export interface SettledBatch {
  readonly kind: 'settled';
  readonly fileName: string;
  readonly batchId: number;
  readonly status: StatusCode;
  /** Why, in words: 'written', or what refused or failed it. */
  readonly reason: string;
}

/** A ReserveSlots request waiting for its files to be created. */
export interface PendingReserve {
  readonly replyTo: ReplyTo;
  readonly shuffleKey: ShuffleKey;
  /** The shuffle's settings from the request, for a shuffle this worker does not hold yet. */
  readonly shuffle: Omit<WorkerShuffle, 'files' | 'mapAttempts'>;
  /** Files still being created, by name. */
  readonly creating: ReadonlySet<string>;
  /** Files created for this request (undone if any other fails). */
  readonly created: readonly PartitionFile[];
  /** What failed, one line per location. */
  readonly failures: readonly string[];
  /** Every location of the request; those from `next` on are not started yet (a bounded number per step). */
  readonly locations: readonly PartitionLocation[];
  readonly next: number;
}

/** A CommitFiles request waiting for its flushes. */
export interface PendingCommit {
  readonly replyTo: ReplyTo;
  readonly shuffleKey: ShuffleKey;
  /** Files still flushing, by name. */
  readonly flushing: ReadonlySet<string>;
  readonly primaryIds: readonly string[];
  readonly replicaIds: readonly string[];
  /** How many of the listed ids (primaries, then replicas) were looked at; the rest wait for a later step. */
  readonly next: number;
  /** Flushes this commit started so far (none at all: the answer says there was nothing to flush). */
  readonly started: number;
}

/** What an op number stands for, so that its completion reaches the right handler. */
export type OpPurpose =
  | {
      readonly kind: 'create';
      readonly reserveId: number;
      readonly file: PartitionFile;
      /** 1 for the first attempt; a failed create is retried on another tier or disk up to the configured limit. */
      readonly attempt: number;
      /** A file of the same name this worker had no record of was deleted before this create (see reserve.ts). */
      readonly leftoverDeleted?: boolean;
    }
  | {
      readonly kind: 'file-task';
      readonly shuffleKey: ShuffleKey;
      readonly fileName: string;
      readonly issuedAt: number;
      /** Tasks at the head of the file's queue the operation carries: several writes go as one (file-queue.ts). */
      readonly tasks: number;
    }
  | {
      readonly kind: 'evict-move';
      readonly shuffleKey: ShuffleKey;
      readonly fileName: string;
      readonly to: FileRef;
      /** An evict task is at the head of the file's queue (false: the move runs ahead of the write that needs it). */
      readonly popsTask: boolean;
    }
  | {
      readonly kind: 'read';
      readonly replyTo: ReplyTo;
      /** What the bytes answer: a FetchChunk, or an OpenStream that asked for its first chunk. */
      readonly answer: 'chunk' | 'open';
      readonly streamId: number;
      readonly chunkIndex: number;
      readonly file: FileRef;
      /** Bytes asked for: a read must return exactly this many. */
      readonly length: number;
      readonly issuedAt: number;
    };

/** Requests this worker sent and awaits an answer to. */
export type OutstandingRequest =
  | { readonly kind: 'register' }
  | { readonly kind: 'heartbeat' }
  /** The worker's last heartbeat, in state Exit: the process exits once the master took it (or could not). */
  | { readonly kind: 'exitReport'; readonly code: number; readonly reason: string }
  /** A forward of some batches of push `pushId` (their indexes in it, in the forward's order) to one peer. */
  | {
      readonly kind: 'replicate';
      readonly pushId: number;
      readonly peer: NodeId;
      readonly batches: readonly number[];
    };

export interface ReadStream {
  readonly shuffleKey: ShuffleKey;
  readonly fileName: string;
  readonly chunkOffsets: readonly number[];
}

export type Registration =
  | { readonly status: 'unregistered' }
  /** `since`: when this round of attempts began; the register timeout counts from there. */
  | { readonly status: 'registering'; readonly since: number; readonly attempts: number }
  | { readonly status: 'registered' };

/** Moving averages the load-aware slot policy ranks disks by (reported in heartbeats, in ns). */
export interface DiskTimings {
  readonly avgFlushTimeNs: number;
  readonly avgFetchTimeNs: number;
}

/**
 * The worker machine's whole state: plain data the machine owns (machine.ts) and updates in place (its maps) or
 * replaces (its records); everyone else only reads it. Only committed file infos are durable (the `recovery`
 * store); everything else is rebuilt from the master and the clients.
 */
export interface WorkerMachineState {
  readonly config: WorkerConfig;
  readonly started: boolean;
  readonly lifecycle: WorkerLifecycle;
  readonly registration: Registration;
  /** The next op, request, stream, push, reserve and commit id; one counter keeps every id unique on this node. */
  readonly nextId: number;
  readonly shuffles: ReadonlyMap<ShuffleKey, WorkerShuffle>;
  readonly pushes: ReadonlyMap<number, PendingPush>;
  readonly reserves: ReadonlyMap<number, PendingReserve>;
  readonly commits: ReadonlyMap<number, PendingCommit>;
  readonly ops: ReadonlyMap<number, OpPurpose>;
  readonly requests: ReadonlyMap<number, OutstandingRequest>;
  readonly streams: ReadonlyMap<number, ReadStream>;
  /** Bytes held in the memory tier. */
  readonly memoryUsedBytes: number;
  /** Bytes written per local disk (by mount point), including files still open. */
  readonly diskUsedBytes: ReadonlyMap<string, number>;
  /** Each local disk's filesystem as last observed (start, then each `diskSpace` input), by mount point. */
  readonly diskSpace: ReadonlyMap<string, FilesystemSpace>;
  /** Disks marked unusable after an I/O error or a full disk, with why (until restart). */
  readonly diskProblems: ReadonlyMap<string, 'READ_OR_WRITE_FAILURE' | 'HIGH_DISK_USAGE'>;
  /** Per disk (mount point; a distributed tier by its name): moving averages of write, flush and read latency. */
  readonly timings: ReadonlyMap<string, DiskTimings>;
  /** Replica peers that could not be reached, with when; pushes fast-fail for them until the window passes. */
  readonly unavailablePeers: UnavailablePeers;
  /** Set when the worker reached Exit and waits for its memory files to move to disk before it stops. */
  readonly exitPending: boolean;
  /**
   * Committed memory files a graceful shutdown found no tier for at its last check (a failed or full disk): it
   * waits for them, and says so again only when this number changes.
   */
  readonly memoryFilesAwaitingDisk: number;
  /**
   * Partition files found on the local disks at start that belong to no file the worker holds, by shuffle: deleted
   * once the master no longer has their shuffle and the grace period has passed (./leftovers.ts).
   */
  readonly leftovers: ReadonlyMap<ShuffleKey, readonly FileRef[]>;
  /** When the leftovers were found (the start). */
  readonly leftoversFoundAt: number;
  /** Congestion control's measures and episode (./congestion.ts); stays empty while it is off. */
  readonly congestion: CongestionState;
  /** Whether the congestion check timer is set. */
  readonly congestionCheckArmed: boolean;
  /**
   * Files of dropped shuffles still to delete, oldest first: a drop of many files deletes `filesPerStep` a step
   * (./commit.ts `dropShuffle`), so that a shuffle of 20,000 files does not hold the worker for a whole drop. The
   * bytes stay accounted until each file's delete goes out: the tier still holds them.
   */
  readonly pendingDeletes: readonly PendingDelete[];
}

/** A file a drop will delete, with the bytes accounted to it. */
export interface PendingDelete {
  readonly file: FileRef;
  readonly bytes: number;
}

/**
 * Takes the next id of the node's one counter (op, request, stream, push, reserve, commit), in place: the machine owns
 * its state record as it owns its maps (see setEntry in outbox.ts), and the hot paths (one op per write) should not
 * copy the whole record for it.
 */
export function takeId(s: WorkerMachineState): number {
  const id = s.nextId;
  (s as { nextId: number }).nextId = id + 1;
  return id;
}

/**
 * A set or array of the machine's state, writable: the machine owns its state and updates it in place (like its
 * maps, see setEntry in outbox.ts) where copying it on every change would cost time in proportion to its size.
 */
export function owned<T>(collection: ReadonlySet<T>): Set<T>;
export function owned<T>(collection: readonly T[]): T[];
export function owned<T>(collection: ReadonlySet<T> | readonly T[]): Set<T> | T[] {
  return collection as Set<T> | T[];
}

export function initialWorkerState(config: WorkerConfig): WorkerMachineState {
  return {
    config,
    started: false,
    lifecycle: initialLifecycle(0),
    registration: { status: 'unregistered' },
    nextId: 1,
    shuffles: new Map(),
    pushes: new Map(),
    reserves: new Map(),
    commits: new Map(),
    ops: new Map(),
    requests: new Map(),
    streams: new Map(),
    memoryUsedBytes: 0,
    diskUsedBytes: new Map(config.disks.map((disk) => [disk.mountPoint, 0])),
    diskSpace: new Map(
      config.disks.flatMap((disk) =>
        disk.filesystem === undefined ? [] : [[disk.mountPoint, disk.filesystem]],
      ),
    ),
    diskProblems: new Map(),
    timings: new Map(),
    unavailablePeers: new Map(),
    exitPending: false,
    memoryFilesAwaitingDisk: 0,
    leftovers: new Map(),
    leftoversFoundAt: 0,
    congestion: emptyCongestion(),
    congestionCheckArmed: false,
    pendingDeletes: [],
  };
}
