import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import fc from 'fast-check';
import { lifecycleManagerConfig, masterConfig } from '../cluster/configs.ts';
import { streamRng } from '../world/random.ts';
import { drawWorkload, type WorkloadShape } from './shape.ts';

const drawn = (seed: number): WorkloadShape => drawWorkload(streamRng(seed, 'workload'));

describe('swarm workload shapes', () => {
  it('set only configuration that the drawn releases accept', () => {
    fc.assert(
      fc.property(fc.nat(1_000_000), (seed) => {
        const { cluster, apps } = drawn(seed);
        const master = masterConfig({
          release: cluster.serverRelease,
          dfs: cluster.dfs,
          budgetMode: 'strict',
          ...(cluster.masterOverrides === undefined ? {} : { overrides: cluster.masterOverrides }),
        });
        if (cluster.workerHeartbeatTimeout !== undefined) {
          const short = masterConfig({
            release: cluster.serverRelease,
            dfs: cluster.dfs,
            budgetMode: 'strict',
            overrides: { 'svc.master.heartbeat.worker.timeout': cluster.workerHeartbeatTimeout },
          });
          assert.equal(
            short.workerHeartbeatTimeoutMs,
            Number.parseInt(cluster.workerHeartbeatTimeout) * 1_000,
          );
        }
        if (cluster.masterOverrides?.['svc.master.slot.assign.policy'] === 'LOADAWARE') {
          assert.equal(master.slots.policy.name, 'LOADAWARE');
        }
        for (const app of apps) {
          const lm = lifecycleManagerConfig(app);
          assert.equal(lm.rackAware, app.rackAware ?? false);
          assert.equal(lm.split.mode, app.splitMode ?? 'SOFT');
          assert.equal(lm.filterExcludedWorkers, app.filterExcludedWorkers ?? false);
        }
      }),
      { numRuns: 300 },
    );
  });

  it('draw every policy beyond the defaults within a thousand seeds', () => {
    const seen = new Set<string>();
    for (let seed = 0; seed < 1_000; seed += 1) {
      const { cluster, apps } = drawn(seed);
      const master = cluster.masterOverrides ?? {};
      if (master['svc.master.slot.assign.policy'] === 'LOADAWARE') seen.add('load-aware slots');
      if (master['svc.master.estimatedPartitionSize.update.interval'] !== undefined) seen.add('size updates');
      if (master['svc.master.estimatedPartitionSize.minSize'] !== undefined) seen.add('small minimum size');
      const racks = cluster.workers.map((worker) => worker.rack);
      if (racks.filter((rack) => rack === '/rack0').length > racks.length / 2 + 1) seen.add('skewed racks');
      if (new Set(racks).size === 1) seen.add('one rack');
      if (cluster.workerHeartbeatTimeout !== undefined) seen.add('short worker heartbeat timeout');
      const disks = cluster.workers.flatMap((worker) => worker.disks);
      if (cluster.smallDisks === true && disks.every((disk) => disk.capacityBytes <= 1024 ** 2)) {
        seen.add('small disks');
      }
      const memories = cluster.workers.map((worker) => worker.memoryBytes);
      if (memories.every((bytes) => bytes > 0 && bytes <= 128 * 1024)) seen.add('small memory');
      if (disks.length === 0 && apps.every((app) => app.availableTypes.includes('HDFS')))
        seen.add('DFS only');
      for (const app of apps) {
        if (app.rackAware === true && app.replicate !== false) seen.add('rack-aware replicas');
        if (app.splitMode === 'HARD' && app.splitThresholdBytes !== undefined) seen.add('hard splits');
        if (app.filterExcludedWorkers === true) seen.add('client exclusions in RequestSlots');
        if (app.push !== undefined && app.push.window > 1)
          seen.add('several batches of a partition in flight');
      }
    }
    assert.deepEqual([...seen].sort(), [
      'DFS only',
      'client exclusions in RequestSlots',
      'hard splits',
      'load-aware slots',
      'one rack',
      'rack-aware replicas',
      'several batches of a partition in flight',
      'short worker heartbeat timeout',
      'size updates',
      'skewed racks',
      'small disks',
      'small memory',
      'small minimum size',
    ]);
  });

  it('are a function of the seed', () => {
    assert.deepEqual(drawn(4242), drawn(4242));
    assert.notDeepEqual(drawn(4242), drawn(4243));
  });
});
