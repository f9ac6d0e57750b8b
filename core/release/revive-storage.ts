import { ALL_TYPES_MASK, maskOf, type StorageInfo, type StorageType } from '../domain/index.ts';
import { inEffectAt } from './timeline.ts';
import type { Release } from './version.ts';

/**
 * What storage a client gives a revived partition location (contract section 1, rules 3 and 4):
 * - `memory-default-any-tier`: the location's default storage, type MEMORY with mask 0. Mask 0 permits every tier,
 *   so a worker with memory enabled may put the revived data in memory although the application never enabled it.
 * - `honour-available-types`: the first type of `svc.storage.availableTypes`, with the mask of that whole list.
 */
export type ReviveStorageBehaviour = 'memory-default-any-tier' | 'honour-available-types';

export interface ReviveStorageRule {
  readonly since: Release;
  readonly behaviour: ReviveStorageBehaviour;
  readonly contract: string;
}

/** Revive storage by the client's release, oldest first. */
export const REVIVE_STORAGE_HISTORY: readonly [ReviveStorageRule, ...ReviveStorageRule[]] = [
  {
    since: '0.2.0',
    behaviour: 'memory-default-any-tier',
    contract:
      'Rule 4: a client before 0.6.0 defaults a revived partition to memory storage. If a worker has memory ' +
      'storage enabled, such a client can therefore use memory storage for an application that did not enable it.',
  },
  {
    since: '0.6.0',
    behaviour: 'honour-available-types',
    contract:
      'Rule 3: a client from release 0.6.0 on honours svc.storage.availableTypes. A revived partition location ' +
      'then no longer defaults to memory storage.',
  },
];

/** How a client of `clientRelease` chooses the storage of a revived location. */
export function reviveStorageBehaviour(clientRelease: Release): ReviveStorageBehaviour {
  return inEffectAt(REVIVE_STORAGE_HISTORY, clientRelease).behaviour;
}

/**
 * The storage of a location revived by a client of `clientRelease` whose `svc.storage.availableTypes` is
 * `availableTypes`. Older clients ignore the list, exactly as they did, so that the simulator can show the
 * consequence (memory used by an application that never enabled it); the worker-side guard lives in core/storage.
 */
export function reviveStorageInfo(
  clientRelease: Release,
  availableTypes: readonly StorageType[],
): StorageInfo {
  const behaviour = reviveStorageBehaviour(clientRelease);
  switch (behaviour) {
    case 'memory-default-any-tier':
      return { type: 'MEMORY', mountPoint: '', availableTypes: ALL_TYPES_MASK };
    case 'honour-available-types': {
      const [first] = availableTypes;
      if (first === undefined) {
        throw new RangeError(
          `a client of release ${clientRelease} revives onto the first type of svc.storage.availableTypes, ` +
            'but the list is empty; set it to at least one of MEMORY, HDD, SSD, HDFS, OSS, S3 (default HDD)',
        );
      }
      return { type: first, mountPoint: '', availableTypes: maskOf(availableTypes) };
    }
  }
}
