import type { WorkerId } from '../../domain/index.ts';
import type { PlantedBug } from '../../planted-bugs.ts';
import type { Release } from '../../release/version.ts';
import type {
  CongestionConfig,
  CreateFilePolicy,
  DiskReserve,
  DistributedType,
  EvictPolicy,
  FilesystemSpace,
} from '../../storage/index.ts';
import type { NodeId } from '../effects.ts';

/** A local disk the worker writes partition files to (`svc.worker.storage.dirs`: `path:capacity=X:disktype=T`). */
export interface WorkerDiskConfig {
  readonly mountPoint: string;
  readonly type: 'HDD' | 'SSD';
  /**
   * Bytes the worker may use on this disk (the `capacity=` of its entry, else the filesystem's size); usable bytes
   * are this minus what the worker has written there, and at most the filesystem's available space less the reserve.
   */
  readonly capacityBytes: number;
  /** The disk's filesystem as the driver observed it at start (statfs); later observations come as `diskSpace`. */
  readonly filesystem?: FilesystemSpace;
}

/**
 * Everything the worker machine is told by its driver, already resolved from conf/ for the worker's release. Plain
 * values only: durations in ms, sizes in bytes. docs/core/machines-master-worker.md names the configuration key
 * behind each field.
 */
export interface WorkerConfig {
  /** The worker's own release; clients are admitted against it (core/release admitClient). */
  readonly release: Release;
  /**
   * `svc.auth.enabled`: every request must come from a connection that proved the application (or, for a
   * replica's push and the master's answers, the server) it acts for (../authorization.ts). Absent: off.
   */
  readonly authEnabled?: boolean;
  readonly id: WorkerId;
  /** The master's node id (masterNodeId()). */
  readonly master: NodeId;
  /** Rack of this worker, as the master's rack resolution would report it. */
  readonly networkLocation: string;
  readonly disks: readonly WorkerDiskConfig[];
  /**
   * `svc.worker.storage.disk.reserve.size` and `.ratio`: kept free on each disk's filesystem (../../storage/disk-space.ts).
   * Absent: nothing kept.
   */
  readonly diskReserve?: DiskReserve;
  /** Distributed tiers this worker has a directory for (`svc.storage.hdfs.dir` and friends). */
  readonly distributed: readonly DistributedType[];
  readonly memory: {
    /** Bytes the memory tier may hold (maxDirectMemory × directMemoryRatioForMemoryFileStorage); 0 turns it off. */
    readonly capacityBytes: number;
    /** `svc.worker.memoryFileStorage.maxFileSize`: a memory file is evicted before it grows past this. */
    readonly maxFileBytes: number;
    /** `svc.worker.memoryFileStorage.evict.ratio`: memory-pressure eviction starts at ratio × capacity. */
    readonly evictRatio: number;
    /**
     * The memory guard (contract rule 4): refuse memory to a location whose mask permits it only implicitly (mask 0
     * from a client before 0.6.0). The file then goes to the next tier of the create-file policy.
     */
    readonly refuseImplicitMemory: boolean;
  };
  /** `svc.worker.storage.storagePolicy.createFilePolicy`. */
  readonly createFilePolicy: CreateFilePolicy;
  /** `svc.worker.storage.storagePolicy.evictPolicy`. */
  readonly evictPolicy: EvictPolicy;
  /** `svc.worker.writer.create.maxAttempts`: tries (on the next tier or disk) before a location's reserve fails. */
  readonly createFileMaxAttempts: number;
  /**
   * Files a reserve creates, or a commit starts flushing, in one step; a request naming more goes on in later steps
   * (a timer at the same instant), so that the worker's other inputs are handled in between. Absent:
   * FILES_PER_STEP. Not a configuration key: tests set it small.
   */
  readonly filesPerStep?: number;
  /** `svc.shuffle.chunk.size`: a chunk boundary is placed at the first batch boundary past each multiple. */
  readonly chunkSizeBytes: number;
  readonly split: {
    /** `svc.worker.shuffle.partitionSplit.enabled`. */
    readonly enabled: boolean;
    /** `svc.worker.shuffle.partitionSplit.min`: on a full disk, files smaller than this keep growing. */
    readonly minBytes: number;
    /** `svc.worker.shuffle.partitionSplit.max`: a soft split turns hard past this size. */
    readonly maxBytes: number;
  };
  /** Interval of heartbeats to the master (`svc.master.heartbeat.worker.timeout` / 4 by default). */
  readonly heartbeatIntervalMs: number;
  readonly register: {
    /** Wait between registration attempts (reference: 2 s). */
    readonly retryIntervalMs: number;
    /** `svc.worker.register.timeout`: give up registering and exit after this long. */
    readonly timeoutMs: number;
  };
  /** How long the worker waits for the master's reply to a registration or heartbeat (`svc.rpc.askTimeout`). */
  readonly masterRequestTimeoutMs: number;
  readonly replicate: {
    /** How long a primary waits for its replica's acknowledgement (the push timeout). */
    readonly timeoutMs: number;
    /** `svc.worker.replicate.fastFail.duration`: a peer that could not be reached is not tried again for this long. */
    readonly fastFailDurationMs: number;
  };
  readonly gracefulShutdown: {
    /**
     * `svc.worker.graceful.shutdown.enabled`: what exit type NONE means (Graceful, else Immediately), and whether the
     * worker keeps a recovery store (persists committed files, restores them at start).
     */
    readonly enabled: boolean;
    /** `svc.worker.graceful.shutdown.checkSlotsFinished.interval`. */
    readonly checkIntervalMs: number;
    /** `svc.worker.graceful.shutdown.checkSlotsFinished.timeout`. */
    readonly timeoutMs: number;
  };
  /**
   * `svc.worker.storage.expireDirs.timeout`: how long after its start a worker keeps the files an earlier run left on
   * its disks before deleting those of shuffles the master no longer has (./leftovers.ts).
   */
  readonly leftoverGraceMs: number;
  readonly decommission: {
    /** How often a decommissioning worker checks whether it still holds shuffles (reference: 30 s). */
    readonly checkIntervalMs: number;
    /** `svc.worker.decommission.forceExitTimeout`. */
    readonly forceExitTimeoutMs: number;
  };
  /**
   * `svc.worker.monitor.disk.check.interval` when `svc.worker.monitor.disk.enabled`; undefined: no disk monitor,
   * a failed disk stays failed until the worker restarts (./disk-health.ts).
   */
  readonly diskCheckIntervalMs?: number;
  /**
   * `svc.worker.congestionControl.*` when `svc.worker.congestionControl.enabled`; undefined: pushes are never
   * answered *_CONGESTED (core/storage/congestion.ts).
   */
  readonly congestion?: CongestionConfig;
  /** Test-only switch for a deliberate bug ('restart-forgets-committed'); production never sets it. */
  readonly plantedBug?: PlantedBug;
}
