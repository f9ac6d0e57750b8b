import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import fc from 'fast-check';
import {
  ALL_TYPES_MASK,
  MASK,
  partitionFileName,
  workerKey,
  type PartitionLocation,
  type StorageInfo,
} from '../../domain/index.ts';
import { chooseTierForNewFile } from '../../storage/index.ts';
import type { Effect } from '../effects.ts';
import { initialWorkerState, workerMachine, type WorkerConfig, type WorkerMachineState } from './index.ts';
import { decodeShuffleRecord } from './recovery.ts';
import { storageView } from './storage-view.ts';
import { testWorkerConfig } from './testing.ts';
import {
  CLIENT,
  Harness,
  ioOps,
  KEY,
  location,
  MAPPER,
  metricNames,
  ofKind,
  onlySent,
  PEER,
  pushData,
  recoveryStore,
  registeredWorker,
  SELF,
  sentOf,
  commitFiles,
} from './test-kit.ts';

/** A started, registered worker. */
function worker(overrides: Partial<WorkerConfig> = {}): Harness<WorkerMachineState> {
  return registeredWorker(SELF, overrides);
}

function reserve(
  harness: Harness<WorkerMachineState>,
  options: {
    peer?: boolean;
    replicas?: number[];
    primaries?: number[];
    /** Primaries as given, instead of `primaries`' ids on the default storage. */
    primaryLocations?: PartitionLocation[];
    memoryEnabled?: boolean;
    splitThreshold?: number;
  } = {},
) {
  const primaries =
    options.primaryLocations ??
    (options.primaries ?? [0]).map((id) =>
      location(id, 0, 'PRIMARY', SELF, options.peer === true ? { peer: PEER } : {}),
    );
  const replicas = (options.replicas ?? []).map((id) => location(id, 0, 'REPLICA', SELF, { peer: PEER }));
  return harness.receive(
    CLIENT,
    {
      type: 'ReserveSlots',
      appId: 'app',
      shuffleId: 1,
      primaries,
      replicas,
      splitThreshold: options.splitThreshold ?? 1024 ** 3,
      splitMode: 'SOFT',
      memoryEnabled: options.memoryEnabled ?? false,
    },
    { requestId: 77 },
  );
}

function reserveOf(shuffleId: number, primaries: ReturnType<typeof location>[]) {
  return {
    type: 'ReserveSlots' as const,
    appId: 'app',
    shuffleId,
    primaries,
    replicas: [],
    splitThreshold: 1024 ** 3,
    splitMode: 'SOFT' as const,
    memoryEnabled: false,
  };
}

/** A reserved shuffle with files created; returns the reserve's reply. */
function reserved(harness: Harness<WorkerMachineState>, options: Parameters<typeof reserve>[1] = {}) {
  const effects = reserve(harness, options);
  const done = harness.completeIo(effects);
  return onlySent(done, 'StatusResponse');
}

function writesOf(effects: readonly Effect[]) {
  return ofKind(ioOps(effects), 'write');
}

describe('worker: ReserveSlots', () => {
  it('refuses a client whose release the worker does not admit, creating nothing', () => {
    const harness = worker();
    const effects = harness.receive(
      CLIENT,
      {
        type: 'ReserveSlots',
        appId: 'app',
        shuffleId: 1,
        primaries: [location(0, 0, 'PRIMARY', SELF)],
        replicas: [],
        splitThreshold: 1,
        splitMode: 'SOFT',
        memoryEnabled: false,
      },
      { requestId: 5, fromRelease: '0.2.0' },
    );
    const answer = onlySent(effects, 'StatusResponse');
    assert.equal(answer.message.status, 'CLIENT_RELEASE_REFUSED');
    assert.match(answer.message.message, /0\.6\.0/);
    assert.match(answer.message.message, /0\.2\.0/);
    assert.equal(answer.inReplyTo, 5);
    assert.equal(ofKind(effects, 'createFile').length, 0);
  });

  it('creates one file per location and answers SUCCESS once all exist', () => {
    const harness = worker();
    const effects = reserve(harness, { primaries: [0, 1], replicas: [2] });
    assert.equal(ofKind(effects, 'ioBatch').length, 1, 'the creates go to the disks as one batch');
    const creates = ofKind(ioOps(effects), 'createFile');
    assert.equal(creates.length, 3);
    assert.equal(sentOf(effects, 'StatusResponse').length, 0, 'no answer before the files exist');
    assert.ok(
      creates.every((c) => c.file.tier === 'HDD' && c.file.mountPoint.startsWith('/disk')),
      "creates.every((c) => c.file.tier === 'HDD' && c.file.mountPoint.startsWith('/disk'))",
    );
    harness.ioDone(creates[0]!.op);
    harness.ioDone(creates[1]!.op);
    const last = harness.ioDone(creates[2]!.op);
    const answer = onlySent(last, 'StatusResponse');
    assert.equal(answer.message.status, 'SUCCESS');
    assert.equal(answer.inReplyTo, 77);
    assert.deepEqual(metricNames(last), ['SlotsAllocated']);
    assert.equal(harness.state.shuffles.get(KEY)?.files.size, 3);
  });

  it('places each location on the tier the create policy chooses for its own storage, in any mix of storages', () => {
    // The worker chooses once per run of locations offered the same storage: a mix must still get each its own.
    const storages: StorageInfo[] = [
      { type: 'HDD', mountPoint: '/disk1', availableTypes: MASK.LOCAL },
      { type: 'HDD', mountPoint: '', availableTypes: MASK.MEMORY | MASK.LOCAL },
      { type: 'SSD', mountPoint: '', availableTypes: ALL_TYPES_MASK },
      { type: 'HDFS', mountPoint: '', availableTypes: MASK.HDFS },
    ];
    fc.assert(
      fc.property(fc.array(fc.integer({ min: 0, max: storages.length - 1 }), { maxLength: 12 }), (picks) => {
        const harness = worker({
          memory: {
            capacityBytes: 1024 ** 3,
            maxFileBytes: 1024 ** 2,
            evictRatio: 0.9,
            refuseImplicitMemory: false,
          },
        });
        const view = storageView(harness.state);
        const primaries = picks.map((pick, id) =>
          location(id, 0, 'PRIMARY', SELF, { storage: storages[pick]! }),
        );
        const effects = reserve(harness, { primaryLocations: primaries, memoryEnabled: true });
        const creates = new Map(ofKind(ioOps(effects), 'createFile').map((c) => [c.file.id, c.file]));
        for (const placed of primaries) {
          const alone = chooseTierForNewFile(harness.state.config.createFilePolicy, placed.storage, view);
          const created = creates.get(`${KEY}/${partitionFileName(placed)}`);
          if (alone.kind === 'none')
            assert.equal(created, undefined, 'a location no tier takes gets no file');
          else assert.deepEqual([created?.tier, created?.mountPoint], [alone.tier, alone.mountPoint]);
        }
      }),
    );
  });

  it('tries another disk when creating a file fails, and marks the failed disk', () => {
    const harness = worker();
    const [create] = ofKind(reserve(harness), 'createFile');
    const retry = ofKind(harness.ioFailed(create!.op, 'IO_ERROR'), 'createFile');
    assert.equal(retry.length, 1);
    assert.notEqual(retry[0]!.file.mountPoint, create!.file.mountPoint);
    assert.equal(onlySent(harness.ioDone(retry[0]!.op), 'StatusResponse').message.status, 'SUCCESS');
    assert.equal(harness.state.diskProblems.get(create!.file.mountPoint), 'READ_OR_WRITE_FAILURE');
  });

  it('logs worker.disk.failed once when it marks a disk, naming the disk, the problem and the healthy disks left', () => {
    const harness = worker();
    const [create] = ofKind(reserve(harness), 'createFile');
    const failed = harness.ioFailed(create!.op, 'IO_ERROR');
    const lines = ofKind(failed, 'log').filter((line) => line.event === 'worker.disk.failed');
    assert.equal(lines.length, 1);
    assert.equal(lines[0]!.level, 'error');
    assert.equal(lines[0]!.fields?.disk, create!.file.mountPoint);
    assert.equal(lines[0]!.fields?.problem, 'READ_OR_WRITE_FAILURE');
    assert.equal(lines[0]!.fields?.healthyDisks, Number(lines[0]!.fields?.disks) - 1);
    // The retry goes to the other disk; when it fails too, no healthy disk is left, and the line says so.
    const [retry] = ofKind(failed, 'createFile');
    const second = ofKind(harness.ioFailed(retry!.op, 'IO_ERROR'), 'log').filter(
      (line) => line.event === 'worker.disk.failed',
    );
    assert.equal(second.length, 1);
    assert.equal(second[0]!.fields?.disk, retry!.file.mountPoint);
    assert.equal(second[0]!.fields?.healthyDisks, 0);
  });

  it('does not mark a disk when the process ran out of file descriptors (NO_DESCRIPTORS)', () => {
    const harness = worker();
    const [create] = ofKind(reserve(harness), 'createFile');
    const retry = ofKind(harness.ioFailed(create!.op, 'NO_DESCRIPTORS'), 'createFile');
    assert.equal(retry.length, 1, 'the create is tried again');
    assert.equal(onlySent(harness.ioDone(retry[0]!.op), 'StatusResponse').message.status, 'SUCCESS');
    assert.equal(harness.state.diskProblems.size, 0, 'no disk is charged with the process’s limit');

    // The planted bug the simulator must catch (sim/invariants/disk-charges.ts) charges it like an I/O error.
    const planted = worker({ plantedBug: 'descriptors-charged-to-disk' });
    const [plantedCreate] = ofKind(reserve(planted), 'createFile');
    const marked = ofKind(planted.ioFailed(plantedCreate!.op, 'NO_DESCRIPTORS'), 'log').filter(
      (line) => line.event === 'worker.disk.failed',
    );
    assert.equal(marked.length, 1);
    assert.equal(planted.state.diskProblems.get(plantedCreate!.file.mountPoint), 'READ_OR_WRITE_FAILURE');
  });

  it('deletes a leftover file it has no record of (a crash forgot it) and creates the location again', () => {
    // Swarm seed 637959: a worker crashed between creating a file and committing it; the name came back with every
    // later registration of the shuffle and failed on EXISTS forever.
    const harness = worker({ createFileMaxAttempts: 1 });
    const [create] = ofKind(reserve(harness), 'createFile');
    const effects = harness.ioFailed(create!.op, 'EXISTS');
    assert.deepEqual(
      effects.map((effect) => effect.kind),
      ['log', 'log', 'deleteFile', 'createFile'],
      'the leftover is deleted before the create, in that order',
    );
    const [again] = ofKind(effects, 'createFile');
    assert.equal(ofKind(effects, 'deleteFile')[0]!.file.id, create!.file.id);
    assert.deepEqual(again!.file, create!.file);
    assert.equal(onlySent(harness.ioDone(again!.op), 'StatusResponse').message.status, 'SUCCESS');
    assert.equal(harness.state.shuffles.get(KEY)?.files.size, 1);
  });

  it('deletes a leftover once: a file that exists again fails the location', () => {
    const harness = worker({ createFileMaxAttempts: 1 });
    const [create] = ofKind(reserve(harness), 'createFile');
    const [again] = ofKind(harness.ioFailed(create!.op, 'EXISTS'), 'createFile');
    const effects = harness.ioFailed(again!.op, 'EXISTS');
    assert.equal(ofKind(effects, 'deleteFile').length, 0);
    assert.equal(onlySent(effects, 'StatusResponse').message.status, 'RESERVE_SLOTS_FAILED');
  });

  it('never deletes a file another reservation of the same name is creating or has created', () => {
    for (const firstDone of [false, true]) {
      const harness = worker();
      const [first] = ofKind(ioOps(reserve(harness, { primaries: [0, 1] })), 'createFile');
      if (firstDone) harness.ioDone(first!.op);
      // The same request again (a duplicated message) while the first is still under way.
      const [duplicate] = ofKind(ioOps(reserve(harness, { primaries: [0] })), 'createFile');
      const effects = harness.ioFailed(duplicate!.op, 'EXISTS');
      assert.equal(ofKind(effects, 'deleteFile').length, 0, `first create done: ${firstDone}`);
      assert.equal(onlySent(effects, 'StatusResponse').message.status, 'RESERVE_SLOTS_FAILED');
    }
  });

  it('answers RESERVE_SLOTS_FAILED and deletes what it created when a location gets no file', () => {
    const harness = worker({ createFileMaxAttempts: 1 });
    const [first, second] = ofKind(ioOps(reserve(harness, { primaries: [0, 1] })), 'createFile');
    harness.ioDone(first!.op);
    const effects = harness.ioFailed(second!.op, 'NO_SPACE');
    assert.equal(onlySent(effects, 'StatusResponse').message.status, 'RESERVE_SLOTS_FAILED');
    assert.deepEqual(
      ofKind(effects, 'deleteFile').map((d) => d.file.id),
      [first!.file.id],
    );
    assert.equal(harness.state.shuffles.has(KEY), false);
  });

  it('refuses a location that names another worker', () => {
    const harness = worker();
    const effects = harness.receive(
      CLIENT,
      {
        type: 'ReserveSlots',
        appId: 'app',
        shuffleId: 1,
        primaries: [location(0, 0, 'PRIMARY', PEER)],
        replicas: [],
        splitThreshold: 1,
        splitMode: 'SOFT',
        memoryEnabled: false,
      },
      { requestId: 1 },
    );
    assert.equal(onlySent(effects, 'StatusResponse').message.status, 'RESERVE_SLOTS_FAILED');
  });

  it('keeps an old client out of memory with the guard on, and lets it in (and says so) with the guard off', () => {
    // Contract rule 4: a client before 0.6.0 revives onto MEMORY with mask 0, which permits every tier.
    const memory = { capacityBytes: 1024 ** 3, maxFileBytes: 8 * 1024 ** 2, evictRatio: 0.5 };
    const revived = location(3, 1, 'PRIMARY', SELF, {
      storage: { type: 'MEMORY', mountPoint: '', availableTypes: 0 },
    });
    const send = (harness: Harness<WorkerMachineState>) =>
      harness.receive(
        CLIENT,
        {
          type: 'ReserveSlots',
          appId: 'app',
          shuffleId: 1,
          primaries: [revived],
          replicas: [],
          splitThreshold: 1,
          splitMode: 'SOFT',
          memoryEnabled: false,
        },
        { requestId: 1 },
      );

    const open = worker({ memory: { ...memory, refuseImplicitMemory: false } });
    const openEffects = send(open);
    assert.equal(ofKind(openEffects, 'createFile')[0]!.file.tier, 'MEMORY');
    assert.ok(
      metricNames(openEffects).includes('ImplicitMemoryFileCount'),
      "metricNames(openEffects).includes('ImplicitMemoryFileCount')",
    );

    const guarded = worker({ memory: { ...memory, refuseImplicitMemory: true } });
    assert.equal(ofKind(send(guarded), 'createFile')[0]!.file.tier, 'HDD');
  });
});

describe('worker: PushData', () => {
  it('writes and forwards to the replica at once, and answers only after both (either order)', () => {
    for (const replicaFirst of [true, false]) {
      const harness = worker();
      reserved(harness, { peer: true });
      const effects = harness.receive(MAPPER, pushData(KEY, 0, 0, 'PRIMARY'), { requestId: 9 });
      const [write] = writesOf(effects);
      const forward = onlySent(effects, 'PushData');
      assert.equal(forward.to, workerKey(PEER));
      assert.equal(forward.message.mode, 'REPLICA');
      assert.ok(write, 'the local write starts with the forward');
      const ack = () =>
        harness.receive(
          workerKey(PEER),
          { type: 'PushDataResponse', status: 'SUCCESS', message: '' },
          { inReplyTo: forward.requestId! },
        );
      const first = replicaFirst ? ack() : harness.ioDone(write.op);
      assert.equal(sentOf(first, 'PushDataResponse').length, 0, 'no answer while one copy is outstanding');
      const second = replicaFirst ? harness.ioDone(write.op) : ack();
      const answer = onlySent(second, 'PushDataResponse');
      assert.equal(answer.message.status, 'SUCCESS');
      assert.equal(answer.to, MAPPER);
      assert.equal(answer.inReplyTo, 9);
    }
  });

  it('answers PUSH_DATA_WRITE_FAIL_PRIMARY when the local write fails, and refuses later pushes to the file', () => {
    const harness = worker();
    reserved(harness);
    const [write] = writesOf(harness.receive(MAPPER, pushData(KEY, 0, 0, 'PRIMARY'), { requestId: 1 }));
    const failed = harness.ioFailed(write!.op, 'IO_ERROR');
    assert.equal(onlySent(failed, 'PushDataResponse').message.status, 'PUSH_DATA_WRITE_FAIL_PRIMARY');
    assert.ok(
      metricNames(failed).includes('WriteDataFailCount'),
      "metricNames(failed).includes('WriteDataFailCount')",
    );
    const later = harness.receive(MAPPER, pushData(KEY, 0, 0, 'PRIMARY', { batchId: 1 }), { requestId: 2 });
    assert.equal(onlySent(later, 'PushDataResponse').message.status, 'PUSH_DATA_WRITE_FAIL_PRIMARY');
    assert.equal(writesOf(later).length, 0);
  });

  it('fails the queued writes of a file with the failed one, so no acknowledged batch follows a torn one', () => {
    const harness = worker();
    reserved(harness);
    const first = writesOf(harness.receive(MAPPER, pushData(KEY, 0, 0, 'PRIMARY'), { requestId: 1 }));
    const second = harness.receive(MAPPER, pushData(KEY, 0, 0, 'PRIMARY', { batchId: 1 }), { requestId: 2 });
    assert.equal(writesOf(second).length, 0, 'one write at a time per file');
    const failed = harness.ioFailed(first[0]!.op);
    assert.deepEqual(
      sentOf(failed, 'PushDataResponse').map((r) => [r.inReplyTo, r.message.status]),
      [
        [1, 'PUSH_DATA_WRITE_FAIL_PRIMARY'],
        [2, 'PUSH_DATA_WRITE_FAIL_PRIMARY'],
      ],
    );
  });

  it('maps each replica failure to its REPLICA cause', () => {
    const cases: {
      name: string;
      act: (h: Harness<WorkerMachineState>, requestId: number) => Effect[];
      status: string;
      metric: string;
    }[] = [
      {
        name: 'timeout',
        act: (h, requestId) => h.timer(`req:${requestId}`, h.now + 120_000),
        status: 'PUSH_DATA_TIMEOUT_REPLICA',
        metric: 'ReplicateDataTimeoutCount',
      },
      {
        name: 'unreachable',
        act: (h, requestId) =>
          h.step({
            kind: 'sendFailed',
            to: workerKey(PEER),
            requestId,
            message: pushData(KEY, 0, 0, 'REPLICA'),
          }),
        status: 'PUSH_DATA_CREATE_CONNECTION_FAIL_REPLICA',
        metric: 'ReplicateDataCreateConnectionFailCount',
      },
      {
        name: 'replica write failed',
        act: (h, requestId) =>
          h.receive(
            workerKey(PEER),
            { type: 'PushDataResponse', status: 'PUSH_DATA_WRITE_FAIL_REPLICA', message: 'disk' },
            { inReplyTo: requestId },
          ),
        status: 'PUSH_DATA_WRITE_FAIL_REPLICA',
        metric: 'ReplicateDataWriteFailCount',
      },
      {
        name: 'replica lost the location',
        act: (h, requestId) =>
          h.receive(
            workerKey(PEER),
            { type: 'PushDataResponse', status: 'PUSH_DATA_FAIL_PARTITION_NOT_FOUND', message: '' },
            { inReplyTo: requestId },
          ),
        status: 'PUSH_DATA_FAIL_NON_CRITICAL_CAUSE_REPLICA',
        metric: 'ReplicateDataFailNonCriticalCauseCount',
      },
    ];
    for (const { name, act, status, metric } of cases) {
      const harness = worker();
      reserved(harness, { peer: true });
      const effects = harness.receive(MAPPER, pushData(KEY, 0, 0, 'PRIMARY'), { requestId: 3 });
      harness.ioDone(writesOf(effects)[0]!.op);
      const result = act(harness, onlySent(effects, 'PushData').requestId!);
      assert.equal(onlySent(result, 'PushDataResponse').message.status, status, name);
      assert.ok(metricNames(result).includes(metric), `${name}: ${metric}`);
      assert.ok(metricNames(result).includes('ReplicateDataFailCount'), name);
    }
  });

  it('fast-fails pushes for a peer it could not reach, without writing, until the window passes', () => {
    const harness = worker();
    reserved(harness, { peer: true });
    const first = harness.receive(MAPPER, pushData(KEY, 0, 0, 'PRIMARY'), { requestId: 1 });
    harness.ioDone(writesOf(first)[0]!.op);
    harness.step({
      kind: 'sendFailed',
      to: workerKey(PEER),
      requestId: onlySent(first, 'PushData').requestId!,
      message: pushData(KEY, 0, 0, 'REPLICA'),
    });
    harness.now += 59_999;
    const fast = harness.receive(MAPPER, pushData(KEY, 0, 0, 'PRIMARY', { batchId: 1 }), { requestId: 2 });
    assert.equal(
      onlySent(fast, 'PushDataResponse').message.status,
      'PUSH_DATA_CREATE_CONNECTION_FAIL_REPLICA',
    );
    assert.equal(writesOf(fast).length, 0);
    assert.equal(sentOf(fast, 'PushData').length, 0);
    harness.now += 1;
    const again = harness.receive(MAPPER, pushData(KEY, 0, 0, 'PRIMARY', { batchId: 2 }), { requestId: 3 });
    assert.equal(sentOf(again, 'PushData').length, 1, 'the peer is tried again once the window has passed');
  });

  it('answers CONNECTION_EXCEPTION for a forward whose open connection closed, and marks nothing', () => {
    const harness = worker();
    reserved(harness, { peer: true });
    const first = harness.receive(MAPPER, pushData(KEY, 0, 0, 'PRIMARY'), { requestId: 1 });
    harness.ioDone(writesOf(first)[0]!.op);
    const lost = harness.step({
      kind: 'sendFailed',
      to: workerKey(PEER),
      requestId: onlySent(first, 'PushData').requestId!,
      message: pushData(KEY, 0, 0, 'REPLICA'),
      sent: true,
    });
    assert.equal(
      onlySent(lost, 'PushDataResponse').message.status,
      'PUSH_DATA_CONNECTION_EXCEPTION_REPLICA',
      'the peer was reached: the connection broke, it was not refused',
    );
    assert.ok(
      metricNames(lost).includes('ReplicateDataConnectionExceptionCount'),
      'counted as a connection exception',
    );
    const next = harness.receive(MAPPER, pushData(KEY, 0, 0, 'PRIMARY', { batchId: 1 }), { requestId: 2 });
    assert.equal(sentOf(next, 'PushData').length, 1, 'the next push is forwarded: no fast-fail window');
  });

  it('connects to a marked peer again once a new reserve places a replica there (a restarted peer is back)', () => {
    const harness = worker();
    reserved(harness, { peer: true });
    const first = harness.receive(MAPPER, pushData(KEY, 0, 0, 'PRIMARY'), { requestId: 1 });
    harness.ioDone(writesOf(first)[0]!.op);
    harness.step({
      kind: 'sendFailed',
      to: workerKey(PEER),
      requestId: onlySent(first, 'PushData').requestId!,
      message: pushData(KEY, 0, 0, 'REPLICA'),
    });
    harness.now += 5_000;
    const unrelated = harness.receive(
      CLIENT,
      { ...reserveOf(3, [location(0, 0, 'PRIMARY', SELF)]) },
      { requestId: 78 },
    );
    harness.completeIo(unrelated);
    const stillFast = harness.receive(MAPPER, pushData(KEY, 0, 0, 'PRIMARY', { batchId: 1 }), {
      requestId: 2,
    });
    assert.equal(
      onlySent(stillFast, 'PushDataResponse').message.status,
      'PUSH_DATA_CREATE_CONNECTION_FAIL_REPLICA',
      'a reserve that does not place the peer lifts nothing',
    );
    const placed = harness.receive(
      CLIENT,
      { ...reserveOf(2, [location(0, 0, 'PRIMARY', SELF, { peer: PEER })]) },
      { requestId: 79 },
    );
    const retried = placed.filter((e) => e.kind === 'log' && e.event === 'worker.replicate.peerRetried');
    assert.equal(retried.length, 1);
    harness.completeIo(placed);
    const again = harness.receive(MAPPER, pushData(KEY, 0, 0, 'PRIMARY', { batchId: 2 }), { requestId: 3 });
    assert.equal(sentOf(again, 'PushData').length, 1, 'the peer is tried again within the window');
  });

  it('writes a REPLICA push locally and answers without forwarding it', () => {
    const harness = worker();
    reserved(harness, { primaries: [], replicas: [0] });
    const effects = harness.receive(workerKey(PEER), pushData(KEY, 0, 0, 'REPLICA'), { requestId: 4 });
    assert.equal(sentOf(effects, 'PushData').length, 0);
    const done = harness.ioDone(writesOf(effects)[0]!.op);
    assert.equal(onlySent(done, 'PushDataResponse').message.status, 'SUCCESS');
    assert.equal(onlySent(done, 'PushDataResponse').to, workerKey(PEER));
  });

  it('refuses a damaged batch (CRC mismatch) without writing it', () => {
    const harness = worker();
    reserved(harness);
    const push = pushData(KEY, 0, 0, 'PRIMARY');
    const damaged = push.payload.slice();
    damaged[damaged.length - 1]! ^= 0xff;
    const effects = harness.receive(MAPPER, { ...push, payload: damaged }, { requestId: 1 });
    const answer = onlySent(effects, 'PushDataResponse');
    assert.equal(answer.message.status, 'PUSH_DATA_FAIL_NON_CRITICAL_CAUSE_PRIMARY');
    assert.match(answer.message.message, /CRC/);
    assert.equal(writesOf(effects).length, 0);
  });

  it('answers pushes to unknown locations with the reference rules', () => {
    const harness = worker();
    const unknownShuffle = harness.receive(MAPPER, pushData('other-3', 0, 0, 'PRIMARY'), { requestId: 1 });
    assert.equal(
      onlySent(unknownShuffle, 'PushDataResponse').message.status,
      'PUSH_DATA_FAIL_PARTITION_NOT_FOUND',
    );
    reserved(harness);
    const unknownEpoch = harness.receive(MAPPER, pushData(KEY, 0, 5, 'PRIMARY'), { requestId: 2 });
    assert.equal(onlySent(unknownEpoch, 'PushDataResponse').message.status, 'HARD_SPLIT');
    // After the commit the worker knows which maps ended: map 0 did, map 1 had no winner.
    const commit = harness.receive(CLIENT, commitFiles(['0-0'], [0, -1]), { requestId: 3 });
    harness.completeIo(commit);
    const ended = harness.receive(MAPPER, pushData(KEY, 0, 0, 'PRIMARY', { mapId: 0 }), { requestId: 4 });
    assert.equal(onlySent(ended, 'PushDataResponse').message.status, 'MAP_ENDED');
    const running = harness.receive(MAPPER, pushData(KEY, 0, 0, 'PRIMARY', { mapId: 1 }), { requestId: 5 });
    assert.equal(onlySent(running, 'PushDataResponse').message.status, 'HARD_SPLIT');
  });

  it('asks for a soft split past the client threshold, and still writes the batch', () => {
    const harness = worker();
    reserved(harness, { splitThreshold: 100 });
    const first = harness.receive(MAPPER, pushData(KEY, 0, 0, 'PRIMARY', { size: 200 }), { requestId: 1 });
    assert.equal(
      onlySent(harness.ioDone(writesOf(first)[0]!.op), 'PushDataResponse').message.status,
      'SUCCESS',
    );
    const second = harness.receive(MAPPER, pushData(KEY, 0, 0, 'PRIMARY', { batchId: 1 }), { requestId: 2 });
    assert.equal(writesOf(second).length, 1);
    assert.equal(
      onlySent(harness.ioDone(writesOf(second)[0]!.op), 'PushDataResponse').message.status,
      'SOFT_SPLIT',
    );
  });

  it('evicts a memory file to disk before a write would take it past the memory file limit', () => {
    const harness = worker({
      memory: { capacityBytes: 1024 * 1024, maxFileBytes: 100, evictRatio: 0.9, refuseImplicitMemory: false },
    });
    const effects = harness.receive(
      CLIENT,
      {
        type: 'ReserveSlots',
        appId: 'app',
        shuffleId: 1,
        primaries: [
          location(0, 0, 'PRIMARY', SELF, { storage: { type: 'HDD', mountPoint: '', availableTypes: 3 } }),
        ],
        replicas: [],
        splitThreshold: 1024 ** 3,
        splitMode: 'SOFT',
        memoryEnabled: true,
      },
      { requestId: 1 },
    );
    assert.equal(ofKind(effects, 'createFile')[0]!.file.tier, 'MEMORY');
    harness.completeIo(effects);
    const push = harness.receive(MAPPER, pushData(KEY, 0, 0, 'PRIMARY', { size: 80 }), { requestId: 2 });
    const [move] = ofKind(push, 'moveFile');
    assert.ok(move, 'the file moves before the write');
    assert.equal(move.to.tier, 'HDD');
    assert.equal(writesOf(push).length, 0);
    const afterMove = harness.ioDone(move.op);
    assert.equal(writesOf(afterMove)[0]!.file.tier, 'HDD');
    assert.ok(
      metricNames(afterMove).includes('EvictedFileCount'),
      "metricNames(afterMove).includes('EvictedFileCount')",
    );
  });
});

describe('worker: DestroySlots', () => {
  it('deletes the listed files, answers the pushes waiting on them, and succeeds again when repeated', () => {
    const harness = worker();
    reserved(harness, { primaries: [0, 1] });
    const push = harness.receive(MAPPER, pushData(KEY, 0, 0, 'PRIMARY'), { requestId: 5 });
    assert.equal(writesOf(push).length, 1);
    const destroy = {
      type: 'DestroySlots',
      appId: 'app',
      shuffleId: 1,
      primaryIds: ['0-0'],
      replicaIds: [],
    } as const;
    const effects = harness.receive(CLIENT, destroy, { requestId: 6 });
    assert.equal(ofKind(effects, 'deleteFile').length, 1);
    assert.equal(onlySent(effects, 'PushDataResponse').message.status, 'PUSH_DATA_FAIL_PARTITION_NOT_FOUND');
    assert.equal(onlySent(effects, 'StatusResponse').message.status, 'SUCCESS');
    assert.deepEqual([...harness.state.shuffles.get(KEY)!.files.keys()], ['1-0-0']);
    assert.equal(
      sentOf(harness.ioDone(writesOf(push)[0]!.op), 'PushDataResponse').length,
      0,
      'answered once',
    );
    const again = harness.receive(CLIENT, destroy, { requestId: 7 });
    assert.equal(onlySent(again, 'StatusResponse').message.status, 'SUCCESS');
    assert.equal(ofKind(again, 'deleteFile').length, 0);
  });
});

describe('worker: shuffle records', () => {
  // One shape from reserve to the last destroy (core/machines/worker/files.ts shuffleRecord): a record that gained
  // a field at its commit took another V8 map, and the push path's optimised code was thrown away at the commit.
  const SHAPE = [
    'appId',
    'shuffleId',
    'splitThreshold',
    'splitMode',
    'memoryEnabled',
    'user',
    'files',
    'mapAttempts',
  ];
  const keysOf = (harness: Harness<WorkerMachineState>) => Object.keys(harness.state.shuffles.get(KEY)!);

  it('keep one set of fields in one order, with or without a user, reserved, committed and partly destroyed', () => {
    for (const user of [undefined, 'alice']) {
      const harness = worker();
      const effects = harness.receive(
        CLIENT,
        {
          ...reserveOf(1, [location(0, 0, 'PRIMARY', SELF), location(1, 0, 'PRIMARY', SELF)]),
          ...(user && { user }),
        },
        { requestId: 77 },
      );
      harness.completeIo(effects);
      assert.deepEqual(keysOf(harness), SHAPE, `reserved (user ${user})`);
      assert.equal(harness.state.shuffles.get(KEY)!.user?.name, user);
      harness.completeIo(harness.receive(CLIENT, commitFiles(['0-0'], [0]), { requestId: 78 }));
      assert.deepEqual(harness.state.shuffles.get(KEY)!.mapAttempts, [0], 'the commit recorded the attempts');
      assert.deepEqual(keysOf(harness), SHAPE, `committed (user ${user})`);
      const destroy = {
        type: 'DestroySlots',
        appId: 'app',
        shuffleId: 1,
        primaryIds: ['1-0'],
        replicaIds: [],
      } as const;
      harness.receive(CLIENT, destroy, { requestId: 79 });
      assert.equal(harness.state.shuffles.get(KEY)!.files.size, 1, 'one file destroyed, one left');
      assert.deepEqual(keysOf(harness), SHAPE, `partly destroyed (user ${user})`);
    }
  });
});

describe('worker: the recovery record', () => {
  /** The recovery store a worker leaves after committing partition 0-0 of a shuffle reserved with `user`. */
  function storeAfterCommit(user: { user?: string; tenant?: string }): Map<string, string> {
    const harness = worker();
    harness.completeIo(
      harness.receive(
        CLIENT,
        { ...reserveOf(1, [location(0, 0, 'PRIMARY', SELF)]), ...user },
        { requestId: 77 },
      ),
    );
    harness.completeIo(
      harness.receive(MAPPER, pushData(KEY, 0, 0, 'PRIMARY', { size: 32 }), { requestId: 78 }),
    );
    harness.completeIo(harness.receive(CLIENT, commitFiles(['0-0'], [0]), { requestId: 79 }));
    const store = recoveryStore(harness.all);
    assert.equal(store.size, 1, 'the commit persisted the shuffle');
    return store;
  }

  function restartedFrom(store: ReadonlyMap<string, string>) {
    const harness = new Harness(workerMachine, initialWorkerState(testWorkerConfig(SELF)));
    harness.start(store);
    return harness.state.shuffles.get(KEY);
  }

  it("keeps the shuffle's user and tenant, so a restarted worker counts the shuffle in the usage per user", () => {
    const restored = restartedFrom(storeAfterCommit({ user: 'alice', tenant: 'analytics' }));
    assert.ok(restored !== undefined, 'the shuffle was restored');
    assert.deepEqual(restored.user, { name: 'alice', tenant: 'analytics' });
    assert.deepEqual(restartedFrom(storeAfterCommit({ user: 'bob' }))?.user, { name: 'bob' });
  });

  it('reads a record without a user (a client naming none, or a record of an earlier release) as before', () => {
    const store = storeAfterCommit({});
    const [key, text] = [...store][0]!;
    assert.equal((JSON.parse(text) as Record<string, unknown>).user, undefined, 'no user written');
    const restored = restartedFrom(store);
    assert.ok(restored !== undefined && restored.files.size === 1, 'the shuffle and its file were restored');
    assert.equal(restored.user, undefined);
    const record = JSON.parse(storeAfterCommit({ user: 'alice' }).get(key)!) as Record<string, unknown>;
    assert.ok(decodeShuffleRecord(key, JSON.stringify({ ...record, user: undefined })).ok, 'an older record');
  });

  it('refuses a record whose user is malformed, naming the key', () => {
    const [key, text] = [...storeAfterCommit({ user: 'alice' })][0]!;
    for (const user of ['alice', { tenant: 'analytics' }, { name: 7 }, { name: 'alice', tenant: 1 }, null]) {
      const decoded = decodeShuffleRecord(key, JSON.stringify({ ...(JSON.parse(text) as object), user }));
      assert.ok(!decoded.ok && decoded.error.includes(key), `user ${JSON.stringify(user)} refused`);
    }
  });
});

describe('worker: chunk offsets', () => {
  it('are batch boundaries from 0 to the file length, each chunk but the last at least the chunk size', () => {
    fc.assert(
      fc.property(
        fc.array(fc.integer({ min: 1, max: 50 }), { maxLength: 30 }),
        fc.integer({ min: 1, max: 200 }),
        (sizes, chunkSize) => {
          const harness = worker({ chunkSizeBytes: chunkSize });
          reserved(harness);
          const boundaries = new Set<number>([0]);
          let total = 0;
          sizes.forEach((size, batchId) => {
            const effects = harness.receive(MAPPER, pushData(KEY, 0, 0, 'PRIMARY', { batchId, size }), {
              requestId: batchId + 1,
            });
            const [write] = writesOf(effects);
            total += write!.bytes.length;
            boundaries.add(total);
            harness.ioDone(write!.op);
          });
          const commit = harness.receive(CLIENT, commitFiles(['0-0'], [0]), { requestId: 999 });
          const answer = onlySent(harness.completeIo(commit), 'CommitFilesResponse');
          const [file] = answer.message.committedPrimaries;
          const offsets = file!.chunkOffsets;
          assert.equal(file!.bytes, total);
          assert.equal(offsets[0], 0);
          assert.equal(offsets[offsets.length - 1], total);
          for (let i = 1; i < offsets.length; i += 1) {
            assert.ok(offsets[i]! > offsets[i - 1]!, 'strictly increasing');
            assert.ok(boundaries.has(offsets[i]!), 'a batch boundary');
            if (i < offsets.length - 1) assert.ok(offsets[i]! - offsets[i - 1]! >= chunkSize, 'full chunk');
          }
        },
      ),
      { numRuns: 60 },
    );
  });
});
