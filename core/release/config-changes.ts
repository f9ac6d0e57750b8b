/**
 * Contract section 9.2, "Configuration changes", as one typed table: every row of the contract is one
 * ConfigChangeRow, with the contract's own wording kept beside the structured changes it states. conf/ derives each
 * key's per-release defaults, fallbacks, alternative names, deprecations and removals from this table and from
 * nowhere else.
 *
 * Keys are written as the contract writes them: `svc.<module>.io.mode` stands for the key of every module (conf/
 * expands the placeholder). Values are the text a user would write in a properties file. Where the contract writes
 * a duration without its unit (the disk check interval, "60 to 30"), the value carries the unit the contract means.
 */
import { assertWithinHistory } from './timeline.ts';
import { compareReleases, isAtLeast, type Release } from './version.ts';

/** A default that depends on what the platform offers rather than on the release alone. */
export interface PlatformDefault {
  /** The value when the platform capability is available. */
  readonly preferred: string;
  /** The capability the preferred value needs, as the runtime reports it. */
  readonly requires: 'epoll';
  /** The value otherwise. */
  readonly otherwise: string;
}

/** One change a row of 9.2 states. */
export type ConfigChange =
  /** A key that did not exist before the release. */
  | { readonly kind: 'introduced'; readonly key: string; readonly default: string }
  | { readonly kind: 'default-changed'; readonly key: string; readonly from: string; readonly to: string }
  /** The key no longer needs a value; when unset, the platform decides (`to`). */
  | {
      readonly kind: 'made-optional';
      readonly key: string;
      readonly from: string;
      readonly to: PlatformDefault;
    }
  /** `key` still works but `replacement` is the name to use. */
  | { readonly kind: 'deprecated'; readonly key: string; readonly replacement: string }
  /** `key` took the name `newKey`; the old name still works as a deprecated alternative. */
  | { readonly kind: 'renamed'; readonly key: string; readonly newKey: string }
  /** Every key under `prefix` moved under `replacement` (same rest of the name); the old names still work. */
  | { readonly kind: 'namespace-deprecated'; readonly prefix: string; readonly replacement: string }
  /** Setting the key is refused from the release on; `reason` is the contract's explanation, when it gives one. */
  | { readonly kind: 'removed'; readonly key: string; readonly reason?: string }
  /** Every key under `prefix` is refused from the release on. */
  | { readonly kind: 'prefix-removed'; readonly prefix: string; readonly instead: string }
  /** Keys under `prefix` are passed through to a component (here: the distributed filesystem's client). */
  | { readonly kind: 'prefix-introduced'; readonly prefix: string; readonly passedTo: string }
  /** When the key is unset, its value is read from a different key from the release on. */
  | { readonly kind: 'fallback-changed'; readonly key: string; readonly from: string; readonly to: string }
  /** The configuration registry gained a tag that every key carries from the release on. */
  | { readonly kind: 'tag-added'; readonly tag: 'isDynamic' }
  /** Versions of an engine that are no longer in the official support list. */
  | {
      readonly kind: 'engine-support-dropped';
      readonly engine: 'stream';
      readonly versions: readonly string[];
    };

export interface ConfigChangeRow {
  readonly release: Release;
  /** The "Key" column of the contract. */
  readonly subject: string;
  /** The "Change" column of the contract, verbatim. */
  readonly contract: string;
  readonly changes: readonly ConfigChange[];
}

const BATCH_RERUN = 'svc.client.spark.stageRerun.enabled';
const ASK_TIMEOUT_KEYS = [
  'svc.client.rpc.getReducerFileGroup.askTimeout',
  'svc.client.rpc.registerShuffle.askTimeout',
  'svc.client.rpc.requestPartition.askTimeout',
] as const;
const REMOVED_IN_0_5_0 = [
  'svc.client.push.splitPartition.threads',
  'svc.client.flink.inputGate.minMemory',
  'svc.client.flink.resultPartition.minMemory',
] as const;

function quotaRename(metric: string): ConfigChangeRow {
  return {
    release: '0.6.0',
    subject: `svc.quota.tenant.${metric}`,
    contract: `Renamed \`svc.quota.user.${metric}\`.`,
    changes: [{ kind: 'renamed', key: `svc.quota.tenant.${metric}`, newKey: `svc.quota.user.${metric}` }],
  };
}

/** Contract section 9.2, newest release first, in the contract's row order. */
export const CONFIG_CHANGES: readonly ConfigChangeRow[] = [
  {
    release: '0.6.0',
    subject: 'svc.client.spark.fetch.throwsFetchFailure',
    contract:
      'Deprecated; use `svc.client.spark.stageRerun.enabled`. Default changed from `false` to `true` ' +
      '(batch-engine stage rerun is on by default).',
    changes: [
      { kind: 'deprecated', key: 'svc.client.spark.fetch.throwsFetchFailure', replacement: BATCH_RERUN },
      { kind: 'default-changed', key: BATCH_RERUN, from: 'false', to: 'true' },
    ],
  },
  quotaRename('diskBytesWritten'),
  quotaRename('diskFileCount'),
  quotaRename('hdfsBytesWritten'),
  quotaRename('hdfsFileCount'),
  {
    release: '0.6.0',
    subject: 'svc.master.hdfs.expireDirs.timeout',
    contract: 'Renamed `svc.master.dfs.expireDirs.timeout` (timeout for deleting expired directories).',
    changes: [
      {
        kind: 'renamed',
        key: 'svc.master.hdfs.expireDirs.timeout',
        newKey: 'svc.master.dfs.expireDirs.timeout',
      },
    ],
  },
  {
    release: '0.6.0',
    subject: 'svc.master.slot.assign.minWorkers',
    contract: 'Introduced, default 100.',
    changes: [{ kind: 'introduced', key: 'svc.master.slot.assign.minWorkers', default: '100' }],
  },
  {
    release: '0.6.0',
    subject: 'svc.master.slot.assign.extraSlots',
    contract: 'Default changed from 2 to 100.',
    changes: [{ kind: 'default-changed', key: 'svc.master.slot.assign.extraSlots', from: '2', to: '100' }],
  },
  {
    release: '0.6.0',
    subject: 'svc.worker.congestionControl.low.watermark',
    contract: 'Deprecated; use `svc.worker.congestionControl.diskBuffer.low.watermark`.',
    changes: [
      {
        kind: 'deprecated',
        key: 'svc.worker.congestionControl.low.watermark',
        replacement: 'svc.worker.congestionControl.diskBuffer.low.watermark',
      },
    ],
  },
  {
    release: '0.6.0',
    subject: 'svc.worker.congestionControl.high.watermark',
    contract: 'Deprecated; use `svc.worker.congestionControl.diskBuffer.high.watermark`.',
    changes: [
      {
        kind: 'deprecated',
        key: 'svc.worker.congestionControl.high.watermark',
        replacement: 'svc.worker.congestionControl.diskBuffer.high.watermark',
      },
    ],
  },
  {
    release: '0.6.0',
    subject: 'svc.<module>.io.mode',
    contract:
      'Made optional. Default changed from `NIO` to `EPOLL` when epoll is available, otherwise `NIO`.',
    changes: [
      {
        kind: 'made-optional',
        key: 'svc.<module>.io.mode',
        from: 'NIO',
        to: { preferred: 'EPOLL', requires: 'epoll', otherwise: 'NIO' },
      },
    ],
  },
  {
    release: '0.6.0',
    subject: 'svc.client.shuffle.mapPartition.split.enabled',
    contract: 'Removed (partition split is on by default for MapPartition).',
    changes: [
      {
        kind: 'removed',
        key: 'svc.client.shuffle.mapPartition.split.enabled',
        reason: 'partition split is on by default for MapPartition',
      },
    ],
  },
  {
    release: '0.6.0',
    subject: 'stream engine versions 1.14 and 1.15',
    contract: 'Removed from the official support list.',
    changes: [{ kind: 'engine-support-dropped', engine: 'stream', versions: ['1.14', '1.15'] }],
  },
  {
    release: '0.5.0',
    subject: 'svc.worker.graceful.shutdown.recoverDbBackend',
    contract: 'Default changed from `LEVELDB` to `ROCKSDB`. Set `LEVELDB` to restore the earlier behaviour.',
    changes: [
      {
        kind: 'default-changed',
        key: 'svc.worker.graceful.shutdown.recoverDbBackend',
        from: 'LEVELDB',
        to: 'ROCKSDB',
      },
    ],
  },
  {
    release: '0.5.0',
    subject: 'svc.quota.configuration.path',
    contract: 'Deprecated; use `svc.dynamicConfig.store.fs.path`.',
    changes: [
      {
        kind: 'deprecated',
        key: 'svc.quota.configuration.path',
        replacement: 'svc.dynamicConfig.store.fs.path',
      },
    ],
  },
  {
    release: '0.5.0',
    subject: REMOVED_IN_0_5_0.join(', '),
    contract: 'Removed.',
    changes: REMOVED_IN_0_5_0.map((key) => ({ kind: 'removed', key })),
  },
  {
    release: '0.5.0',
    subject: 'svc.client.spark.shuffle.forceFallback.enabled',
    contract: 'Deprecated; use `svc.client.spark.shuffle.fallback.policy`.',
    changes: [
      {
        kind: 'deprecated',
        key: 'svc.client.spark.shuffle.forceFallback.enabled',
        replacement: 'svc.client.spark.shuffle.fallback.policy',
      },
    ],
  },
  {
    release: '0.5.0',
    subject: 'configuration tag isDynamic',
    contract: 'Added; it says whether a configuration is dynamic.',
    changes: [{ kind: 'tag-added', tag: 'isDynamic' }],
  },
  {
    release: '0.4.1',
    subject: ASK_TIMEOUT_KEYS.join(', '),
    contract: 'Fallback key changed from `svc.<module>.io.connectionTimeout` to `svc.rpc.askTimeout`.',
    changes: ASK_TIMEOUT_KEYS.map((key) => ({
      kind: 'fallback-changed',
      key,
      from: 'svc.<module>.io.connectionTimeout',
      to: 'svc.rpc.askTimeout',
    })),
  },
  {
    release: '0.4.0',
    subject: 'svc.<module>.io.numConnectionsPerPeer',
    contract: 'Default changed from 2 to 1.',
    changes: [{ kind: 'default-changed', key: 'svc.<module>.io.numConnectionsPerPeer', from: '2', to: '1' }],
  },
  {
    release: '0.4.0',
    subject: 'svc.metrics.master.prometheus.host / .port',
    contract: 'Renamed `svc.master.http.host` / `svc.master.http.port`.',
    changes: [
      { kind: 'renamed', key: 'svc.metrics.master.prometheus.host', newKey: 'svc.master.http.host' },
      { kind: 'renamed', key: 'svc.metrics.master.prometheus.port', newKey: 'svc.master.http.port' },
    ],
  },
  {
    release: '0.4.0',
    subject: 'svc.metrics.worker.prometheus.host / .port',
    contract: 'Renamed `svc.worker.http.host` / `svc.worker.http.port`.',
    changes: [
      { kind: 'renamed', key: 'svc.metrics.worker.prometheus.host', newKey: 'svc.worker.http.host' },
      { kind: 'renamed', key: 'svc.metrics.worker.prometheus.port', newKey: 'svc.worker.http.port' },
    ],
  },
  {
    release: '0.4.0',
    subject: 'svc.worker.storage.baseDir.prefix, svc.worker.storage.baseDir.number',
    contract: 'Deprecated; use `svc.worker.storage.dirs`.',
    changes: [
      {
        kind: 'deprecated',
        key: 'svc.worker.storage.baseDir.prefix',
        replacement: 'svc.worker.storage.dirs',
      },
      {
        kind: 'deprecated',
        key: 'svc.worker.storage.baseDir.number',
        replacement: 'svc.worker.storage.dirs',
      },
    ],
  },
  {
    release: '0.4.0',
    subject: 'svc.storage.activeTypes',
    contract: 'Deprecated; use `svc.storage.availableTypes`.',
    changes: [
      { kind: 'deprecated', key: 'svc.storage.activeTypes', replacement: 'svc.storage.availableTypes' },
    ],
  },
  {
    release: '0.4.0',
    subject: 'svc.worker.userResourceConsumption.update.interval',
    contract: 'Removed.',
    changes: [{ kind: 'removed', key: 'svc.worker.userResourceConsumption.update.interval' }],
  },
  {
    release: '0.3.2',
    subject: 'raft.client.rpc.request.timeout',
    contract: 'Default changed from `3s` to `10s` (the guide attributes this to 0.3.1).',
    changes: [{ kind: 'default-changed', key: 'raft.client.rpc.request.timeout', from: '3s', to: '10s' }],
  },
  {
    release: '0.3.2',
    subject: 'raft.client.rpc.watch.request.timeout',
    contract: 'Default changed from `10s` to `20s` (the guide attributes this to 0.3.1).',
    changes: [
      { kind: 'default-changed', key: 'raft.client.rpc.watch.request.timeout', from: '10s', to: '20s' },
    ],
  },
  {
    release: '0.3.1',
    subject: 'svc.worker.directMemoryRatioToResume',
    contract: 'Default changed from 0.5 to 0.7.',
    changes: [
      { kind: 'default-changed', key: 'svc.worker.directMemoryRatioToResume', from: '0.5', to: '0.7' },
    ],
  },
  {
    release: '0.3.1',
    subject: 'svc.worker.monitor.disk.check.interval',
    contract: 'Default changed from 60 to 30.',
    // The contract gives the values without a unit; they are seconds (a bare number would read as milliseconds).
    changes: [
      { kind: 'default-changed', key: 'svc.worker.monitor.disk.check.interval', from: '60s', to: '30s' },
    ],
  },
  {
    release: '0.3.0',
    subject: 'rss.* keys',
    contract: 'Support removed.',
    changes: [
      {
        kind: 'prefix-removed',
        prefix: 'rss.',
        instead: 'use the svc.* key of the same meaning (see docs/configuration.md)',
      },
    ],
  },
  {
    release: '0.3.0',
    subject: 'svc.client.push.replicate.enabled',
    contract:
      'Default changed from `true` to `false`. To enable replication, set it explicitly, for the batch engine ' +
      'with the key `<batch_engine_conf_prefix>.svc.client.push.replicate.enabled` set to `true`.',
    changes: [
      { kind: 'default-changed', key: 'svc.client.push.replicate.enabled', from: 'true', to: 'false' },
    ],
  },
  {
    release: '0.3.0',
    subject: 'svc.worker.storage.workingDir',
    contract: 'Default changed from `hadoop/rss-worker/shuffle_data` to `svc-worker/shuffle_data`.',
    changes: [
      {
        kind: 'default-changed',
        key: 'svc.worker.storage.workingDir',
        from: 'hadoop/rss-worker/shuffle_data',
        to: 'svc-worker/shuffle_data',
      },
    ],
  },
  {
    release: '0.3.0',
    subject: 'namespace svc.ha.master.*',
    contract: 'Deprecated; use `svc.master.ha.*`.',
    changes: [{ kind: 'namespace-deprecated', prefix: 'svc.ha.master.', replacement: 'svc.master.ha.' }],
  },
  {
    release: '0.3.0',
    subject: 'distributed-filesystem configuration override',
    contract:
      'Configuration files of the filesystem client can be overridden by keys with the prefix `svc.fsconf.` ' +
      '(neutral stand-in for the prefix naming that filesystem). On the batch-engine client, set ' +
      "`<batch_engine_conf_prefix>.svc.fsconf.<key>`; the engine's own filesystem prefix does not take effect. " +
      'On a stream-engine client, master and worker, set `svc.fsconf.<key>`.',
    changes: [
      { kind: 'prefix-introduced', prefix: 'svc.fsconf.', passedTo: 'the distributed filesystem client' },
    ],
  },
];

/** A change together with the release and row that state it. */
export interface DatedChange<Change extends ConfigChange = ConfigChange> {
  readonly release: Release;
  readonly row: ConfigChangeRow;
  readonly change: Change;
}

type ChangeOf<Kind extends ConfigChange['kind']> = Extract<ConfigChange, { kind: Kind }>;

/** Every change of `kind`, oldest release first (rows of one release keep the contract's order). */
export function changesOfKind<Kind extends ConfigChange['kind']>(
  kind: Kind,
): readonly DatedChange<ChangeOf<Kind>>[] {
  return (DATED_CHANGES.get(kind) ?? []) as readonly DatedChange<ChangeOf<Kind>>[];
}

/** The table's changes by kind, oldest first, computed once: every lookup of a key's history goes through them. */
const DATED_CHANGES: ReadonlyMap<ConfigChange['kind'], readonly DatedChange[]> = (() => {
  const byKind = new Map<ConfigChange['kind'], DatedChange[]>();
  for (const row of CONFIG_CHANGES) {
    for (const change of row.changes) {
      byKind.set(change.kind, [...(byKind.get(change.kind) ?? []), { release: row.release, row, change }]);
    }
  }
  for (const dated of byKind.values()) dated.sort((a, b) => compareReleases(a.release, b.release));
  return byKind;
})();

/** What the table says a key's default is at a release: a plain value, or one the platform decides. */
export type DefaultRule =
  | { readonly kind: 'value'; readonly value: string }
  | { readonly kind: 'platform'; readonly rule: PlatformDefault };

/**
 * The default of `key` (as the contract writes it, e.g. `svc.<module>.io.mode`) at `release`, or undefined when
 * the table states no default for the key (the registry's own default then applies). Before the first change the
 * key has that change's old default; after a change, its new one.
 */
export function defaultAt(key: string, release: Release): DefaultRule | undefined {
  assertWithinHistory(release);
  const history = defaultHistory(key);
  const first = history[0];
  if (first === undefined) return undefined;
  let current: DefaultRule = first.before;
  for (const step of history) {
    if (isAtLeast(release, step.release)) current = step.after;
  }
  return current;
}

/** One step of a key's default over time. */
export interface DefaultStep {
  readonly release: Release;
  readonly before: DefaultRule;
  readonly after: DefaultRule;
  readonly row: ConfigChangeRow;
}

/** Every default change of `key` that the table states (introductions excluded), oldest first. */
export function defaultHistory(key: string): readonly DefaultStep[] {
  const steps: DefaultStep[] = [];
  for (const dated of changesOfKind('default-changed')) {
    if (dated.change.key !== key) continue;
    steps.push({
      release: dated.release,
      before: { kind: 'value', value: dated.change.from },
      after: { kind: 'value', value: dated.change.to },
      row: dated.row,
    });
  }
  for (const dated of changesOfKind('made-optional')) {
    if (dated.change.key !== key) continue;
    steps.push({
      release: dated.release,
      before: { kind: 'value', value: dated.change.from },
      after: { kind: 'platform', rule: dated.change.to },
      row: dated.row,
    });
  }
  return steps.sort((a, b) => compareReleases(a.release, b.release));
}

/** Whether the table makes `key` optional (no value needed) at `release`. */
export function isMadeOptional(key: string, release: Release): boolean {
  return changesOfKind('made-optional').some(
    (dated) => dated.change.key === key && isAtLeast(release, dated.release),
  );
}

/** The release and default of a key the table says was introduced, or undefined. */
export function introduction(
  key: string,
): { readonly release: Release; readonly default: string } | undefined {
  const dated = changesOfKind('introduced').find((candidate) => candidate.change.key === key);
  return dated === undefined ? undefined : { release: dated.release, default: dated.change.default };
}

/** The key whose value `key` falls back to at `release` according to the table, or undefined. */
export function fallbackAt(key: string, release: Release): string | undefined {
  assertWithinHistory(release);
  const changes = changesOfKind('fallback-changed').filter((dated) => dated.change.key === key);
  const first = changes[0];
  if (first === undefined) return undefined;
  let current = first.change.from;
  for (const dated of changes) {
    if (isAtLeast(release, dated.release)) current = dated.change.to;
  }
  return current;
}

/** Every fallback change of `key`, oldest first. */
export function fallbackHistory(key: string): readonly DatedChange<ChangeOf<'fallback-changed'>>[] {
  return changesOfKind('fallback-changed').filter((dated) => dated.change.key === key);
}

/** How an old name relates to the name that replaced it. */
export interface Replacement {
  readonly oldKey: string;
  readonly newKey: string;
  readonly release: Release;
  /** 'renamed' when the contract says "Renamed"; 'deprecated' when it says "Deprecated; use". */
  readonly how: 'renamed' | 'deprecated';
  readonly row: ConfigChangeRow;
}

/** The replacement the table names for `oldKey` (an exact key or one under a deprecated namespace), if any. */
export function replacementOf(oldKey: string): Replacement | undefined {
  for (const dated of changesOfKind('renamed')) {
    if (dated.change.key === oldKey) return replacement(oldKey, dated.change.newKey, dated, 'renamed');
  }
  for (const dated of changesOfKind('deprecated')) {
    if (dated.change.key === oldKey)
      return replacement(oldKey, dated.change.replacement, dated, 'deprecated');
  }
  for (const dated of changesOfKind('namespace-deprecated')) {
    const { prefix, replacement: newPrefix } = dated.change;
    if (oldKey.startsWith(prefix) && oldKey.length > prefix.length) {
      return replacement(oldKey, newPrefix + oldKey.slice(prefix.length), dated, 'deprecated');
    }
  }
  return undefined;
}

function replacement(
  oldKey: string,
  newKey: string,
  dated: DatedChange,
  how: Replacement['how'],
): Replacement {
  return { oldKey, newKey, release: dated.release, how, row: dated.row };
}

/** Every exact old name that the table replaces by `newKey` (renames and deprecations), oldest first. */
export function replacedNamesOf(newKey: string): readonly Replacement[] {
  const found: Replacement[] = [];
  for (const dated of changesOfKind('renamed')) {
    if (dated.change.newKey === newKey) found.push(replacement(dated.change.key, newKey, dated, 'renamed'));
  }
  for (const dated of changesOfKind('deprecated')) {
    if (dated.change.replacement === newKey)
      found.push(replacement(dated.change.key, newKey, dated, 'deprecated'));
  }
  return found.sort((a, b) => compareReleases(a.release, b.release));
}

/** The deprecated namespace that `newKey` lives in the replacement of, e.g. `svc.master.ha.enabled`. */
export function namespaceRenameOf(
  newKey: string,
): { readonly oldKey: string; readonly release: Release; readonly row: ConfigChangeRow } | undefined {
  for (const dated of changesOfKind('namespace-deprecated')) {
    const { prefix, replacement: newPrefix } = dated.change;
    if (newKey.startsWith(newPrefix) && newKey.length > newPrefix.length) {
      return { oldKey: prefix + newKey.slice(newPrefix.length), release: dated.release, row: dated.row };
    }
  }
  return undefined;
}

/** How and when the table removes `key`: on its own (with the contract's reason, if any) or with its prefix. */
export type Removal =
  | {
      readonly kind: 'key';
      readonly release: Release;
      readonly reason?: string;
      readonly row: ConfigChangeRow;
    }
  | {
      readonly kind: 'prefix';
      readonly release: Release;
      readonly prefix: string;
      readonly instead: string;
      readonly row: ConfigChangeRow;
    };

export function removalOf(key: string): Removal | undefined {
  for (const dated of changesOfKind('removed')) {
    if (dated.change.key !== key) continue;
    const { reason } = dated.change;
    return {
      kind: 'key',
      release: dated.release,
      ...(reason === undefined ? {} : { reason }),
      row: dated.row,
    };
  }
  for (const dated of changesOfKind('prefix-removed')) {
    if (!key.startsWith(dated.change.prefix)) continue;
    const { prefix, instead } = dated.change;
    return { kind: 'prefix', release: dated.release, prefix, instead, row: dated.row };
  }
  return undefined;
}

/** Whether `key` is refused at `release` because the table removed it. */
export function isRemovedAt(key: string, release: Release): boolean {
  assertWithinHistory(release);
  const removal = removalOf(key);
  return removal !== undefined && isAtLeast(release, removal.release);
}

/** A prefix whose keys are handed to another component, and since when. */
export interface PassThroughPrefix {
  readonly prefix: string;
  readonly passedTo: string;
  readonly since: Release;
}

/** Every pass-through prefix the table introduces (`svc.fsconf.`). */
export function passThroughPrefixes(): readonly PassThroughPrefix[] {
  return changesOfKind('prefix-introduced').map((dated) => ({
    prefix: dated.change.prefix,
    passedTo: dated.change.passedTo,
    since: dated.release,
  }));
}

/** The release from which configuration keys carry the `isDynamic` tag (and dynamic configuration exists). */
export function dynamicTagSince(): Release {
  const [first] = changesOfKind('tag-added').filter((dated) => dated.change.tag === 'isDynamic');
  if (first === undefined)
    throw new Error('the configuration history must say when the isDynamic tag arrived');
  return first.release;
}

export function hasDynamicTag(release: Release): boolean {
  assertWithinHistory(release);
  return isAtLeast(release, dynamicTagSince());
}

/** Stream-engine versions that are no longer officially supported at `release`. */
export function droppedStreamEngineVersions(release: Release): readonly string[] {
  assertWithinHistory(release);
  return changesOfKind('engine-support-dropped')
    .filter((dated) => dated.change.engine === 'stream' && isAtLeast(release, dated.release))
    .flatMap((dated) => dated.change.versions);
}

/** The rows an upgrade from `from` to `to` crosses (after `from`, up to and including `to`), oldest first. */
export function configChangesBetween(from: Release, to: Release): readonly ConfigChangeRow[] {
  return CONFIG_CHANGES.filter(
    (row) => compareReleases(row.release, from) > 0 && compareReleases(row.release, to) <= 0,
  ).sort((a, b) => compareReleases(a.release, b.release));
}
