/**
 * The configuration of svc: the registry of keys, value parsing, release-aware resolution, dynamic configuration
 * and the logic behind `svc conf`. Pure: the runtime reads files and the environment and passes them in.
 *
 *   const conf = resolveConfig({ release, role: 'master', fileText, env, overrides, platform });
 *   if (conf.errors.length > 0) ...refuse to start, printing conf.errors.map(formatProblem)...
 *   conf.getInt('svc.master.slot.assign.extraSlots');
 */
export { checkConfigText, type CheckOptions, type CheckReport } from './check.ts';
export { renderConfigurationDocs } from './docs.ts';
export {
  CONFIG_LEVELS,
  dynamicConfigPath,
  dynamicView,
  EMPTY_DYNAMIC_CONFIG,
  parseDynamicConfig,
  type ConfigLevel,
  type DynamicConfig,
  type DynamicScope,
  type DynamicView,
  type ValueLevel,
} from './dynamic.ts';
export {
  availableTypesFrom,
  budgetModeFrom,
  FILTER_EXCLUDED,
  lifecycleManagerConfigFrom,
  mapTaskConfigFrom,
  masterConfigFrom,
  readsKeyAt,
  reduceTaskConfigFrom,
  REFERENCE_CONSTANTS,
  refuseImplicitMemoryFrom,
  replicationFrom,
  stageRerunFrom,
  TIERS_KEY,
  tiersKeyAt,
  workerConfigFrom,
  type LifecycleManagerFacts,
  type MasterFacts,
  type WorkerFacts,
} from './machine-configs.ts';
export {
  masterEndpoints,
  parseMasterUrl,
  parseMasterUrls,
  type MasterEndpointKeys,
  type MasterUrl,
  type MasterUrls,
} from './master-url.ts';
export { unprefixedConf, type EngineConf } from './engine-prefix.ts';
export { formatNoEffectNotice, noEffectWarning } from './no-effect.ts';
export {
  formatMigrationReport,
  migrateConfigText,
  type DefaultChange,
  type Edit,
  type MigrateOptions,
  type Migration,
  type NewKey,
} from './migrate.ts';
export {
  ConfigError,
  formatLocation,
  formatProblem,
  hasErrors,
  type Location,
  type Problem,
  type ProblemCode,
  type Severity,
} from './problems.ts';
export { describeDefault, existsAt, isDynamicAt, nameReadAt } from './registry/history.ts';
export { REGISTRY, type ConfigEntry } from './registry/registry.ts';
export {
  CONTROL_PLANE_MODULE,
  describeNoEffect,
  MODULES,
  ROLES,
  type Module,
  type NoEffect,
  type Role,
} from './registry/spec.ts';
export {
  DEFAULT_FILE_NAME,
  resolveConfig,
  type Origin,
  type Platform,
  type ResolvedConfig,
  type ResolveOptions,
  type Resolution,
  type SettingWithoutEffect,
  type ShownSetting,
} from './resolve.ts';
export { formatValue, parseValue, type ConfigValue, type ValueType } from './values.ts';
