// The same job under the simulator and under the runtime gives the same record checksums: both drive the same core
// machines, configured by the same translation of the same keys (conf/machine-configs.ts), so the data a reader
// gets may not depend on the driver.
import assert from 'node:assert/strict';
import { crc32 } from 'node:zlib';
import { after, before, describe, it } from 'node:test';
import { resolveConfig } from '../conf/index.ts';
import {
  lifecycleManagerConfigFrom,
  mapTaskConfigFrom,
  masterConfigFrom,
  reduceTaskConfigFrom,
  workerConfigFrom,
} from '../conf/machine-configs.ts';
import type { WorkerId } from '../core/domain/index.ts';
import { workerKey } from '../core/domain/index.ts';
import { initialMapTaskState, mapTaskWritingAll } from '../core/machines/client/map-task.ts';
import {
  initialReduceTaskState,
  reduceTaskMachine,
  type ReduceTaskState,
} from '../core/machines/client/reduce-task.ts';
import {
  initialLifecycleManagerState,
  lifecycleManagerMachine,
} from '../core/machines/lifecycle-manager/index.ts';
import { initialMasterState, masterMachine } from '../core/machines/master/index.ts';
import { initialWorkerState, workerMachine } from '../core/machines/worker/index.ts';
import {
  lifecycleManagerNodeId,
  mapTaskNodeId,
  masterNodeId,
  reduceTaskNodeId,
} from '../core/protocol/node-ids.ts';
import { LocalCluster } from '../runtime/cluster/local-cluster.ts';
import { clientSide, recordsOf, type SmallJob } from '../runtime/testing/small-job.ts';
import { World } from '../sim/world/world.ts';
import { ReduceReading } from '../sim/workload/reduce-reading.ts';

const JOB: SmallJob = { maps: 3, partitions: 5, recordsPerPartition: 30, recordBytes: 100 };
const APP = 'app-same';
const CLIENT_CONF = { 'svc.client.push.replicate.enabled': 'true' };

/** Per partition: record count and an order-independent checksum (sum and xor of each record's CRC32). */
type Checksums = { records: number; sum: number; xor: number }[];

function checksums(partitions: readonly Iterable<Uint8Array>[]): Checksums {
  return partitions.map((records) => {
    let count = 0;
    let sum = 0;
    let xor = 0;
    for (const record of records) {
      const crc = crc32(record);
      count += 1;
      sum += crc;
      xor = (xor ^ crc) >>> 0;
    }
    return { records: count, sum, xor };
  });
}

function underSimulator(): Checksums {
  const world = new World({ seed: 7 });
  const server = (role: 'master' | 'worker') => resolveConfig({ role });
  const client = resolveConfig({ role: 'client', overrides: CLIENT_CONF });
  world.addNode({
    id: masterNodeId(),
    role: 'master',
    machine: masterMachine,
    initialState: () => initialMasterState(masterConfigFrom(server('master'), { dfs: false })),
  });
  world.schedule(0, 'start master', (w) => w.start(masterNodeId()));
  for (let i = 0; i < 3; i += 1) {
    const id: WorkerId = { host: `10.0.0.${i + 1}`, rpcPort: 1, pushPort: 2, fetchPort: 3, replicatePort: 4 };
    const disks = [{ mountPoint: '/disk1', type: 'HDD' as const, capacityBytes: 1 << 30 }];
    world.addNode({
      id: workerKey(id),
      role: 'worker',
      machine: workerMachine,
      disks,
      initialState: () =>
        initialWorkerState(
          workerConfigFrom(server('worker'), server('worker'), {
            id,
            master: masterNodeId(),
            networkLocation: '/default-rack',
            disks,
            distributed: [],
            memoryCapacityBytes: 0,
          }),
        ),
    });
    world.schedule(10 + i, 'start worker', (w) => w.start(workerKey(id)));
  }
  const lm = lifecycleManagerNodeId(APP);
  world.addNode({
    id: lm,
    role: 'lifecycle-manager',
    machine: lifecycleManagerMachine,
    initialState: () =>
      initialLifecycleManagerState(
        lifecycleManagerConfigFrom(client, { appId: APP, user: 'sim', master: masterNodeId() }),
      ),
  });
  world.schedule(1_000, 'start application', (w) => w.start(lm));
  for (let mapId = 0; mapId < JOB.maps; mapId += 1) {
    const id = mapTaskNodeId(APP, 0, mapId, 0);
    world.addNode({
      id,
      role: 'map',
      machine: mapTaskWritingAll(recordsOf(JOB, mapId, 0)),
      initialState: () =>
        initialMapTaskState(
          mapTaskConfigFrom(
            client,
            { shuffleId: 0, mapId, attemptId: 0 },
            { numMappers: JOB.maps, numPartitions: JOB.partitions },
            APP,
          ),
        ),
    });
    world.schedule(1_100, 'start map', (w) => w.start(id));
  }
  const reducers = Array.from({ length: JOB.partitions }, (_, partitionId) =>
    reduceTaskNodeId(APP, 0, partitionId),
  );
  reducers.forEach((id, partitionId) => {
    world.addNode({
      id,
      role: 'reduce',
      machine: reduceTaskMachine,
      initialState: () =>
        initialReduceTaskState(reduceTaskConfigFrom(client, { shuffleId: 0, partitionId }, APP)),
    });
    world.schedule(30_000, 'start reducer', (w) => w.start(id));
  });
  // The reducers' consumer, as the simulator's engine runs it: takes each chunk handed out, answers `consumed`.
  const reading = new ReduceReading();
  world.observe({
    onStep(node, _effects, w) {
      if (reducers.includes(node)) reading.afterStep(w, node, w.stateOf(node) as ReduceTaskState, 1);
    },
  });
  world.run({ until: 600_000, maxEvents: 2_000_000 });
  return checksums(
    reducers.map((id) => {
      const state = world.stateOf(id) as ReduceTaskState;
      assert.equal(state.phase, 'done', `${id} under the simulator: ${JSON.stringify(state.error)}`);
      return [...reading.recordsOf(id)];
    }),
  );
}

describe('the same job under the simulator and the runtime', () => {
  let cluster: LocalCluster;
  before(async () => {
    cluster = await LocalCluster.start({ workers: 3 });
  });
  after(async () => {
    await cluster?.stop();
  });

  it('gives every partition the same record checksums', async () => {
    const expected = checksums(
      Array.from({ length: JOB.partitions }, (_, p) =>
        Array.from({ length: JOB.maps }, (_, m) => recordsOf(JOB, m, 0)[p]!).flat(),
      ),
    );
    const simulated = underSimulator();
    assert.deepEqual(simulated, expected, 'the simulator’s readers got other records than the maps wrote');

    const client = await clientSide(cluster.masterUrl, { conf: CLIENT_CONF });
    try {
      const shuffle = client.executor.shuffle(0, { maps: JOB.maps, partitions: JOB.partitions });
      await Promise.all(
        Array.from({ length: JOB.maps }, async (_, mapId) => {
          const writer = shuffle.writer(mapId, 0);
          recordsOf(JOB, mapId, 0).forEach((records, p) => records.forEach((r) => writer.write(p, r)));
          await writer.close();
        }),
      );
      const read = await Promise.all(Array.from({ length: JOB.partitions }, (_, p) => shuffle.read(p)));
      assert.deepEqual(checksums(read), simulated);
    } finally {
      await client.close();
    }
  });
});
