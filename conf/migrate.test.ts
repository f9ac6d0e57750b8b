import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import fc from 'fast-check';
import { migrateConfigText } from './migrate.ts';
import { REGISTRY } from './registry/registry.ts';
import { resolveConfig } from './resolve.ts';

/** Lines a 0.3-era file may hold: older names, current names, removed keys, the baseDir pair, a typo. */
const POOL = [
  'svc.storage.activeTypes HDD,SSD',
  'svc.storage.availableTypes SSD',
  'svc.metrics.master.prometheus.port 9198',
  'svc.ha.master.enabled true',
  'svc.ha.master.node.1.host master-1',
  'svc.master.ha.node.1.host master-one',
  'svc.worker.storage.baseDir.prefix /data/disk',
  'svc.worker.storage.baseDir.number 3',
  'svc.client.spark.shuffle.forceFallback.enabled true',
  'svc.client.push.splitPartition.threads 4',
  'svc.client.shuffle.mapPartition.split.enabled true',
  'svc.worker.userResourceConsumption.update.interval 10s',
  'svc.quota.tenant.diskBytesWritten 10g',
  'svc.master.slot.assign.extraSlots 7',
  '# a comment',
  '',
];

const files = fc.subarray(POOL).chain((lines) => fc.shuffledSubarray(lines, { minLength: lines.length }));

describe('svc conf migrate', () => {
  it('keeps every value a B node reads, and leaves no older or removed name behind', () => {
    fc.assert(
      fc.property(files, (lines) => {
        const text = lines.join('\n') + '\n';
        const migration = migrateConfigText(text, { from: '0.3.0', to: '0.6.0' });
        const before = resolveConfig({ release: '0.6.0', fileText: text });
        const after = resolveConfig({ release: '0.6.0', fileText: migration.text });
        assert.deepEqual(
          after.problems.filter((problem) => ['deprecated-key', 'removed-key'].includes(problem.code)),
          [],
        );
        for (const entry of REGISTRY.entries) {
          // Deprecated keys that assemble a newer one are replaced by it; the newer one is compared.
          if (entry.pattern !== undefined || entry.deprecation !== undefined) continue;
          assert.deepEqual(after.get(entry.key), before.get(entry.key), entry.key);
        }
        assert.equal(after.get('svc.master.ha.node.1.host'), before.get('svc.master.ha.node.1.host'));
      }),
      { numRuns: 150 },
    );
  });

  it('is idempotent: migrating an upgraded file again changes nothing', () => {
    fc.assert(
      fc.property(files, (lines) => {
        const once = migrateConfigText(lines.join('\n') + '\n', { from: '0.3.0', to: '0.6.0' });
        const twice = migrateConfigText(once.text, { from: '0.6.0', to: '0.6.0' });
        assert.equal(twice.text, once.text);
        assert.deepEqual(twice.edits, []);
        assert.deepEqual(twice.defaultChanges, []);
      }),
      { numRuns: 100 },
    );
  });

  it('reports a default change only for keys the file does not set', () => {
    const unset = migrateConfigText('', { from: '0.5.1', to: '0.6.0' });
    assert.ok(
      unset.defaultChanges.some((change) => change.key === 'svc.master.slot.assign.extraSlots'),
      "unset.defaultChanges.some((change) => change.key === 'svc.master.slot.assign.extraSlots')",
    );
    assert.ok(
      unset.newKeys.some((key) => key.key === 'svc.master.slot.assign.minWorkers' && key.default === '100'),
      "unset.newKeys.some((key) => key.key === 'svc.master.slot.assign.minWorkers' && key.default === '100')",
    );
    const pinned = migrateConfigText('svc.master.slot.assign.extraSlots 2\n', { from: '0.5.1', to: '0.6.0' });
    assert.ok(
      !pinned.defaultChanges.some((change) => change.key === 'svc.master.slot.assign.extraSlots'),
      "!pinned.defaultChanges.some((change) => change.key === 'svc.master.slot.assign.extraSlots')",
    );
    const oldName = migrateConfigText('svc.client.spark.fetch.throwsFetchFailure false\n', {
      from: '0.5.1',
      to: '0.6.0',
    });
    assert.ok(
      !oldName.defaultChanges.some((change) => change.key === 'svc.client.spark.stageRerun.enabled'),
      "!oldName.defaultChanges.some((change) => change.key === 'svc.client.spark.stageRerun.enabled')",
    );
    assert.match(oldName.text, /^svc\.client\.spark\.stageRerun\.enabled false$/m);
  });

  it('keeps comments, blank lines, line ends and the separator a line was written with', () => {
    const text = '# header\n\nsvc.storage.activeTypes = HDD\n';
    assert.equal(
      migrateConfigText(text, { from: '0.3.0', to: '0.6.0' }).text,
      '# header\n\nsvc.storage.availableTypes = HDD\n',
    );
  });

  it('renames an rss.* key that svc has under svc.*, and comments out one it does not have', () => {
    const migration = migrateConfigText('rss.push.replicate.enabled true\nrss.no.such.key 1\n', {
      from: '0.2.1',
      to: '0.6.0',
    });
    assert.equal(
      migration.text,
      'svc.client.push.replicate.enabled true\n' +
        '# svc conf migrate: rss.* keys are not read since 0.3.0 and svc has no key svc.no.such.key\n' +
        '# rss.no.such.key 1\n',
    );
  });

  it('refuses to go backwards', () => {
    assert.throws(() => migrateConfigText('', { from: '0.6.0', to: '0.5.0' }), /downgrade is not supported/);
  });
});
