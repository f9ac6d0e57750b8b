/**
 * The lifecycle manager's steps in one process, by their CPU time (issue 37; docs/performance.md): what a shuffle of
 * many partitions costs the application's driver between the wire and its answers, without sockets or other
 * processes, so that a loaded two-core machine moves it little. Run it from two trees alternately to compare them:
 *
 *   npm run bench -- lm-steps [--rounds 12] [--partitions 10000] [--maps 2]
 *
 * - `commit`: the step that takes the one worker's CommitFilesResponse for every partition of a shuffle whose maps
 *   have all ended, and folds it into the reducers' file groups (core/machines/lifecycle-manager/stage-end.ts).
 *
 * Each round is a fresh lifecycle manager with one shuffle (registered, its slots on one worker, reserved, every map
 * ended); only the commit's step is timed. Reported only (exit 0): the least and the median of the rounds after the
 * first three (the code's warm-up); compare the least, which interference only raises.
 */
import { workerKey, type PartitionLocation, type StorageInfo, type WorkerId } from '../core/domain/index.ts';
import {
  initialLifecycleManagerState,
  lifecycleManagerMachine,
  type LifecycleManagerConfig,
  type LifecycleManagerState,
} from '../core/machines/lifecycle-manager/index.ts';
import { ProbeHarness } from '../core/machines/testing/probe-harness.ts';
import type { Message } from '../core/protocol/messages.ts';
import { CURRENT_RELEASE } from '../core/release/version.ts';
import { wholeNumberFlags } from './step-flags.ts';

const { rounds, partitions, maps } = wholeNumberFlags({
  rounds: { default: 12, least: 4 },
  partitions: { default: 10_000, least: 1 },
  maps: { default: 2, least: 1 },
});

const LM = 'lm-app';
const MASTER = 'master-0';
const config: LifecycleManagerConfig = {
  release: CURRENT_RELEASE,
  appId: 'app',
  user: 'alice',
  master: MASTER,
  replicate: false,
  rackAware: false,
  availableTypes: ['MEMORY'],
  maxWorkers: 10_000,
  split: { thresholdBytes: 1 << 30, mode: 'SOFT' },
  reviveBatchIntervalMs: 100,
  reserveMaxRetries: 3,
  requestSlotsMaxRetries: 1,
  // No heartbeat or timeout falls in a round: the step timed is the commit's alone.
  heartbeatIntervalMs: 1e9,
  requestTimeoutMs: 1e9,
  maxRequestAttempts: 3,
  fileGroupWaitMs: 2_000,
  excludePeerWorkerOnFailure: true,
  excludedWorkerExpireMs: 180_000,
  filterExcludedWorkers: false,
};
const worker: WorkerId = { host: 'w0', rpcPort: 1, pushPort: 2, fetchPort: 3, replicatePort: 4 };
const storage: StorageInfo = { type: 'MEMORY', mountPoint: '', availableTypes: 1 };

/** A lifecycle manager with one shuffle whose maps have all ended, its CommitFiles answered but not yet delivered. */
function readyToCommit(): ProbeHarness<LifecycleManagerState> {
  const h = new ProbeHarness<LifecycleManagerState>(
    LM,
    { machine: lifecycleManagerMachine, init: () => initialLifecycleManagerState(config) },
    { seed: 7 },
  );
  const master = h.probe(MASTER);
  const workerProbe = h.probe(workerKey(worker));
  const ask = (from: string, message: Message, requestId: number) => {
    h.probe(from);
    h.cluster.inject({ from, to: LM, fromRelease: CURRENT_RELEASE, message, requestId });
  };
  h.start();
  h.advance(10);
  h.answer(master, 'RegisterApplication', () => ({ type: 'StatusResponse', status: 'SUCCESS', message: '' }));
  h.advance(10);
  ask(
    'map-0',
    { type: 'RegisterShuffle', appId: 'app', shuffleId: 0, numMappers: maps, numPartitions: partitions },
    1,
  );
  h.advance(10);
  const primaries: PartitionLocation[] = Array.from({ length: partitions }, (_, partitionId) => ({
    partitionId,
    epoch: 0,
    worker,
    mode: 'PRIMARY',
    storage,
  }));
  h.answer(master, 'RequestSlots', () => ({
    type: 'RequestSlotsResponse',
    status: 'SUCCESS',
    workerResource: [{ worker, networkLocation: '/rack-0', primaries, replicas: [] }],
    unplaced: [],
    message: '',
  }));
  h.advance(10);
  h.answer(workerProbe, 'ReserveSlots', () => ({ type: 'StatusResponse', status: 'SUCCESS', message: '' }));
  h.advance(10);
  const written = primaries.map(({ partitionId }) => ({ partitionId, batches: 1, bytes: 3_000 }));
  for (let mapId = 0; mapId < maps; mapId += 1) {
    const mapperEnd: Message = {
      type: 'MapperEnd',
      appId: 'app',
      shuffleId: 0,
      mapId,
      attemptId: 0,
      numMappers: maps,
      written,
    };
    ask(`map-${mapId}`, mapperEnd, 2);
  }
  h.advance(10);
  const answered = h.answer(workerProbe, 'CommitFiles', ({ message }) => ({
    type: 'CommitFilesResponse',
    status: 'SUCCESS',
    committedPrimaries: message.primaryIds.map((uniqueId) => ({
      uniqueId,
      mode: 'PRIMARY' as const,
      storage,
      bytes: 3_000 * maps,
      chunkOffsets: [0, 3_000 * maps],
    })),
    committedReplicas: [],
    failedPrimaryIds: [],
    failedReplicaIds: [],
    message: '',
  }));
  if (answered !== 1) throw new Error(`expected one CommitFiles to answer, found ${answered}`);
  return h;
}

const figures: number[] = [];
for (let round = 0; round < rounds; round += 1) {
  const h = readyToCommit();
  const before = process.cpuUsage();
  h.advance(10); // delivers the CommitFilesResponse: the step that folds it
  const used = process.cpuUsage(before);
  const phase = h.node.state().shuffles.get(0)?.phase;
  if (phase !== 'committed')
    throw new Error(`the shuffle ended the round ${phase ?? 'unknown'}, not committed`);
  figures.push((used.user + used.system) / 1000);
}
const measured = figures.slice(3).sort((a, b) => a - b);
console.log(`lm-steps: ${rounds} rounds (the first 3 not counted); CPU, the least (median) of the rounds`);
console.log(
  `  commit   ${measured[0]!.toFixed(1)} (${measured[Math.floor(measured.length / 2)]!.toFixed(1)}) ms: ` +
    `a CommitFilesResponse of ${partitions.toLocaleString('en')} files folded into the file groups (${maps} maps)`,
);
