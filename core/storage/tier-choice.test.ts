import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import fc from 'fast-check';
import {
  DISK_STATUSES,
  isTypeAvailable,
  MASK,
  STORAGE_TYPES,
  type StorageInfo,
  type StorageType,
} from '../domain/index.ts';
import {
  DEFAULT_CREATE_FILE_POLICY,
  DEFAULT_EVICT_POLICY,
  parseCreateFilePolicy,
  type EvictPolicy,
} from './policy.ts';
import {
  chooseEvictionTarget,
  chooseTierForNewFile,
  ruleFiveStartIndex,
  type LocalDisk,
  type TierChoice,
  type WorkerStorage,
} from './tier-choice.ts';

const MOUNTS = ['/mnt/a', '/mnt/b', '/mnt/c', '/mnt/d'];

const diskArb = (mountPoint: string): fc.Arbitrary<LocalDisk> =>
  fc.record({
    mountPoint: fc.constant(mountPoint),
    type: fc.constantFrom('HDD' as const, 'SSD' as const),
    status: fc.constantFrom(...DISK_STATUSES),
    usableBytes: fc.integer({ min: 0, max: 1000 }),
  });

const workerArb: fc.Arbitrary<WorkerStorage> = fc.record({
  memory: fc.record({
    limitBytes: fc.integer({ min: 0, max: 100 }),
    usedBytes: fc.integer({ min: 0, max: 120 }),
  }),
  disks: fc.subarray(MOUNTS).chain((mounts) => fc.tuple(...mounts.map(diskArb))),
  distributed: fc.subarray(['HDFS', 'OSS', 'S3'] as const),
});

const storageArb: fc.Arbitrary<StorageInfo> = fc.record({
  type: fc.constantFrom(...STORAGE_TYPES),
  mountPoint: fc.constantFrom('', ...MOUNTS, '/mnt/gone'),
  availableTypes: fc.integer({ min: 0, max: 31 }),
});

const orderArb = fc.uniqueArray(fc.constantFrom(...STORAGE_TYPES), { minLength: 1 });

/** An independent statement of when a tier can take a file. */
function couldHold(
  tier: StorageType,
  storage: StorageInfo,
  worker: WorkerStorage,
  guard: boolean,
  evict: boolean,
): boolean {
  if (!isTypeAvailable(storage.availableTypes, tier)) return false;
  switch (tier) {
    case 'MEMORY':
      return (
        !evict &&
        !(guard && (storage.availableTypes & MASK.MEMORY) === 0) &&
        worker.memory.limitBytes > 0 &&
        worker.memory.usedBytes < worker.memory.limitBytes
      );
    case 'HDD':
    case 'SSD':
      return worker.disks.some(
        (disk) => disk.type === tier && disk.status === 'HEALTHY' && disk.usableBytes > 0,
      );
    case 'HDFS':
    case 'OSS':
    case 'S3':
      return worker.distributed.includes(tier);
  }
}

/** Every fact a choice must satisfy, whatever the inputs: sound when chosen, complete when not. */
function assertSound(
  choice: TierChoice,
  order: readonly StorageType[],
  storage: StorageInfo,
  worker: WorkerStorage,
  guard: boolean,
  evict = false,
): void {
  const walked = order.slice(choice.startIndex);
  for (const skip of choice.skipped) {
    assert.equal(
      couldHold(skip.tier, storage, worker, guard, evict),
      false,
      `skipped ${skip.tier} could hold the file`,
    );
  }
  if (choice.kind === 'none') {
    assert.deepEqual(
      choice.skipped.map((skip) => skip.tier),
      walked,
    );
    return;
  }
  assert.ok(
    isTypeAvailable(storage.availableTypes, choice.tier),
    `mask ${storage.availableTypes} forbids ${choice.tier}`,
  );
  assert.ok(walked.includes(choice.tier), `${choice.tier} is not ahead in the walk ${walked.join(',')}`);
  if (choice.tier === 'MEMORY') {
    assert.ok(
      worker.memory.limitBytes > 0 && worker.memory.usedBytes < worker.memory.limitBytes,
      'worker.memory.limitBytes > 0 && worker.memory.usedBytes < worker.memory.limitBytes',
    );
    assert.equal(choice.implicitMemory, (storage.availableTypes & MASK.MEMORY) === 0);
    if (guard) assert.equal(choice.implicitMemory, false);
    assert.equal(choice.mountPoint, '');
  } else if (choice.tier === 'HDD' || choice.tier === 'SSD') {
    const disk = worker.disks.find((candidate) => candidate.mountPoint === choice.mountPoint);
    assert.ok(disk, `no disk ${choice.mountPoint}`);
    assert.equal(disk.type, choice.tier);
    assert.equal(disk.status, 'HEALTHY');
    assert.ok(disk.usableBytes > 0, 'disk.usableBytes > 0');
  } else {
    assert.ok(worker.distributed.includes(choice.tier), 'worker.distributed.includes(choice.tier)');
    assert.equal(choice.mountPoint, '');
  }
  for (const skip of choice.skipped) assert.ok(walked.includes(skip.tier), 'walked.includes(skip.tier)');
}

describe('chooseTierForNewFile', () => {
  it('never returns a tier the mask, the worker or the guard forbids', () => {
    fc.assert(
      fc.property(orderArb, storageArb, workerArb, fc.boolean(), (order, storage, worker, guard) => {
        const choice = chooseTierForNewFile(order, storage, worker, { memoryNeedsExplicitGrant: guard });
        assertSound(choice, order, storage, worker, guard);
      }),
      { numRuns: 300 },
    );
  });

  it('starts at MEMORY when listed, else at the location type, else at index 0 (contract rule 5)', () => {
    fc.assert(
      fc.property(orderArb, storageArb, workerArb, (order, storage, worker) => {
        const choice = chooseTierForNewFile(order, storage, worker);
        const expected = order.includes('MEMORY')
          ? order.indexOf('MEMORY')
          : Math.max(0, order.indexOf(storage.type));
        assert.equal(choice.startIndex, expected);
        assert.equal(choice.usedIndexZeroRule, !order.includes('MEMORY') && !order.includes(storage.type));
      }),
      { numRuns: 200 },
    );
  });

  it('walks on past a tier that cannot take the file and says why', () => {
    const worker: WorkerStorage = {
      memory: { limitBytes: 100, usedBytes: 100 },
      disks: [{ mountPoint: '/mnt/a', type: 'SSD', status: 'IO_HANG', usableBytes: 10 }],
      distributed: ['HDFS'],
    };
    const choice = chooseTierForNewFile(
      DEFAULT_CREATE_FILE_POLICY,
      { type: 'HDD', mountPoint: '', availableTypes: 0 },
      worker,
    );
    assert.equal(choice.kind, 'chosen');
    assert.equal(choice.kind === 'chosen' && choice.tier, 'HDFS');
    assert.deepEqual(choice.skipped, [
      { tier: 'MEMORY', reason: 'the memory tier is full (100 of 100 bytes used)' },
      { tier: 'SSD', reason: 'no healthy SSD disk with free space' },
      { tier: 'HDD', reason: 'no healthy HDD disk with free space' },
    ]);
  });

  it('reports every reason when nothing can take the file', () => {
    const worker: WorkerStorage = { memory: { limitBytes: 0, usedBytes: 0 }, disks: [], distributed: [] };
    const choice = chooseTierForNewFile(
      ['SSD', 'HDFS'],
      { type: 'SSD', mountPoint: '', availableTypes: MASK.LOCAL },
      worker,
    );
    assert.equal(choice.kind, 'none');
    assert.match(
      choice.kind === 'none' ? choice.message : '',
      /no tier can hold the new partition file \(order SSD,HDFS, starting at index 0\): SSD: no healthy SSD disk with free space; HDFS: the location's available-types mask 2 does not permit HDFS/,
    );
  });

  it('keeps the disk the master booked, even when the order lists the other local type first', () => {
    const worker: WorkerStorage = {
      memory: { limitBytes: 0, usedBytes: 0 },
      disks: [
        { mountPoint: '/mnt/ssd', type: 'SSD', status: 'HEALTHY', usableBytes: 500 },
        { mountPoint: '/mnt/hdd', type: 'HDD', status: 'HEALTHY', usableBytes: 100 },
      ],
      distributed: [],
    };
    const booked = chooseTierForNewFile(
      DEFAULT_CREATE_FILE_POLICY,
      { type: 'HDD', mountPoint: '/mnt/hdd', availableTypes: MASK.LOCAL },
      worker,
    );
    assert.deepEqual(booked.kind === 'chosen' && [booked.tier, booked.mountPoint], ['HDD', '/mnt/hdd']);
    const revived = chooseTierForNewFile(
      DEFAULT_CREATE_FILE_POLICY,
      { type: 'HDD', mountPoint: '', availableTypes: MASK.LOCAL },
      worker,
    );
    assert.deepEqual(revived.kind === 'chosen' && [revived.tier, revived.mountPoint], ['SSD', '/mnt/ssd']);
    const unhealthy = chooseTierForNewFile(
      DEFAULT_CREATE_FILE_POLICY,
      { type: 'HDD', mountPoint: '/mnt/hdd', availableTypes: MASK.LOCAL },
      { ...worker, disks: [worker.disks[0]!, { ...worker.disks[1]!, status: 'READ_OR_WRITE_FAILURE' }] },
    );
    assert.deepEqual(unhealthy.kind === 'chosen' && [unhealthy.tier, unhealthy.mountPoint], [
      'SSD',
      '/mnt/ssd',
    ]);
  });

  it('does not use a booked disk whose type the order does not list', () => {
    const worker: WorkerStorage = {
      memory: { limitBytes: 0, usedBytes: 0 },
      disks: [
        { mountPoint: '/mnt/ssd', type: 'SSD', status: 'HEALTHY', usableBytes: 500 },
        { mountPoint: '/mnt/hdd', type: 'HDD', status: 'HEALTHY', usableBytes: 100 },
      ],
      distributed: [],
    };
    const choice = chooseTierForNewFile(
      ['SSD'],
      { type: 'SSD', mountPoint: '/mnt/hdd', availableTypes: 0 },
      worker,
    );
    assert.deepEqual(choice.kind === 'chosen' && [choice.tier, choice.mountPoint], ['SSD', '/mnt/ssd']);
  });

  it('with the guard on, refuses memory to a mask of 0 and walks on; an explicit MEMORY bit still gets memory', () => {
    const worker: WorkerStorage = {
      memory: { limitBytes: 1000, usedBytes: 0 },
      disks: [{ mountPoint: '/mnt/a', type: 'SSD', status: 'HEALTHY', usableBytes: 100 }],
      distributed: [],
    };
    const oldClient: StorageInfo = { type: 'MEMORY', mountPoint: '', availableTypes: 0 };
    const guarded = chooseTierForNewFile(DEFAULT_CREATE_FILE_POLICY, oldClient, worker, {
      memoryNeedsExplicitGrant: true,
    });
    assert.equal(guarded.kind === 'chosen' && guarded.tier, 'SSD');
    assert.match(guarded.skipped[0]?.reason ?? '', /did not list MEMORY in svc.storage.availableTypes/);
    const unguarded = chooseTierForNewFile(DEFAULT_CREATE_FILE_POLICY, oldClient, worker);
    assert.deepEqual(unguarded.kind === 'chosen' && [unguarded.tier, unguarded.implicitMemory], [
      'MEMORY',
      true,
    ]);
    const enabled: StorageInfo = { type: 'HDD', mountPoint: '', availableTypes: MASK.MEMORY | MASK.LOCAL };
    const granted = chooseTierForNewFile(DEFAULT_CREATE_FILE_POLICY, enabled, worker, {
      memoryNeedsExplicitGrant: true,
    });
    assert.deepEqual(granted.kind === 'chosen' && [granted.tier, granted.implicitMemory], ['MEMORY', false]);
  });
});

describe('chooseEvictionTarget', () => {
  it('never moves a file into memory, even with a policy built by hand that lists it', () => {
    const handMade: EvictPolicy = new Map<StorageType, readonly StorageType[]>([
      ['MEMORY', ['MEMORY', 'SSD', 'HDD', 'HDFS']],
    ]);
    fc.assert(
      fc.property(storageArb, workerArb, fc.boolean(), (storage, worker, guard) => {
        for (const policy of [DEFAULT_EVICT_POLICY, handMade]) {
          const choice = chooseEvictionTarget(policy, 'MEMORY', storage, worker, {
            memoryNeedsExplicitGrant: guard,
          });
          if (choice.kind === 'chosen') assert.notEqual(choice.tier, 'MEMORY');
          assertSound(choice, policy.get('MEMORY')!, storage, worker, guard, true);
        }
      }),
      { numRuns: 300 },
    );
  });

  it('says so when the file tier has no evict policy entry', () => {
    const choice = chooseEvictionTarget(
      DEFAULT_EVICT_POLICY,
      'SSD',
      { type: 'SSD', mountPoint: '', availableTypes: 0 },
      {
        memory: { limitBytes: 0, usedBytes: 0 },
        disks: [],
        distributed: ['HDFS'],
      },
    );
    assert.equal(choice.kind, 'none');
    assert.match(choice.kind === 'none' ? choice.message : '', /evictPolicy has no entry for SSD/);
  });
});

describe('ruleFiveStartIndex', () => {
  it('is the index of the type, or 0 when the list has no entry for it', () => {
    fc.assert(
      fc.property(orderArb, fc.constantFrom(...STORAGE_TYPES), (order, type) => {
        const { index, usedIndexZeroRule } = ruleFiveStartIndex(order, type);
        if (order.includes(type)) {
          assert.equal(order[index], type);
          assert.equal(usedIndexZeroRule, false);
        } else {
          assert.equal(index, 0);
          assert.equal(usedIndexZeroRule, true);
        }
      }),
      { numRuns: 200 },
    );
  });
});

// The reference's StoragePolicyCase1..4 (worker/.../storagePolicy, memory ratio 0.1, local or DFS storage present).
describe('StoragePolicyCase1..4', () => {
  const worker: WorkerStorage = {
    memory: { limitBytes: 100 * 1024 * 1024, usedBytes: 0 },
    disks: [
      { mountPoint: '/mnt/ssd', type: 'SSD', status: 'HEALTHY', usableBytes: 10 ** 12 },
      { mountPoint: '/mnt/hdd', type: 'HDD', status: 'HEALTHY', usableBytes: 10 ** 12 },
    ],
    distributed: [],
  };

  it('Case1: the default StorageInfo (MEMORY, mask 0) with MEMORY first gets a memory file', () => {
    const choice = chooseTierForNewFile(
      parseCreateFilePolicy('MEMORY,SSD,HDD,HDFS,OSS,S3'),
      { type: 'MEMORY', mountPoint: '', availableTypes: 0 },
      worker,
    );
    assert.equal(choice.kind === 'chosen' && choice.tier, 'MEMORY');
  });

  it('Case2: an SSD location with mask 0 and a policy without MEMORY gets a local file', () => {
    const choice = chooseTierForNewFile(
      parseCreateFilePolicy('SSD,HDD,HDFS,OSS,S3'),
      { type: 'SSD', mountPoint: '', availableTypes: 0 },
      worker,
    );
    assert.deepEqual(choice.kind === 'chosen' && [choice.tier, choice.mountPoint], ['SSD', '/mnt/ssd']);
  });

  it('Case3: evicting a memory file with the default evict policy gets a local file (SSD- and MEMORY-hinted)', () => {
    for (const type of ['SSD', 'MEMORY'] as const) {
      const choice = chooseEvictionTarget(
        DEFAULT_EVICT_POLICY,
        'MEMORY',
        { type, mountPoint: '', availableTypes: 0 },
        worker,
      );
      assert.deepEqual(choice.kind === 'chosen' && [choice.tier, choice.startIndex], ['SSD', 0]);
    }
  });

  it('Case4: a MEMORY location with mask LOCAL is refused memory and falls through to a local file', () => {
    const choice = chooseTierForNewFile(
      parseCreateFilePolicy('MEMORY,SSD,HDD,HDFS,OSS,S3'),
      { type: 'MEMORY', mountPoint: '', availableTypes: MASK.LOCAL },
      worker,
    );
    assert.equal(choice.kind === 'chosen' && choice.tier, 'SSD');
    assert.match(choice.skipped[0]?.reason ?? '', /mask 2 does not permit MEMORY/);
  });
});
