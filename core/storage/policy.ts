import { parseStorageTypes, type StorageType } from '../domain/index.ts';

/**
 * The worker's storage policies: the order in which tiers are tried for a new partition file
 * (`svc.worker.storage.storagePolicy.createFilePolicy`) and, per source tier, the tiers an evicted file may move to
 * (`svc.worker.storage.storagePolicy.evictPolicy`).
 */

export type CreateFilePolicy = readonly StorageType[];

/** Source tier → the tiers its files are evicted to, tried in order. */
export type EvictPolicy = ReadonlyMap<StorageType, readonly StorageType[]>;

export const DEFAULT_CREATE_FILE_POLICY: CreateFilePolicy = ['MEMORY', 'SSD', 'HDD', 'HDFS', 'S3', 'OSS'];

export const DEFAULT_EVICT_POLICY: EvictPolicy = new Map<StorageType, readonly StorageType[]>([
  ['MEMORY', ['SSD', 'HDD', 'HDFS', 'S3', 'OSS']],
]);

const CREATE_KEY = 'svc.worker.storage.storagePolicy.createFilePolicy';
const EVICT_KEY = 'svc.worker.storage.storagePolicy.evictPolicy';

/**
 * Parses `MEMORY,SSD,HDD,...`; throws when the list is empty, names an unknown tier, repeats one, or lists MEMORY
 * anywhere but first (the reference accepts that and then never tries the tiers before MEMORY).
 */
export function parseCreateFilePolicy(text: string): CreateFilePolicy {
  const order = withKey(CREATE_KEY, text, () => parseStorageTypes(text));
  if (order.length === 0) {
    throw new RangeError(
      `${CREATE_KEY} is empty; list at least one tier, for example MEMORY,SSD,HDD,HDFS,S3,OSS`,
    );
  }
  assertNoRepeats(CREATE_KEY, text, order);
  if (order.indexOf('MEMORY') > 0) {
    throw new RangeError(
      `${CREATE_KEY} = '${text}' lists MEMORY after other tiers; a new file's walk starts at MEMORY whenever it is ` +
        'listed, so the tiers before it would never be tried. Put MEMORY first or leave it out',
    );
  }
  return order;
}

/**
 * Parses `SRC,T1,T2|SRC2,T3`: each group is a source tier followed by its eviction targets. Memory is never a target
 * (eviction exists to free memory), a source never targets itself, and a group without targets or a source listed
 * twice is refused, because each would make eviction silently do nothing or depend on which group came first.
 */
export function parseEvictPolicy(text: string): EvictPolicy {
  const policy = new Map<StorageType, readonly StorageType[]>();
  const groups = text.split('|').filter((group) => group.trim().length > 0);
  if (groups.length === 0) {
    throw new RangeError(
      `${EVICT_KEY} is empty; expected SRC,T1,T2|SRC2,..., for example MEMORY,SSD,HDD,HDFS,S3,OSS`,
    );
  }
  for (const group of groups) {
    const [source, ...targets] = withKey(EVICT_KEY, text, () => parseStorageTypes(group));
    if (source === undefined || targets.length === 0) {
      throw new RangeError(
        `${EVICT_KEY} group '${group.trim()}' has no target tier; write the source tier followed by its targets, for example MEMORY,SSD,HDD`,
      );
    }
    if (policy.has(source)) {
      throw new RangeError(
        `${EVICT_KEY} lists source tier ${source} twice in '${text}'; merge the two groups`,
      );
    }
    const forbidden = targets.find((target) => target === 'MEMORY' || target === source);
    if (forbidden !== undefined) {
      throw new RangeError(
        `${EVICT_KEY} group '${group.trim()}' evicts ${source} to ${forbidden}; eviction must move a file to another, non-memory tier`,
      );
    }
    assertNoRepeats(EVICT_KEY, group, targets);
    policy.set(source, targets);
  }
  return policy;
}

function withKey<T>(key: string, text: string, parse: () => T): T {
  try {
    return parse();
  } catch (error) {
    const reason = error instanceof Error ? error.message : String(error);
    throw new RangeError(`${key} = '${text}' is not valid: ${reason}`, { cause: error });
  }
}

function assertNoRepeats(key: string, text: string, types: readonly StorageType[]): void {
  const repeated = types.find((type, index) => types.indexOf(type) !== index);
  if (repeated !== undefined) {
    throw new RangeError(`${key} = '${text}' lists ${repeated} twice; list each tier once`);
  }
}
