import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import type { WorkerId } from '../core/domain/index.ts';
import { lifecycleManagerNodeId, masterNodeId } from '../core/protocol/node-ids.ts';
import { CURRENT_RELEASE, KNOWN_RELEASES, type Release } from '../core/release/version.ts';
import {
  availableTypesFrom,
  budgetModeFrom,
  clientAskTimeout,
  FILTER_EXCLUDED,
  lifecycleManagerConfigFrom,
  mapTaskConfigFrom,
  masterConfigFrom,
  readsKeyAt,
  reduceTaskConfigFrom,
  REFERENCE_CONSTANTS,
  refuseImplicitMemoryFrom,
  replicationFrom,
  stageRerunFrom,
  TIERS_KEY,
  tiersKeyAt,
  workerConfigFrom,
  workerMemoryLimitsFrom,
  type WorkerFacts,
} from './machine-configs.ts';
import type { Role } from './registry/spec.ts';
import { resolveConfig, type ResolvedConfig } from './resolve.ts';

function conf(release: Release, role: Role, overrides: Record<string, string> = {}): ResolvedConfig {
  const resolved = resolveConfig({ release, role, overrides });
  assert.deepEqual(
    resolved.errors.map((error) => error.message),
    [],
  );
  return resolved;
}

const ID: WorkerId = { host: 'w1', rpcPort: 1, pushPort: 2, fetchPort: 3, replicatePort: 4 };
const FACTS: WorkerFacts = {
  id: ID,
  master: masterNodeId(),
  networkLocation: '/rack-1',
  disks: [],
  distributed: ['HDFS'],
  memoryCapacityBytes: 1024,
};

const worker = (release: Release, overrides: Record<string, string> = {}, facts: Partial<WorkerFacts> = {}) =>
  workerConfigFrom(conf(release, 'worker', overrides), conf(CURRENT_RELEASE, 'worker', overrides), {
    ...FACTS,
    ...facts,
  });

const lifecycleManager = (release: Release, overrides: Record<string, string> = {}) =>
  lifecycleManagerConfigFrom(conf(release, 'client', overrides), {
    appId: 'app-1',
    user: 'alice',
    master: masterNodeId(),
  });

const mapTask = (release: Release, overrides: Record<string, string> = {}) =>
  mapTaskConfigFrom(
    conf(release, 'client', overrides),
    { shuffleId: 1, mapId: 2, attemptId: 3 },
    { numMappers: 4, numPartitions: 5 },
    'app-1',
  );

describe('masterConfigFrom', () => {
  it('takes the release from the configuration and the facts as given', () => {
    const master = masterConfigFrom(conf('0.5.1', 'master'), { dfs: true, plantedBug: 'replica-on-primary' });
    assert.equal(master.release, '0.5.1');
    assert.equal(master.exclusion.dfsConfigured, true);
    assert.equal(master.plantedBug, 'replica-on-primary');
    assert.equal('plantedBug' in masterConfigFrom(conf('0.5.1', 'master'), { dfs: false }), false);
  });

  it('reads the release’s defaults: extraSlots 2 and no minWorkers before 0.6.0', () => {
    const old = masterConfigFrom(conf('0.5.1', 'master'), { dfs: false });
    assert.equal(old.slots.extraSlots, 2);
    assert.equal(old.slots.minWorkers, undefined);
    const current = masterConfigFrom(conf('0.6.0', 'master'), { dfs: false });
    assert.equal(current.slots.extraSlots, 100);
    assert.equal(current.slots.minWorkers, 100);
  });

  it('leaves the partition size estimate unclamped and the workers unlimited before their keys', () => {
    const master = masterConfigFrom(conf('0.3.0', 'master'), { dfs: false });
    assert.equal(master.partitionSize.minSize, 1);
    assert.equal(master.partitionSize.maxSize, Number.MAX_SAFE_INTEGER);
    assert.equal(master.slots.maxWorkers, 10_000);
  });

  it('reads the policy, the heartbeat timeout and the reference’s unavailable-info check', () => {
    const master = masterConfigFrom(
      conf('0.6.0', 'master', {
        'svc.master.slot.assign.policy': 'loadaware',
        'svc.master.heartbeat.worker.timeout': '30s',
      }),
      { dfs: false },
    );
    assert.equal(master.slots.policy.name, 'LOADAWARE');
    assert.equal(master.workerHeartbeatTimeoutMs, 30_000);
    assert.equal(
      master.workerUnavailableInfo.checkIntervalMs,
      REFERENCE_CONSTANTS.workerUnavailableInfoCheckMs,
    );
  });

  it('takes the budget mode from svc.master.slot.assign.budgetMode unless the facts give one', () => {
    assert.equal(masterConfigFrom(conf('0.6.0', 'master'), { dfs: false }).slots.budgetMode, 'overcommit');
    const strict = conf('0.6.0', 'master', { 'svc.master.slot.assign.budgetMode': 'STRICT' });
    assert.equal(budgetModeFrom(strict), 'strict');
    assert.equal(masterConfigFrom(strict, { dfs: false }).slots.budgetMode, 'strict');
    assert.equal(
      masterConfigFrom(strict, { dfs: false, budgetMode: 'overcommit' }).slots.budgetMode,
      'overcommit',
    );
    // Before the key (0.6.0) the master overcommitted, as the reference does.
    assert.equal(budgetModeFrom(conf('0.5.1', 'master')), 'overcommit');
  });
});

describe('workerConfigFrom', () => {
  it('reads congestion control only when enabled, the 0.6.0 watermarks and their deprecated names', () => {
    assert.equal(
      worker('0.6.0', { 'svc.worker.congestionControl.diskBuffer.high.watermark': '1m' }).congestion,
      undefined,
    );
    const on = worker('0.6.0', {
      'svc.worker.congestionControl.enabled': 'true',
      'svc.worker.congestionControl.diskBuffer.low.watermark': '1m',
      'svc.worker.congestionControl.diskBuffer.high.watermark': '2m',
      'svc.worker.congestionControl.userProduceSpeed.high.watermark': '3k',
      'svc.worker.congestionControl.sample.time.window': '2s',
    }).congestion;
    assert.deepEqual(on, {
      diskBuffer: { low: 1024 ** 2, high: 2 * 1024 ** 2 },
      userProduceSpeed: { low: Infinity, high: 3 * 1024 },
      workerProduceSpeed: { low: Infinity, high: Infinity },
      sampleWindowMs: 2_000,
      checkIntervalMs: 10,
    });
    const old = worker('0.3.0', {
      'svc.worker.congestionControl.enabled': 'true',
      'svc.worker.congestionControl.low.watermark': '5k',
      'svc.worker.congestionControl.high.watermark': '6k',
    }).congestion;
    assert.deepEqual(old?.diskBuffer, { low: 5 * 1024, high: 6 * 1024 });
    assert.equal(old?.checkIntervalMs, 10, 'a key newer than the release keeps today’s default');
  });

  it('heartbeats every quarter of the worker heartbeat timeout', () => {
    assert.equal(worker('0.6.0').heartbeatIntervalMs, 120_000 / 4);
    assert.equal(
      worker('0.6.0', { 'svc.master.heartbeat.worker.timeout': '60s' }).heartbeatIntervalMs,
      15_000,
    );
  });

  it('feeds svc.rpc.askTimeout to the master request and replication timeouts', () => {
    const config = worker('0.6.0', { 'svc.rpc.askTimeout': '7s' });
    assert.equal(config.masterRequestTimeoutMs, 7_000);
    assert.equal(config.replicate.timeoutMs, 7_000);
  });

  it('passes the facts through and takes the release from the configuration', () => {
    const config = worker('0.5.1', {}, { plantedBug: 'restart-forgets-committed' });
    assert.equal(config.release, '0.5.1');
    assert.equal(config.id, ID);
    assert.equal(config.master, masterNodeId());
    assert.equal(config.networkLocation, '/rack-1');
    assert.deepEqual(config.distributed, ['HDFS']);
    assert.equal(config.memory.capacityBytes, 1024);
    assert.equal(config.plantedBug, 'restart-forgets-committed');
    assert.equal(config.register.retryIntervalMs, REFERENCE_CONSTANTS.registerRetryMs);
  });

  it('reads memory keys introduced after the worker’s release from the current configuration', () => {
    const old = worker('0.4.1', {}, {});
    const current = worker(CURRENT_RELEASE);
    assert.equal(old.memory.maxFileBytes, current.memory.maxFileBytes);
    assert.equal(old.memory.evictRatio, current.memory.evictRatio);
    assert.equal(
      worker('0.6.0', { 'svc.worker.memoryFileStorage.maxFileSize': '1m' }).memory.maxFileBytes,
      1 << 20,
    );
  });

  it('refuses implicit memory as the key says unless the facts say otherwise', () => {
    const key = 'svc.worker.memoryFileStorage.refuseImplicitMemory';
    assert.equal(worker('0.6.0').memory.refuseImplicitMemory, false);
    assert.equal(worker('0.6.0', { [key]: 'true' }).memory.refuseImplicitMemory, true);
    assert.equal(
      worker('0.6.0', { [key]: 'true' }, { refuseImplicitMemory: false }).memory.refuseImplicitMemory,
      false,
    );
    assert.equal(refuseImplicitMemoryFrom(conf('0.6.0', 'worker', { [key]: 'true' })), true);
    // Before the key (0.6.0) a worker never refused.
    assert.equal(refuseImplicitMemoryFrom(conf('0.5.1', 'worker')), false);
  });

  it('reads the split, chunk and graceful shutdown keys', () => {
    const config = worker('0.6.0', {
      'svc.shuffle.chunk.size': '4m',
      'svc.worker.shuffle.partitionSplit.max': '2g',
      'svc.worker.graceful.shutdown.enabled': 'true',
    });
    assert.equal(config.chunkSizeBytes, 4 << 20);
    assert.equal(config.split.maxBytes, 2 * 1024 ** 3);
    assert.equal(config.gracefulShutdown.enabled, true);
  });
});

const MIB = 2 ** 20;

describe('workerMemoryLimitsFrom', () => {
  it('puts the thresholds at the ratios of svc.worker.memory.size, or of the budget given', () => {
    const resolved = conf(CURRENT_RELEASE, 'worker', {
      'svc.worker.memory.size': '1000m',
      'svc.worker.directMemoryRatioToPauseReceive': '0.85',
      'svc.worker.directMemoryRatioToPauseReplicate': '0.95',
      'svc.worker.directMemoryRatioToResume': '0.7',
    });
    // Partly received frames pause the data ports one frame (svc.network.frame.maxSize, 128m) below their limit.
    assert.deepEqual(workerMemoryLimitsFrom(resolved), {
      backPressure: {
        pauseReceiveBytes: 850 * MIB,
        pauseReplicateBytes: 950 * MIB,
        resumeBytes: 700 * MIB,
        partialFramePauseBytes: 572 * MIB,
      },
      partialFrameLimitBytes: 700 * MIB,
    });
    // A budget below one frame's worth still lets a whole frame in, one at a time.
    assert.deepEqual(workerMemoryLimitsFrom(resolved, 100 * MIB), {
      backPressure: {
        pauseReceiveBytes: 85 * MIB,
        pauseReplicateBytes: 95 * MIB,
        resumeBytes: 70 * MIB,
        partialFramePauseBytes: 0,
      },
      partialFrameLimitBytes: 128 * MIB,
    });
    // The pause moves with svc.network.frame.maxSize: one of its frames below the limit.
    const smallFrames = conf(CURRENT_RELEASE, 'worker', {
      'svc.worker.memory.size': '1000m',
      'svc.worker.directMemoryRatioToResume': '0.7',
      'svc.network.frame.maxSize': '64m',
    });
    assert.equal(workerMemoryLimitsFrom(smallFrames).backPressure.partialFramePauseBytes, 636 * MIB);
  });
});

describe('lifecycleManagerConfigFrom', () => {
  it('replicates by default for a 0.2.0 client and not from 0.3.0', () => {
    assert.equal(lifecycleManager('0.2.0').replicate, true);
    assert.equal(replicationFrom(conf('0.2.0', 'client')), true);
    assert.equal(lifecycleManager('0.3.0').replicate, false);
    assert.equal(lifecycleManager('0.3.0', { 'svc.client.push.replicate.enabled': 'true' }).replicate, true);
  });

  it('feeds svc.rpc.askTimeout to the request timeout and half of it to the file-group wait', () => {
    const config = lifecycleManager('0.6.0', { 'svc.rpc.askTimeout': '10s' });
    assert.equal(config.requestTimeoutMs, 10_000);
    assert.equal(config.fileGroupWaitMs, 5_000);
    assert.equal(config.maxRequestAttempts, REFERENCE_CONSTANTS.requestAttempts);
    assert.equal(config.requestSlotsMaxRetries, REFERENCE_CONSTANTS.requestSlotsRetries);
  });

  it('passes the facts through and takes the release from the configuration', () => {
    const config = lifecycleManager('0.4.1');
    assert.equal(config.release, '0.4.1');
    assert.equal(config.appId, 'app-1');
    assert.equal(config.user, 'alice');
    assert.equal(config.master, masterNodeId());
    assert.equal('plantedBug' in config, false);
  });

  it('filters excluded workers as the key says, and by the current default before the key existed', () => {
    assert.equal(readsKeyAt(FILTER_EXCLUDED, '0.3.2'), false);
    assert.equal(lifecycleManager('0.3.2').filterExcludedWorkers, false);
    assert.equal(lifecycleManager('0.4.0', { [FILTER_EXCLUDED]: 'true' }).filterExcludedWorkers, true);
  });

  it('reads the storage tiers under the name the client’s release knows', () => {
    assert.equal(tiersKeyAt('0.3.2'), 'svc.storage.activeTypes');
    assert.equal(tiersKeyAt('0.4.0'), TIERS_KEY);
    const old = conf('0.3.2', 'client', { [tiersKeyAt('0.3.2')]: 'MEMORY,HDD' });
    assert.deepEqual(availableTypesFrom(old), ['MEMORY', 'HDD']);
    assert.deepEqual(lifecycleManagerConfigFrom(old, { appId: 'a', user: 'u', master: 'm' }).availableTypes, [
      'MEMORY',
      'HDD',
    ]);
    assert.deepEqual(lifecycleManager('0.6.0').availableTypes, ['HDD']);
  });

  it('reads every release’s defaults without a missing key', () => {
    for (const release of KNOWN_RELEASES) {
      assert.equal(lifecycleManager(release).release, release);
      assert.equal(worker(release).release, release);
      assert.equal(masterConfigFrom(conf(release, 'master'), { dfs: false }).release, release);
      assert.equal(mapTask(release).release, release);
    }
  });
});

describe('task configs', () => {
  it('a map task pushes batches of svc.client.push.buffer.max.size', () => {
    assert.equal(mapTask('0.6.0').batchSizeBytes, 64 * 1024);
    assert.equal(mapTask('0.6.0', { 'svc.client.push.buffer.max.size': '1m' }).batchSizeBytes, 1 << 20);
  });

  it('a map task keeps svc.client.push.maxInFlightPerPartition batches of a partition in flight, 8 by default', () => {
    assert.equal(mapTask('0.6.0').maxInFlightPerPartition, 8);
    const narrow = mapTask('0.6.0', { 'svc.client.push.maxInFlightPerPartition': '2' });
    assert.equal(narrow.maxInFlightPerPartition, 2);
  });

  it('a map task holds svc.client.push.maxUnacknowledgedBytes unacknowledged, 64m before the key existed', () => {
    assert.equal(mapTask('0.6.0').maxUnacknowledgedBytes, 64 << 20);
    const small = mapTask('0.6.0', { 'svc.client.push.maxUnacknowledgedBytes': '2m' });
    assert.equal(small.maxUnacknowledgedBytes, 2 << 20);
    assert.equal(mapTask('0.5.0').maxUnacknowledgedBytes, 64 << 20);
  });

  it('a map task times out pushes and requests after svc.rpc.askTimeout', () => {
    const config = mapTask('0.6.0', { 'svc.rpc.askTimeout': '9s' });
    assert.equal(config.pushTimeoutMs, 9_000);
    assert.equal(config.requestTimeoutMs, 9_000);
  });

  it('a map task takes its ids, shape and application as given', () => {
    const config = mapTask('0.5.0', { 'svc.client.push.revive.maxRetries': '7' });
    assert.equal(config.release, '0.5.0');
    assert.deepEqual(
      [config.shuffleId, config.mapId, config.attemptId, config.numMappers, config.numPartitions],
      [1, 2, 3, 4, 5],
    );
    assert.equal(config.appId, 'app-1');
    assert.equal(config.lifecycleManager, lifecycleManagerNodeId('app-1'));
    assert.equal(config.maxReviveRetries, 7);
  });

  it('a reduce task reads the stage rerun switch and svc.rpc.askTimeout', () => {
    const resolved = conf('0.6.0', 'client', {
      'svc.client.spark.stageRerun.enabled': 'false',
      'svc.rpc.askTimeout': '11s',
    });
    const config = reduceTaskConfigFrom(
      resolved,
      { shuffleId: 1, partitionId: 6 },
      'app-2',
      'dedupe-disabled',
    );
    assert.equal(config.stageRerunEnabled, false);
    assert.equal(stageRerunFrom(resolved), false);
    assert.equal(config.fetchTimeoutMs, 11_000);
    assert.equal(config.requestTimeoutMs, 11_000);
    assert.equal(config.partitionId, 6);
    assert.equal(config.lifecycleManager, lifecycleManagerNodeId('app-2'));
    assert.equal(config.fileGroupRetryIntervalMs, REFERENCE_CONSTANTS.fileGroupRetryMs);
    assert.equal(config.maxFileGroupAttempts, REFERENCE_CONSTANTS.fileGroupAttempts);
    assert.equal(config.plantedBug, 'dedupe-disabled');
  });
});

describe('clientAskTimeout', () => {
  const conf = (release: Release, text = ''): ResolvedConfig =>
    resolveConfig({
      release,
      role: 'client',
      fileText: `svc.rpc.io.connectionTimeout 7s\nsvc.rpc.askTimeout 3s\n${text}`,
    });

  it('falls back to the control plane’s connection timeout before 0.4.1 and to svc.rpc.askTimeout after', () => {
    assert.deepEqual(clientAskTimeout(conf('0.4.0'), 'registerShuffle'), {
      ms: 7000,
      key: 'svc.client.rpc.registerShuffle.askTimeout from svc.rpc.io.connectionTimeout',
    });
    assert.deepEqual(clientAskTimeout(conf('0.4.1'), 'registerShuffle'), {
      ms: 3000,
      key: 'svc.client.rpc.registerShuffle.askTimeout from svc.rpc.askTimeout',
    });
  });

  it('gives each ask its own key to the task machines', () => {
    const text =
      'svc.client.rpc.registerShuffle.askTimeout 1s\nsvc.client.rpc.requestPartition.askTimeout 2s\n';
    const map = mapTaskConfigFrom(
      conf('0.6.0', text),
      { shuffleId: 0, mapId: 0, attemptId: 0 },
      { numMappers: 1, numPartitions: 1 },
      'app',
    );
    assert.equal(map.registerShuffleTimeout?.ms, 1000);
    assert.equal(map.requestPartitionTimeout?.ms, 2000);
    assert.equal(map.requestTimeoutMs, 3000);
    const reduce = reduceTaskConfigFrom(
      conf('0.3.0', 'svc.client.rpc.getReducerFileGroup.askTimeout 4s\n'),
      { shuffleId: 0, partitionId: 0 },
      'app',
    );
    assert.deepEqual(reduce.fileGroupTimeout, {
      ms: 4000,
      key: 'svc.client.rpc.getReducerFileGroup.askTimeout',
    });
  });
});
