import type { WorkerStatusView } from '../../client/index.ts';
import { emptyWorkerStatus } from '../../client/index.ts';
import {
  parseUniqueId,
  partitionEpochNumber,
  PARTITION_MODE_CODE,
  type PartitionLocation,
  type PartitionMode,
  type ShuffleId,
  type StatusCode,
  type WorkerKey,
} from '../../domain/index.ts';
import type {
  CommittedFile,
  GetReducerFileGroupResponse,
  PartitionWritten,
  ReviveRequest,
  ReviveResult,
} from '../../protocol/messages.ts';
import type { ReviveBook, ReviveCandidate } from '../../revive/index.ts';
import type { ReplyTo } from '../outbox.ts';
import { emptyRequests, type RequestTable } from '../client/requests.ts';
import type { LifecycleManagerConfig } from './config.ts';

/**
 * The lifecycle manager's state: plain data, Maps in insertion order. docs/core/machines-client.md walks through it.
 */
export interface LifecycleManagerState {
  readonly config: LifecycleManagerConfig;
  readonly app: AppRegistration;
  readonly requests: RequestTable<LmRequest>;
  /** Workers to avoid: excluded by this client or the master, and shutting down (core/client). */
  readonly workers: WorkerStatusView;
  /**
   * Every worker the master reported available in its last heartbeat answer, with its rack: revive candidates beyond
   * the shuffle's own workers (a worker that joined or came back after the shuffle's slots were offered).
   */
  readonly clusterWorkers: readonly ReviveCandidate[];
  readonly shuffles: ReadonlyMap<ShuffleId, LmShuffle>;
  /**
   * Shuffles the driver unregistered: a RegisterShuffle for one of them (a task of an abandoned stage, late) is
   * refused instead of booking slots again for data nobody will read. One number per shuffle of the application.
   */
  readonly unregisteredShuffles: ReadonlySet<ShuffleId>;
  /**
   * Shuffles stopped because the application's user is over its quota (the master's heartbeat reply said so,
   * svc.quota.interruptShuffle.enabled), with the master's reason: their tasks are answered QUOTA_EXCEEDED.
   */
  readonly interruptedShuffles: ReadonlyMap<ShuffleId, string>;
  readonly reservations: ReadonlyMap<number, Reservation>;
  readonly nextReservationId: number;
  readonly reviveCalls: ReadonlyMap<number, ReviveCall>;
  readonly nextCallId: number;
  readonly parkedFileGroups: ReadonlyMap<number, ParkedFileGroup>;
  readonly nextParkId: number;
  readonly reviveTimerArmed: boolean;
  /**
   * Revives that found too few workers, held (their epoch spent, their waiters waiting) until the master's answer to
   * a heartbeat sent for them: the view that left them short may be stale (revive.ts, awaitReport).
   */
  readonly revivesAwaitingReport: ReadonlyMap<ShuffleId, ReadonlyMap<number, HeldRevive>>;
  /** `shuffle/partition/epoch` of revives that already waited for a report once: they fail if short again. */
  readonly revivesReported: ReadonlySet<string>;
  /** Committed primary bytes and files not yet reported in an application heartbeat (the master's size estimate). */
  readonly unreported: { readonly bytes: number; readonly files: number };
}

export type AppRegistration =
  /**
   * After the master could not be reached: `unreachableSince`, when that was first reported; `unreachableTries`,
   * how many sends failed so far.
   */
  | { readonly status: 'registering'; readonly unreachableTries?: number; readonly unreachableSince?: number }
  | { readonly status: 'registered' }
  /** The master refused the application (e.g. CLIENT_RELEASE_REFUSED): for good, every shuffle fails so. */
  | { readonly status: 'refused'; readonly code: StatusCode; readonly message: string }
  /**
   * The master could not be reached for one request timeout, or never answered: every shuffle fails with `message`
   * (REQUEST_FAILED) for now, and registration is tried again every heartbeat interval while the application runs
   * (`tries` since giving up), since a master restarting or a group of masters between leaders comes back.
   */
  | {
      readonly status: 'unreachable';
      readonly code: 'REQUEST_FAILED';
      readonly message: string;
      readonly tries: number;
    }
  /** The driver unregistered the application: no heartbeat, no new shuffle; kept until the process ends. */
  | { readonly status: 'unregistered' };

/**
 * - `awaiting-app`: registered by a task before the application itself was registered with the master.
 * - `requesting-slots`, `reserving`: on the way to locations; tasks asking meanwhile wait in `registerWaiters`.
 * - `ready`: locations known; pushes, revives and mapper ends go on.
 * - `committing`: every map has ended; CommitFiles are out.
 * - `committed` / `data-lost`: `fileGroup` holds the answer every reducer gets.
 */
export type ShufflePhase =
  'awaiting-app' | 'requesting-slots' | 'reserving' | 'ready' | 'committing' | 'committed' | 'data-lost';

export interface LmShuffle {
  readonly shuffleId: ShuffleId;
  readonly numMappers: number;
  readonly numPartitions: number;
  readonly phase: ShufflePhase;
  readonly registerWaiters: readonly ReplyTo[];
  /** RequestSlots sent so far (for the bounded retry of a reply that placed nothing). */
  readonly slotRequests: number;
  /** Every worker the master gave the shuffle, padding workers included: the revive candidates, in order. */
  readonly workers: readonly ReviveCandidate[];
  /** Every copy reserved successfully, primaries and replicas of all epochs, in order: what the commit covers. */
  readonly reserved: readonly PartitionLocation[];
  readonly book: ReviveBook<ReviveWaiter>;
  /**
   * Copies whose failure already excluded their worker once (`worker|partitionId-epoch|role`). Another attempt that
   * pushes to the same broken copy before a revive replaced it is no new evidence against the worker; excluding it
   * again would keep a partition whose only other candidate is that worker from ever being revived (the simulator
   * found that livelock: two workers, replication on, one sealed file).
   */
  readonly blamedCopies: ReadonlySet<string>;
  /** The winning attempt of each map (index = mapId; -1 until it ends). */
  readonly mapAttempts: readonly number[];
  /** What each winning attempt acknowledged, by mapId. */
  readonly written: ReadonlyMap<number, readonly PartitionWritten[]>;
  readonly endedMaps: number;
  readonly commit?: CommitProgress;
  readonly fileGroup?: GetReducerFileGroupResponse;
}

export interface CommitProgress {
  /**
   * The reserved copies each worker holds, grouped once when the commit starts (the reserved copies no longer change
   * then): every CommitFiles and every answer needs its worker's copies.
   */
  readonly copiesByWorker: ReadonlyMap<WorkerKey, readonly PartitionLocation[]>;
  /** Workers whose CommitFilesResponse is still due. */
  readonly awaiting: ReadonlySet<WorkerKey>;
  /** Committed files by their copy's key (a copy lives on exactly one worker). */
  readonly committed: ReadonlyMap<CopyKey, CommittedFile>;
  /** Copies that could not be committed, by key, with the reason. */
  readonly failed: ReadonlyMap<CopyKey, string>;
}

/** A partition's two copies at one epoch, as allocated (the primary carries the replica as its peer). */
export interface Pair {
  readonly primary: PartitionLocation;
  readonly replica?: PartitionLocation;
}

/**
 * Reserving copies on workers, in rounds: every worker with copies gets one ReserveSlots; copies of pairs that
 * touched a failed worker are released and placed again on the remaining candidates, at the same epoch, up to
 * `reserveMaxRetries` rounds. Used for a shuffle's first locations and for revives alike.
 */
export interface Reservation {
  readonly id: number;
  readonly shuffleId: ShuffleId;
  readonly purpose: 'register' | 'revive';
  /** Rounds sent so far. */
  readonly round: number;
  /** Pairs of the round under way, by partition. */
  readonly pairs: ReadonlyMap<number, Pair>;
  readonly awaiting: ReadonlySet<WorkerKey>;
  /** Workers that failed this round (reason), kept out of later rounds. */
  readonly failedWorkers: ReadonlyMap<WorkerKey, string>;
  readonly confirmed: ReadonlyMap<number, Pair>;
  readonly failed: ReadonlyMap<number, { readonly status: StatusCode; readonly reason: string }>;
}

export interface ReviveWaiter {
  readonly callId: number;
}

/** One Revive message from a task, answered once every partition it named has a result. */
export interface ReviveCall {
  readonly replyTo: ReplyTo;
  readonly shuffleId: ShuffleId;
  readonly mapId: number;
  readonly requests: readonly ReviveRequest[];
  readonly results: ReadonlyMap<number, ReviveResult>;
}

export interface ParkedFileGroup {
  readonly replyTo: ReplyTo;
  readonly shuffleId: ShuffleId;
}

/** A revive held for the master's next report, and the failure it gets if that report does not help. */
export interface HeldRevive {
  readonly epoch: number;
  readonly status: StatusCode;
  readonly reason: string;
}

export type LmRequest =
  | { readonly kind: 'registerApp' }
  /** `refresh`: sent at once for revives awaiting a fresh worker report (revive.ts). */
  | { readonly kind: 'heartbeat'; readonly refresh?: boolean }
  | { readonly kind: 'requestSlots'; readonly shuffleId: ShuffleId }
  | { readonly kind: 'reserve'; readonly reservationId: number; readonly worker: WorkerKey }
  | { readonly kind: 'commit'; readonly shuffleId: ShuffleId; readonly worker: WorkerKey }
  | { readonly kind: 'destroy'; readonly shuffleId: ShuffleId; readonly worker: WorkerKey }
  | { readonly kind: 'unregisterShuffle'; readonly shuffleId: ShuffleId }
  | { readonly kind: 'unregisterApp' };

export function initialLifecycleManagerState(config: LifecycleManagerConfig): LifecycleManagerState {
  return {
    config,
    app: { status: 'registering' },
    requests: emptyRequests(),
    workers: emptyWorkerStatus(),
    clusterWorkers: [],
    shuffles: new Map(),
    unregisteredShuffles: new Set(),
    interruptedShuffles: new Map(),
    reservations: new Map(),
    nextReservationId: 1,
    reviveCalls: new Map(),
    nextCallId: 1,
    parkedFileGroups: new Map(),
    nextParkId: 1,
    reviveTimerArmed: false,
    revivesAwaitingReport: new Map(),
    revivesReported: new Set(),
    unreported: { bytes: 0, files: 0 },
  };
}

/**
 * What identifies a copy within a shuffle (partition, epoch, mode): one number where they fit one, so that a commit
 * of 10,000 copies builds no string, no object and no weak map entry per copy to look each up; a string otherwise.
 */
export type CopyKey = number | string;

function copyKeyOf(partitionId: number, epoch: number, mode: PartitionMode): CopyKey {
  const number = partitionEpochNumber(partitionId, epoch);
  return number === undefined ? `${partitionId}-${epoch}/${mode}` : number * 2 + PARTITION_MODE_CODE[mode];
}

/** The key of a reserved copy. */
export function locationCopyKey(location: PartitionLocation): CopyKey {
  return copyKeyOf(location.partitionId, location.epoch, location.mode);
}

/** The key of a committed file, the same as its location's; an id `uniqueId` would not make matches no location. */
export function committedCopyKey(file: CommittedFile): CopyKey {
  const ids = parseUniqueId(file.uniqueId);
  return ids === undefined
    ? `${file.uniqueId}/${file.mode}`
    : copyKeyOf(ids.partitionId, ids.epoch, file.mode);
}
