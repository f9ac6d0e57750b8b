import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import fc from 'fast-check';
import { METRIC_RENAMES, metricName, metricNameHistory, type MetricRole } from './metric-names.ts';
import { KNOWN_RELEASES, type Release } from './version.ts';

const knownRelease = fc.constantFrom(...KNOWN_RELEASES);

/** Contract section 9.4, written out: release, role, name before, name after. */
const SECTION_9_4: readonly (readonly [Release, MetricRole, string, string])[] = [
  ['0.5.0', 'master', 'LostWorkers', 'LostWorkerCount'],
  ['0.5.0', 'worker', 'ChunkStreamCount', 'ActiveChunkStreamCount'],
  ['0.5.0', 'worker', 'CreditStreamCount', 'ActiveCreditStreamCount'],
  ['0.4.0', 'master', 'PartitionWritten', 'ActiveShuffleSize'],
  ['0.4.0', 'master', 'PartitionFileCount', 'ActiveShuffleFileCount'],
  ['0.3.0', 'master', 'BlacklistedWorkerCount', 'ExcludedWorkerCount'],
  ['0.3.0', 'worker', 'MasterPushDataTime', 'PrimaryPushDataTime'],
  ['0.3.0', 'worker', 'MasterPushDataHandshakeTime', 'PrimaryPushDataHandshakeTime'],
  ['0.3.0', 'worker', 'MasterRegionStartTime', 'PrimaryRegionStartTime'],
  ['0.3.0', 'worker', 'MasterRegionFinishTime', 'PrimaryRegionFinishTime'],
  ['0.3.0', 'worker', 'SlavePushDataTime', 'ReplicaPushDataTime'],
  ['0.3.0', 'worker', 'SlavePushDataHandshakeTime', 'ReplicaPushDataHandshakeTime'],
  ['0.3.0', 'worker', 'SlaveRegionStartTime', 'ReplicaRegionStartTime'],
  ['0.3.0', 'worker', 'SlaveRegionFinishTime', 'ReplicaRegionFinishTime'],
];

/** The release just before each rename release. */
const PREVIOUS: Readonly<Record<string, Release>> = { '0.3.0': '0.2.1', '0.4.0': '0.3.2', '0.5.0': '0.4.1' };

describe('metric renames (contract section 9.4)', () => {
  it('the table holds exactly the contract rows', () => {
    assert.deepEqual(
      [...METRIC_RENAMES].map((r) => [r.release, r.role, r.before, r.after]).sort(),
      SECTION_9_4.map((row) => [...row]).sort(),
    );
  });

  for (const [release, role, before, after] of SECTION_9_4) {
    it(`${release} ${role}: ${before} → ${after}, asked by either name`, () => {
      const previous = PREVIOUS[release]!;
      assert.equal(metricName(after, role, previous), before);
      assert.equal(metricName(before, role, previous), before);
      assert.equal(metricName(after, role, release), after);
      assert.equal(metricName(before, role, release), after);
      assert.equal(metricName(before, role, '0.6.0'), after);
      assert.equal(metricName(after, role, '0.2.0'), before);
    });
  }

  it('LostWorkerCount as of 0.4.0 is LostWorkers', () => {
    assert.equal(metricName('LostWorkerCount', 'master', '0.4.0'), 'LostWorkers');
  });

  it('a rename applies only to its role', () => {
    assert.equal(metricName('PartitionWritten', 'worker', '0.6.0'), 'PartitionWritten');
    assert.equal(metricName('ActiveShuffleSize', 'worker', '0.3.0'), 'ActiveShuffleSize');
    assert.equal(metricName('ActiveChunkStreamCount', 'master', '0.4.0'), 'ActiveChunkStreamCount');
  });

  it('a metric never renamed keeps its name at every release', () => {
    for (const release of KNOWN_RELEASES)
      assert.equal(metricName('WorkerCount', 'master', release), 'WorkerCount');
  });

  it('the names of a metric over time', () => {
    assert.deepEqual(metricNameHistory('LostWorkers', 'master'), [
      { name: 'LostWorkers', since: '0.2.0' },
      { name: 'LostWorkerCount', since: '0.5.0' },
    ]);
    assert.deepEqual(
      metricNameHistory('LostWorkerCount', 'master'),
      metricNameHistory('LostWorkers', 'master'),
    );
    assert.deepEqual(metricNameHistory('WorkerCount', 'master'), [{ name: 'WorkerCount', since: '0.2.0' }]);
  });

  it('a release older than the history throws', () => {
    assert.throws(() => metricName('LostWorkers', 'master', '0.1.0'), /predates the release history/);
  });

  it('property: translating through any release and back lands on the name at the target release', () => {
    const renamed = fc
      .constantFrom(...SECTION_9_4)
      .chain(([, role, before, after]) => fc.tuple(fc.constant(role), fc.constantFrom(before, after)));
    fc.assert(
      fc.property(renamed, knownRelease, knownRelease, ([role, name], via, target) => {
        assert.equal(metricName(metricName(name, role, via), role, target), metricName(name, role, target));
      }),
      { numRuns: 300 },
    );
  });

  it('property: the name in effect changes only at the release of a rename', () => {
    fc.assert(
      fc.property(fc.constantFrom(...SECTION_9_4), ([release, role, before]) => {
        const names = KNOWN_RELEASES.map((r) => metricName(before, role, r));
        for (let i = 1; i < KNOWN_RELEASES.length; i += 1) {
          const changed = names[i] !== names[i - 1];
          assert.equal(changed, KNOWN_RELEASES[i] === release);
        }
      }),
    );
  });
});
