/**
 * Checks for values whose form is richer than their type (addresses, directory specifications, policies). Each
 * returns undefined when the value fits and otherwise the form that was expected.
 */
import { STORAGE_TYPES } from '../../core/domain/index.ts';
import { parseCreateFilePolicy, parseEvictPolicy } from '../../core/storage/policy.ts';
import type { ConfigValue } from '../values.ts';

function items(value: ConfigValue): readonly string[] {
  return typeof value === 'object' ? value : [String(value)];
}

function isPort(text: string): boolean {
  if (!/^\d+$/.test(text)) return false;
  const port = Number(text);
  return port >= 1 && port <= 65535;
}

const HOST_PORT_FORM = 'a comma-separated list of host:port (for example master-1:9097,master-2:9097)';

/** `host:port,host:port`. */
export function hostPortList(value: ConfigValue): string | undefined {
  const list = items(value);
  const fits =
    list.length > 0 && list.every((item) => /^[^\s:]+:\d+$/.test(item) && isPort(item.split(':')[1]!));
  return fits ? undefined : HOST_PORT_FORM;
}

/** `name=value,name=value` (extra metric labels). */
export function keyValueList(value: ConfigValue): string | undefined {
  const fits = items(value).every((item) => /^[A-Za-z_][A-Za-z0-9_]*=[^=]*$/.test(item));
  return fits ? undefined : 'a comma-separated list of name=value pairs (for example zone=a,rack=r1)';
}

/** A rack as network topologies name it: a path from the root (`/dc1/rack2`). */
export function rackPath(value: ConfigValue): string | undefined {
  return /^(\/[^/\s]+)+$/.test(String(value)) ? undefined : 'a rack path such as /rack1 or /dc1/rack2';
}

const DIR_OPTIONS = ['capacity', 'disktype', 'flushthread'] as const;
const LOCAL_DISK_TYPES = STORAGE_TYPES.filter((type) => type === 'HDD' || type === 'SSD');
const DIRS_FORM =
  'a comma-separated list of path[:capacity=SIZE][:disktype=HDD|SSD][:flushthread=N] ' +
  '(for example /mnt/disk1:capacity=1t:disktype=SSD,/mnt/disk2)';

/** `svc.worker.storage.dirs` entries: a path, then optional `:name=value` options. */
export function storageDirs(value: ConfigValue): string | undefined {
  for (const item of items(value)) {
    const [path, ...options] = item.split(':');
    if (path === undefined || path.length === 0) return DIRS_FORM;
    for (const option of options) {
      const [name, setting, ...rest] = option.split('=');
      if (rest.length > 0 || setting === undefined || setting.length === 0) return DIRS_FORM;
      if (!(DIR_OPTIONS as readonly string[]).includes(name ?? '')) return DIRS_FORM;
      if (name === 'capacity' && !/^\d+\s*[a-z]*$/i.test(setting)) return DIRS_FORM;
      if (name === 'flushthread' && !/^[1-9]\d*$/.test(setting)) return DIRS_FORM;
      if (name === 'disktype' && !(LOCAL_DISK_TYPES as readonly string[]).includes(setting.toUpperCase())) {
        return DIRS_FORM;
      }
    }
  }
  return undefined;
}

const EVICT_FORM =
  'groups separated by |, each a comma-separated list of storage types: the tier to evict from, then the tiers ' +
  'to evict to in order (for example MEMORY,SSD,HDD,HDFS)';

const CREATE_FORM =
  'a comma-separated list of distinct storage types with MEMORY, if listed, first (for example MEMORY,SSD,HDD,HDFS)';

/**
 * A check that runs the worker's own policy parser (core/storage), so that the rules a worker applies at start and
 * the rules `svc conf check` reports are one and the same.
 */
function parsedBy(
  parse: (text: string) => unknown,
  form: string,
): (value: ConfigValue) => string | undefined {
  return (value) => {
    try {
      parse(items(value).join(','));
      return undefined;
    } catch (error) {
      return `${form} (${error instanceof Error ? error.message : String(error)})`;
    }
  };
}

/** `SRC,T1,T2|SRC2,T3`: per source tier, the tiers its files are evicted to. */
export const evictPolicy = parsedBy(parseEvictPolicy, EVICT_FORM);

/** `MEMORY,SSD,HDD,...`: the tiers a new partition file is tried on. */
export const createFilePolicy = parsedBy(parseCreateFilePolicy, CREATE_FORM);

/** A regular expression (host patterns). */
export function regularExpression(value: ConfigValue): string | undefined {
  try {
    new RegExp(String(value));
    return undefined;
  } catch {
    return 'a regular expression (for example ^worker-\\d+\\.example\\.com$)';
  }
}
