/**
 * Dynamic configuration, FS backend: a YAML file of SYSTEM, TENANT and TENANT_USER levels that overrides dynamic
 * keys (quotas, tags, congestion watermarks) per tenant and user. A value is looked up TENANT_USER → TENANT →
 * SYSTEM → the static configuration. Parsing and lookup are pure; reading and reloading the file on
 * `svc.dynamicConfig.refresh.interval` is the runtime's job.
 *
 * ```yaml
 * - level: SYSTEM
 *   config:
 *     svc.quota.user.diskBytesWritten: 10g
 *   tags:
 *     ssd: [worker-1:9097:9098:9099:9100]
 * - level: TENANT
 *   tenantId: analytics
 *   config:
 *     svc.quota.user.diskBytesWritten: 100g
 *   users:
 *     - name: etl
 *       config:
 *         svc.quota.user.diskBytesWritten: 1t
 * ```
 */
import { isMap, isScalar, isSeq, LineCounter, parseDocument, type Node, type YAMLMap } from 'yaml';
import { dynamicTagSince, hasDynamicTag } from '../core/release/config-changes.ts';
import type { Release } from '../core/release/version.ts';
import { bindSettings, currentName, type Binding, type Setting } from './bind.ts';
import type { Problem } from './problems.ts';
import { isDynamicAt } from './registry/history.ts';
import { REGISTRY } from './registry/registry.ts';
import type { ResolvedConfig } from './resolve.ts';
import type { ConfigValue } from './values.ts';

export * from './dynamic-view.ts';
import {
  EMPTY_DYNAMIC_CONFIG,
  type DynamicConfig,
  type LevelValues,
  type TenantConfig,
} from './dynamic-view.ts';

export interface DynamicParseOptions {
  readonly release: Release;
  readonly fileName?: string;
  readonly env?: Readonly<Record<string, string | undefined>>;
}

/** The file of the FS store: `svc.dynamicConfig.store.fs.path`, else dynamicConfig.yaml in the configuration directory. */
export function dynamicConfigPath(
  conf: ResolvedConfig,
  env: Readonly<Record<string, string | undefined>>,
): string | undefined {
  const configured = conf.optional('svc.dynamicConfig.store.fs.path', 'getString');
  if (configured !== undefined) return configured;
  const confDir = env.SVC_CONF_DIR ?? (env.SVC_HOME === undefined ? undefined : `${env.SVC_HOME}/conf`);
  return confDir === undefined ? undefined : `${confDir.replace(/\/$/, '')}/dynamicConfig.yaml`;
}

class DynamicParser {
  readonly problems: Problem[] = [];
  private readonly lines = new LineCounter();
  private readonly fileName: string;

  constructor(private readonly options: DynamicParseOptions) {
    this.fileName = options.fileName ?? 'dynamicConfig.yaml';
  }

  parse(text: string): DynamicConfig {
    const document = parseDocument(text, { lineCounter: this.lines, uniqueKeys: false, intAsBigInt: true });
    for (const error of document.errors) {
      this.report(
        'error',
        'syntax',
        'file',
        `invalid YAML: ${error.message.split('\n')[0] ?? ''}`,
        error.linePos?.[0]?.line,
      );
    }
    if (document.errors.length > 0) return EMPTY_DYNAMIC_CONFIG;
    const root = document.contents;
    if (root === null || (isScalar(root) && root.value === null)) return EMPTY_DYNAMIC_CONFIG;
    if (!isSeq(root)) {
      this.report(
        'error',
        'syntax',
        'file',
        'the document must be a list of levels (- level: SYSTEM ...)',
        this.lineOf(root),
      );
      return EMPTY_DYNAMIC_CONFIG;
    }
    let system: LevelValues = new Map();
    let tags = new Map<string, readonly string[]>();
    const tenants = new Map<string, TenantConfig>();
    for (const item of root.items) {
      if (!isMap(item)) {
        this.report(
          'error',
          'syntax',
          'file',
          'each level must be a map with a level field',
          this.lineOf(item),
        );
        continue;
      }
      const level = this.scalar(item, 'level');
      if (level === 'SYSTEM') {
        this.expectFields(item, ['level', 'config', 'tags'], 'SYSTEM');
        system = this.levelValues(item.get('config', true), 'SYSTEM');
        tags = this.tags(item.get('tags', true));
      } else if (level === 'TENANT') {
        this.expectFields(item, ['level', 'tenantId', 'config', 'users'], 'TENANT');
        const tenantId = this.scalar(item, 'tenantId');
        if (tenantId === undefined) {
          this.report('error', 'syntax', 'TENANT', 'a TENANT level needs a tenantId', this.lineOf(item));
          continue;
        }
        if (tenants.has(tenantId)) {
          this.report(
            'warning',
            'duplicate-key',
            `TENANT ${tenantId}`,
            `tenant ${tenantId} is listed again; the later entry is used`,
            this.lineOf(item),
          );
        }
        tenants.set(tenantId, {
          config: this.levelValues(item.get('config', true), `TENANT ${tenantId}`),
          users: this.users(item.get('users', true), tenantId),
        });
      } else {
        this.report(
          'error',
          'syntax',
          'file',
          `level must be SYSTEM or TENANT (users of a tenant, the TENANT_USER level, are listed under its users); got ${level ?? 'nothing'}`,
          this.lineOf(item),
        );
      }
    }
    return { system, tenants, tags };
  }

  private users(node: unknown, tenantId: string): ReadonlyMap<string, LevelValues> {
    const users = new Map<string, LevelValues>();
    if (node === undefined) return users;
    if (!isSeq(node)) {
      this.report(
        'error',
        'syntax',
        `TENANT ${tenantId}`,
        'users must be a list of {name, config}',
        this.lineOf(node),
      );
      return users;
    }
    for (const item of node.items) {
      const name = isMap(item) ? this.scalar(item, 'name') : undefined;
      if (!isMap(item) || name === undefined) {
        this.report(
          'error',
          'syntax',
          `TENANT ${tenantId}`,
          'each user needs a name and a config',
          this.lineOf(item),
        );
        continue;
      }
      const scope = `TENANT_USER ${tenantId}/${name}`;
      this.expectFields(item, ['name', 'config'], scope);
      users.set(name, this.levelValues(item.get('config', true), scope));
    }
    return users;
  }

  private tags(node: unknown): Map<string, readonly string[]> {
    const tags = new Map<string, readonly string[]>();
    if (node === undefined) return tags;
    if (!isMap(node)) {
      this.report(
        'error',
        'syntax',
        'SYSTEM',
        'tags must map each tag to a list of worker ids',
        this.lineOf(node),
      );
      return tags;
    }
    for (const pair of node.items) {
      const tag = isScalar(pair.key) ? scalarText(pair.key.value) : undefined;
      const workers = isSeq(pair.value)
        ? pair.value.items.map((item) => (isScalar(item) ? scalarText(item.value) : undefined))
        : [];
      if (tag === undefined || !isSeq(pair.value) || workers.some((worker) => worker === undefined)) {
        this.report(
          'error',
          'syntax',
          'SYSTEM',
          'tags must map each tag to a list of worker ids',
          this.lineOf(pair.key),
        );
        continue;
      }
      tags.set(tag, workers as string[]);
    }
    return tags;
  }

  /** The dynamic keys of one level's `config` map; everything else is reported and left out. */
  private levelValues(node: unknown, scope: string): LevelValues {
    const values = new Map<string, ConfigValue>();
    if (node === undefined || (isScalar(node) && node.value === null)) return values;
    if (!isMap(node)) {
      this.report('error', 'syntax', scope, 'config must be a map of key: value', this.lineOf(node));
      return values;
    }
    const settings: Setting[] = [];
    for (const pair of node.items) {
      if (!isScalar(pair.key) || !(pair.value === null || isScalar(pair.value))) {
        this.report(
          'error',
          'syntax',
          scope,
          'config must map each key to a single value',
          this.lineOf(pair.key),
        );
        continue;
      }
      const raw = pair.value === null ? '' : (scalarText(pair.value.value) ?? '');
      settings.push({
        name: scalarText(pair.key.value) ?? '',
        raw,
        source: 'file',
        where: { kind: 'dynamic', file: this.fileName, scope, ...lineField(this.lineOf(pair.key)) },
      });
    }
    const bound = bindSettings(settings, {
      registry: REGISTRY,
      release: this.options.release,
      env: this.options.env ?? {},
    });
    this.problems.push(...bound.problems);
    // Older names first, so that a key's own name wins when both are given.
    const ordered = [...bound.bindings].sort((a, b) => rank(b) - rank(a));
    const setByOlderName = new Map<string, string>();
    for (const binding of ordered) {
      if (!binding.outcome.ok) continue;
      const key = currentName(binding.match);
      if (!isDynamicAt(binding.match.entry, this.options.release)) {
        this.problems.push({
          severity: 'warning',
          code: 'not-dynamic',
          where: binding.setting.where,
          subject: binding.setting.name,
          message: `${binding.setting.name} is not a dynamic key; set it in the properties file (ignored here)`,
        });
        continue;
      }
      const olderName = setByOlderName.get(key);
      if (olderName !== undefined && binding.match.alternative === undefined) {
        this.problems.push({
          severity: 'warning',
          code: 'shadowed-key',
          where: binding.setting.where,
          subject: olderName,
          message: `${olderName} is ignored: ${binding.setting.name} sets the same key at this level`,
        });
      }
      if (binding.match.alternative !== undefined) setByOlderName.set(key, binding.setting.name);
      values.set(key, binding.outcome.value);
    }
    return values;
  }

  private expectFields(map: YAMLMap, fields: readonly string[], scope: string): void {
    for (const pair of map.items) {
      const name = isScalar(pair.key) ? (scalarText(pair.key.value) ?? '') : '';
      if (!fields.includes(name)) {
        this.report(
          'warning',
          'syntax',
          scope,
          `unknown field '${name}' (expected ${fields.join(', ')}); ignored`,
          this.lineOf(pair.key),
        );
      }
    }
  }

  private scalar(map: YAMLMap, field: string): string | undefined {
    const node = map.get(field, true);
    return isScalar(node) ? scalarText(node.value) : undefined;
  }

  private lineOf(node: unknown): number | undefined {
    const range = (node as Node | null | undefined)?.range;
    return range === undefined || range === null ? undefined : this.lines.linePos(range[0]).line;
  }

  private report(
    severity: Problem['severity'],
    code: Problem['code'],
    scope: string,
    message: string,
    line: number | undefined,
  ): void {
    this.problems.push({
      severity,
      code,
      where: { kind: 'dynamic', file: this.fileName, scope, ...lineField(line) },
      subject: scope,
      message,
    });
  }
}

/** The text of a YAML scalar (whole numbers arrive as bigint, so that Long.MAX_VALUE keeps every digit). */
function scalarText(value: unknown): string | undefined {
  if (typeof value === 'string') return value;
  if (typeof value === 'number' || typeof value === 'boolean' || typeof value === 'bigint')
    return String(value);
  return undefined;
}

function lineField(line: number | undefined): { line?: number } {
  return line === undefined ? {} : { line };
}

function rank(binding: Binding): number {
  return binding.match.alternative === undefined ? 0 : 1;
}

/** Parses the FS store's YAML. Problems are collected; a bad value leaves that level without it. */
export function parseDynamicConfig(
  text: string,
  options: DynamicParseOptions,
): { readonly config: DynamicConfig; readonly problems: readonly Problem[] } {
  if (!hasDynamicTag(options.release)) {
    return {
      config: EMPTY_DYNAMIC_CONFIG,
      problems: [
        {
          severity: 'error',
          code: 'dynamic-config-unavailable',
          where: { kind: 'dynamic', file: options.fileName ?? 'dynamicConfig.yaml', scope: 'file' },
          subject: 'dynamic configuration',
          message: `dynamic configuration arrived in ${dynamicTagSince()}; a ${options.release} node does not read it`,
        },
      ],
    };
  }
  const parser = new DynamicParser(options);
  const config = parser.parse(text);
  return { config, problems: parser.problems };
}
