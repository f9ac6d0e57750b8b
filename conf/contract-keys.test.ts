// Every configuration key the contract text names (sections 1, 2, 4, 8 and 9.2), written out here rather than read
// from the contract, with a check that each is registered and resolves.
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { CURRENT_RELEASE, type Release } from '../core/release/version.ts';
import { REGISTRY, type ConfigEntry } from './registry/registry.ts';
import { MODULES } from './registry/spec.ts';
import { resolveConfig } from './resolve.ts';
import { parseValue, type ConfigValue } from './values.ts';

/** Keys by their current name. `<module>` keys are listed once and checked for every module. */
const CURRENT_KEYS = [
  // section 1 (and the batch-engine client setting of rule 3)
  'svc.storage.availableTypes',
  'svc.master.ha.enabled',
  // section 4
  'svc.master.http.host',
  'svc.master.http.port',
  'svc.worker.http.host',
  'svc.worker.http.port',
  // section 8
  'svc.master.estimatedPartitionSize.minSize',
  'svc.master.estimatedPartitionSize.maxSize',
  'svc.master.slot.assign.minWorkers',
  'svc.master.slot.assign.extraSlots',
  'svc.<module>.io.numConnectionsPerPeer',
  // section 9.2
  'svc.client.spark.stageRerun.enabled',
  'svc.quota.user.diskBytesWritten',
  'svc.quota.user.diskFileCount',
  'svc.quota.user.hdfsBytesWritten',
  'svc.quota.user.hdfsFileCount',
  'svc.master.dfs.expireDirs.timeout',
  'svc.worker.congestionControl.diskBuffer.low.watermark',
  'svc.worker.congestionControl.diskBuffer.high.watermark',
  'svc.<module>.io.mode',
  'svc.worker.graceful.shutdown.recoverDbBackend',
  'svc.dynamicConfig.store.fs.path',
  'svc.client.spark.shuffle.fallback.policy',
  'svc.client.rpc.getReducerFileGroup.askTimeout',
  'svc.client.rpc.registerShuffle.askTimeout',
  'svc.client.rpc.requestPartition.askTimeout',
  'svc.<module>.io.connectionTimeout',
  'svc.rpc.askTimeout',
  'svc.worker.storage.dirs',
  'raft.client.rpc.request.timeout',
  'raft.client.rpc.watch.request.timeout',
  'svc.worker.directMemoryRatioToResume',
  'svc.worker.monitor.disk.check.interval',
  'svc.client.push.replicate.enabled',
  'svc.worker.storage.workingDir',
  // the dynamic-configuration keys
  'svc.dynamicConfig.store.backend',
  'svc.dynamicConfig.refresh.interval',
] as const;

/** Older names the contract names, with the key that replaced them. */
const OLDER_NAMES: readonly (readonly [string, string])[] = [
  ['svc.storage.activeTypes', 'svc.storage.availableTypes'],
  ['svc.client.spark.fetch.throwsFetchFailure', 'svc.client.spark.stageRerun.enabled'],
  ['svc.quota.tenant.diskBytesWritten', 'svc.quota.user.diskBytesWritten'],
  ['svc.quota.tenant.diskFileCount', 'svc.quota.user.diskFileCount'],
  ['svc.quota.tenant.hdfsBytesWritten', 'svc.quota.user.hdfsBytesWritten'],
  ['svc.quota.tenant.hdfsFileCount', 'svc.quota.user.hdfsFileCount'],
  ['svc.master.hdfs.expireDirs.timeout', 'svc.master.dfs.expireDirs.timeout'],
  ['svc.worker.congestionControl.low.watermark', 'svc.worker.congestionControl.diskBuffer.low.watermark'],
  ['svc.worker.congestionControl.high.watermark', 'svc.worker.congestionControl.diskBuffer.high.watermark'],
  ['svc.quota.configuration.path', 'svc.dynamicConfig.store.fs.path'],
  ['svc.client.spark.shuffle.forceFallback.enabled', 'svc.client.spark.shuffle.fallback.policy'],
  ['svc.metrics.master.prometheus.host', 'svc.master.http.host'],
  ['svc.metrics.master.prometheus.port', 'svc.master.http.port'],
  ['svc.metrics.worker.prometheus.host', 'svc.worker.http.host'],
  ['svc.metrics.worker.prometheus.port', 'svc.worker.http.port'],
  // the svc.ha.master.* namespace, deprecated for svc.master.ha.*
  ['svc.ha.master.enabled', 'svc.master.ha.enabled'],
  ['svc.ha.master.node.1.host', 'svc.master.ha.node.1.host'],
];

/** Deprecated keys that are not plain older names: they still work, and assemble their replacement. */
const DEPRECATED_KEYS: readonly (readonly [string, string])[] = [
  ['svc.worker.storage.baseDir.prefix', 'svc.worker.storage.dirs'],
  ['svc.worker.storage.baseDir.number', 'svc.worker.storage.dirs'],
];

/** Removed keys, with the release that removed them. */
const REMOVED_KEYS: readonly (readonly [string, Release])[] = [
  ['svc.client.shuffle.mapPartition.split.enabled', '0.6.0'],
  ['svc.client.push.splitPartition.threads', '0.5.0'],
  ['svc.client.flink.inputGate.minMemory', '0.5.0'],
  ['svc.client.flink.resultPartition.minMemory', '0.5.0'],
  ['svc.worker.userResourceConsumption.update.interval', '0.4.0'],
];

function expand(key: string): readonly string[] {
  return key.includes('<module>') ? MODULES.map((module) => key.replace('<module>', module)) : [key];
}

/** A value of the entry's type that is not its default. */
function sampleOf(entry: ConfigEntry): string {
  switch (entry.type) {
    case 'bytes':
      return '16m';
    case 'time':
      return '15s';
    case 'int':
      return '7';
    case 'double':
      return '0.25';
    case 'boolean':
      return 'true';
    case 'enum':
      return entry.values?.[entry.values.length - 1] ?? 'x';
    case 'list':
      return entry.values?.[entry.values.length - 1] ?? '/data/a,/data/b';
    case 'string':
      return '/etc/svc/sample';
  }
}

function parsedSample(entry: ConfigEntry, sample: string): ConfigValue {
  const parsed = parseValue(sample, entry);
  assert.ok(parsed.ok, `${entry.key}: sample ${sample} does not parse`);
  return parsed.value;
}

function entryOf(key: string): ConfigEntry {
  const match = REGISTRY.lookup(key);
  assert.ok(match, `${key} is not registered`);
  return match.entry;
}

describe('every key the contract names', () => {
  it('is registered under its current name and resolves, unset and set', () => {
    for (const key of CURRENT_KEYS.flatMap(expand)) {
      const match = REGISTRY.lookup(key);
      assert.ok(match, `${key} is not registered`);
      assert.equal(match.alternative, undefined, `${key} should be a current name`);
      const unset = resolveConfig();
      assert.ok(unset.has(key), `${key} does not exist at ${CURRENT_RELEASE}`);
      assert.doesNotThrow(() => unset.get(key), key);
      const sample = sampleOf(match.entry);
      const set = resolveConfig({ fileText: `${key} ${sample}\n` });
      assert.deepEqual(set.problems, [], key);
      assert.deepEqual(set.get(key), parsedSample(match.entry, sample), key);
      assert.ok(set.isSet(key), key);
    }
  });

  it('accepts every older name, with a warning naming the new one, and resolves the new key from it', () => {
    for (const [oldName, newName] of OLDER_NAMES) {
      const match = REGISTRY.lookup(oldName);
      assert.ok(match?.alternative, `${oldName} should be an older name`);
      const entry = entryOf(newName);
      assert.equal(match.entry, entry, `${oldName} should be an older name of ${newName}`);
      const sample = oldName.endsWith('forceFallback.enabled') ? 'true' : sampleOf(entry);
      const conf = resolveConfig({ fileText: `${oldName} ${sample}\n` });
      const expected = oldName.endsWith('forceFallback.enabled') ? 'ALWAYS' : parsedSample(entry, sample);
      assert.deepEqual(conf.get(newName), expected, oldName);
      assert.equal(conf.problems.length, 1, oldName);
      assert.equal(conf.problems[0]?.code, 'deprecated-key', oldName);
      assert.match(conf.problems[0]?.message ?? '', new RegExp(newName.replaceAll('.', '\\.')), oldName);
    }
  });

  it('accepts the deprecated baseDir keys, warns, and builds svc.worker.storage.dirs from them', () => {
    for (const [key, replacement] of DEPRECATED_KEYS) {
      assert.ok(REGISTRY.lookup(key), `${key} is not registered`);
      const conf = resolveConfig({ fileText: `${key} ${key.endsWith('number') ? '2' : '/data/disk'}\n` });
      assert.equal(conf.problems[0]?.code, 'deprecated-key');
      assert.match(conf.problems[0]?.message ?? '', /use svc\.worker\.storage\.dirs/);
      assert.ok(conf.isSet(replacement), 'conf.isSet(replacement)');
    }
    const both = resolveConfig({
      fileText: 'svc.worker.storage.baseDir.prefix /data/disk\nsvc.worker.storage.baseDir.number 3\n',
    });
    assert.deepEqual(both.getList('svc.worker.storage.dirs'), ['/data/disk1', '/data/disk2', '/data/disk3']);
  });

  it('knows every removed key: it resolves before its removal and is refused from it', () => {
    for (const [key, removedIn] of REMOVED_KEYS) {
      const entry = entryOf(key);
      assert.equal(entry.removal?.release, removedIn, key);
      const before = resolveConfig({ release: '0.3.0', fileText: `${key} ${sampleOf(entry)}\n` });
      assert.deepEqual(before.problems, [], key);
      assert.deepEqual(before.get(key), parsedSample(entry, sampleOf(entry)), key);
      const after = resolveConfig({ release: removedIn, fileText: `${key} ${sampleOf(entry)}\n` });
      assert.equal(after.problems[0]?.severity, 'error', key);
      assert.match(
        after.problems[0]?.message ?? '',
        new RegExp(`removed in ${removedIn.replaceAll('.', '\\.')}`),
        key,
      );
      assert.equal(after.has(key), false, key);
    }
  });

  it('refuses rss.* keys from 0.3.0, naming the release', () => {
    const conf = resolveConfig({
      release: '0.3.0',
      fileText: 'rss.push.replicate.enabled true\nrss.ha.master.hosts a\n',
    });
    assert.deepEqual(
      conf.problems.map((problem) => [problem.severity, problem.code]),
      [
        ['error', 'removed-key'],
        ['error', 'removed-key'],
      ],
    );
    assert.match(
      conf.problems[0]?.message ?? '',
      /not read since 0\.3\.0; rename it svc\.push\.replicate\.enabled/,
    );
  });

  it('accepts svc.fsconf.<key> with its values, and says it has no effect (the DFS tier is a mount)', () => {
    const conf = resolveConfig({
      fileText: 'svc.fsconf.dfs.replication 2\nsvc.fsconf.fs.defaultFS hdfs://nn:8020\n',
    });
    assert.deepEqual(conf.problems, []);
    assert.deepEqual(conf.instancesOf('svc.fsconf.<key>'), ['dfs.replication', 'fs.defaultFS']);
    assert.equal(conf.get('svc.fsconf.fs.defaultFS'), 'hdfs://nn:8020');
    assert.deepEqual(
      conf.settingsWithoutEffect.map((setting) => [setting.key, setting.effect.pending]),
      [
        ['svc.fsconf.dfs.replication', undefined],
        ['svc.fsconf.fs.defaultFS', undefined],
      ],
    );
  });
});
