import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import fc from 'fast-check';
import {
  STORAGE_TYPES,
  WORKER_STATES,
  workerKey,
  type DiskInfo,
  type StorageType,
  type WorkerId,
} from '../../core/domain/index.ts';
import {
  ALLOW_ALL_HOSTS,
  emptyRegistry,
  excludeWorkers,
  markWorkerLost,
  registerWorker,
  reportWorkersDecommissioning,
  reportWorkersUnavailable,
  type WorkerRegistry,
} from '../../core/lifecycle/index.ts';
import { initialMasterState } from '../../core/machines/master/index.ts';
import { testMasterConfig } from '../../core/machines/master/testing.ts';
import type { FileStatus, PartitionFile, WorkerShuffle } from '../../core/machines/worker/state.ts';
import { initialWorkerState, type WorkerMachineState } from '../../core/machines/worker/index.ts';
import { location, workerId } from '../../core/machines/worker/test-kit.ts';
import { testWorkerConfig } from '../../core/machines/worker/testing.ts';
import {
  applicationUsage,
  deviceGauges,
  masterGauges,
  workerGauges,
  type GaugeSample,
} from './projections.ts';
import { runShuffle } from './testing.ts';

/** The gauges without labels, by name. */
function plain(gauges: readonly GaugeSample[]): Record<string, number> {
  return Object.fromEntries(gauges.filter((g) => g.labels === undefined).map((g) => [g.name, g.value]));
}

/** The value of a labelled gauge. */
function labelled(
  gauges: readonly GaugeSample[],
  name: string,
  label: string,
  value: string,
): number | undefined {
  return gauges.find((g) => g.name === name && g.labels?.[label] === value)?.value;
}

describe('master gauges', () => {
  it('after a shuffle in the in-memory cluster: the values the machine last emitted, and what happened', () => {
    const { cluster, master } = runShuffle({ apps: ['app-1', 'app-2'] });
    const gauges = plain(masterGauges(master.state()));
    const emitted = new Map<string, number>();
    for (const m of cluster.metrics) if (m.node === master.id && m.op === 'set') emitted.set(m.name, m.value);
    for (const [name, value] of emitted) assert.equal(gauges[name], value, name);
    assert.equal(gauges['WorkerCount'], 3);
    assert.equal(gauges['AvailableWorkerCount'], 3);
    assert.equal(gauges['LostWorkerCount'], 0);
    assert.equal(gauges['RunningApplicationCount'], 2);
    assert.equal(gauges['RegisteredShuffleCount'], 2);
    assert.equal(gauges['IsActiveMaster'], 1);
    // testWorkerConfig: two 100 GiB HDDs per worker, nothing committed yet counts against the capacity.
    assert.equal(gauges['DeviceSvcTotalBytes'], 3 * 2 * 100 * 2 ** 30);
  });

  it('a worker that stops heartbeating is counted lost, and no longer registered or available', () => {
    const { cluster, master, workers } = runShuffle();
    cluster.crash(workers[0]!.id);
    cluster.run({ maxTime: cluster.now + 300_000 });
    const gauges = plain(masterGauges(master.state()));
    assert.equal(gauges['LostWorkerCount'], 1);
    assert.equal(gauges['WorkerCount'], 2);
    assert.equal(gauges['AvailableWorkerCount'], 2);
  });

  it('a hand-built registry: workers by state, capacity of all, usable space of the available healthy disks', () => {
    const disks = (usable: number, ssdStatus: DiskInfo['status']): DiskInfo[] => [
      disk('/d1', 'HDD', 100, usable, 'HEALTHY'),
      disk('/d2', 'SSD', 50, 50, ssdStatus),
      disk('HDFS', 'HDFS', Number.MAX_SAFE_INTEGER, Number.MAX_SAFE_INTEGER, 'HEALTHY'),
    ];
    const ids = [1, 2, 3, 4, 5, 6].map((i) => workerId(`w${i}`));
    let registry: WorkerRegistry = emptyRegistry();
    for (const [i, id] of ids.entries()) {
      const registration = {
        id,
        disks: disks(60 + i, i === 0 ? 'HIGH_DISK_USAGE' : 'HEALTHY'),
        networkLocation: '',
      };
      registry = registerWorker(registry, registration, 0, ALLOW_ALL_HOSTS).registry;
    }
    const key = (i: number): string => workerKey(ids[i]!);
    registry = excludeWorkers(registry, { add: [key(1)], remove: [] }, 1).registry;
    registry = reportWorkersUnavailable(registry, [key(2)], 1).registry;
    registry = reportWorkersDecommissioning(registry, [key(3)], 1).registry;
    registry = markWorkerLost(registry, key(4), 1).registry;
    const base = initialMasterState(testMasterConfig());
    const state = { ...base, durable: { ...base.durable, workers: registry, estimatedPartitionSize: 12345 } };
    const gauges = plain(masterGauges(state));
    assert.deepEqual(gauges, {
      WorkerCount: 5,
      LostWorkerCount: 1,
      ExcludedWorkerCount: 1,
      AvailableWorkerCount: 2,
      ShutdownWorkerCount: 1,
      DecommissionWorkerCount: 1,
      RegisteredShuffleCount: 0,
      RunningApplicationCount: 0,
      PartitionSize: 12345,
      IsActiveMaster: 1,
      // Five registered workers, HDD and SSD each; the HDFS pseudo-disk has no real capacity.
      DeviceSvcTotalBytes: 5 * 150,
      // Available: w1 (its SSD unhealthy: HDD only, 60) and w6 (HDD 65 + SSD 50).
      DeviceSvcFreeBytes: 60 + 65 + 50,
      // No worker reported usage (core/quota): nothing live.
      ActiveShuffleSize: 0,
      ActiveShuffleFileCount: 0,
    });
  });
});

function disk(
  mountPoint: string,
  type: StorageType,
  totalBytes: number,
  usableBytes: number,
  status: DiskInfo['status'],
): DiskInfo {
  return {
    mountPoint,
    type,
    totalBytes,
    usableBytes,
    status,
    avgFlushTimeNs: 0,
    avgFetchTimeNs: 0,
    activeSlots: 0,
  };
}

describe('worker gauges', () => {
  it('after a shuffle: per application, the bytes and files its partition files hold on the disks', () => {
    const { cluster, workers } = runShuffle({ apps: ['app-1', 'app-2'] });
    for (const worker of workers) {
      const stored = [...cluster.files(worker.id).values()];
      const gauges = workerGauges(worker.state());
      for (const appId of ['app-1', 'app-2']) {
        const files = stored.filter((f) => f.ref.id.startsWith(`${appId}-`));
        assert.ok(files.length > 0, `${worker.id} holds files of ${appId}`);
        const bytes = files.reduce((sum, f) => sum + f.bytes.length, 0);
        assert.equal(
          labelled(gauges, 'diskBytesWritten', 'applicationId', appId),
          bytes,
          `${worker.id} ${appId}`,
        );
        assert.equal(labelled(gauges, 'diskFileCount', 'applicationId', appId), files.length);
        assert.equal(labelled(gauges, 'hdfsBytesWritten', 'applicationId', appId), 0);
      }
      const values = plain(gauges);
      assert.equal(values['ActiveShuffleFileCount'], stored.length);
      assert.equal(
        values['ActiveShuffleSize'],
        stored.reduce((sum, f) => sum + f.bytes.length, 0),
      );
      assert.equal(values['RegisteredShuffleCount'], 2);
      assert.equal(values['RunningApplicationCount'], 2);
      assert.equal(values['MemoryStorageFileCount'], 0);
      assert.equal(values['IsDecommissioningWorker'], 0);
      // Committed after the map stage: no slot is still being written.
      assert.equal(values['ActiveSlotsCount'], 0);
      // The disk accounting: capacity minus what the worker wrote on that disk.
      for (const mountPoint of ['/disk1', '/disk2']) {
        const onDisk = stored
          .filter((f) => f.ref.mountPoint === mountPoint)
          .reduce((s, f) => s + f.bytes.length, 0);
        assert.equal(
          labelled(gauges, 'DeviceSvcFreeBytes', 'mountpoint', mountPoint),
          100 * 2 ** 30 - onDisk,
        );
        assert.equal(labelled(gauges, 'DeviceSvcTotalBytes', 'mountpoint', mountPoint), 100 * 2 ** 30);
      }
    }
    // The two applications wrote different amounts (records of 16 and 32 bytes).
    const total = (appId: string): number =>
      workers.reduce((sum, w) => sum + (applicationUsage(w.state()).get(appId)?.diskBytes ?? 0), 0);
    assert.ok(total('app-2') > total('app-1'), "total('app-2') > total('app-1')");
  });

  it('property: hand-built file sets are summed by application and tier', () => {
    const fileArb = fc.record({
      app: fc.constantFrom('a1', 'a2', 'a3'),
      shuffleId: fc.nat(2),
      tier: fc.constantFrom(...STORAGE_TYPES),
      bytes: fc.nat(1_000_000),
      status: fc.constantFrom<FileStatus>('open', 'committing', 'committed', 'failed'),
    });
    fc.assert(
      fc.property(fc.array(fileArb, { maxLength: 40 }), fc.nat(10_000_000), (files, memoryUsed) => {
        const state = workerWith(files, memoryUsed);
        const gauges = workerGauges(state);
        const values = plain(gauges);
        const apps = new Set(files.map((f) => f.app));
        assert.equal(values['RunningApplicationCount'], apps.size);
        assert.equal(
          values['RegisteredShuffleCount'],
          new Set(files.map((f) => `${f.app}-${f.shuffleId}`)).size,
        );
        assert.equal(values['ActiveShuffleFileCount'], files.length);
        assert.equal(
          values['ActiveShuffleSize'],
          files.reduce((s, f) => s + f.bytes, 0),
        );
        assert.equal(values['MemoryStorageFileCount'], files.filter((f) => f.tier === 'MEMORY').length);
        assert.equal(values['MemoryFileStorageSize'], memoryUsed);
        assert.equal(
          values['ActiveSlotsCount'],
          files.filter((f) => f.status === 'open' || f.status === 'committing').length,
        );
        for (const app of apps) {
          const mine = files.filter((f) => f.app === app);
          const local = mine.filter((f) => f.tier === 'HDD' || f.tier === 'SSD');
          const dfs = mine.filter((f) => f.tier === 'HDFS' || f.tier === 'OSS' || f.tier === 'S3');
          const sum = (list: typeof files): number => list.reduce((s, f) => s + f.bytes, 0);
          assert.equal(labelled(gauges, 'diskBytesWritten', 'applicationId', app), sum(local));
          assert.equal(labelled(gauges, 'diskFileCount', 'applicationId', app), local.length);
          assert.equal(labelled(gauges, 'hdfsBytesWritten', 'applicationId', app), sum(dfs));
          assert.equal(labelled(gauges, 'hdfsFileCount', 'applicationId', app), dfs.length);
        }
        assert.equal(gauges.filter((g) => g.name === 'diskBytesWritten').length, apps.size);
      }),
    );
  });

  it('IsDecommissioningWorker is 1 exactly in the decommissioning states', () => {
    for (const lifecycleState of WORKER_STATES) {
      const base = workerWith([], 0);
      const state = { ...base, lifecycle: { ...base.lifecycle, state: lifecycleState } };
      const values = plain(workerGauges(state));
      const decommissioning =
        lifecycleState === 'InDecommission' || lifecycleState === 'InDecommissionThenIdle';
      assert.equal(values['IsDecommissioningWorker'], decommissioning ? 1 : 0, lifecycleState);
    }
  });

  it('IsHighWorkload follows congestion control’s worker-wide triggers, not one fast application', () => {
    const base = workerWith([], 0);
    assert.equal(plain(workerGauges(base))['IsHighWorkload'], 0, 'nothing over');
    const over = (triggers: Partial<WorkerMachineState['congestion']>) =>
      plain(workerGauges({ ...base, congestion: { ...base.congestion, ...triggers } }))['IsHighWorkload'];
    assert.equal(over({ over: new Set(['diskBuffer']) }), 1, 'the disk buffer is over');
    assert.equal(over({ heavyUsers: new Set(['app-1']) }), 0, 'one application over its own watermark');
  });

  it('an open read stream counts in ActiveChunkStreamCount', () => {
    const base = workerWith([], 0);
    const streams = new Map([[7, { shuffleKey: 'a1-0', fileName: '0-0-0', chunkOffsets: [0, 10] }]]);
    assert.equal(plain(workerGauges({ ...base, streams }))['ActiveChunkStreamCount'], 1);
  });

  it('the filesystems of the disks, by mount point', () => {
    assert.deepEqual(deviceGauges([{ mountPoint: '/mnt/a', totalBytes: 1000, freeBytes: 400 }]), [
      { name: 'DeviceOSTotalBytes', value: 1000, labels: { mountpoint: '/mnt/a' } },
      { name: 'DeviceOSFreeBytes', value: 400, labels: { mountpoint: '/mnt/a' } },
    ]);
  });
});

interface FileSpec {
  readonly app: string;
  readonly shuffleId: number;
  readonly tier: StorageType;
  readonly bytes: number;
  readonly status: FileStatus;
}

/** A worker state holding exactly these files (one partition each, in order). */
function workerWith(files: readonly FileSpec[], memoryUsedBytes: number): WorkerMachineState {
  const self: WorkerId = workerId('w1');
  const shuffles = new Map<string, WorkerShuffle>();
  for (const [i, spec] of files.entries()) {
    const key = `${spec.app}-${spec.shuffleId}`;
    const shuffle = shuffles.get(key) ?? {
      appId: spec.app,
      shuffleId: spec.shuffleId,
      splitThreshold: 1 << 30,
      splitMode: 'SOFT' as const,
      memoryEnabled: true,
      user: undefined,
      files: new Map<string, PartitionFile>(),
      mapAttempts: undefined,
    };
    const name = `${i}-0-0`;
    const file: PartitionFile = {
      name,
      location: location(i, 0, 'PRIMARY', self),
      file: { id: `${key}/${name}`, tier: spec.tier, mountPoint: spec.tier === 'HDD' ? '/disk1' : '' },
      status: spec.status,
      bytes: spec.bytes,
      chunkStarts: [0],
      queue: [],
    };
    shuffles.set(key, { ...shuffle, files: new Map([...shuffle.files, [name, file]]) });
  }
  return { ...initialWorkerState(testWorkerConfig(self)), shuffles, memoryUsedBytes };
}
