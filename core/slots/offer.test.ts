import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import fc from 'fast-check';
import { MASK, isDfsType, isLocalType, isTypeAvailable, workerKey } from '../domain/index.ts';
import type {
  DiskInfo,
  DiskStatus,
  PartitionLocation,
  StorageType,
  WorkerInfo,
  WorkerKey,
  WorkerState,
} from '../domain/index.ts';
import { replayRng } from '../rng.ts';
import { offerSlots } from './offer.ts';
import type { OfferOptions, SlotOffer, SlotRequest } from './types.ts';

const EST = 64 * 2 ** 20;

// ---------------------------------------------------------------------------------------------------------------
// Arbitraries: small clusters with every kind of disk, worker state and request the master may see.

interface Scenario {
  readonly workers: readonly WorkerInfo[];
  readonly request: SlotRequest;
  readonly options: OfferOptions;
  readonly draws: readonly number[];
}

const diskArb = fc.record({
  type: fc.constantFrom<StorageType>('HDD', 'HDD', 'SSD', 'SSD', 'HDFS', 'S3', 'OSS', 'MEMORY'),
  slots: fc.nat(12),
  spare: fc.nat(EST - 1),
  status: fc.constantFrom<DiskStatus>(
    'HEALTHY',
    'HEALTHY',
    'HEALTHY',
    'HEALTHY',
    'HIGH_DISK_USAGE',
    'IO_HANG',
  ),
  avgFlushTimeNs: fc.nat(1000),
  avgFetchTimeNs: fc.nat(1000),
  activeSlots: fc.nat(50),
});

const workerArb = fc.record({
  rack: fc.nat(3),
  state: fc.constantFrom<WorkerState>(
    'Normal',
    'Normal',
    'Normal',
    'Normal',
    'Normal',
    'InDecommission',
    'Idle',
  ),
  disks: fc.array(diskArb, { maxLength: 4 }),
});

type WorkerSpec = typeof workerArb extends fc.Arbitrary<infer T> ? T : never;

function buildWorkers(specs: readonly WorkerSpec[]): WorkerInfo[] {
  return specs.map((spec, i) => ({
    id: {
      host: `host${i}`,
      rpcPort: 9000 + i,
      pushPort: 9100 + i,
      fetchPort: 9200 + i,
      replicatePort: 9300 + i,
    },
    networkLocation: `/rack${spec.rack}`,
    state: spec.state,
    lastHeartbeat: 0,
    highWorkload: false,
    disks: spec.disks.map((disk, j): DiskInfo => ({
      mountPoint: isDfsType(disk.type) ? disk.type : `/mnt/disk${j}`,
      type: disk.type,
      usableBytes: disk.slots * EST + disk.spare,
      totalBytes: 2 ** 42,
      status: disk.status,
      avgFlushTimeNs: disk.avgFlushTimeNs,
      avgFetchTimeNs: disk.avgFetchTimeNs,
      activeSlots: disk.activeSlots,
    })),
  }));
}

const maskArb = fc.constantFrom(
  0,
  MASK.LOCAL,
  MASK.LOCAL,
  MASK.LOCAL | MASK.HDFS,
  MASK.LOCAL | MASK.S3,
  MASK.HDFS,
  MASK.S3,
  MASK.OSS,
  MASK.MEMORY,
  MASK.MEMORY | MASK.LOCAL,
  32,
);

const partitionIdsArb = fc.oneof(
  fc.nat(60).map((n) => Array.from({ length: n }, (_, i) => i)),
  fc.array(fc.oneof(fc.nat(80), fc.constantFrom(-1, 2.5, 2 ** 31)), { maxLength: 60 }),
);

/** Padding settings: each release's defaults (0.5.x: extraSlots 2, no minWorkers; 0.6.0: 100 and 100), or others. */
const paddingArb = fc.oneof(
  fc.constant({ extraSlots: 2, minWorkers: undefined }),
  fc.constant({ extraSlots: 100, minWorkers: 100 }),
  fc.record({ extraSlots: fc.nat(4), minWorkers: fc.option(fc.nat(10), { nil: undefined }) }),
);

const policyArb = fc.oneof(
  fc.constant({ name: 'ROUNDROBIN' as const }),
  fc.record({
    name: fc.constant('LOADAWARE' as const),
    numDiskGroups: fc.integer({ min: 1, max: 5 }),
    diskGroupGradient: fc.double({ min: 0, max: 1, noNaN: true }),
    flushTimeWeight: fc.constantFrom(0, 1),
    fetchTimeWeight: fc.constantFrom(0, 1),
    activeSlotsWeight: fc.constantFrom(0, 1),
  }),
);

const drawsArb = fc.array(fc.double({ min: 0, max: 1, maxExcluded: true, noNaN: true }), {
  minLength: 1,
  maxLength: 16,
});

function scenarioArb(overrides: { allCandidatesUsed?: boolean } = {}): fc.Arbitrary<Scenario> {
  return fc
    .record({
      specs: fc.array(workerArb, { maxLength: 10 }),
      partitionIds: partitionIdsArb,
      replicate: fc.boolean(),
      rackAware: fc.boolean(),
      mask: maskArb,
      requestMaxWorkers: overrides.allCandidatesUsed ? fc.constant(0) : fc.integer({ min: -1, max: 12 }),
      masterMaxWorkers: overrides.allCandidatesUsed ? fc.constant(10_000) : fc.integer({ min: 1, max: 12 }),
      excluded: fc.array(fc.nat(9), { maxLength: 3 }),
      unavailable: fc.array(fc.nat(9), { maxLength: 3 }),
      policy: policyArb,
      budgetMode: fc.constantFrom('strict' as const, 'overcommit' as const),
      padding: paddingArb,
      draws: drawsArb,
    })
    .map((v) => {
      const workers = buildWorkers(v.specs);
      const keyOf = (i: number): WorkerKey =>
        workerKey(workers[i % Math.max(1, workers.length)]?.id ?? ID_NONE);
      return {
        workers,
        request: {
          partitionIds: v.partitionIds,
          replicate: v.replicate,
          rackAware: v.rackAware,
          availableStorageTypes: v.mask,
          maxWorkers: v.requestMaxWorkers,
          excludedWorkers: new Set(v.excluded.map(keyOf)),
        },
        options: {
          policy: v.policy,
          budgetMode: v.budgetMode,
          estimatedPartitionSize: EST,
          maxWorkers: v.masterMaxWorkers,
          extraSlots: v.padding.extraSlots,
          ...(v.padding.minWorkers === undefined ? {} : { minWorkers: v.padding.minWorkers }),
          unavailable: new Set(v.unavailable.map(keyOf)),
        },
        draws: v.draws,
      };
    });
}

const ID_NONE = { host: 'none', rpcPort: 0, pushPort: 0, fetchPort: 0, replicatePort: 0 };

function offer(scenario: Scenario): SlotOffer {
  return offerSlots(scenario.request, scenario.workers, scenario.options, replayRng(scenario.draws));
}

// ---------------------------------------------------------------------------------------------------------------
// An independent reading of the rules, used to judge offers.

const isValidId = (id: number): boolean => Number.isInteger(id) && id >= 0 && id < 2 ** 31;

function candidates(scenario: Scenario): WorkerInfo[] {
  const { request, options } = scenario;
  const seen = new Set<WorkerKey>();
  return scenario.workers.filter((w) => {
    const key = workerKey(w.id);
    const ok =
      !seen.has(key) &&
      w.state === 'Normal' &&
      !request.excludedWorkers.has(key) &&
      !options.unavailable?.has(key);
    seen.add(key);
    return ok;
  });
}

function usableDisk(disk: DiskInfo, mask: number): boolean {
  return (
    disk.status === 'HEALTHY' &&
    (isLocalType(disk.type) || isDfsType(disk.type)) &&
    isTypeAvailable(mask, disk.type)
  );
}

function allLocations(result: SlotOffer): { location: PartitionLocation; holder: string }[] {
  return result.slots.flatMap((slot) =>
    [...slot.primaries, ...slot.replicas].map((location) => ({ location, holder: workerKey(slot.worker) })),
  );
}

/** Copies on each local disk, counted from the locations themselves. */
function countsPerDisk(result: SlotOffer): Map<WorkerKey, Map<string, number>> {
  const counts = new Map<WorkerKey, Map<string, number>>();
  for (const { location, holder } of allLocations(result)) {
    if (!isLocalType(location.storage.type)) continue;
    const perDisk = counts.get(holder) ?? new Map<string, number>();
    perDisk.set(location.storage.mountPoint, (perDisk.get(location.storage.mountPoint) ?? 0) + 1);
    counts.set(holder, perDisk);
  }
  return counts;
}

/** Whether the worker could still take a copy after this offer. */
function hasRoomLeft(worker: WorkerInfo, scenario: Scenario, result: SlotOffer): boolean {
  const mask = scenario.request.availableStorageTypes;
  const used = result.diskAllocations.get(workerKey(worker.id));
  return worker.disks.some((disk) => {
    if (!usableDisk(disk, mask)) return false;
    if (isDfsType(disk.type) || scenario.options.budgetMode === 'overcommit') return true;
    return Math.floor(disk.usableBytes / EST) - (used?.get(disk.mountPoint) ?? 0) > 0;
  });
}

const RUNS = { numRuns: 250 };

describe('offerSlots: properties', () => {
  it('places every valid requested partition exactly once or reports it, and the status says which', () => {
    fc.assert(
      fc.property(scenarioArb(), (scenario) => {
        const result = offer(scenario);
        const requested = scenario.request.partitionIds;
        const valid = new Set(requested.filter(isValidId));
        const primaries = result.slots.flatMap((slot) => slot.primaries.map((l) => l.partitionId));
        assert.equal(new Set(primaries).size, primaries.length, 'a partition was placed twice');
        const unplacedValid = result.unplaced
          .filter((u) => u.reason !== 'invalid-partition-id')
          .map((u) => u.partitionId);
        assert.deepEqual(
          [...primaries, ...unplacedValid].sort((a, b) => a - b),
          [...valid].sort((a, b) => a - b),
        );
        assert.deepEqual(
          unplacedValid,
          [...unplacedValid].sort((a, b) => a - b),
        );
        const invalid = result.unplaced
          .filter((u) => u.reason === 'invalid-partition-id')
          .map((u) => u.partitionId);
        assert.deepEqual(
          invalid,
          requested.filter((id) => !isValidId(id)),
        );

        const expected =
          candidates(scenario).length === 0
            ? 'WORKER_EXCLUDED'
            : result.unplaced.length === 0
              ? 'SUCCESS'
              : primaries.length === 0
                ? 'SLOT_NOT_AVAILABLE'
                : 'PARTIALLY_PLACED';
        assert.equal(result.status, expected);
      }),
      RUNS,
    );
  });

  it('links each primary to a replica on another worker, both ways, at epoch 0', () => {
    fc.assert(
      fc.property(scenarioArb(), (scenario) => {
        const result = offer(scenario);
        const replicas = new Map<number, { location: PartitionLocation; holder: string }>();
        for (const slot of result.slots) {
          for (const location of slot.replicas)
            replicas.set(location.partitionId, { location, holder: workerKey(slot.worker) });
        }
        for (const { location, holder } of allLocations(result)) {
          assert.equal(location.epoch, 0);
          assert.equal(workerKey(location.worker), holder, 'a location sits in another worker’s list');
        }
        const primaryCount = result.slots.reduce((n, slot) => n + slot.primaries.length, 0);
        if (!scenario.request.replicate) {
          assert.equal(replicas.size, 0);
          for (const { location } of allLocations(result)) assert.equal(location.peer, undefined);
          return;
        }
        assert.equal(replicas.size, primaryCount);
        for (const slot of result.slots) {
          for (const primary of slot.primaries) {
            assert.equal(primary.mode, 'PRIMARY');
            const replica = replicas.get(primary.partitionId);
            assert.ok(replica && primary.peer, `partition ${primary.partitionId} has no replica`);
            assert.notEqual(
              workerKey(replica.location.worker),
              workerKey(primary.worker),
              'replica on its primary’s worker',
            );
            const { peer: primaryPeer, ...primaryAlone } = primary;
            const { peer: replicaPeer, ...replicaAlone } = replica.location;
            assert.deepEqual(primaryPeer, replicaAlone);
            assert.deepEqual(replicaPeer, primaryAlone);
            assert.equal(replica.location.mode, 'REPLICA');
          }
        }
      }),
      RUNS,
    );
  });

  it('never offers an excluded, unavailable or non-Normal worker, in slots or padding', () => {
    fc.assert(
      fc.property(scenarioArb(), (scenario) => {
        const result = offer(scenario);
        const allowed = new Set(candidates(scenario).map((w) => workerKey(w.id)));
        const slotKeys = result.slots.map((slot) => workerKey(slot.worker));
        const paddingKeys = result.padding.map(workerKey);
        for (const key of [...slotKeys, ...paddingKeys])
          assert.ok(allowed.has(key), `${key} must not be offered`);
        assert.equal(new Set([...slotKeys, ...paddingKeys]).size, slotKeys.length + paddingKeys.length);
      }),
      RUNS,
    );
  });

  it('puts every copy on a healthy disk of its worker, of a tier the request permits, never memory', () => {
    fc.assert(
      fc.property(scenarioArb(), (scenario) => {
        const result = offer(scenario);
        const mask = scenario.request.availableStorageTypes;
        const byKey = new Map(scenario.workers.map((w) => [workerKey(w.id), w]));
        for (const { location, holder } of allLocations(result)) {
          const { storage } = location;
          assert.notEqual(storage.type, 'MEMORY');
          assert.equal(storage.availableTypes, mask);
          const disks = byKey
            .get(holder)!
            .disks.filter((disk) => usableDisk(disk, mask) && disk.type === storage.type);
          if (isDfsType(storage.type)) {
            assert.equal(storage.mountPoint, '');
            assert.ok(disks.length > 0, `${holder} has no ${storage.type}`);
          } else {
            assert.ok(
              disks.some((disk) => disk.mountPoint === storage.mountPoint),
              `${holder}:${storage.mountPoint}`,
            );
          }
        }
      }),
      RUNS,
    );
  });

  it('never exceeds a disk budget in strict mode, counts overcommitted copies otherwise, and reports allocations', () => {
    fc.assert(
      fc.property(scenarioArb(), (scenario) => {
        const result = offer(scenario);
        const counts = countsPerDisk(result);
        assert.deepEqual(result.diskAllocations, counts);
        let beyond = 0;
        for (const worker of scenario.workers) {
          for (const disk of worker.disks) {
            const count = counts.get(workerKey(worker.id))?.get(disk.mountPoint) ?? 0;
            beyond += Math.max(0, count - Math.floor(disk.usableBytes / EST));
          }
        }
        assert.equal(result.overcommitted, beyond);
        if (scenario.options.budgetMode === 'strict') assert.equal(beyond, 0);
      }),
      RUNS,
    );
  });

  it('puts a rack-aware replica on its primary’s rack only when no other rack has room', () => {
    fc.assert(
      fc.property(scenarioArb({ allCandidatesUsed: true }), (scenario) => {
        fc.pre(scenario.request.replicate && scenario.request.rackAware);
        const result = offer(scenario);
        const rackOf = new Map(scenario.workers.map((w) => [workerKey(w.id), w.networkLocation]));
        const pool = candidates(scenario);
        for (const slot of result.slots) {
          for (const primary of slot.primaries) {
            const rack = rackOf.get(workerKey(primary.worker));
            if (rackOf.get(workerKey(primary.peer!.worker)) !== rack) continue;
            const elsewhere = pool.filter(
              (w) => w.networkLocation !== rack && hasRoomLeft(w, scenario, result),
            );
            assert.deepEqual(
              elsewhere.map((w) => workerKey(w.id)),
              [],
              `partition ${primary.partitionId} shares rack ${rack}`,
            );
          }
        }
      }),
      { numRuns: 400 },
    );
  });

  it('finds the few workers on other racks when one rack holds nearly all (skewed racks)', () => {
    const skewed = fc
      .record({
        majority: fc.integer({ min: 15, max: 40 }),
        minority: fc.integer({ min: 1, max: 3 }),
        slots: fc.integer({ min: 1, max: 30 }),
        partitions: fc.integer({ min: 1, max: 80 }),
        budgetMode: fc.constantFrom('strict' as const, 'overcommit' as const),
        draws: drawsArb,
      })
      .map(({ majority, minority, slots, partitions, budgetMode, draws }): Scenario => {
        const hdd = { type: 'HDD' as const, slots, spare: 0, status: 'HEALTHY' as const };
        const timing = { avgFlushTimeNs: 0, avgFetchTimeNs: 0, activeSlots: 0 };
        const specs = Array.from({ length: majority + minority }, (_, i) => ({
          rack: i < minority ? 1 + i : 0,
          state: 'Normal' as const,
          disks: [{ ...hdd, ...timing }],
        }));
        return {
          workers: buildWorkers(specs),
          request: {
            partitionIds: Array.from({ length: partitions }, (_, i) => i),
            replicate: true,
            rackAware: true,
            availableStorageTypes: MASK.LOCAL,
            maxWorkers: 0,
            excludedWorkers: new Set(),
          },
          options: {
            policy: { name: 'ROUNDROBIN' },
            budgetMode,
            estimatedPartitionSize: EST,
            maxWorkers: 10_000,
            extraSlots: 2,
          },
          draws,
        };
      });
    fc.assert(
      fc.property(skewed, (scenario) => {
        const result = offer(scenario);
        const rackOf = new Map(scenario.workers.map((w) => [workerKey(w.id), w.networkLocation]));
        for (const primary of result.slots.flatMap((slot) => slot.primaries)) {
          const rack = rackOf.get(workerKey(primary.worker));
          if (rackOf.get(workerKey(primary.peer!.worker)) !== rack) continue;
          const elsewhere = scenario.workers.filter(
            (w) => w.networkLocation !== rack && hasRoomLeft(w, scenario, result),
          );
          assert.deepEqual(
            elsewhere.map((w) => workerKey(w.id)),
            [],
            `partition ${primary.partitionId} shares rack ${rack}`,
          );
        }
        if (scenario.options.budgetMode === 'overcommit') assert.equal(result.status, 'SUCCESS');
      }),
      RUNS,
    );
  });

  it('gives a reason for every unplaced partition that the cluster confirms', () => {
    fc.assert(
      fc.property(scenarioArb({ allCandidatesUsed: true }), (scenario) => {
        const result = offer(scenario);
        const mask = scenario.request.availableStorageTypes;
        const pool = candidates(scenario);
        const withRoom = pool.filter((w) => hasRoomLeft(w, scenario, result));
        for (const { reason } of result.unplaced) {
          switch (reason) {
            case 'invalid-partition-id':
              break;
            case 'no-candidate-workers':
              assert.equal(pool.length, 0);
              break;
            case 'no-permitted-storage':
              assert.ok(
                pool.every((w) => !w.disks.some((disk) => usableDisk(disk, mask))),
                'a candidate has usable storage',
              );
              break;
            case 'no-capacity':
              assert.equal(withRoom.length, 0);
              break;
            case 'no-replica-candidate':
              assert.ok(
                scenario.request.replicate && withRoom.length <= 1,
                `${withRoom.length} workers have room`,
              );
              break;
          }
        }
      }),
      RUNS,
    );
  });

  it('pads by min(max(extraSlots, minWorkers − used), unused) with workers that have usable storage', () => {
    fc.assert(
      fc.property(scenarioArb(), (scenario) => {
        const result = offer(scenario);
        if (result.status === 'SLOT_NOT_AVAILABLE' || result.status === 'WORKER_EXCLUDED') {
          assert.deepEqual(result.padding, []);
          return;
        }
        const mask = scenario.request.availableStorageTypes;
        const used = new Set(result.slots.map((slot) => workerKey(slot.worker)));
        const unused = candidates(scenario).filter(
          (w) => !used.has(workerKey(w.id)) && w.disks.some((disk) => usableDisk(disk, mask)),
        );
        const { extraSlots, minWorkers } = scenario.options;
        const wanted = minWorkers === undefined ? extraSlots : Math.max(extraSlots, minWorkers - used.size);
        assert.equal(result.padding.length, Math.min(wanted, unused.length));
        const unusedKeys = new Set(unused.map((w) => workerKey(w.id)));
        for (const id of result.padding)
          assert.ok(unusedKeys.has(workerKey(id)), `${workerKey(id)} may not pad`);
      }),
      RUNS,
    );
  });

  it('gives the same offer for the same inputs and draws, whatever the order of the requested ids', () => {
    fc.assert(
      fc.property(scenarioArb(), fc.nat(), (scenario, seed) => {
        const first = offer(scenario);
        assert.deepEqual(offer(scenario), first);
        const shuffled = [...scenario.request.partitionIds.filter(isValidId)].sort(
          (a, b) => ((a * 7919 + seed) % 101) - ((b * 7919 + seed) % 101),
        );
        const again = offer({ ...scenario, request: { ...scenario.request, partitionIds: shuffled } });
        assert.deepEqual(again.slots, first.slots);
      }),
      RUNS,
    );
  });

  it('under round-robin with room to spare, a worker’s disks differ by at most one slot', () => {
    const roomy = scenarioArb().map((scenario) => ({
      ...scenario,
      workers: scenario.workers.map((w) => ({
        ...w,
        disks: w.disks.map((disk) => ({ ...disk, usableBytes: 1000 * EST })),
      })),
      options: { ...scenario.options, policy: { name: 'ROUNDROBIN' as const } },
    }));
    fc.assert(
      fc.property(roomy, (scenario) => {
        const result = offer(scenario);
        const mask = scenario.request.availableStorageTypes;
        for (const worker of scenario.workers) {
          const counts = worker.disks
            .filter((disk) => usableDisk(disk, mask) && isLocalType(disk.type))
            .map((disk) => result.diskAllocations.get(workerKey(worker.id))?.get(disk.mountPoint) ?? 0);
          if (counts.length > 0)
            assert.ok(Math.max(...counts) - Math.min(...counts) <= 1, `${counts.join(',')}`);
        }
      }),
      RUNS,
    );
  });

  it('lets a replica land on its primary’s worker only with the planted bug switched on', () => {
    const workers = buildWorkers(
      Array.from({ length: 4 }, (_, i) => ({
        rack: i % 2,
        state: 'Normal' as const,
        disks: [
          {
            type: 'HDD' as const,
            slots: 100,
            spare: 0,
            status: 'HEALTHY' as const,
            avgFlushTimeNs: 0,
            avgFetchTimeNs: 0,
            activeSlots: 0,
          },
        ],
      })),
    );
    const request: SlotRequest = {
      partitionIds: [0, 1, 2, 3, 4, 5, 6, 7],
      replicate: true,
      rackAware: false,
      availableStorageTypes: MASK.LOCAL,
      maxWorkers: 0,
      excludedWorkers: new Set(),
    };
    const options: OfferOptions = {
      policy: { name: 'ROUNDROBIN' },
      budgetMode: 'strict',
      estimatedPartitionSize: EST,
      maxWorkers: 100,
      extraSlots: 2,
    };
    const sameWorker = (result: SlotOffer): number =>
      result.slots
        .flatMap((s) => s.primaries)
        .filter((p) => workerKey(p.peer!.worker) === workerKey(p.worker)).length;
    assert.equal(sameWorker(offerSlots(request, workers, options, replayRng([0.3]))), 0);
    assert.equal(
      sameWorker(
        offerSlots(request, workers, { ...options, plantedBug: 'replica-on-primary' }, replayRng([0.3])),
      ),
      8,
    );
  });
});

describe('offerSlots: examples', () => {
  const disk = (type: StorageType, slots: number, j = 0): DiskInfo => ({
    mountPoint: isDfsType(type) ? type : `/mnt/disk${j}`,
    type,
    usableBytes: slots * EST,
    totalBytes: 2 ** 42,
    status: 'HEALTHY',
    avgFlushTimeNs: 0,
    avgFetchTimeNs: 0,
    activeSlots: 0,
  });
  const worker = (i: number, rack: string, disks: DiskInfo[]): WorkerInfo => ({
    id: { host: `host${i}`, rpcPort: 1, pushPort: 2, fetchPort: 3, replicatePort: 4 },
    networkLocation: rack,
    state: 'Normal',
    lastHeartbeat: 0,
    highWorkload: false,
    disks,
  });
  const ask = (partitionIds: number[], overrides: Partial<SlotRequest> = {}): SlotRequest => ({
    partitionIds,
    replicate: false,
    rackAware: false,
    availableStorageTypes: MASK.LOCAL,
    maxWorkers: 0,
    excludedWorkers: new Set(),
    ...overrides,
  });
  const strict: OfferOptions = {
    policy: { name: 'ROUNDROBIN' },
    budgetMode: 'strict',
    estimatedPartitionSize: EST,
    maxWorkers: 100,
    extraSlots: 2,
  };
  const rng = (): ReturnType<typeof replayRng> => replayRng([0.42, 0.17, 0.9, 0.3]);
  const copies = (result: SlotOffer): PartitionLocation[] =>
    result.slots.flatMap((slot) => [...slot.primaries, ...slot.replicas]);

  it('answers WORKER_EXCLUDED, listing every partition, when every worker is excluded or unavailable', () => {
    const workers = [worker(0, '/r', [disk('HDD', 9)]), worker(1, '/r', [disk('HDD', 9)])];
    const result = offerSlots(
      ask([0, 1], { excludedWorkers: new Set([workerKey(workers[0]!.id)]) }),
      workers,
      { ...strict, unavailable: new Set([workerKey(workers[1]!.id)]) },
      rng(),
    );
    assert.equal(result.status, 'WORKER_EXCLUDED');
    assert.deepEqual(result.unplaced, [
      { partitionId: 0, reason: 'no-candidate-workers' },
      { partitionId: 1, reason: 'no-candidate-workers' },
    ]);
    assert.deepEqual(result.padding, []);
  });

  it('never offers memory: a memory-only request gets SLOT_NOT_AVAILABLE with no-permitted-storage', () => {
    const workers = [worker(0, '/r', [disk('HDD', 9), disk('MEMORY', 9, 1)])];
    const result = offerSlots(ask([0], { availableStorageTypes: MASK.MEMORY }), workers, strict, rng());
    assert.equal(result.status, 'SLOT_NOT_AVAILABLE');
    assert.deepEqual(result.unplaced, [{ partitionId: 0, reason: 'no-permitted-storage' }]);
  });

  it('reports no-replica-candidate when only one worker could hold copies', () => {
    const workers = [worker(0, '/r', [disk('HDD', 9)]), worker(1, '/r', [disk('HDD', 0)])];
    const result = offerSlots(ask([0], { replicate: true }), workers, strict, rng());
    assert.equal(result.status, 'SLOT_NOT_AVAILABLE');
    assert.deepEqual(result.unplaced, [{ partitionId: 0, reason: 'no-replica-candidate' }]);
  });

  it('in strict mode places what fits, lowest ids first, and reports the rest as no-capacity', () => {
    const workers = [worker(0, '/r', [disk('HDD', 3)]), worker(1, '/r', [disk('HDD', 3)])];
    const result = offerSlots(ask([9, 8, 7, 6, 5, 4, 3, 2, 1, 0]), workers, strict, rng());
    assert.equal(result.status, 'PARTIALLY_PLACED');
    assert.deepEqual(
      copies(result)
        .map((l) => l.partitionId)
        .sort((a, b) => a - b),
      [0, 1, 2, 3, 4, 5],
    );
    assert.deepEqual(
      result.unplaced.map((u) => `${u.partitionId}:${u.reason}`),
      ['6:no-capacity', '7:no-capacity', '8:no-capacity', '9:no-capacity'],
    );
    assert.deepEqual(result.diskAllocations.get(workerKey(workers[0]!.id)), new Map([['/mnt/disk0', 3]]));
  });

  it('in overcommit mode places the rest beyond the budgets and counts them', () => {
    const workers = [worker(0, '/r', [disk('HDD', 3)]), worker(1, '/r', [disk('HDD', 3)])];
    const result = offerSlots(
      ask([0, 1, 2, 3, 4, 5, 6, 7, 8, 9]),
      workers,
      { ...strict, budgetMode: 'overcommit' },
      rng(),
    );
    assert.equal(result.status, 'SUCCESS');
    assert.equal(result.overcommitted, 4);
  });

  it('uses local disks up to their budgets before a distributed tier, which has no budget', () => {
    const workers = [0, 1].map((i) => worker(i, '/r', [disk('HDD', 2), disk('HDFS', 0)]));
    const result = offerSlots(
      ask([0, 1, 2, 3, 4, 5, 6, 7], { availableStorageTypes: MASK.LOCAL | MASK.HDFS }),
      workers,
      strict,
      rng(),
    );
    assert.equal(result.status, 'SUCCESS');
    const byType = copies(result).map((l) => `${l.partitionId}:${l.storage.type}:${l.storage.mountPoint}`);
    assert.deepEqual(byType.filter((t) => t.includes('HDD')).length, 4);
    assert.ok(
      byType.filter((t) => t.includes('HDFS')).every((t) => t.endsWith(':')),
      'a DFS location has a mount point',
    );
    for (const id of [0, 1, 2, 3])
      assert.ok(byType.includes(`${id}:HDD:/mnt/disk0`), `${id} is not on a local disk`);
  });

  it('pairs copies across tiers when that is the only way: disk room on one worker, HDFS on another', () => {
    const workers = [worker(0, '/a', [disk('HDD', 10)]), worker(1, '/b', [disk('HDFS', 0)])];
    const result = offerSlots(
      ask([0, 1, 2], { replicate: true, rackAware: true, availableStorageTypes: MASK.LOCAL | MASK.HDFS }),
      workers,
      strict,
      rng(),
    );
    assert.equal(result.status, 'SUCCESS');
    for (const primary of result.slots.flatMap((slot) => slot.primaries)) {
      assert.notEqual(primary.worker.host, primary.peer!.worker.host);
      assert.notEqual(primary.storage.type, primary.peer!.storage.type);
    }
  });

  it('reports invalid ids and treats a repeated id as one request', () => {
    const workers = [worker(0, '/r', [disk('HDD', 9)])];
    const result = offerSlots(ask([2, 2, -1, 0.5, 0]), workers, strict, rng());
    assert.equal(result.status, 'PARTIALLY_PLACED');
    assert.deepEqual(
      copies(result)
        .map((l) => l.partitionId)
        .sort(),
      [0, 2],
    );
    assert.deepEqual(result.unplaced, [
      { partitionId: -1, reason: 'invalid-partition-id' },
      { partitionId: 0.5, reason: 'invalid-partition-id' },
    ]);
  });

  it('pads with the 0.6.0 defaults up to 100 workers in all, from workers outside maxWorkers too', () => {
    const workers = Array.from({ length: 30 }, (_, i) => worker(i, `/r${i % 3}`, [disk('SSD', 50)]));
    const result = offerSlots(
      ask([0, 1, 2], { maxWorkers: 3 }),
      workers,
      { ...strict, extraSlots: 100, minWorkers: 100 },
      rng(),
    );
    assert.equal(result.slots.length, 3);
    assert.equal(result.padding.length, 27);
    const before = offerSlots(ask([0, 1, 2], { maxWorkers: 3 }), workers, strict, rng());
    assert.equal(before.padding.length, 2);
  });

  it('reads a request maxWorkers that is not a number as the master’s limit', () => {
    const workers = Array.from({ length: 6 }, (_, i) => worker(i, '/r', [disk('HDD', 50)]));
    const ids = Array.from({ length: 12 }, (_, i) => i);
    for (const maxWorkers of [Number.NaN, Infinity, -3]) {
      const result = offerSlots(ask(ids, { maxWorkers }), workers, { ...strict, maxWorkers: 4 }, rng());
      assert.equal(result.slots.length, 4, `maxWorkers ${maxWorkers}`);
    }
    assert.equal(offerSlots(ask(ids, { maxWorkers: 2.7 }), workers, strict, rng()).slots.length, 2);
  });

  it('refuses options that cannot work, naming the key', () => {
    const workers = [worker(0, '/r', [disk('HDD', 9)])];
    assert.throws(
      () => offerSlots(ask([0]), workers, { ...strict, maxWorkers: 0 }, rng()),
      /slot\.assign\.maxWorkers/,
    );
    assert.throws(
      () => offerSlots(ask([0]), workers, { ...strict, extraSlots: -1 }, rng()),
      /slot\.assign\.extraSlots/,
    );
    assert.throws(
      () => offerSlots(ask([0]), workers, { ...strict, minWorkers: 1.5 }, rng()),
      /slot\.assign\.minWorkers/,
    );
    assert.throws(
      () => offerSlots(ask([0]), workers, { ...strict, estimatedPartitionSize: 0 }, rng()),
      /estimated partition size/,
    );
  });
});
