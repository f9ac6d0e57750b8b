import { readFile } from 'node:fs/promises';
import {
  dynamicConfigPath,
  parseDynamicConfig,
  type DynamicConfig,
  type ResolvedConfig,
} from '../../conf/index.ts';
import { parseWorkerKey, workerKey, type WorkerKey } from '../../core/domain/index.ts';
import type { AdminCommand } from '../../core/machines/effects.ts';
import { NodeStoppedError, type AdminAnswer } from '../driver/node-driver.ts';
import { HttpError } from './errors.ts';

/**
 * What the management interface uses of a running node: the machine's state (read only), operator commands, and
 * the configuration. NodeDriver provides the machine part; tests may give a driver of their own.
 */
export interface MachinePort<S> {
  readonly state: S;
  admin(command: AdminCommand): Promise<AdminAnswer>;
}

/**
 * Sends an operator command and waits for the machine's answer; a node that has stopped, or stops before answering
 * (a signal), gets 503 rather than a request hanging until the server closes.
 */
export async function runAdmin<S>(
  driver: MachinePort<S>,
  role: string,
  command: AdminCommand,
): Promise<AdminAnswer> {
  try {
    return await driver.admin(command);
  } catch (error) {
    if (error instanceof NodeStoppedError) {
      throw new HttpError(503, `the ${role} is stopping and takes no more commands`);
    }
    throw error;
  }
}

/**
 * The dynamic configuration of the FS store, read now. 503 when dynamic configuration is off (or did not exist at
 * the node's release) or its file cannot be read: the feature is unavailable, the request is not at fault.
 */
export async function readDynamicConfig(
  conf: ResolvedConfig,
  env: Readonly<Record<string, string | undefined>>,
): Promise<DynamicConfig> {
  const key = 'svc.dynamicConfig.store.backend';
  if (!conf.has(key)) {
    throw new HttpError(
      503,
      `dynamic configuration does not exist at release ${conf.release} (it arrived in 0.5.0)`,
    );
  }
  const backend = conf.get(key);
  if (backend === undefined || backend === '') {
    throw new HttpError(
      503,
      `dynamic configuration is disabled: ${key} is not set (set it to FS and svc.dynamicConfig.store.fs.path ` +
        'to a YAML file of levels)',
    );
  }
  const path = dynamicConfigPath(conf, env);
  if (path === undefined) {
    throw new HttpError(
      503,
      `dynamic configuration store ${String(backend)} has no file: set svc.dynamicConfig.store.fs.path ` +
        '(or SVC_CONF_DIR, where dynamicConfig.yaml is looked for)',
    );
  }
  let text: string;
  try {
    text = await readFile(path, 'utf8');
  } catch (error) {
    throw new HttpError(503, `dynamic configuration store: cannot read ${path}: ${(error as Error).message}`);
  }
  return parseDynamicConfig(text, { release: conf.release, fileName: path }).config;
}

/**
 * A comma-separated list of worker ids (legacy form and query parameters), as keys. 400 naming the parameter and
 * the expected form for anything that is not an id.
 */
export function workerKeysParam(name: string, text: string | undefined): WorkerKey[] {
  if (text === undefined) return [];
  const keys: WorkerKey[] = [];
  for (const item of text.split(',')) {
    if (item.trim() === '') continue;
    try {
      keys.push(workerKey(parseWorkerKey(item)));
    } catch (error) {
      throw new HttpError(400, `${name}: ${(error as Error).message} (several ids: comma-separated)`);
    }
  }
  return keys;
}

/** Runs `parse` (a core parser that throws RangeError with the accepted values) as a 400 on parameter `name`. */
export function parsedParam<T>(name: string, text: string, parse: (text: string) => T): T {
  try {
    return parse(text);
  } catch (error) {
    throw new HttpError(400, `${name}: ${(error as Error).message}`);
  }
}
