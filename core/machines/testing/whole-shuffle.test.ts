import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import fc from 'fast-check';
import { workerKey, type WorkerId } from '../../domain/index.ts';
import type { GetReducerFileGroupResponse } from '../../protocol/messages.ts';
import {
  lifecycleManagerNodeId,
  mapTaskNodeId,
  masterNodeId,
  reduceTaskNodeId,
} from '../../protocol/node-ids.ts';
import { CURRENT_RELEASE } from '../../release/version.ts';
import {
  initialMapTaskState,
  mapTaskWritingAll,
  type MapTaskConfig,
  type MapTaskState,
} from '../client/map-task.ts';
import { initialReduceTaskState, reduceTaskMachine } from '../client/reduce-task.ts';
import { ReduceConsumer } from './reduce-consumer.ts';
import { initialLifecycleManagerState, lifecycleManagerMachine } from '../lifecycle-manager/index.ts';
import { initialMasterState, masterMachine } from '../master/index.ts';
import { testMasterConfig } from '../master/testing.ts';
import { initialWorkerState, workerMachine } from '../worker/index.ts';
import { testWorkerConfig } from '../worker/testing.ts';
import { InMemoryCluster, type NodeHandle } from './in-memory-cluster.ts';
import { testLifecycleManagerConfig } from '../lifecycle-manager/testing.ts';

/**
 * The whole shuffle, driven by messages alone (issue 3 §6): a master, four workers, a lifecycle manager, map tasks
 * (one map with two attempts) and reduce tasks, all real machines in the in-memory cluster: register, push,
 * replication, a replica write failure and its revive, splits, mapper end, commit, the reducers' file group, read.
 */

const APP = 'app-1';
const SHUFFLE = 0;
const MAPS = 4;
const PARTITIONS = 5;
const RECORDS_PER_PARTITION = 8;
const LM = lifecycleManagerNodeId(APP);

const workerId = (i: number): WorkerId => ({
  host: `10.0.0.${i + 1}`,
  rpcPort: 9097,
  pushPort: 9091,
  fetchPort: 9092,
  replicatePort: 9093,
});

/** Map m, attempt a writes `m<m>a<a>p<p>r<i>` (padded) to each partition p. */
function recordsOf(mapId: number, attemptId: number): string[][] {
  return Array.from({ length: PARTITIONS }, (_, p) =>
    Array.from({ length: RECORDS_PER_PARTITION }, (_, i) =>
      `m${mapId}a${attemptId}p${p}r${i}`.padEnd(24, '.'),
    ),
  );
}

interface Scenario {
  readonly replicate: boolean;
  readonly splitMode: 'SOFT' | 'HARD';
  /** A partition file splits once it holds this many bytes (about four frames). */
  readonly splitThresholdBytes: number;
  readonly stageRerunEnabled: boolean;
}

function buildCluster(scenario: Scenario, seed = 42) {
  const cluster = new InMemoryCluster({ seed });
  cluster.addNode(masterNodeId(), {
    machine: masterMachine,
    init: () => initialMasterState(testMasterConfig()),
  });
  const workers = Array.from({ length: 4 }, (_, i) =>
    cluster.addNode(workerKey(workerId(i)), {
      machine: workerMachine,
      init: () =>
        initialWorkerState(
          testWorkerConfig(workerId(i), {
            networkLocation: `/rack-${i % 2}`,
            chunkSizeBytes: 256,
          }),
        ),
    }),
  );
  const lmConfig = testLifecycleManagerConfig(APP, {
    replicate: scenario.replicate,
    rackAware: true,
    split: { thresholdBytes: scenario.splitThresholdBytes, mode: scenario.splitMode },
  });
  const lm = cluster.addNode(LM, {
    machine: lifecycleManagerMachine,
    init: () => initialLifecycleManagerState(lmConfig),
  });

  const mapConfig = (mapId: number, attemptId: number): MapTaskConfig => ({
    release: CURRENT_RELEASE,
    appId: APP,
    shuffleId: SHUFFLE,
    mapId,
    attemptId,
    numMappers: MAPS,
    numPartitions: PARTITIONS,
    lifecycleManager: LM,
    batchSizeBytes: 64,
    maxUnacknowledgedBytes: 1 << 20,
    mergeSizeBytes: 64,
    maxInFlightPerPartition: 3,
    maxReviveRetries: 5,
    pushTimeoutMs: 120_000,
    requestTimeoutMs: 60_000,
    maxRequestAttempts: 3,
    excludeWorkerOnFailure: false,
  });
  // Map 1 runs twice (a speculative attempt); whichever attempt ends first wins.
  const attempts: [number, number][] = [
    [0, 0],
    [1, 0],
    [1, 1],
    [2, 0],
    [3, 0],
  ];
  const maps = new Map<string, NodeHandle<MapTaskState>>();
  for (const [mapId, attemptId] of attempts) {
    maps.set(
      `${mapId}/${attemptId}`,
      cluster.addNode(mapTaskNodeId(APP, SHUFFLE, mapId, attemptId), {
        machine: mapTaskWritingAll(
          recordsOf(mapId, attemptId).map((rs) => rs.map((r) => new TextEncoder().encode(r))),
        ),
        init: () => initialMapTaskState(mapConfig(mapId, attemptId)),
      }),
    );
  }
  const reducers = Array.from({ length: PARTITIONS }, (_, partitionId) =>
    cluster.addNode(reduceTaskNodeId(APP, SHUFFLE, partitionId), {
      machine: reduceTaskMachine,
      init: () =>
        initialReduceTaskState({
          release: CURRENT_RELEASE,
          appId: APP,
          shuffleId: SHUFFLE,
          partitionId,
          lifecycleManager: LM,
          requestTimeoutMs: 60_000,
          maxRequestAttempts: 3,
          fileGroupRetryIntervalMs: 1_000,
          maxFileGroupAttempts: 10,
          fetchTimeoutMs: 30_000,
          maxChunksAhead: 2,
          stageRerunEnabled: scenario.stageRerunEnabled,
        }),
    }),
  );
  return { cluster, workers, lm, maps, reducers };
}

type Built = ReturnType<typeof buildCluster>;

/** Starts the servers, waits for every worker to register, then starts the application and its map tasks. */
function runMapStage({ cluster, lm, maps }: Built): void {
  cluster.start(masterNodeId());
  for (let i = 0; i < 4; i += 1) cluster.start(workerKey(workerId(i)));
  cluster.run({ maxTime: 1_000 });
  cluster.start(LM);
  for (const map of maps.values()) cluster.start(map.id);
  const result = cluster.run({
    until: () => {
      const phase = lm.state().shuffles.get(SHUFFLE)?.phase;
      return phase === 'committed' || phase === 'data-lost';
    },
    maxTime: 600_000,
  });
  assert.equal(result.end, 'condition', `the map stage did not end: ${JSON.stringify(mapPhases(maps))}`);
}

/** Runs the reducers to their end, consuming what they hand out; the records each consumer got, sorted. */
function runReducers({ cluster, reducers }: Built): string[][] {
  for (const reducer of reducers) cluster.start(reducer.id);
  const consumer = new ReduceConsumer(cluster);
  assert.ok(consumer.runToEnd(reducers, cluster.now + 600_000), 'the reducers did not finish');
  // Order across maps is no guarantee of the reader (reduce-task.ts): compare as sorted lists.
  return reducers.map((r) =>
    consumer
      .recordsOf(r.id)
      .map((record) => new TextDecoder().decode(record))
      .sort(),
  );
}

function mapPhases(maps: ReadonlyMap<string, NodeHandle<MapTaskState>>) {
  return [...maps].map(([key, map]) => [key, map.state().phase, map.state().error]);
}

function fileGroupOf({ lm }: Built): GetReducerFileGroupResponse {
  const fileGroup = lm.state().shuffles.get(SHUFFLE)?.fileGroup;
  assert.ok(fileGroup !== undefined, 'fileGroup !== undefined');
  return fileGroup;
}

describe('a whole shuffle through the machines', () => {
  for (const splitMode of ['SOFT', 'HARD'] as const) {
    it(`replicated, with a ${splitMode} split and a replica write failure: reducers get exactly the winners' records, once`, () => {
      const built = buildCluster({
        replicate: true,
        splitMode,
        splitThresholdBytes: 300,
        stageRerunEnabled: true,
      });
      const { cluster, maps, reducers } = built;
      // The first write to any replica file (`<partition>-<epoch>-1`) fails on its disk.
      cluster.failIo(({ effect }) => effect.kind === 'write' && effect.file.id.endsWith('-1'), 'IO_ERROR', 1);
      runMapStage(built);

      const group = fileGroupOf(built);
      assert.equal(group.status, 'SUCCESS', group.message);
      // Both attempts of map 1 ended; exactly one won, the other lost to it.
      const winner1 = group.mapAttempts[1]!;
      assert.ok(winner1 === 0 || winner1 === 1, 'winner1 === 0 || winner1 === 1');
      assert.equal(maps.get(`1/${winner1}`)!.state().phase, 'won');
      assert.equal(maps.get(`1/${1 - winner1}`)!.state().phase, 'lost');
      for (const mapId of [0, 2, 3]) assert.equal(maps.get(`${mapId}/0`)!.state().phase, 'won');

      // The replica failure was answered by a revive of the pair; the small threshold split partitions.
      const causes = cluster.deliveredOf('Revive').flatMap((e) => e.message.requests.map((r) => r.cause));
      assert.ok(causes.includes('PUSH_DATA_WRITE_FAIL_REPLICA'), `revive causes: ${causes.join(', ')}`);
      assert.ok(causes.includes(`${splitMode}_SPLIT`), `revive causes: ${causes.join(', ')}`);

      // Revived epochs are in the file group, and every epoch after 0 has both copies committed.
      const epochs = group.fileGroups.flatMap((g) => g.locations.map((l) => l.epoch));
      assert.ok(Math.max(...epochs) > 0, 'Math.max(...epochs) > 0');
      for (const g of group.fileGroups) {
        for (const epoch of new Set(g.locations.filter((l) => l.epoch > 0).map((l) => l.epoch))) {
          const copies = g.locations.filter((l) => l.epoch === epoch).map((l) => l.mode);
          assert.deepEqual(
            copies.sort(),
            ['PRIMARY', 'REPLICA'],
            `partition ${g.partitionId} epoch ${epoch}`,
          );
        }
        for (const location of g.locations) {
          if (location.peer !== undefined)
            assert.notEqual(workerKey(location.worker), workerKey(location.peer.worker));
        }
        assert.equal(g.files.length, g.locations.length);
      }

      const read = runReducers(built);
      for (const [partitionId, reducer] of reducers.entries()) {
        const state = reducer.state();
        assert.equal(state.phase, 'done', state.error?.message);
        const want = group.mapAttempts.flatMap(
          (attemptId, mapId) => recordsOf(mapId, attemptId)[partitionId]!,
        );
        assert.deepEqual(read[partitionId], [...want].sort(), `partition ${partitionId}`);
      }
      // Nothing went wrong on the client side, and no machine got a message it did not expect.
      const clientTrouble = cluster.logs.filter(
        (l) =>
          (l.level === 'error' &&
            (l.node === LM || l.node.startsWith('map-') || l.node.startsWith('reduce-'))) ||
          /not meant for|protocol error|unexpected/i.test(l.event),
      );
      assert.deepEqual(clientTrouble, []);
      // The losing attempt's batches and the batch resent after the replica failure were read and dropped.
      const reads = cluster.logs.filter((l) => l.event === 'partition read').map((l) => l.fields ?? {});
      assert.ok(
        reads.some((f) => Number(f['losingBatchesDropped']) > 0),
        "reads.some((f) => Number(f['losingBatchesDropped']) > 0)",
      );
      assert.ok(
        reads.some((f) => Number(f['duplicatesDropped']) > 0),
        "reads.some((f) => Number(f['duplicatesDropped']) > 0)",
      );
    });
  }

  it('without replication, a worker lost after the commit makes its reducers fail with the stage-rerun error', () => {
    const built = buildCluster({
      replicate: false,
      splitMode: 'SOFT',
      splitThresholdBytes: 1 << 30,
      stageRerunEnabled: true,
    });
    const { cluster, reducers } = built;
    runMapStage(built);
    const group = fileGroupOf(built);
    assert.equal(group.status, 'SUCCESS', group.message);
    const lost = group.fileGroups[0]!.locations[0]!.worker;
    cluster.crash(workerKey(lost));

    runReducers(built);
    assert.ok(
      reducers.some((r) => r.state().phase === 'failed'),
      "reducers.some((r) => r.state().phase === 'failed')",
    );
    for (const [partitionId, reducer] of reducers.entries()) {
      const state = reducer.state();
      const onLostWorker = group.fileGroups[partitionId]!.locations.some(
        (l) => workerKey(l.worker) === workerKey(lost),
      );
      if (!onLostWorker) {
        assert.equal(state.phase, 'done', state.error?.message);
        continue;
      }
      assert.equal(state.phase, 'failed');
      assert.equal(state.error?.kind, 'fetch-failure');
      assert.match(
        state.error?.message ?? '',
        /^FetchFailure for shuffle 0 partition \d+: no copy of epoch 0 could be read/,
      );
      assert.match(state.error?.message ?? '', /reruns the map stage/);
    }
  });

  it('property: any seed, a failed write on any copy and a lost push reply still give every reducer its records once', () => {
    fc.assert(
      fc.property(
        fc.integer({ min: 1, max: 1_000_000 }),
        fc.constantFrom('-0', '-1'),
        fc.nat(30),
        fc.nat(30),
        fc.constantFrom('SOFT' as const, 'HARD' as const),
        (seed, copySuffix, failAt, dropAt, splitMode) => {
          const built = buildCluster(
            { replicate: true, splitMode, splitThresholdBytes: 400, stageRerunEnabled: true },
            seed,
          );
          let writes = 0;
          built.cluster.failIo(
            ({ effect }) =>
              effect.kind === 'write' && effect.file.id.endsWith(copySuffix) && writes++ === failAt,
          );
          let replies = 0;
          built.cluster.dropMessages((e) => e.message.type === 'PushDataResponse' && replies++ === dropAt);
          runMapStage(built);
          assert.ok(
            writes <= failAt || built.cluster.logs.some((l) => l.event === 'worker.file.sealed'),
            "writes <= failAt || built.cluster.logs.some((l) => l.event === 'worker.file.sealed')",
          );
          assert.ok(
            replies <= dropAt || built.cluster.dropped.some((e) => e.message.type === 'PushDataResponse'),
            "replies <= dropAt || built.cluster.dropped.some((e) => e.message.type === 'PushDataResponse')",
          );
          const group = fileGroupOf(built);
          assert.equal(group.status, 'SUCCESS', group.message);
          const read = runReducers(built);
          for (const [partitionId, reducer] of built.reducers.entries()) {
            const state = reducer.state();
            assert.equal(state.phase, 'done', state.error?.message);
            const want = group.mapAttempts.flatMap(
              (attemptId, mapId) => recordsOf(mapId, attemptId)[partitionId]!,
            );
            assert.deepEqual(read[partitionId], [...want].sort());
          }
        },
      ),
      { numRuns: 25 },
    );
  });
});
