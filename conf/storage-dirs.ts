import { parseBytes } from './values.ts';

/** One entry of `svc.worker.storage.dirs`: `path[:capacity=SIZE][:disktype=HDD|SSD][:flushthread=N]`. */
export interface StorageDir {
  readonly path: string;
  /** Bytes the worker may use there; undefined: the filesystem's size, which only the runtime can ask. */
  readonly capacityBytes?: number;
  readonly diskType: 'HDD' | 'SSD';
  readonly flushThreads?: number;
}

/**
 * Parses the entries of `svc.worker.storage.dirs` (already checked by the registry's `storageDirs` check, so a
 * failure here names the entry and the form once more rather than assuming validity).
 */
export function parseStorageDirs(entries: readonly string[]): StorageDir[] {
  return entries.map((entry) => {
    const [path = '', ...options] = entry.split(':');
    if (path.length === 0) throw new RangeError(`'${entry}' has no directory; expected path[:name=value…]`);
    let capacityBytes: number | undefined;
    let diskType: 'HDD' | 'SSD' = 'HDD';
    let flushThreads: number | undefined;
    for (const option of options) {
      const [name, value = ''] = option.split('=');
      if (name === 'capacity') {
        const parsed = parseBytes(value);
        if (!parsed.ok)
          throw new RangeError(`'${entry}': capacity '${value}' is not a size (expected ${parsed.expected})`);
        capacityBytes = parsed.value;
      } else if (name === 'disktype') {
        const type = value.toUpperCase();
        if (type !== 'HDD' && type !== 'SSD') throw new RangeError(`'${entry}': disktype must be HDD or SSD`);
        diskType = type;
      } else if (name === 'flushthread') {
        flushThreads = Number(value);
      } else {
        throw new RangeError(`'${entry}': unknown option '${name}' (capacity, disktype or flushthread)`);
      }
    }
    return {
      path,
      diskType,
      ...(capacityBytes === undefined ? {} : { capacityBytes }),
      ...(flushThreads === undefined ? {} : { flushThreads }),
    };
  });
}
