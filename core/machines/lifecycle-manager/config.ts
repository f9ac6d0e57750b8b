import type { AppId, StorageType } from '../../domain/index.ts';
import type { PlantedBug } from '../../planted-bugs.ts';
import type { Release } from '../../release/version.ts';
import type { NodeId } from '../effects.ts';

/**
 * Everything the lifecycle manager (one per application, node `lm-<appId>`) is told by its driver, resolved from
 * conf/ as of the CLIENT's release (defaults such as replication differ by release). Plain values: durations in ms,
 * sizes in bytes. docs/core/machines-client.md names the configuration key behind each field.
 */
export interface LifecycleManagerConfig {
  /** The client's release: revived storage follows it (core/release), and it is what servers admit or refuse. */
  readonly release: Release;
  readonly appId: AppId;
  /** Who the application runs as (`svc.identity.user-specific.userName` and `.tenant`), for quotas. */
  readonly user: string;
  /** Absent: the master takes `default`. */
  readonly tenant?: string;
  /**
   * `svc.auth.enabled`: the application registers `secret` with the master, and only its own tasks (connections
   * that proved the secret) may ask this lifecycle manager anything. Absent: off.
   */
  readonly authEnabled?: boolean;
  /** The application's secret, registered with the master when authentication is on. */
  readonly secret?: string;
  /** The host this lifecycle manager runs on, registered with the master (absent: not told). */
  readonly hostname?: string;
  /** The master's node id (masterNodeId()). */
  readonly master: NodeId;
  /** `svc.client.push.replicate.enabled`. */
  readonly replicate: boolean;
  /** `svc.client.reserveSlots.rackaware.enabled`. */
  readonly rackAware: boolean;
  /** `svc.storage.availableTypes`, as a list (its mask goes to the master; from 0.6.0 revives honour it). */
  readonly availableTypes: readonly StorageType[];
  /** `svc.client.slot.assign.maxWorkers`. */
  readonly maxWorkers: number;
  /** `svc.client.shuffle.partitionSplit.threshold` and `.mode`, passed to workers with every reserve. */
  readonly split: { readonly thresholdBytes: number; readonly mode: 'SOFT' | 'HARD' };
  /** `svc.client.shuffle.batchHandleChangePartition.interval`: revives arriving within it are handled together. */
  readonly reviveBatchIntervalMs: number;
  /** `svc.client.reserveSlots.maxRetries`: rounds of moving copies off workers whose reserve failed. */
  readonly reserveMaxRetries: number;
  /** Further RequestSlots after a reply that placed nothing (the reference retries once). */
  readonly requestSlotsMaxRetries: number;
  /** `svc.client.application.heartbeatInterval`. */
  readonly heartbeatIntervalMs: number;
  /** `svc.rpc.askTimeout`: how long any request waits for its reply. */
  readonly requestTimeoutMs: number;
  /** Tries of a request that gets no answer (timeout) before it counts as failed. */
  readonly maxRequestAttempts: number;
  /** How long a GetReducerFileGroup waits for the stage to end before being answered STAGE_END_TIMEOUT. */
  readonly fileGroupWaitMs: number;
  /** `svc.client.excludePeerWorkerOnFailure.enabled`. */
  readonly excludePeerWorkerOnFailure: boolean;
  /** `svc.client.excludedWorker.expireTimeout`: how long an exclusion for a lasting cause holds. */
  readonly excludedWorkerExpireMs: number;
  /**
   * `svc.client.shuffle.register.filterExcludedWorker.enabled` (default false): whether RequestSlots names the
   * workers this client excluded itself, so that the master offers none of them.
   */
  readonly filterExcludedWorkers: boolean;
  /** Test-only deliberate bug ('epoch-not-increased', 'revive-ignores-excluded', 'replica-on-primary'). */
  readonly plantedBug?: PlantedBug;
}
