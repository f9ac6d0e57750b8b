import type { Message } from '../protocol/messages.ts';
import type { StorageType } from '../domain/storage.ts';
import type { QuotaSettings } from '../quota/limits.ts';
import type { CongestionWatermarks } from '../storage/congestion.ts';
import type { Release } from '../release/version.ts';

/**
 * The effect vocabulary: everything a state machine can ask its driver to do. Both drivers (runtime/ and sim/)
 * execute exactly this list; a machine never performs I/O itself. Completion of asynchronous effects (I/O, sends
 * that cannot be delivered) comes back as an Input carrying the effect's `op` number, which the machine allocated.
 * docs/core.md documents each effect and its completion.
 */

/** A node's address in the cluster: `master-<n>`, a worker key, `app-<appId>` for a lifecycle manager, or a task id. */
export type NodeId = string;

export interface Envelope<M extends Message = Message> {
  readonly from: NodeId;
  readonly to: NodeId;
  /**
   * The sender's release, as the connection's handshake established it (docs/protocol.md). Machines decide
   * admission from it; drivers fill it in, never a machine's own code.
   */
  readonly fromRelease: Release;
  /**
   * Who the sender's connection proved to be when application authentication is on (svc.auth.enabled): drivers
   * fill it in from the connection's handshake, never from anything the sender wrote in the envelope. Undefined
   * when authentication is off, or when the connection proved nothing (yet). Machines decide what each principal
   * may ask (./authorization.ts).
   */
  readonly principal?: Principal;
  /**
   * Whether the sender's handshake said it follows the leader of a group of masters (svc addition): a follower
   * master answers it `NotLeader` (core/ha/follow-leader.ts). Drivers fill it in from the handshake.
   */
  readonly peerFollowsLeader?: true;
  /** Set on requests that expect a reply; the reply carries it back as `inReplyTo`. */
  readonly requestId?: number;
  readonly inReplyTo?: number;
  readonly message: M;
}

/**
 * A proven identity: `server`, a master or worker that proved the cluster's internal secret, or the peer a process
 * reached on a connection it opened itself (to an address it chose); `application`, a lifecycle manager or task
 * that proved its application's secret.
 */
export type Principal =
  { readonly kind: 'server' } | { readonly kind: 'application'; readonly appId: string };

/** A file on a tier. `id` is unique on its node (`<shuffleKey>/<fileName>`); memory and DFS files have mountPoint ''. */
export interface FileRef {
  readonly id: string;
  readonly tier: StorageType;
  readonly mountPoint: string;
}

export type LogLevel = 'debug' | 'info' | 'warn' | 'error';

export type Effect =
  /** Deliver a message to another node. A send that cannot even be attempted comes back as `sendFailed`. */
  | {
      readonly kind: 'send';
      readonly to: NodeId;
      readonly message: Message;
      readonly requestId?: number;
      readonly inReplyTo?: number;
    }
  /** Wake the machine with a `timer` input at time `at`; setting a name again replaces the earlier timer. */
  | { readonly kind: 'setTimer'; readonly name: string; readonly at: number }
  | { readonly kind: 'cancelTimer'; readonly name: string }
  /** Create an empty file on a tier; completes with ioDone/ioFailed. Creating an existing file fails. */
  | { readonly kind: 'createFile'; readonly op: number; readonly file: FileRef }
  /**
   * Append bytes, then each of `more` in order (several batches of one file in one operation); completes with one
   * ioDone/ioFailed for all of them. Appended bytes are not durable until a flush completes.
   */
  | {
      readonly kind: 'write';
      readonly op: number;
      readonly file: FileRef;
      readonly bytes: Uint8Array;
      readonly more?: readonly Uint8Array[];
    }
  /** Make everything written so far durable (fsync); completes with ioDone/ioFailed. */
  | { readonly kind: 'flush'; readonly op: number; readonly file: FileRef }
  /** Read a byte range; ioDone carries the bytes. Used to serve a chunk to a reader. */
  | {
      readonly kind: 'read';
      readonly op: number;
      readonly file: FileRef;
      readonly offset: number;
      readonly length: number;
    }
  /** Move a file to another tier (eviction from memory); completes with ioDone/ioFailed. */
  | { readonly kind: 'moveFile'; readonly op: number; readonly file: FileRef; readonly to: FileRef }
  | { readonly kind: 'deleteFile'; readonly file: FileRef }
  /**
   * Several I/O operations handed to the disks at once (a worker's step may create, write or flush many files).
   * Each runs as if issued alone, in order; one `ioBatchDone` input reports all of their completions once the
   * last one completed. It spares the machine one step per operation.
   */
  | { readonly kind: 'ioBatch'; readonly ops: readonly BatchableIo[] }
  /**
   * Write a key of a durable store: `recovery` is a worker's graceful-shutdown store, `coordination` the masters'
   * shared store (high availability). A null value deletes the key. Every effect placed after it waits until the
   * store confirmed the write (durable before acknowledged, docs/core.md); effects before it do not.
   */
  | {
      readonly kind: 'persist';
      readonly store: 'recovery' | 'coordination';
      readonly key: string;
      readonly value: string | null;
    }
  | {
      readonly kind: 'log';
      readonly level: LogLevel;
      readonly event: string;
      readonly fields?: Readonly<Record<string, unknown>>;
    }
  | {
      readonly kind: 'metric';
      readonly name: string;
      readonly op: 'inc' | 'set' | 'observe';
      readonly value: number;
      readonly labels?: Readonly<Record<string, string>>;
    }
  /**
   * The answer to an operator command (`admin` input): exactly one per command, with the command's id. The
   * management interface turns it into its `{ success, message }` response; the message names every worker the
   * command could not apply to and why.
   */
  | {
      readonly kind: 'adminReply';
      readonly commandId: number | undefined;
      readonly success: boolean;
      readonly message: string;
    }
  /** Stop the process (after the driver has executed the effects before this one). */
  | { readonly kind: 'exit'; readonly code: number; readonly reason: string };

export type EffectKind = Effect['kind'];

/** The I/O effects an `ioBatch` may carry: those that complete with `ioDone` or `ioFailed`. */
export type BatchableIo = Extract<Effect, { kind: 'createFile' | 'write' | 'flush' | 'read' | 'moveFile' }>;

/** How one I/O operation ended: the input it would have completed with on its own. */
export type IoCompletion = Extract<Input, { kind: 'ioDone' | 'ioFailed' }>;

/**
 * Kinds of I/O failure a driver reports; the simulator injects each of them. NO_DESCRIPTORS: the process (not the
 * disk) had no file descriptor left (EMFILE, ENFILE), so the operation failed and the disk is not charged with it
 * (the simulator's `descriptors` fault, and its invariant disk-charged-for-disk-faults: docs/simulation.md).
 */
export type IoError = 'NO_SPACE' | 'IO_ERROR' | 'NOT_FOUND' | 'EXISTS' | 'TIMEOUT' | 'NO_DESCRIPTORS';

export type Input =
  /**
   * First input after (re)start; `recovered` holds the node's durable store as it was persisted. A worker's driver
   * also lists the partition files on its local disks (`leftovers`: what an earlier run left there, absent: none).
   */
  | {
      readonly kind: 'start';
      readonly recovered: ReadonlyMap<string, string>;
      readonly leftovers?: readonly FileRef[];
    }
  | { readonly kind: 'receive'; readonly envelope: Envelope }
  | { readonly kind: 'timer'; readonly name: string }
  | { readonly kind: 'ioDone'; readonly op: number; readonly bytes?: Uint8Array }
  | { readonly kind: 'ioFailed'; readonly op: number; readonly error: IoError }
  /** The completions of an `ioBatch`, one per operation, in the batch's order. */
  | { readonly kind: 'ioBatchDone'; readonly completions: readonly IoCompletion[] }
  /**
   * A send to `to` failed: it could not be attempted (no route, connection refused or never opened), or, with
   * `sent`, it went out on an open connection that closed before its answer came (the peer went away, or gave the
   * connection up). Only the second reached the peer's process at all: a worker does not count a replica it lost a
   * connection to as one it cannot reach (svc.worker.replicate.fastFail.duration).
   */
  | {
      readonly kind: 'sendFailed';
      readonly to: NodeId;
      readonly requestId?: number;
      readonly message: Message;
      readonly sent?: boolean;
    }
  /**
   * From the application, to a reduce task: its consumer is done with every chunk the task handed out up to and
   * including `chunk` (ReadyChunk.seq), whose places in the read-ahead budget are free again. Only reduce tasks
   * take it; every other machine ignores it.
   */
  | { readonly kind: 'consumed'; readonly chunk: number }
  /**
   * Records an application wrote, handed to its map task by the driver (a local input: never from the network):
   * `runs[i]` holds one or more records of partition `partitionIds[i]`, encoded as a batch payload lays them out
   * (core/machines/client/records.ts `encodeRecords`: each a 4-byte big-endian length, then its bytes), in the order
   * they were written. The task copies them during the step, so the driver may reuse their memory afterwards. It
   * feeds a task only while the task has room (`mapTaskHasRoom`): back-pressure.
   */
  | {
      readonly kind: 'records';
      readonly partitionIds: readonly number[];
      readonly runs: readonly Uint8Array[];
    }
  /** The map task's application wrote everything: the task pushes what it still holds, then ends the attempt. */
  | { readonly kind: 'recordsEnd' }
  /**
   * An operator command from the management interface (HTTP or CLI). The machine answers it with one `adminReply`
   * effect carrying the same `commandId`, which the driver chooses to match the answer to its caller.
   */
  | { readonly kind: 'admin'; readonly command: AdminCommand; readonly commandId?: number }
  /**
   * A worker's driver observed its local disks' filesystems (statfs, every heartbeat interval): what each has
   * available and its size. The worker reports the usable space they leave (core/storage/disk-space.ts); every other
   * machine ignores it.
   */
  | { readonly kind: 'diskSpace'; readonly disks: readonly ObservedDiskSpace[] };

/** One local disk's filesystem as observed, by the disk's mount point. */
export interface ObservedDiskSpace {
  readonly mountPoint: string;
  readonly availableBytes: number;
  readonly totalBytes: number;
  readonly filesystem?: string;
}

export type AdminCommand =
  | { readonly type: 'excludeWorkers'; readonly add: readonly string[]; readonly remove: readonly string[] }
  | { readonly type: 'workerEvent'; readonly eventType: string; readonly workers: readonly string[] }
  | { readonly type: 'exit'; readonly exitType: string }
  /**
   * The master's quota settings, resolved again by its driver from the dynamic configuration (not an operator's
   * command: the master process reloads `svc.dynamicConfig.store.fs.path` every `svc.dynamicConfig.refresh.interval`).
   */
  | { readonly type: 'quotaSettings'; readonly settings: QuotaSettings }
  /**
   * A worker's congestion watermarks, resolved again by its driver from the dynamic configuration (not an operator's
   * command either: the worker process reloads the store as the master does).
   */
  | { readonly type: 'congestionWatermarks'; readonly watermarks: CongestionWatermarks };

/** The chunks a write appends, in order: its `bytes`, then each of `more`. */
export function chunksOfWrite(write: Extract<Effect, { kind: 'write' }>): readonly Uint8Array[] {
  return write.more === undefined ? [write.bytes] : [write.bytes, ...write.more];
}

/** How many bytes a write appends. */
export function lengthOfWrite(write: Extract<Effect, { kind: 'write' }>): number {
  let length = write.bytes.length;
  if (write.more !== undefined) for (const chunk of write.more) length += chunk.length;
  return length;
}
