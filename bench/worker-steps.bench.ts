/**
 * The worker machine's steps for one shuffle of many partitions, by their CPU time, in one process (issue 37;
 * docs/performance.md): what the worker's core spends per file and per batch between the wire and its answers,
 * without sockets, storage or other processes, so that a loaded two-core machine moves it little. Run it from two
 * trees alternately to compare them:
 *
 *   npm run bench -- worker-steps [--rounds 12] [--partitions 10000] [--maps 2] [--batch 1500]
 *
 * - `reserve`: a ReserveSlots of every partition on the memory tier, until the worker answers it (its steps of 256
 *   files and the creates' completions, as a driver hands them back: one ioBatchDone per step).
 * - `push`: each map's one batch per partition (`--batch` bytes, framed), merged 128 to a PushMergedData as svc's
 *   client merges them, each push's writes completed before the next push arrives.
 * - `commit`: a CommitFiles of every partition, until the worker answers it (its flushes and steps of 256 files).
 *
 * Each round is a fresh worker; the messages are built before the round and the completions are the driver's part,
 * so the figures are the machine's alone. Reported only (exit 0): the least and the median of the rounds after the
 * first three (the code's warm-up); compare the least, which interference only raises.
 */
import type { PartitionLocation, StorageInfo } from '../core/domain/index.ts';
import type { Effect, IoCompletion } from '../core/machines/effects.ts';
import {
  CLIENT,
  KEY,
  MAPPER,
  SELF,
  commitFiles,
  ofKind,
  onlySent,
  pushMergedData,
  registeredWorker,
  type Harness,
} from '../core/machines/worker/test-kit.ts';
import type { WorkerMachineState } from '../core/machines/worker/state.ts';
import type { Message } from '../core/protocol/messages.ts';
import { useNativeChecksum } from '../runtime/driver/native-checksum.ts';
import { wholeNumberFlags } from './step-flags.ts';

const {
  rounds,
  partitions,
  maps,
  batch: batchBytes,
} = wholeNumberFlags({
  rounds: { default: 12, least: 4 },
  partitions: { default: 10_000, least: 1 },
  maps: { default: 2, least: 1 },
  batch: { default: 1500, least: 1 },
});
const BATCHES_PER_PUSH = 128; // core/machines/client/map-task.ts MAX_BATCHES_PER_PUSH
const MiB = 1024 * 1024;

const storage: StorageInfo = { type: 'MEMORY', mountPoint: '', availableTypes: 1 };
const locations: PartitionLocation[] = Array.from({ length: partitions }, (_, partitionId) => ({
  partitionId,
  epoch: 0,
  worker: SELF,
  mode: 'PRIMARY',
  storage,
}));
const reserve: Message = {
  type: 'ReserveSlots',
  appId: 'app',
  shuffleId: 1,
  primaries: locations,
  replicas: [],
  splitThreshold: 1 << 30,
  splitMode: 'SOFT',
  memoryEnabled: true,
  user: 'alice',
};
const pushes: Message[] = [];
for (let mapId = 0; mapId < maps; mapId += 1) {
  for (let first = 0; first < partitions; first += BATCHES_PER_PUSH) {
    const batches = [];
    for (let p = first; p < Math.min(partitions, first + BATCHES_PER_PUSH); p += 1)
      batches.push({ partitionId: p, batchId: 0, size: batchBytes });
    pushes.push(pushMergedData(KEY, 'PRIMARY', batches, { mapId }));
  }
}
const commit = commitFiles(
  locations.map(({ partitionId }) => `${partitionId}-0`),
  Array.from({ length: maps }, () => 0),
);

/**
 * Hands the step's I/O back completed (one ioBatchDone per batch, as the node driver does) and fires the timers
 * a step set for now (a reserve's or a commit's next 256 files), until nothing is left to do; returns every
 * message the worker sent meanwhile.
 */
function drain(h: Harness<WorkerMachineState>, first: readonly Effect[]): Effect[] {
  const sent: Effect[] = [];
  const pending: Effect[] = [...first];
  while (pending.length > 0) {
    const effect = pending.shift()!;
    if (effect.kind === 'send') sent.push(effect);
    else if (effect.kind === 'ioBatch')
      pending.push(...h.step({ kind: 'ioBatchDone', completions: effect.ops.map(done) }));
    else if (effect.kind === 'createFile' || effect.kind === 'write' || effect.kind === 'flush')
      pending.push(...h.step(done(effect)));
    else if (effect.kind === 'setTimer' && effect.at <= h.now) pending.push(...h.timer(effect.name));
  }
  return sent;
}
const done = (op: { readonly op: number }): IoCompletion => ({ kind: 'ioDone', op: op.op });

const phases = ['reserve', 'push', 'commit'] as const;
const figures = new Map<(typeof phases)[number], number[]>(phases.map((phase) => [phase, []]));
const timed = <T>(phase: (typeof phases)[number], run: () => T): T => {
  const before = process.cpuUsage();
  const result = run();
  const used = process.cpuUsage(before);
  figures.get(phase)!.push((used.user + used.system) / 1000);
  return result;
};

useNativeChecksum(); // as every driver does
for (let round = 0; round < rounds; round += 1) {
  const h = registeredWorker(SELF, {
    disks: [],
    memory: {
      capacityBytes: 1024 * MiB,
      maxFileBytes: 64 * MiB,
      evictRatio: 0.95,
      refuseImplicitMemory: false,
    },
  });
  const reserved = timed('reserve', () => drain(h, h.receive(CLIENT, reserve, { requestId: 1 })));
  const answer = ofKind(reserved, 'send').find((s) => s.message.type === 'StatusResponse');
  if (answer?.message.type !== 'StatusResponse' || answer.message.status !== 'SUCCESS')
    throw new Error(`the reserve was not answered SUCCESS: ${JSON.stringify(answer?.message)}`);
  const pushed = timed('push', () =>
    pushes.flatMap((push, k) => drain(h, h.receive(MAPPER, push, { requestId: 10 + k }))),
  );
  const refused = pushed.filter(
    (s) =>
      s.kind === 'send' &&
      s.message.type === 'PushMergedDataResponse' &&
      s.message.statuses.some((status) => status !== 'SUCCESS'),
  );
  if (refused.length > 0) throw new Error(`${refused.length} push(es) were not all SUCCESS`);
  const committed = timed('commit', () => drain(h, h.receive(CLIENT, commit, { requestId: 2 })));
  const response = onlySent(committed, 'CommitFilesResponse').message;
  if (response.committedPrimaries.length !== partitions)
    throw new Error(`committed ${response.committedPrimaries.length} files, not ${partitions}`);
}

console.log(
  `worker-steps: ${rounds} rounds (the first 3 not counted); CPU, the least (median) of the rounds; ` +
    `${partitions.toLocaleString('en')} partitions, ${maps} maps, batches of ${batchBytes} B`,
);
for (const phase of phases) {
  const measured = figures
    .get(phase)!
    .slice(3)
    .sort((a, b) => a - b);
  const least = measured[0]!;
  const median = measured[Math.floor(measured.length / 2)]!;
  console.log(`  ${phase.padEnd(8)} ${least.toFixed(1)} (${median.toFixed(1)}) ms`);
}
