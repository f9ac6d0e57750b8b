import { CONFIG_LEVELS, type ConfigLevel, type ResolvedConfig } from '../../conf/index.ts';
import type { HttpRole } from '../../core/release/legacy-endpoints.ts';
import type { LegacyHandlers } from './legacy.ts';
import { confText, dynamicConfText, threadDumpText } from './legacy-text.ts';
import { readDynamicConfig, parsedParam } from './machine-port.ts';
import { confResponse, dynamicConfigResponse, type DynamicQuery } from './projections/conf.ts';
import type { ApiRoute } from './server.ts';
import { threadDump, type EventLoopMonitor } from './thread-dump.ts';

/** The endpoints master and worker share: configuration, dynamic configuration and the thread dump. */

export interface CommonApiOptions {
  readonly role: HttpRole;
  readonly conf: ResolvedConfig;
  /** The environment the dynamic-configuration file is looked for in (SVC_CONF_DIR). */
  readonly env: Readonly<Record<string, string | undefined>>;
  readonly monitor: EventLoopMonitor;
}

function parseLevel(text: string): ConfigLevel {
  const level = CONFIG_LEVELS.find((candidate) => candidate === text.trim().toUpperCase());
  if (level === undefined)
    throw new RangeError(`'${text}' is not a level; expected one of ${CONFIG_LEVELS.join(', ')}`);
  return level;
}

function dynamicQuery(query: Readonly<Record<string, string | undefined>>): DynamicQuery {
  return {
    ...(query.level === undefined ? {} : { level: parsedParam('level', query.level, parseLevel) }),
    ...(query.tenant === undefined ? {} : { tenant: query.tenant }),
    ...(query.name === undefined ? {} : { name: query.name }),
  };
}

export function commonRoutes(options: CommonApiOptions): ApiRoute[] {
  const { role, conf, env, monitor } = options;
  return [
    { method: 'GET', path: '/api/v1/conf', handle: () => confResponse(conf, role) },
    {
      method: 'GET',
      path: '/api/v1/conf/dynamic',
      handle: async ({ query }) =>
        dynamicConfigResponse(await readDynamicConfig(conf, env), dynamicQuery(query)),
    },
    { method: 'GET', path: '/api/v1/thread_dump', handle: () => threadDump(monitor) },
  ];
}

export function commonLegacy(options: CommonApiOptions): LegacyHandlers {
  const { role, conf, env, monitor } = options;
  return {
    '/conf': () =>
      confText(`${role === 'master' ? 'Master' : 'Worker'} Configuration`, confResponse(conf, role)),
    '/listDynamicConfigs': async (params) =>
      dynamicConfText(
        'Dynamic Configuration',
        dynamicConfigResponse(await readDynamicConfig(conf, env), dynamicQuery(params)),
      ),
    '/threadDump': () => threadDumpText('Thread Dump', threadDump(monitor)),
  };
}
