import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import fc from 'fast-check';
import {
  CONFIG_CHANGES,
  configChangesBetween,
  defaultAt,
  droppedStreamEngineVersions,
  dynamicTagSince,
  fallbackAt,
  hasDynamicTag,
  introduction,
  isMadeOptional,
  isRemovedAt,
  namespaceRenameOf,
  passThroughPrefixes,
  removalOf,
  replacedNamesOf,
  replacementOf,
} from './config-changes.ts';
import { compareReleases, KNOWN_RELEASES, type Release } from './version.ts';

const value = (text: string) => ({ kind: 'value', value: text });
const anyRelease = fc.constantFrom(...KNOWN_RELEASES);

describe('contract 9.2 as a table', () => {
  it('keeps every row of the contract, newest release first', () => {
    assert.equal(CONFIG_CHANGES.length, 34);
    const releases = CONFIG_CHANGES.map((row) => row.release);
    const sorted = [...releases].sort((a, b) => compareReleases(b, a));
    assert.deepEqual(releases, sorted);
    for (const row of CONFIG_CHANGES) assert.ok(row.changes.length > 0, row.subject);
  });

  it('configChangesBetween returns the rows after A up to and including B, oldest first', () => {
    fc.assert(
      fc.property(anyRelease, anyRelease, (a, b) => {
        const rows = configChangesBetween(a, b);
        for (const row of rows) {
          assert.ok(
            compareReleases(row.release, a) > 0 && compareReleases(row.release, b) <= 0,
            'compareReleases(row.release, a) > 0 && compareReleases(row.release, b) <= 0',
          );
        }
        const expected = CONFIG_CHANGES.filter(
          (row) => compareReleases(row.release, a) > 0 && compareReleases(row.release, b) <= 0,
        ).length;
        assert.equal(rows.length, expected);
        for (let i = 1; i < rows.length; i += 1)
          assert.ok(
            compareReleases(rows[i - 1]!.release, rows[i]!.release) <= 0,
            'compareReleases(rows[i - 1]!.release, rows[i]!.release) <= 0',
          );
      }),
    );
  });

  it('a default holds its old value before the change and its new value from the change on', () => {
    const steps: readonly [string, Release, string, string][] = [
      ['svc.client.spark.stageRerun.enabled', '0.6.0', 'false', 'true'],
      ['svc.master.slot.assign.extraSlots', '0.6.0', '2', '100'],
      ['svc.worker.graceful.shutdown.recoverDbBackend', '0.5.0', 'LEVELDB', 'ROCKSDB'],
      ['svc.<module>.io.numConnectionsPerPeer', '0.4.0', '2', '1'],
      ['raft.client.rpc.request.timeout', '0.3.2', '3s', '10s'],
      ['raft.client.rpc.watch.request.timeout', '0.3.2', '10s', '20s'],
      ['svc.worker.directMemoryRatioToResume', '0.3.1', '0.5', '0.7'],
      ['svc.worker.monitor.disk.check.interval', '0.3.1', '60s', '30s'],
      ['svc.client.push.replicate.enabled', '0.3.0', 'true', 'false'],
      ['svc.worker.storage.workingDir', '0.3.0', 'hadoop/rss-worker/shuffle_data', 'svc-worker/shuffle_data'],
    ];
    for (const [key, release, from, to] of steps) {
      fc.assert(
        fc.property(anyRelease, (at) => {
          const expected = compareReleases(at, release) < 0 ? from : to;
          assert.deepEqual(defaultAt(key, at), value(expected), `${key} at ${at}`);
        }),
        { numRuns: 30 },
      );
    }
  });

  it('the raft timeouts change in 0.3.2 (the contract table), not 0.3.1 (the guide)', () => {
    assert.deepEqual(defaultAt('raft.client.rpc.request.timeout', '0.3.1'), value('3s'));
    assert.deepEqual(defaultAt('raft.client.rpc.request.timeout', '0.3.2'), value('10s'));
    assert.deepEqual(defaultAt('raft.client.rpc.watch.request.timeout', '0.3.1'), value('10s'));
    assert.deepEqual(defaultAt('raft.client.rpc.watch.request.timeout', '0.3.2'), value('20s'));
  });

  it('io.mode is NIO before 0.6.0 and optional from 0.6.0, EPOLL when epoll is available', () => {
    assert.deepEqual(defaultAt('svc.<module>.io.mode', '0.5.1'), value('NIO'));
    assert.deepEqual(defaultAt('svc.<module>.io.mode', '0.6.0'), {
      kind: 'platform',
      rule: { preferred: 'EPOLL', requires: 'epoll', otherwise: 'NIO' },
    });
    assert.equal(isMadeOptional('svc.<module>.io.mode', '0.5.1'), false);
    assert.equal(isMadeOptional('svc.<module>.io.mode', '0.6.0'), true);
  });

  it('minWorkers is introduced in 0.6.0 with default 100', () => {
    assert.deepEqual(introduction('svc.master.slot.assign.minWorkers'), { release: '0.6.0', default: '100' });
    assert.equal(introduction('svc.master.slot.assign.extraSlots'), undefined);
  });

  it('a key the table says nothing about has no table default', () => {
    assert.equal(defaultAt('svc.master.port', '0.6.0'), undefined);
    assert.equal(fallbackAt('svc.master.port', '0.6.0'), undefined);
  });

  it('the three ask timeouts fall back to the module connection timeout before 0.4.1, to svc.rpc.askTimeout after', () => {
    for (const key of [
      'svc.client.rpc.getReducerFileGroup.askTimeout',
      'svc.client.rpc.registerShuffle.askTimeout',
      'svc.client.rpc.requestPartition.askTimeout',
    ]) {
      assert.equal(fallbackAt(key, '0.4.0'), 'svc.<module>.io.connectionTimeout');
      assert.equal(fallbackAt(key, '0.4.1'), 'svc.rpc.askTimeout');
      assert.equal(fallbackAt(key, '0.6.0'), 'svc.rpc.askTimeout');
    }
  });

  it('renamed and deprecated keys name their replacement and the release', () => {
    const expected: readonly [string, string, Release, 'renamed' | 'deprecated'][] = [
      [
        'svc.client.spark.fetch.throwsFetchFailure',
        'svc.client.spark.stageRerun.enabled',
        '0.6.0',
        'deprecated',
      ],
      ['svc.quota.tenant.diskBytesWritten', 'svc.quota.user.diskBytesWritten', '0.6.0', 'renamed'],
      ['svc.quota.tenant.diskFileCount', 'svc.quota.user.diskFileCount', '0.6.0', 'renamed'],
      ['svc.quota.tenant.hdfsBytesWritten', 'svc.quota.user.hdfsBytesWritten', '0.6.0', 'renamed'],
      ['svc.quota.tenant.hdfsFileCount', 'svc.quota.user.hdfsFileCount', '0.6.0', 'renamed'],
      ['svc.master.hdfs.expireDirs.timeout', 'svc.master.dfs.expireDirs.timeout', '0.6.0', 'renamed'],
      [
        'svc.worker.congestionControl.low.watermark',
        'svc.worker.congestionControl.diskBuffer.low.watermark',
        '0.6.0',
        'deprecated',
      ],
      [
        'svc.worker.congestionControl.high.watermark',
        'svc.worker.congestionControl.diskBuffer.high.watermark',
        '0.6.0',
        'deprecated',
      ],
      ['svc.quota.configuration.path', 'svc.dynamicConfig.store.fs.path', '0.5.0', 'deprecated'],
      [
        'svc.client.spark.shuffle.forceFallback.enabled',
        'svc.client.spark.shuffle.fallback.policy',
        '0.5.0',
        'deprecated',
      ],
      ['svc.metrics.master.prometheus.host', 'svc.master.http.host', '0.4.0', 'renamed'],
      ['svc.metrics.master.prometheus.port', 'svc.master.http.port', '0.4.0', 'renamed'],
      ['svc.metrics.worker.prometheus.host', 'svc.worker.http.host', '0.4.0', 'renamed'],
      ['svc.metrics.worker.prometheus.port', 'svc.worker.http.port', '0.4.0', 'renamed'],
      ['svc.worker.storage.baseDir.prefix', 'svc.worker.storage.dirs', '0.4.0', 'deprecated'],
      ['svc.worker.storage.baseDir.number', 'svc.worker.storage.dirs', '0.4.0', 'deprecated'],
      ['svc.storage.activeTypes', 'svc.storage.availableTypes', '0.4.0', 'deprecated'],
      ['svc.ha.master.enabled', 'svc.master.ha.enabled', '0.3.0', 'deprecated'],
      ['svc.ha.master.node.1.host', 'svc.master.ha.node.1.host', '0.3.0', 'deprecated'],
    ];
    for (const [oldKey, newKey, release, how] of expected) {
      const found = replacementOf(oldKey);
      assert.ok(found, oldKey);
      assert.deepEqual([found.newKey, found.release, found.how], [newKey, release, how], oldKey);
    }
    assert.equal(replacementOf('svc.master.port'), undefined);
    assert.equal(replacementOf('svc.ha.master.'), undefined, 'the bare namespace prefix is not a key');
  });

  it('lists every old name of a replacement, and the old name under a deprecated namespace', () => {
    assert.deepEqual(
      replacedNamesOf('svc.worker.storage.dirs').map((replaced) => replaced.oldKey),
      ['svc.worker.storage.baseDir.prefix', 'svc.worker.storage.baseDir.number'],
    );
    assert.deepEqual(replacedNamesOf('svc.master.port'), []);
    assert.equal(namespaceRenameOf('svc.master.ha.node.<id>.host')?.oldKey, 'svc.ha.master.node.<id>.host');
    assert.equal(namespaceRenameOf('svc.master.ha.node.<id>.host')?.release, '0.3.0');
    assert.equal(namespaceRenameOf('svc.master.port'), undefined);
  });

  it('removes keys from their release on, with the contract’s reason when it gives one', () => {
    const removed: readonly [string, Release][] = [
      ['svc.client.shuffle.mapPartition.split.enabled', '0.6.0'],
      ['svc.client.push.splitPartition.threads', '0.5.0'],
      ['svc.client.flink.inputGate.minMemory', '0.5.0'],
      ['svc.client.flink.resultPartition.minMemory', '0.5.0'],
      ['svc.worker.userResourceConsumption.update.interval', '0.4.0'],
      ['rss.master.address', '0.3.0'],
      ['rss.ha.master.hosts', '0.3.0'],
    ];
    for (const [key, release] of removed) {
      fc.assert(
        fc.property(anyRelease, (at) => {
          assert.equal(isRemovedAt(key, at), compareReleases(at, release) >= 0, `${key} at ${at}`);
        }),
        { numRuns: 30 },
      );
    }
    assert.deepEqual(removalOf('svc.client.shuffle.mapPartition.split.enabled'), {
      kind: 'key',
      release: '0.6.0',
      reason: 'partition split is on by default for MapPartition',
      row: CONFIG_CHANGES.find((row) => row.subject === 'svc.client.shuffle.mapPartition.split.enabled'),
    });
    const rss = removalOf('rss.push.data.buffer.size');
    assert.equal(rss?.kind, 'prefix');
    assert.equal(rss?.kind === 'prefix' ? rss.prefix : undefined, 'rss.');
    assert.equal(removalOf('svc.master.port'), undefined);
  });

  it('svc.fsconf. is a pass-through prefix for the distributed filesystem client since 0.3.0', () => {
    assert.deepEqual(passThroughPrefixes(), [
      { prefix: 'svc.fsconf.', passedTo: 'the distributed filesystem client', since: '0.3.0' },
    ]);
  });

  it('the isDynamic tag exists from 0.5.0', () => {
    assert.equal(dynamicTagSince(), '0.5.0');
    assert.equal(hasDynamicTag('0.4.1'), false);
    assert.equal(hasDynamicTag('0.5.0'), true);
  });

  it('stream engine versions 1.14 and 1.15 leave the support list in 0.6.0', () => {
    assert.deepEqual(droppedStreamEngineVersions('0.5.1'), []);
    assert.deepEqual(droppedStreamEngineVersions('0.6.0'), ['1.14', '1.15']);
  });

  it('refuses releases older than the history', () => {
    assert.throws(
      () => defaultAt('svc.master.slot.assign.extraSlots', '0.1.0'),
      /predates the release history/,
    );
  });
});
