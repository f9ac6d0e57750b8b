/**
 * The busy master's steps in one process, by their CPU time (issue 37; docs/performance.md, "A busy master"): the
 * master machine, fed as master-load.bench.ts's steady phase feeds it over the wire (1,000 workers heartbeating,
 * 100 applications heartbeating, RequestSlots of 1,000 replicated partitions, at the same rates), without sockets, a
 * store or other processes, so that a loaded machine's preemption does not count. Each RequestSlotsResponse is then
 * encoded as the wire would (runtime/wire/hot-codec.ts). Run it from two trees alternately to compare them:
 *
 *   npm run bench -- master-steps [--rounds 30]     (a round: 100 ms of the steady phase)
 *
 * Reported only (exit 0): what a heartbeat, an application heartbeat and a RequestSlots cost the master.
 */
import { parseArgs } from 'node:util';
import { workerKey, type DiskInfo, type WorkerId } from '../core/domain/index.ts';
import { initialMasterState, masterMachine, type MasterState } from '../core/machines/master/index.ts';
import { testMasterConfig } from '../core/machines/master/testing.ts';
import type { Effect } from '../core/machines/effects.ts';
import { replayRng } from '../core/rng.ts';
import type { Message } from '../core/protocol/messages.ts';
import { CURRENT_RELEASE } from '../core/release/version.ts';
import { encodeHotEnvelope } from '../runtime/wire/hot-codec.ts';

const { values: flags } = parseArgs({
  args: process.argv.slice(2),
  strict: true,
  options: { rounds: { type: 'string', default: '30' } },
});
const rounds = Number(flags.rounds);
if (!Number.isInteger(rounds) || rounds <= 0)
  throw new Error(`--rounds '${flags.rounds}' is not a positive integer`);

const WORKERS = 1_000;
const APPS = 100;
const GiB = 1024 ** 3;

function cpuMs(): number {
  const { user, system } = process.cpuUsage();
  return (user + system) / 1000;
}

function disks(): DiskInfo[] {
  return [
    {
      mountPoint: '/d1',
      type: 'HDD',
      usableBytes: 100 * GiB,
      totalBytes: 100 * GiB,
      status: 'HEALTHY',
      avgFlushTimeNs: 0,
      avgFetchTimeNs: 0,
      activeSlots: 0,
    },
  ];
}

let state: MasterState = initialMasterState(testMasterConfig());
let now = 0;
let requestId = 1;

function step(from: string, message: Message | null): readonly Effect[] {
  const input =
    message === null
      ? ({ kind: 'start', recovered: new Map() } as const)
      : ({
          kind: 'receive',
          envelope: { from, to: 'master', fromRelease: CURRENT_RELEASE, message, requestId: requestId++ },
        } as const);
  const result = masterMachine.step(state, input, now, replayRng([0.25, 0.5, 0.75]));
  state = result.state;
  return result.effects;
}

step('', null);
const workers: WorkerId[] = Array.from({ length: WORKERS }, (_, i) => ({
  host: `worker-${i}`,
  rpcPort: 9001,
  pushPort: 9002,
  fetchPort: 9003,
  replicatePort: 9004,
}));
for (const worker of workers)
  step(workerKey(worker), { type: 'RegisterWorker', worker, disks: disks(), networkLocation: '/r1' });
for (let app = 0; app < APPS; app += 1)
  step(`lm-app-${app}`, { type: 'RegisterApplication', appId: `app-${app}`, user: 'u' });

const partitionIds = Array.from({ length: 1_000 }, (_, i) => i);
const spent = { heartbeat: 0, appHeartbeat: 0, requestSlots: 0, encode: 0 };
const counts = { heartbeat: 0, appHeartbeat: 0, requestSlots: 0 };
// Each RequestSlots' own CPU, for the median: a loaded machine's stray costs (another process's cache misses, a
// collection the earlier steps left) move the mean more than the median.
const requestSlotsMs: number[] = [];
const encodeMs: number[] = [];
let shuffle = 0;
let nextWorker = 0;
for (let round = 0; round < rounds; round += 1) {
  now += 100;
  // 100 ms of the steady phase: 1,000 workers every 30 s, 100 applications every 10 s, a shuffle each every 10 s.
  for (let k = 0; k < 33; k += 1) {
    const worker = workers[nextWorker++ % WORKERS]!;
    const start = cpuMs();
    step(workerKey(worker), {
      type: 'WorkerHeartbeat',
      worker,
      disks: disks(),
      activeShuffleKeys: [`app-${nextWorker % APPS}-${shuffle}`],
      highWorkload: false,
      state: 'Normal',
    });
    spent.heartbeat += cpuMs() - start;
    counts.heartbeat += 1;
  }
  for (let k = 0; k < 10; k += 1) {
    const app = (round * 10 + k) % APPS;
    const start = cpuMs();
    step(`lm-app-${app}`, {
      type: 'ApplicationHeartbeat',
      appId: `app-${app}`,
      bytesWritten: 0,
      fileCount: 0,
    });
    spent.appHeartbeat += cpuMs() - start;
    counts.appHeartbeat += 1;
  }
  for (let k = 0; k < 10; k += 1) {
    shuffle += 1;
    const app = shuffle % APPS;
    const start = cpuMs();
    const effects = step(`lm-app-${app}`, {
      type: 'RequestSlots',
      appId: `app-${app}`,
      shuffleId: shuffle,
      partitionIds,
      replicate: true,
      rackAware: false,
      availableTypes: 2,
      excludedWorkers: [],
      maxWorkers: 10_000,
    });
    const took = cpuMs() - start;
    spent.requestSlots += took;
    requestSlotsMs.push(took);
    counts.requestSlots += 1;
    const answer = effects.find((effect) => effect.kind === 'send');
    if (answer?.kind !== 'send' || answer.message.type !== 'RequestSlotsResponse')
      throw new Error('no RequestSlotsResponse');
    const encodeStart = cpuMs();
    if (encodeHotEnvelope({ from: 'master', to: 'lm', inReplyTo: 1, message: answer.message }) === undefined)
      throw new Error('RequestSlotsResponse left the hand codec');
    const encoded = cpuMs() - encodeStart;
    spent.encode += encoded;
    encodeMs.push(encoded);
  }
}

const per = (ms: number, n: number): string => (ms / n).toFixed(3);
const median = (ms: number[]): string => ms.sort((a, b) => a - b)[Math.floor(ms.length / 2)]!.toFixed(3);
console.log(
  `master-steps: ${rounds} rounds; CPU per step, ms:\n` +
    `  1,000 worker heartbeats  ${((spent.heartbeat / counts.heartbeat) * 1000).toFixed(0)}\n` +
    `  application heartbeat    ${per(spent.appHeartbeat, counts.appHeartbeat)}\n` +
    `  RequestSlots step        ${per(spent.requestSlots, counts.requestSlots)} (median ${median(requestSlotsMs)})\n` +
    `  its answer encoded       ${per(spent.encode, counts.requestSlots)} (median ${median(encodeMs)})`,
);
