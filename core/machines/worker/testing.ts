import { DEFAULT_RACK, type WorkerId } from '../../domain/index.ts';
import { masterNodeId } from '../../protocol/node-ids.ts';
import { CURRENT_RELEASE } from '../../release/version.ts';
import { DEFAULT_CREATE_FILE_POLICY, DEFAULT_EVICT_POLICY } from '../../storage/index.ts';
import type { WorkerConfig } from './config.ts';

const MiB = 1024 * 1024;
const GiB = 1024 * MiB;

/**
 * A worker configuration for tests and examples: the reference's defaults (two 100 GiB HDDs, memory tier off,
 * 8 MiB chunks, heartbeats every 30 s, ...), overridable field by field. Drivers resolve the real one from conf/.
 */
export function testWorkerConfig(id: WorkerId, overrides: Partial<WorkerConfig> = {}): WorkerConfig {
  return {
    release: CURRENT_RELEASE,
    id,
    master: masterNodeId(),
    networkLocation: DEFAULT_RACK,
    disks: [
      { mountPoint: '/disk1', type: 'HDD', capacityBytes: 100 * GiB },
      { mountPoint: '/disk2', type: 'HDD', capacityBytes: 100 * GiB },
    ],
    distributed: [],
    memory: { capacityBytes: 0, maxFileBytes: 8 * MiB, evictRatio: 0.5, refuseImplicitMemory: false },
    createFilePolicy: DEFAULT_CREATE_FILE_POLICY,
    evictPolicy: DEFAULT_EVICT_POLICY,
    createFileMaxAttempts: 3,
    chunkSizeBytes: 8 * MiB,
    split: { enabled: true, minBytes: 1 * MiB, maxBytes: 2 * GiB },
    heartbeatIntervalMs: 30_000,
    register: { retryIntervalMs: 2_000, timeoutMs: 180_000 },
    masterRequestTimeoutMs: 60_000,
    replicate: { timeoutMs: 120_000, fastFailDurationMs: 60_000 },
    gracefulShutdown: { enabled: true, checkIntervalMs: 1_000, timeoutMs: 480_000 },
    leftoverGraceMs: 3_600_000,
    decommission: { checkIntervalMs: 30_000, forceExitTimeoutMs: 6 * 3_600_000 },
    ...overrides,
  };
}
