import { masterNodeId } from '../../protocol/node-ids.ts';
import { CURRENT_RELEASE } from '../../release/version.ts';
import type { LifecycleManagerConfig } from './config.ts';

/**
 * A lifecycle-manager configuration for tests and examples: application `appId` of user alice, replication on,
 * local disks only, the reference's retry counts and timeouts, overridable field by field. Drivers resolve the real
 * one from conf/ (conf/machine-configs.ts).
 */
export function testLifecycleManagerConfig(
  appId: string,
  overrides: Partial<LifecycleManagerConfig> = {},
): LifecycleManagerConfig {
  return {
    release: CURRENT_RELEASE,
    appId,
    user: 'alice',
    master: masterNodeId(),
    replicate: true,
    rackAware: false,
    availableTypes: ['HDD'],
    maxWorkers: 10_000,
    filterExcludedWorkers: false,
    split: { thresholdBytes: 1 << 30, mode: 'SOFT' },
    reviveBatchIntervalMs: 100,
    reserveMaxRetries: 3,
    requestSlotsMaxRetries: 1,
    heartbeatIntervalMs: 10_000,
    requestTimeoutMs: 60_000,
    maxRequestAttempts: 3,
    fileGroupWaitMs: 30_000,
    excludePeerWorkerOnFailure: true,
    excludedWorkerExpireMs: 180_000,
    ...overrides,
  };
}
