import { ALLOW_ALL_HOSTS } from '../../lifecycle/index.ts';
import { CURRENT_RELEASE } from '../../release/version.ts';
import type { Effect } from '../effects.ts';
import type { MasterConfig } from './config.ts';

const MiB = 1024 * 1024;

/**
 * A master configuration for tests and examples: the reference's 0.6 defaults (round-robin, extraSlots 100,
 * minWorkers 100, worker timeout 120 s, application timeout 300 s, ...), overridable field by field. Drivers resolve
 * the real one from conf/.
 */
export function testMasterConfig(overrides: Partial<MasterConfig> = {}): MasterConfig {
  return {
    release: CURRENT_RELEASE,
    hosts: ALLOW_ALL_HOSTS,
    workerHeartbeatTimeoutMs: 120_000,
    applicationTimeoutMs: 300_000,
    workerUnavailableInfo: { expireTimeoutMs: 1_800_000, checkIntervalMs: 900_000 },
    partitionSize: {
      minSize: 8 * MiB,
      maxSize: 4 * 1024 * MiB,
      initialSize: 64 * MiB,
      updateInitialDelayMs: 300_000,
      updateIntervalMs: 600_000,
    },
    slots: {
      policy: { name: 'ROUNDROBIN' },
      budgetMode: 'strict',
      maxWorkers: 10_000,
      extraSlots: 100,
      minWorkers: 100,
    },
    exclusion: { unhealthyDiskRatioThreshold: 1, dfsConfigured: false },
    ...overrides,
  };
}

/**
 * The coordination store as a master's `persist` effects leave it, applied in order onto `store` (default: empty),
 * what a restarted master would be handed in `start`.
 */
export function storedBy(
  effects: readonly Effect[],
  store: Map<string, string> = new Map(),
): Map<string, string> {
  for (const effect of effects) {
    if (effect.kind !== 'persist' || effect.store !== 'coordination') continue;
    if (effect.value === null) store.delete(effect.key);
    else store.set(effect.key, effect.value);
  }
  return store;
}
