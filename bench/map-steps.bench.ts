/**
 * The map task's steps in one process, by their CPU time (issue 37; docs/performance.md, "What bounds each row"): the
 * client's core path of dataplane.bench.ts's push rows (records staged as the streaming writer stages them, copied
 * into batches, cut, sealed, merged into pushes and acknowledged), without sockets, a driver or a worker, so that
 * the other processes of a loaded two-core machine do not move it. Each shape's maps run one after another on one
 * executor's batch memory (runtime/client/map-buffers.ts), with the registry's defaults; a worker answers each push
 * once `--lag` more are in flight, as pushes wait in a socket and a worker's queue. Run it from two trees
 * alternately to compare them:
 *
 *   npm run bench -- map-steps [--rounds 5] [--lag 16] [--only push,small,many,spread,wide]
 *
 * Reported only (exit 0): CPU seconds per GiB of records and microseconds per batch, the least and the median of the
 * rounds. Even one process is moved by a shared machine (another's cache misses, time the hypervisor takes): compare
 * the least, which interference only ever raises.
 */
import { parseArgs } from 'node:util';
import { resolveConfig } from '../conf/resolve.ts';
import { mapTaskConfigFrom } from '../conf/machine-configs.ts';
import type { PartitionLocation, WorkerId } from '../core/domain/index.ts';
import type { Effect, Envelope, Input } from '../core/machines/effects.ts';
import {
  initialMapTaskState,
  mapTaskHasRoom,
  mapTaskMachine,
  type MapTaskState,
} from '../core/machines/client/map-task.ts';
import { RECORD_LENGTH_BYTES } from '../core/machines/client/records.ts';
import { putU32 } from '../core/protocol/big-endian.ts';
import type { Message } from '../core/protocol/messages.ts';
import { CURRENT_RELEASE } from '../core/release/version.ts';
import { replayRng } from '../core/rng.ts';
import { MapBuffers } from '../runtime/client/map-buffers.ts';
import { STAGING_BYTES } from '../runtime/client/shuffle-client.ts';
import { useNativeChecksum } from '../runtime/driver/native-checksum.ts';

const { values: flags } = parseArgs({
  args: process.argv.slice(2),
  strict: true,
  options: {
    rounds: { type: 'string', default: '5' },
    lag: { type: 'string', default: '16' },
    only: { type: 'string', default: 'push,small,many,spread,wide' },
  },
});
const rounds = Number(flags.rounds);
const lag = Number(flags.lag);
for (const [name, value] of [
  ['--rounds', rounds],
  ['--lag', lag],
] as const) {
  if (!Number.isInteger(value) || value < 0)
    throw new Error(`${name} '${String(value)}' is not a whole number`);
}

interface Shape {
  readonly name: string;
  readonly describe: string;
  readonly maps: number;
  readonly partitions: number;
  readonly recordsPerMap: number;
  /** The partition of a map's record `i`. */
  readonly partitionOf: (i: number, recordsPerMap: number, partitions: number) => number;
  readonly overrides: Record<string, string>;
}

const RECORD_BYTES = 1020;
const MiB = 1024 * 1024;
const afterEachOther = (i: number, perMap: number, partitions: number) =>
  Math.floor((i * partitions) / perMap);
const spread = (i: number, _perMap: number, partitions: number) => i % partitions;

// The push rows' shapes (bench/dataplane/scenarios.ts), a map each writing as the benchmark's maps write.
const SHAPES: readonly Shape[] = [
  {
    name: 'push',
    describe: '4 maps of 128 MiB, 32 partitions one after another, 64 KiB batches (push-memory)',
    maps: 4,
    partitions: 32,
    recordsPerMap: Math.floor((128 * MiB) / RECORD_BYTES),
    partitionOf: afterEachOther,
    overrides: {},
  },
  {
    name: 'small',
    describe: '64 maps of 4 MiB, 32 partitions one after another, 4 KiB batches (small-batches)',
    maps: 64,
    partitions: 32,
    recordsPerMap: Math.floor((4 * MiB) / RECORD_BYTES),
    partitionOf: afterEachOther,
    overrides: { 'svc.client.push.buffer.max.size': '4k' },
  },
  {
    name: 'many',
    describe: '4 maps of 32 MiB, 10,000 partitions one after another (many-partitions)',
    maps: 4,
    partitions: 10_000,
    recordsPerMap: Math.floor((32 * MiB) / RECORD_BYTES),
    partitionOf: afterEachOther,
    overrides: {},
  },
  {
    name: 'wide',
    describe: '4 maps of 32 MiB spread over 10,000 partitions (each partition written every 10 MiB)',
    maps: 4,
    partitions: 10_000,
    recordsPerMap: Math.floor((32 * MiB) / RECORD_BYTES),
    partitionOf: spread,
    overrides: {},
  },
  {
    name: 'spread',
    describe: "4 maps of 128 MiB spread over 32 partitions, 64 KiB batches (as npm start's maps write)",
    maps: 4,
    partitions: 32,
    recordsPerMap: Math.floor((128 * MiB) / RECORD_BYTES),
    partitionOf: spread,
    overrides: {},
  },
];

const WORKER: WorkerId = { host: 'worker-0', rpcPort: 1, pushPort: 2, fetchPort: 3, replicatePort: 4 };

/** A 4 MiB pool of record bytes the records are views of, as the dataplane benchmark's are. */
const pool = new Uint8Array(4 * MiB);
for (let i = 0; i < pool.length; i += 1) pool[i] = (i * 2654435761) >>> 24;

interface Outcome {
  readonly cpuMs: number;
  readonly recordBytes: number;
  readonly batches: number;
  readonly pushes: number;
}

function cpuMs(): number {
  const { user, system } = process.cpuUsage();
  return (user + system) / 1000;
}

/** One shape's maps, one after another, on one executor's batch memory. */
function runShape(shape: Shape): Outcome {
  const conf = resolveConfig({ release: CURRENT_RELEASE, role: 'client', overrides: shape.overrides });
  if (conf.errors.length > 0) throw new Error(conf.errors.map((error) => error.message).join('; '));
  const buffers = new MapBuffers((64 * MiB) / 4);
  const staging = new Uint8Array(STAGING_BYTES);
  const locations: PartitionLocation[] = Array.from({ length: shape.partitions }, (_, partitionId) => ({
    partitionId,
    epoch: 0,
    worker: WORKER,
    mode: 'PRIMARY',
    storage: { type: 'MEMORY', mountPoint: '', availableTypes: 1 },
  }));
  let batches = 0;
  let pushes = 0;
  let recordBytes = 0;
  const start = cpuMs();
  for (let mapId = 0; mapId < shape.maps; mapId += 1) {
    const config = {
      ...mapTaskConfigFrom(
        conf,
        { shuffleId: 0, mapId, attemptId: 0 },
        { numMappers: shape.maps, numPartitions: shape.partitions },
        'app',
      ),
      allocate: buffers.allocate,
      giveBack: buffers.giveBack,
      reuseAcknowledgedFrames: true,
    };
    const task = new TaskRun(initialMapTaskState(config), locations);
    task.step({ kind: 'start', recovered: new Map() });
    let used = 0;
    let partitionIds: number[] = [];
    let runStarts: number[] = [];
    const handOver = () => {
      const runs = runStarts.map((from, i) => staging.subarray(from, runStarts[i + 1] ?? used));
      task.step({ kind: 'records', partitionIds, runs });
      partitionIds = [];
      runStarts = [];
      used = 0;
      while (!mapTaskHasRoom(task.state))
        if (!task.answerOldest()) throw new Error('no room and nothing to answer');
    };
    for (let i = 0; i < shape.recordsPerMap; i += 1) {
      const partitionId = shape.partitionOf(i, shape.recordsPerMap, shape.partitions);
      if (used + RECORD_LENGTH_BYTES + RECORD_BYTES > STAGING_BYTES) handOver();
      if (partitionIds[partitionIds.length - 1] !== partitionId) {
        partitionIds.push(partitionId);
        runStarts.push(used);
      }
      const from = (i * RECORD_BYTES) % (pool.length - RECORD_BYTES);
      putU32(staging, used, RECORD_BYTES);
      staging.set(pool.subarray(from, from + RECORD_BYTES), used + RECORD_LENGTH_BYTES);
      used += RECORD_LENGTH_BYTES + RECORD_BYTES;
      recordBytes += RECORD_BYTES;
    }
    if (partitionIds.length > 0) handOver();
    task.step({ kind: 'recordsEnd' });
    while (task.state.phase !== 'won') if (!task.answerOldest()) throw new Error(`map ${mapId} did not end`);
    batches += task.batches;
    pushes += task.pushes;
  }
  buffers.dropIdle();
  return { cpuMs: cpuMs() - start, recordBytes, batches, pushes };
}

/** A map task with a lifecycle manager and a worker answering for it. */
class TaskRun {
  batches = 0;
  pushes = 0;
  private now = 0;
  private requestId = 1;
  private readonly unanswered: Envelope[] = [];

  constructor(
    public state: MapTaskState,
    private readonly locations: readonly PartitionLocation[],
  ) {}

  step(input: Input): void {
    this.now += 1;
    const result = mapTaskMachine.step(this.state, input, this.now, replayRng([0.5]));
    this.state = result.state;
    this.follow(result.effects);
  }

  /** Answers the oldest push (or request) still unanswered; false when there is none. */
  answerOldest(): boolean {
    const request = this.unanswered.shift();
    if (request === undefined) return false;
    this.reply(request, this.answerTo(request.message));
    return true;
  }

  private follow(effects: readonly Effect[]): void {
    for (const effect of effects) {
      if (effect.kind !== 'send') continue;
      const envelope: Envelope = {
        from: effect.to,
        to: 'map',
        fromRelease: CURRENT_RELEASE,
        message: effect.message,
        ...(effect.requestId === undefined ? {} : { requestId: effect.requestId }),
      };
      const type = effect.message.type;
      if (type === 'PushData' || type === 'PushMergedData') {
        this.pushes += 1;
        this.batches += type === 'PushData' ? 1 : effect.message.batches.length;
        this.unanswered.push(envelope);
        while (this.unanswered.length > lag) this.answerOldest();
      } else if (effect.requestId !== undefined) this.reply(envelope, this.answerTo(effect.message));
    }
  }

  private answerTo(message: Message): Message {
    if (message.type === 'RegisterShuffle')
      return {
        type: 'RegisterShuffleResponse',
        status: 'SUCCESS',
        locations: [...this.locations],
        message: '',
      };
    if (message.type === 'PushData') return { type: 'PushDataResponse', status: 'SUCCESS', message: '' };
    if (message.type === 'PushMergedData') {
      const statuses = message.batches.map(() => 'SUCCESS' as const);
      return { type: 'PushMergedDataResponse', statuses, message: '' };
    }
    if (message.type === 'MapperEnd') return { type: 'StatusResponse', status: 'SUCCESS', message: '' };
    throw new Error(`the bench does not answer ${message.type}`);
  }

  private reply(request: Envelope, message: Message): void {
    this.requestId += 1;
    this.step({
      kind: 'receive',
      envelope: {
        from: request.from,
        to: request.to,
        fromRelease: CURRENT_RELEASE,
        message,
        ...(request.requestId === undefined ? {} : { inReplyTo: request.requestId }),
      },
    });
  }
}

useNativeChecksum(); // as every driver does
const chosen = flags.only.split(',').map((name) => {
  const shape = SHAPES.find((s) => s.name === name);
  if (shape === undefined)
    throw new Error(`--only: no shape '${name}' (${SHAPES.map((s) => s.name).join(', ')})`);
  return shape;
});
const median = (values: number[]): number => values.sort((a, b) => a - b)[Math.floor(values.length / 2)]!;
const least = (values: number[]): number => Math.min(...values);
console.log(
  `map-steps: ${rounds} rounds, a push answered once ${lag} more are in flight; CPU, the least (median) of the rounds`,
);
for (const shape of chosen) {
  runShape(shape); // warm-up: the code optimised, the executor's memory touched
  const perGiB: number[] = [];
  const perBatchUs: number[] = [];
  let last: Outcome | undefined;
  for (let round = 0; round < rounds; round += 1) {
    last = runShape(shape);
    perGiB.push(last.cpuMs / 1000 / (last.recordBytes / 1024 ** 3));
    perBatchUs.push((last.cpuMs * 1000) / last.batches);
  }
  console.log(
    `  ${shape.name.padEnd(7)} ${least(perGiB).toFixed(3)} (${median(perGiB).toFixed(3)}) CPU s per GiB, ` +
      `${least(perBatchUs).toFixed(2)} (${median(perBatchUs).toFixed(2)}) us per batch ` +
      `(${last!.batches} batches in ${last!.pushes} pushes): ${shape.describe}`,
  );
}
