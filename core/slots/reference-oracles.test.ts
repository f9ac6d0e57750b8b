/**
 * The reference's own slot-allocation tests (reference-behaviour §12.1 SlotsAllocatorSuiteJ, §12.2
 * SlotsAllocatorRackAwareSuiteJ), restated against svc's offer. Where svc decides differently on purpose, the case
 * says so (docs/core/slots.md lists the differences).
 */
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { MASK, workerKey } from '../domain/index.ts';
import type { DiskInfo, StorageType, WorkerInfo, WorkerKey } from '../domain/index.ts';
import type { Rng } from '../rng.ts';
import { offerSlots } from './offer.ts';
import type { LoadAwareSettings, OfferOptions, SlotOffer, SlotPolicy, SlotRequest } from './types.ts';

const MiB = 2 ** 20;
const GiB = 2 ** 30;
const EST = 64 * MiB;

/** A seeded generator (Park–Miller), so that every run of these examples is the same. */
function seeded(seed: number): Rng {
  let state = seed;
  return {
    next() {
      state = (state * 16807) % 2147483647;
      return state / 2147483647;
    },
  };
}

function localDisk(mountPoint: string, usableBytes: number, rng: Rng): DiskInfo {
  return {
    mountPoint,
    type: 'HDD',
    usableBytes,
    totalBytes: usableBytes,
    status: 'HEALTHY',
    avgFlushTimeNs: Math.floor(rng.next() * 1000),
    avgFetchTimeNs: Math.floor(rng.next() * 1000),
    activeSlots: 0,
  };
}

function dfsDisk(type: StorageType): DiskInfo {
  return {
    mountPoint: type,
    type,
    usableBytes: Number.MAX_SAFE_INTEGER,
    totalBytes: Number.MAX_SAFE_INTEGER,
    status: 'HEALTHY',
    avgFlushTimeNs: 999_999,
    avgFetchTimeNs: 999_999,
    activeSlots: 0,
  };
}

function worker(host: string, rack: string, disks: DiskInfo[], port = 0): WorkerInfo {
  return {
    id: { host, rpcPort: port, pushPort: port, fetchPort: port, replicatePort: port },
    networkLocation: rack,
    state: 'Normal',
    lastHeartbeat: 0,
    highWorkload: false,
    disks,
  };
}

/** SlotsAllocatorSuiteJ's fixture: host0..host2, rack i % 3, /mnt/disk1..3 with about 100, 95 and 90 GiB. */
function suiteWorkers(rng: Rng, extra: (i: number) => DiskInfo[] = () => []): WorkerInfo[] {
  return [0, 1, 2].map((i) =>
    worker(
      `host${i}`,
      `${i % 3}`,
      [
        localDisk('/mnt/disk1', 100 * GiB + Math.floor(rng.next() * 1000), rng),
        localDisk('/mnt/disk2', 95 * GiB + Math.floor(rng.next() * 1000), rng),
        localDisk('/mnt/disk3', 90 * GiB + Math.floor(rng.next() * 1000), rng),
        ...extra(i),
      ],
      i,
    ),
  );
}

function loadAware(settings: Partial<LoadAwareSettings>): SlotPolicy {
  return {
    name: 'LOADAWARE',
    numDiskGroups: 5,
    diskGroupGradient: 0.1,
    flushTimeWeight: 0,
    fetchTimeWeight: 1,
    activeSlotsWeight: 0,
    ...settings,
  };
}

const ROUND_ROBIN: SlotPolicy = { name: 'ROUNDROBIN' };

function request(count: number, replicate: boolean, overrides: Partial<SlotRequest> = {}): SlotRequest {
  return {
    partitionIds: Array.from({ length: count }, (_, i) => i),
    replicate,
    rackAware: false,
    availableStorageTypes: MASK.LOCAL,
    maxWorkers: 0,
    excludedWorkers: new Set(),
    ...overrides,
  };
}

function options(policy: SlotPolicy, overrides: Partial<OfferOptions> = {}): OfferOptions {
  return {
    policy,
    budgetMode: 'overcommit',
    estimatedPartitionSize: EST,
    maxWorkers: 10_000,
    extraSlots: 2,
    ...overrides,
  };
}

/** The suite's common `check`: ids unique per worker, locations name their worker, allocations add up, known disks. */
function check(workers: readonly WorkerInfo[], result: SlotOffer, copies: number, roundRobin: boolean): void {
  const byKey = new Map(workers.map((w) => [workerKey(w.id), w]));
  let total = 0;
  for (const slot of result.slots) {
    const key = workerKey(slot.worker);
    const ids = slot.primaries.map((l) => `${l.partitionId}-${l.epoch}`);
    assert.equal(new Set(ids).size, ids.length, `${key} holds a primary twice`);
    for (const location of [...slot.primaries, ...slot.replicas]) {
      assert.equal(workerKey(location.worker), key);
    }
  }
  for (const [key, perDisk] of result.diskAllocations) {
    const mounts = new Set(byKey.get(key)!.disks.map((disk) => disk.mountPoint));
    for (const [mount, count] of perDisk) {
      assert.ok(mounts.has(mount), `${key} got slots on unknown disk ${mount}`);
      total += count;
    }
  }
  assert.equal(total, copiesOf(result) - dfsCopies(result));
  assert.ok(total <= copies, `${total} slots for ${copies} copies`);
  if (!roundRobin) return;
  for (const w of workers) {
    const counts = w.disks
      .filter((disk) => disk.type === 'HDD')
      .map((disk) => result.diskAllocations.get(workerKey(w.id))?.get(disk.mountPoint) ?? 0);
    assert.ok(
      Math.max(...counts) - Math.min(...counts) <= 1,
      `${workerKey(w.id)} disks: ${counts.join(', ')}`,
    );
  }
}

const copiesOf = (result: SlotOffer): number =>
  result.slots.reduce((n, slot) => n + slot.primaries.length + slot.replicas.length, 0);
const dfsCopies = (result: SlotOffer): number =>
  result.slots
    .flatMap((slot) => [...slot.primaries, ...slot.replicas])
    .filter((l) => l.storage.mountPoint === '').length;

describe('reference oracle: SlotsAllocatorSuiteJ', () => {
  const cases: [name: string, partitions: number, replicate: boolean, policy: SlotPolicy][] = [
    ['1 partition, replicated', 1, true, ROUND_ROBIN],
    ['1 partition, not replicated', 1, false, ROUND_ROBIN],
    ['2 partitions, not replicated', 2, false, ROUND_ROBIN],
    ['3 partitions, not replicated', 3, false, ROUND_ROBIN],
    ['3 partitions, replicated', 3, true, ROUND_ROBIN],
    [
      '3000 partitions, replicated, load-aware (2 groups, gradient 1)',
      3000,
      true,
      loadAware({ numDiskGroups: 2, diskGroupGradient: 1 }),
    ],
    [
      '3000 partitions, not replicated, load-aware',
      3000,
      false,
      loadAware({ numDiskGroups: 2, diskGroupGradient: 1 }),
    ],
    ['3000 partitions, replicated, round-robin (disks balanced within one)', 3000, true, ROUND_ROBIN],
  ];
  for (const [name, partitions, replicate, policy] of cases) {
    it(name, () => {
      const rng = seeded(7 + partitions);
      const workers = suiteWorkers(rng);
      const result = offerSlots(
        request(partitions, replicate),
        workers,
        options(policy, { budgetMode: 'strict' }),
        rng,
      );
      assert.equal(result.status, 'SUCCESS');
      const copies = partitions * (replicate ? 2 : 1);
      assert.equal(copiesOf(result), copies);
      check(workers, result, copies, policy.name === 'ROUNDROBIN');
    });
  }

  it('an empty partition list succeeds with no slots (the reference answers SLOT_NOT_AVAILABLE on the wire)', () => {
    const rng = seeded(1);
    const result = offerSlots(request(0, true), suiteWorkers(rng), options(ROUND_ROBIN), rng);
    assert.equal(result.status, 'SUCCESS');
    assert.deepEqual(result.slots, []);
  });

  it('no available slots: overcommit still places the partition; strict mode reports no-capacity', () => {
    const rng = seeded(3);
    const full = suiteWorkers(rng).map((w) => ({
      ...w,
      disks: w.disks.map((disk) => ({ ...disk, usableBytes: 0 })),
    }));
    const overcommitted = offerSlots(request(1, false), full, options(ROUND_ROBIN), rng);
    assert.equal(overcommitted.status, 'SUCCESS');
    assert.equal(overcommitted.overcommitted, 1);
    const strict = offerSlots(request(1, false), full, options(ROUND_ROBIN, { budgetMode: 'strict' }), rng);
    assert.equal(strict.status, 'SLOT_NOT_AVAILABLE');
    assert.deepEqual(strict.unplaced, [{ partitionId: 0, reason: 'no-capacity' }]);
  });

  // checkSlotsOnDFS: every primary and replica placed. Round-robin runs use the pure distributed mask; load-aware
  // runs use local disks and the distributed tier (groups 3, gradient 0.1, fetch weight 1).
  const dfsLoadAware = loadAware({ numDiskGroups: 3, diskGroupGradient: 0.1 });
  const dfsCases: [
    name: string,
    type: 'HDFS' | 'S3' | 'OSS',
    policy: SlotPolicy,
    local: boolean,
    onWorkers: number[],
  ][] = [
    // The reference's testHDFSOnly gives workers no disk at all and still offers HDFS; svc offers a distributed
    // tier only to a worker that reports its pseudo-disk (one that never configured HDFS could not write there).
    ['HDFS only', 'HDFS', ROUND_ROBIN, false, [0, 1, 2]],
    ['local disks and HDFS, round-robin', 'HDFS', ROUND_ROBIN, true, [0, 1, 2]],
    ['local disks and HDFS on 2 of 3 workers, load-aware', 'HDFS', dfsLoadAware, true, [0, 1]],
    ['S3 only', 'S3', ROUND_ROBIN, false, [0, 1, 2]],
    ['local disks and S3, round-robin', 'S3', ROUND_ROBIN, true, [0, 1, 2]],
    ['local disks and S3, load-aware', 'S3', dfsLoadAware, true, [0, 1, 2]],
    ['OSS only', 'OSS', ROUND_ROBIN, false, [0, 1, 2]],
    ['local disks and OSS, load-aware', 'OSS', dfsLoadAware, true, [0, 1, 2]],
  ];
  for (const [name, type, policy, local, onWorkers] of dfsCases) {
    it(`distributed tiers: ${name}`, () => {
      const rng = seeded(11);
      const withDfs = suiteWorkers(rng, (i) => (onWorkers.includes(i) ? [dfsDisk(type)] : []));
      const workers = local
        ? withDfs
        : withDfs.map((w) => ({ ...w, disks: w.disks.filter((d) => d.type === type) }));
      const mask = policy.name === 'ROUNDROBIN' ? MASK[type] : MASK.LOCAL | MASK[type];
      const result = offerSlots(
        request(3000, true, { availableStorageTypes: mask }),
        workers,
        options(policy, { budgetMode: 'strict' }),
        rng,
      );
      assert.equal(result.status, 'SUCCESS');
      assert.equal(copiesOf(result), 6000);
      if (policy.name === 'ROUNDROBIN') assert.equal(dfsCopies(result), 6000);
    });
  }

  it('distributed tiers: load-aware with insufficient local slots on one worker still places everything', () => {
    const rng = seeded(13);
    const workers = suiteWorkers(rng, () => [dfsDisk('HDFS')]).map((w, i) =>
      i === 2
        ? { ...w, disks: w.disks.map((d) => (d.type === 'HDD' ? { ...d, usableBytes: 100 * EST } : d)) }
        : w,
    );
    const result = offerSlots(
      request(3000, true, { availableStorageTypes: MASK.LOCAL | MASK.HDFS }),
      workers,
      options(dfsLoadAware, { budgetMode: 'strict' }),
      rng,
    );
    assert.equal(result.status, 'SUCCESS');
    assert.equal(copiesOf(result), 6000);
    assert.ok(
      (result.diskAllocations.get(workerKey(workers[2]!.id))?.get('/mnt/disk1') ?? 0) <= 100,
      'budget exceeded',
    );
  });

  it('[0.7] load-aware prefers the disk with fewer active slots when that weight is set', () => {
    const rng = seeded(17);
    const busy = { ...localDisk('/mnt/disk1', 100 * GiB, rng), activeSlots: 1000 };
    const idle = localDisk('/mnt/disk1', 100 * GiB, rng);
    const workers = [worker('host0', '/r', [busy], 0), worker('host1', '/r', [idle], 1)];
    const policy = loadAware({
      numDiskGroups: 2,
      diskGroupGradient: 1,
      flushTimeWeight: 0,
      fetchTimeWeight: 0,
      activeSlotsWeight: 1,
    });
    for (let attempt = 0; attempt < 20; attempt += 1) {
      const result = offerSlots(request(1, false), workers, options(policy), rng);
      assert.deepEqual(
        result.slots.map((slot) => slot.worker.host),
        ['host1'],
      );
    }
  });
});

describe('reference oracle: SlotsAllocatorRackAwareSuiteJ', () => {
  const racksOf = (workers: readonly WorkerInfo[]): Map<WorkerKey, string> =>
    new Map(workers.map((w) => [workerKey(w.id), w.networkLocation]));

  /** Each host holds one small disk (no slots), as in the suite, so this runs the unbudgeted rack-aware step. */
  const smallDiskHosts = (racks: string[]): WorkerInfo[] =>
    racks.map((rack, i) =>
      worker(
        `host${i + 1}`,
        rack,
        [{ ...localDisk('/mnt/disk/0', 1000, seeded(i + 1)), activeSlots: 1000 }],
        i + 1,
      ),
    );

  it('round-robin with rack awareness: 3 partitions → 6 locations, every primary on another rack than its peer', () => {
    const rng = seeded(5);
    const workers = smallDiskHosts([
      '/default/rack1',
      '/default/rack1',
      '/default/rack1',
      '/default/rack2',
      '/default/rack2',
      '/default/rack2',
    ]);
    const racks = racksOf(workers);
    const result = offerSlots(
      request(3, true, { rackAware: true, availableStorageTypes: 0 }),
      workers,
      options(ROUND_ROBIN),
      rng,
    );
    assert.equal(copiesOf(result), 6);
    for (const primary of result.slots.flatMap((slot) => slot.primaries)) {
      assert.notEqual(racks.get(workerKey(primary.worker)), racks.get(workerKey(primary.peer!.worker)));
    }
  });

  it('without a rack mapping every worker is on the default rack, and all 6 locations are still placed', () => {
    const rng = seeded(6);
    const workers = smallDiskHosts(Array.from({ length: 6 }, () => '/default-rack'));
    const result = offerSlots(
      request(3, true, { rackAware: true, availableStorageTypes: 0 }),
      workers,
      options(ROUND_ROBIN),
      rng,
    );
    assert.equal(result.status, 'SUCCESS');
    assert.equal(copiesOf(result), 6);
  });

  const patternHosts = (names: string[]): WorkerInfo[] =>
    names.map((name, i) =>
      worker(name, name.slice(name.indexOf('r')), [localDisk('/mnt/a', 2 ** 40, seeded(i + 1))], i),
    );

  for (const [name, hosts, partitions] of [
    [
      '100 partitions over h1r1 h2r1 h3r1 h4r2 h5r2 h6r2',
      ['h1r1', 'h2r1', 'h3r1', 'h4r2', 'h5r2', 'h6r2'],
      100,
    ],
    [
      '20 partitions over 10 hosts in a mixed order',
      ['h1r2', 'h4r2', 'h3r1', 'h1r1', 'h4r1', 'h2r1', 'h3r2', 'h2r2', 'h5r2', 'h5r1'],
      20,
    ],
  ] as const) {
    it(`replica patterns: ${name} → at most floor(P / hosts) + 1 replicas per host, racks distinct`, () => {
      const workers = patternHosts([...hosts]);
      const racks = racksOf(workers);
      const rng = seeded(partitions);
      for (let attempt = 0; attempt < 50; attempt += 1) {
        const result = offerSlots(
          request(partitions, true, { rackAware: true }),
          workers,
          options(ROUND_ROBIN),
          rng,
        );
        for (const slot of result.slots) {
          assert.ok(
            slot.replicas.length <= Math.floor(partitions / hosts.length) + 1,
            `${slot.worker.host}: ${slot.replicas.length}`,
          );
          for (const replica of slot.replicas) {
            assert.notEqual(racks.get(workerKey(replica.worker)), racks.get(workerKey(replica.peer!.worker)));
          }
        }
      }
    });
  }

  /** Shuffled attempts (seeded) over racks of the given sizes; the worst replicas-per-host must stay within the bound. */
  function worstReplicasPerHost(rackSizes: number[], partitions: number, attempts: number): number {
    const rng = seeded(42);
    const hosts = rackSizes.flatMap((size, rack) =>
      Array.from({ length: size }, (_, h) =>
        worker(`h${h}r${rack}`, `/rack${rack}`, [localDisk('/mnt/a', 2 ** 40, rng)], h),
      ),
    );
    let worst = 0;
    for (let attempt = 0; attempt < attempts; attempt += 1) {
      for (let i = hosts.length - 1; i > 0; i -= 1) {
        const j = Math.floor(rng.next() * (i + 1));
        [hosts[i], hosts[j]] = [hosts[j]!, hosts[i]!];
      }
      const result = offerSlots(
        request(partitions, true, { rackAware: true }),
        hosts,
        options(ROUND_ROBIN),
        rng,
      );
      assert.equal(result.status, 'SUCCESS');
      for (const slot of result.slots) worst = Math.max(worst, slot.replicas.length);
    }
    return worst;
  }

  // The suite runs 100 attempts and goes up to 50,000 partitions; fewer here keeps the file to a few seconds.
  const attemptsFor = (partitions: number): number =>
    partitions >= 10_000 ? 2 : partitions >= 1000 ? 10 : 40;
  const equalRacks: [perRack: number, racks: number, partitions: number[]][] = [
    [5, 2, [50, 100, 200, 1000, 10_000]],
    [5, 3, [50, 100, 200, 1000, 10_000]],
    [10, 5, [200, 1000, 10_000]],
    [20, 10, [1000, 10_000]],
  ];
  for (const [perRack, racks, sizes] of equalRacks) {
    it(`replica distribution, ${racks} equal racks of ${perRack}: at most ceil(P / hosts) per host`, () => {
      for (const partitions of sizes) {
        const bound = Math.ceil(partitions / (perRack * racks));
        const worst = worstReplicasPerHost(
          Array.from({ length: racks }, () => perRack),
          partitions,
          attemptsFor(partitions),
        );
        assert.ok(worst <= bound, `P=${partitions}: ${worst} > ${bound}`);
      }
    });
  }

  const unequalRacks: [sizes: number[], partitions: number[]][] = [
    [
      [3, 7],
      [50, 100, 200, 1000, 10_000],
    ],
    [
      [2, 3, 5],
      [100, 10_000],
    ],
    [
      [2, 3, 5, 5, 10],
      [100, 10_000],
    ],
  ];
  for (const [sizes, partitionCounts] of unequalRacks) {
    it(`replica distribution, unequal racks ${sizes.join('/')}: within the suite's skew bound`, () => {
      const total = sizes.reduce((a, b) => a + b, 0);
      const [largest, second] = [...sizes].sort((a, b) => b - a) as [number, number];
      for (const partitions of partitionCounts) {
        const bound = Math.ceil((partitions / total) * (1 + (largest - second + 1) / (total - largest)));
        const worst = worstReplicasPerHost(sizes, partitions, attemptsFor(partitions));
        assert.ok(worst <= bound, `P=${partitions}: ${worst} > ${bound}`);
      }
    });
  }
});
