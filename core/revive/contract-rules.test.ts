// Contract section 1, rules 3, 4 and 5, end to end: a client of a given release revives a partition, and the
// worker that receives the new location chooses its tier.
import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { MASK, type PartitionLocation, type StorageType } from '../domain/index.ts';
import type { Release } from '../release/version.ts';
import { replayRng } from '../rng.ts';
import {
  chooseEvictionTarget,
  chooseTierForNewFile,
  DEFAULT_CREATE_FILE_POLICY,
  DEFAULT_EVICT_POLICY,
  parseCreateFilePolicy,
  parseEvictPolicy,
  type WorkerStorage,
} from '../storage/index.ts';
import { allocateRevives } from './allocate.ts';
import { reviveCandidates } from './candidates.ts';

const workerWithMemory: WorkerStorage = {
  memory: { limitBytes: 512 * 1024 * 1024, usedBytes: 0 },
  disks: [{ mountPoint: '/mnt/disk1', type: 'HDD', status: 'HEALTHY', usableBytes: 10 ** 12 }],
  distributed: [],
};

function revive(clientRelease: Release, availableTypes: readonly StorageType[]): PartitionLocation {
  const workers = [1, 2, 3].map((n) => ({
    id: { host: `w${n}`, rpcPort: 9001, pushPort: 9002, fetchPort: 9003, replicatePort: 9004 },
    networkLocation: `/rack${n}`,
  }));
  const candidates = reviveCandidates(workers, { excluded: new Set(), shuttingDown: new Set() });
  const [allocation] = allocateRevives(
    [{ partitionId: 0, epoch: 1 }],
    candidates,
    { replicate: true, clientRelease, availableTypes },
    replayRng([0.2, 0.7]),
  );
  assert.equal(allocation?.kind, 'placed');
  if (allocation?.kind !== 'placed') throw new Error('unreachable');
  return allocation.primary;
}

describe('contract rule 3: from 0.6.0 a revived location honours svc.storage.availableTypes', () => {
  it('with availableTypes=HDD every revived primary and its replica have mask LOCAL (2) and type HDD', () => {
    const primary = revive('0.6.0', ['HDD']);
    assert.deepEqual(primary.storage, { type: 'HDD', mountPoint: '', availableTypes: MASK.LOCAL });
    assert.deepEqual(primary.peer?.storage, { type: 'HDD', mountPoint: '', availableTypes: MASK.LOCAL });
  });

  it('so a worker with memory storage enabled keeps the revived partition out of memory', () => {
    const primary = revive('0.6.0', ['HDD']);
    const choice = chooseTierForNewFile(DEFAULT_CREATE_FILE_POLICY, primary.storage, workerWithMemory);
    assert.deepEqual(choice.kind === 'chosen' && [choice.tier, choice.mountPoint], ['HDD', '/mnt/disk1']);
  });

  it('and an application that listed MEMORY still gets memory', () => {
    const primary = revive('0.6.0', ['MEMORY', 'HDD']);
    const choice = chooseTierForNewFile(DEFAULT_CREATE_FILE_POLICY, primary.storage, workerWithMemory);
    assert.deepEqual(choice.kind === 'chosen' && [choice.tier, choice.implicitMemory], ['MEMORY', false]);
  });
});

describe('contract rule 4: before 0.6.0 a revived location defaults to memory', () => {
  const oldReleases = ['0.2.0', '0.3.0', '0.4.1', '0.5.0', '0.5.1'] as const;

  it('gives type MEMORY with mask 0 whatever availableTypes says', () => {
    for (const release of oldReleases) {
      assert.deepEqual(revive(release, ['HDD']).storage, {
        type: 'MEMORY',
        mountPoint: '',
        availableTypes: 0,
      });
    }
  });

  it('so a worker with memory enabled stores an application that never enabled memory in memory', () => {
    for (const release of oldReleases) {
      const choice = chooseTierForNewFile(
        DEFAULT_CREATE_FILE_POLICY,
        revive(release, ['HDD']).storage,
        workerWithMemory,
      );
      assert.deepEqual(choice.kind === 'chosen' && [choice.tier, choice.implicitMemory], ['MEMORY', true]);
    }
  });

  it('a worker without memory storage (the default) puts it on disk', () => {
    const noMemory = { ...workerWithMemory, memory: { limitBytes: 0, usedBytes: 0 } };
    const choice = chooseTierForNewFile(
      DEFAULT_CREATE_FILE_POLICY,
      revive('0.5.1', ['HDD']).storage,
      noMemory,
    );
    assert.equal(choice.kind === 'chosen' && choice.tier, 'HDD');
  });

  it('the worker-side guard refuses memory to such an application and walks on to disk', () => {
    const choice = chooseTierForNewFile(
      DEFAULT_CREATE_FILE_POLICY,
      revive('0.5.1', ['HDD']).storage,
      workerWithMemory,
      {
        memoryNeedsExplicitGrant: true,
      },
    );
    assert.deepEqual(choice.kind === 'chosen' && [choice.tier, choice.implicitMemory], ['HDD', false]);
  });
});

describe('contract rule 5: a type missing from the order list starts the walk at index 0', () => {
  it('(a) a partition revived by an older client onto memory, on a worker whose order has no MEMORY', () => {
    const order = parseCreateFilePolicy('SSD,HDD,HDFS');
    const storage = revive('0.5.1', ['HDD']).storage;
    assert.equal(storage.type, 'MEMORY');
    const choice = chooseTierForNewFile(order, storage, workerWithMemory);
    // The reference throws here (index -1); svc starts at SSD, finds no SSD disk, and takes the HDD.
    assert.equal(choice.startIndex, 0);
    assert.equal(choice.usedIndexZeroRule, true);
    assert.deepEqual(choice.kind === 'chosen' && [choice.tier, choice.mountPoint], ['HDD', '/mnt/disk1']);
    assert.deepEqual(choice.skipped, [{ tier: 'SSD', reason: 'no healthy SSD disk with free space' }]);
  });

  it('(b) an evicted memory file, whose own type the evict order list excludes', () => {
    for (const policy of [DEFAULT_EVICT_POLICY, parseEvictPolicy('MEMORY,HDFS,HDD')]) {
      const choice = chooseEvictionTarget(
        policy,
        'MEMORY',
        { type: 'MEMORY', mountPoint: '', availableTypes: 0 },
        { ...workerWithMemory, distributed: ['HDFS'] },
      );
      assert.equal(choice.startIndex, 0);
      assert.equal(choice.usedIndexZeroRule, true);
      assert.equal(choice.kind === 'chosen' && choice.tier, policy === DEFAULT_EVICT_POLICY ? 'HDD' : 'HDFS');
    }
  });
});
