import type { AutoExclusionPolicy, HostPolicy } from '../../lifecycle/index.ts';
import type { PlantedBug } from '../../planted-bugs.ts';
import type { QuotaSettings } from '../../quota/index.ts';
import type { Release } from '../../release/version.ts';
import type { BudgetMode, PartitionSizeBounds, SlotPolicy } from '../../slots/index.ts';

/**
 * Everything the master machine is told by its driver, already resolved from conf/ for the master's release (the
 * slot defaults differ by release: extraSlots 2 and no minWorkers before 0.6.0). Plain values; durations in ms.
 * docs/core/machines-master-worker.md names the configuration key behind each field.
 */
export interface MasterConfig {
  /** The master's own release; clients are admitted against it (core/release admitClient). */
  readonly release: Release;
  /** `svc.master.allowWorkerHostPattern` / `denyWorkerHostPattern`, compiled (core/lifecycle compileHostPolicy). */
  readonly hosts: HostPolicy;
  /** `svc.master.heartbeat.worker.timeout`: a worker silent this long is lost; also the lost-worker check period. */
  readonly workerHeartbeatTimeoutMs: number;
  /** `svc.master.heartbeat.application.timeout`: an application silent this long is lost (checked every half). */
  readonly applicationTimeoutMs: number;
  readonly workerUnavailableInfo: {
    /** `svc.master.workerUnavailableInfo.expireTimeout`: lost workers are forgotten after this long. */
    readonly expireTimeoutMs: number;
    /** How often that expiry runs (reference: 900 s). */
    readonly checkIntervalMs: number;
  };
  /**
   * `svc.master.estimatedPartitionSize.*`: the bounds, and when the estimate is measured: first
   * `update.initialDelay` after the master starts (or restarts), then every `update.interval`.
   */
  readonly partitionSize: PartitionSizeBounds & {
    readonly updateInitialDelayMs: number;
    readonly updateIntervalMs: number;
  };
  readonly slots: {
    /** `svc.master.slot.assign.policy` (and the load-aware settings). */
    readonly policy: SlotPolicy;
    /** svc: what to do once every disk budget is used up (see core/slots BudgetMode). */
    readonly budgetMode: BudgetMode;
    /** `svc.master.slot.assign.maxWorkers`. */
    readonly maxWorkers: number;
    /** `svc.master.slot.assign.extraSlots`. */
    readonly extraSlots: number;
    /** `svc.master.slot.assign.minWorkers`; absent for a master before 0.6.0, which has no such key. */
    readonly minWorkers?: number;
  };
  /** `svc.master.excludeWorker.unhealthyDiskRatioThreshold`, and whether a distributed tier is configured. */
  readonly exclusion: AutoExclusionPolicy;
  /**
   * `svc.auth.enabled`: applications register a secret, and every request must come from a connection that proved
   * the identity it acts for (../authorization.ts). Absent: off.
   */
  readonly authEnabled?: boolean;
  /**
   * Quotas: the settings at start (`svc.quota.*`, the static values; the driver hands in the dynamic ones with the
   * `quotaSettings` admin command) and how often usage and status are recomputed
   * (`svc.master.userResourceConsumption.update.interval`). Absent: quotas off, 30 s.
   */
  readonly quota?: {
    readonly settings: QuotaSettings;
    readonly updateIntervalMs: number;
  };
  /** Test-only switch for a deliberate bug (the slot offer's 'replica-on-primary'); production never sets it. */
  readonly plantedBug?: PlantedBug;
}
