import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import fc from 'fast-check';
import { shuffleKey, workerKey, type WorkerId } from '../../domain/index.ts';
import { registeredShuffleKeys } from '../../lifecycle/index.ts';
import { lifecycleManagerNodeId, mapTaskNodeId, masterNodeId } from '../../protocol/node-ids.ts';
import { CURRENT_RELEASE } from '../../release/version.ts';
import { initialMapTaskState, mapTaskWritingAll, type MapTaskState } from '../client/map-task.ts';
import { initialMasterState, masterMachine } from '../master/index.ts';
import { testMasterConfig } from '../master/testing.ts';
import { InMemoryCluster, type NodeHandle } from '../testing/in-memory-cluster.ts';
import { initialWorkerState, workerMachine } from '../worker/index.ts';
import { testWorkerConfig } from '../worker/testing.ts';
import { initialLifecycleManagerState, lifecycleManagerMachine } from './index.ts';
import { testLifecycleManagerConfig } from './testing.ts';

/**
 * Unregistering through the real machines (in-memory cluster): the driver's UnregisterShuffle or
 * UnregisterApplication reaches the lifecycle manager, which forwards it to the master; the master stops listing the
 * shuffle, and every worker deletes its files when its next heartbeat reply names the shuffle expired.
 */

const APP = 'app-1';
const LM = lifecycleManagerNodeId(APP);
const DRIVER = 'driver-app-1';
const WORKERS = 3;
const PARTITIONS = 4;
const WORKER_HEARTBEAT_MS = 30_000;

const workerId = (i: number): WorkerId => ({
  host: `10.0.0.${i + 1}`,
  rpcPort: 9097,
  pushPort: 9091,
  fetchPort: 9092,
  replicatePort: 9093,
});

function buildCluster(shuffles: readonly number[], seed: number) {
  const cluster = new InMemoryCluster({ seed });
  const master = cluster.addNode(masterNodeId(), {
    machine: masterMachine,
    init: () => initialMasterState(testMasterConfig()),
  });
  const workers = Array.from({ length: WORKERS }, (_, i) =>
    cluster.addNode(workerKey(workerId(i)), {
      machine: workerMachine,
      init: () =>
        initialWorkerState(testWorkerConfig(workerId(i), { heartbeatIntervalMs: WORKER_HEARTBEAT_MS })),
    }),
  );
  const lm = cluster.addNode(LM, {
    machine: lifecycleManagerMachine,
    init: () => initialLifecycleManagerState(testLifecycleManagerConfig(APP)),
  });
  // One map per shuffle: enough to register, write and commit every partition of it.
  const maps: NodeHandle<MapTaskState>[] = shuffles.map((shuffleId) =>
    cluster.addNode(mapTaskNodeId(APP, shuffleId, 0, 0), {
      machine: mapTaskWritingAll(
        Array.from({ length: PARTITIONS }, (_, p) => [
          new TextEncoder().encode(`s${shuffleId}p${p}`.padEnd(32, '.')),
        ]),
      ),
      init: () =>
        initialMapTaskState({
          release: CURRENT_RELEASE,
          appId: APP,
          shuffleId,
          mapId: 0,
          attemptId: 0,
          numMappers: 1,
          numPartitions: PARTITIONS,
          lifecycleManager: LM,
          batchSizeBytes: 64,
          maxUnacknowledgedBytes: 1 << 20,
          mergeSizeBytes: 64,
          maxInFlightPerPartition: 2,
          maxReviveRetries: 5,
          pushTimeoutMs: 120_000,
          requestTimeoutMs: 60_000,
          maxRequestAttempts: 3,
          excludeWorkerOnFailure: false,
        }),
    }),
  );
  const driver = cluster.addProbe(DRIVER);
  return { cluster, master, workers, lm, maps, driver };
}

type Built = ReturnType<typeof buildCluster>;

/** Starts the servers, then the application, and runs until every shuffle is committed. */
function commitAll(built: Built, shuffles: readonly number[]): void {
  const { cluster, workers, lm, maps } = built;
  cluster.start(masterNodeId());
  for (const worker of workers) cluster.start(worker.id);
  cluster.run({ maxTime: 1_000 });
  cluster.start(LM);
  for (const map of maps) cluster.start(map.id);
  const result = cluster.run({
    until: () => shuffles.every((id) => lm.state().shuffles.get(id)?.phase === 'committed'),
    maxTime: 300_000,
  });
  assert.equal(result.end, 'condition', 'every shuffle commits');
}

const registered = ({ master }: Built) => registeredShuffleKeys(master.state().durable.applications);

/** The files a worker holds for a shuffle (file ids are `<shuffleKey>/<fileName>`). */
function filesOf({ cluster, workers }: Built, shuffleId: number): string[] {
  const prefix = `${shuffleKey(APP, shuffleId)}/`;
  return workers.flatMap((w) => [...cluster.files(w.id).keys()].filter((id) => id.startsWith(prefix)));
}

function driverSends(
  built: Built,
  message: { type: 'UnregisterShuffle'; shuffleId: number } | { type: 'UnregisterApplication' },
  requestId: number,
): void {
  built.cluster.inject({ from: DRIVER, to: LM, message: { ...message, appId: APP }, requestId });
}

/** Long enough for the master to hear the unregister and for every worker to heartbeat once after it. */
function waitForRelease({ cluster }: Built): void {
  cluster.run({ maxTime: cluster.now + WORKER_HEARTBEAT_MS + 1_000 });
}

describe('unregister through the in-memory cluster', () => {
  it('releases an unregistered shuffle at the master and on every worker, and leaves the other alone', () => {
    const built = buildCluster([0, 1], 11);
    commitAll(built, [0, 1]);
    assert.deepEqual(registered(built), [shuffleKey(APP, 0), shuffleKey(APP, 1)]);
    assert.ok(filesOf(built, 0).length >= PARTITIONS * 2, 'primaries and replicas of shuffle 0 exist');

    driverSends(built, { type: 'UnregisterShuffle', shuffleId: 0 }, 1);
    waitForRelease(built);

    assert.deepEqual(registered(built), [shuffleKey(APP, 1)]);
    assert.deepEqual(filesOf(built, 0), [], 'every worker deleted the files of shuffle 0');
    assert.ok(filesOf(built, 1).length >= PARTITIONS * 2, 'shuffle 1 keeps its files');
    for (const worker of built.workers) {
      assert.equal(built.cluster.durable(worker.id).has(`shuffle/${shuffleKey(APP, 0)}`), false);
    }
    assert.deepEqual(
      built.driver.inbox.map((e) => [e.inReplyTo, e.message.type, 'status' in e.message && e.message.status]),
      [[1, 'StatusResponse', 'SUCCESS']],
    );
  });

  it('property: after the application is unregistered, the master holds nothing of it and no worker a file', () => {
    fc.assert(
      fc.property(fc.integer({ min: 1, max: 3 }), fc.integer({ min: 0, max: 1_000 }), (count, seed) => {
        const shuffles = Array.from({ length: count }, (_, i) => i);
        const built = buildCluster(shuffles, seed);
        commitAll(built, shuffles);
        const heartbeats = () => built.cluster.deliveredOf('ApplicationHeartbeat').length;
        driverSends(built, { type: 'UnregisterApplication' }, 1);
        built.cluster.run({ maxTime: built.cluster.now + 100 });
        const heartbeatsAtEnd = heartbeats();
        waitForRelease(built);
        assert.equal(built.master.state().durable.applications.apps.has(APP), false);
        for (const shuffleId of shuffles) assert.deepEqual(filesOf(built, shuffleId), []);
        assert.equal(heartbeats(), heartbeatsAtEnd, 'the application stopped heartbeating');
      }),
      { numRuns: 8 },
    );
  });
});
