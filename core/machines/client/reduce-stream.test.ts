import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import fc from 'fast-check';
import { uniqueId, workerKey, type PartitionLocation, type WorkerId } from '../../domain/index.ts';
import { encodeBatchFrame } from '../../protocol/batch-frame.ts';
import type { GetReducerFileGroupResponse, Message } from '../../protocol/messages.ts';
import type { Effect, Input } from '../effects.ts';
import { encodeRecords } from './records.ts';
import {
  chunkRecords,
  chunksAhead,
  closeOnAbandon,
  initialReduceTaskState,
  reduceTaskMachine,
  type ReduceTaskState,
} from './reduce-task.ts';

/**
 * The streaming reduce task driven step by step, with a consumer and workers whose answers arrive in any order: the
 * consumer gets every winning record exactly once, whatever the duplicates, losing attempts, retried batches, chunk
 * arrival order and failed copies, and the task never holds more chunks ahead than its budget.
 */

const worker = (i: number): WorkerId => ({
  host: `w${i}`,
  rpcPort: 1,
  pushPort: 2,
  fetchPort: 3,
  replicatePort: 4,
});
const PARTITION = 5;

interface Batch {
  readonly mapId: number;
  readonly attemptId: number;
  readonly batchId: number;
  readonly records: readonly string[];
}

const scenario = fc
  .record({
    maps: fc.array(
      fc.record({
        attempts: fc.array(fc.integer({ min: 0, max: 3 }), { minLength: 1, maxLength: 2 }),
        winner: fc.nat(1),
      }),
      { minLength: 1, maxLength: 3 },
    ),
    epochs: fc.integer({ min: 1, max: 3 }),
    /** Per batch: its epoch, and epochs it is retried into (a duplicate of the same batch). */
    placement: fc.array(fc.tuple(fc.nat(2), fc.array(fc.nat(2), { maxLength: 2 })), {
      minLength: 24,
      maxLength: 24,
    }),
    framesPerChunk: fc.integer({ min: 1, max: 3 }),
    maxChunksAhead: fc.integer({ min: 1, max: 4 }),
    replicated: fc.boolean(),
    /** The primary of this epoch refuses this chunk (its replica is read then), if replicated. */
    failAt: fc.option(fc.tuple(fc.nat(2), fc.nat(4)), { nil: undefined }),
    /** The order answers arrive in and when the consumer takes chunks: a seed of choices. */
    choices: fc.array(fc.nat(1000), { minLength: 200, maxLength: 200 }),
  })
  .map((s) => ({ ...s, maps: s.maps.map((m) => ({ ...m, winner: m.winner % m.attempts.length })) }));

type Scenario = typeof scenario extends fc.Arbitrary<infer T> ? T : never;

function batchesOf(s: Scenario): Batch[] {
  return s.maps.flatMap((m, mapId) =>
    m.attempts.flatMap((count, attemptId) =>
      Array.from({ length: count }, (_, batchId) => ({
        mapId,
        attemptId,
        batchId,
        records: [`m${mapId}a${attemptId}b${batchId}r0`, `m${mapId}a${attemptId}b${batchId}r1`],
      })),
    ),
  );
}

interface ServedCopy {
  readonly location: PartitionLocation;
  readonly chunks: Uint8Array[];
  readonly offsets: number[];
  readonly bytes: number;
}

function build(s: Scenario) {
  const batches = batchesOf(s);
  const byEpoch: Batch[][] = Array.from({ length: s.epochs }, () => []);
  batches.forEach((batch, i) => {
    const [home, retries] = s.placement[i % s.placement.length]!;
    byEpoch[home % s.epochs]!.push(batch);
    for (const retry of retries) byEpoch[retry % s.epochs]!.push(batch);
  });
  const copies: ServedCopy[] = [];
  byEpoch.forEach((inEpoch, epoch) => {
    const frames = inEpoch.map((b) =>
      encodeBatchFrame(
        {
          shuffleId: 0,
          mapId: b.mapId,
          attemptId: b.attemptId,
          batchId: b.batchId,
          partitionId: PARTITION,
          epoch,
        },
        encodeRecords(b.records.map((r) => new TextEncoder().encode(r))),
      ),
    );
    const chunks: Uint8Array[] = [];
    for (let i = 0; i < frames.length; i += s.framesPerChunk) {
      const run = frames.slice(i, i + s.framesPerChunk);
      const chunk = new Uint8Array(run.reduce((n, f) => n + f.length, 0));
      let at = 0;
      for (const f of run) {
        chunk.set(f, at);
        at += f.length;
      }
      chunks.push(chunk);
    }
    const offsets = [0];
    for (const chunk of chunks) offsets.push(offsets[offsets.length - 1]! + chunk.length);
    for (const mode of s.replicated ? (['PRIMARY', 'REPLICA'] as const) : (['PRIMARY'] as const)) {
      const location: PartitionLocation = {
        partitionId: PARTITION,
        epoch,
        worker: worker(mode === 'PRIMARY' ? epoch : epoch + 10),
        mode,
        storage: { type: 'HDD', mountPoint: '/d', availableTypes: 2 },
      };
      copies.push({ location, chunks, offsets, bytes: offsets[offsets.length - 1]! });
    }
  });
  const size = (b: Batch) => encodeRecords(b.records.map((r) => new TextEncoder().encode(r))).length;
  const winners = batches.filter((b) => s.maps[b.mapId]!.winner === b.attemptId);
  const group: GetReducerFileGroupResponse = {
    type: 'GetReducerFileGroupResponse',
    status: 'SUCCESS',
    message: '',
    mapAttempts: s.maps.map((m) => m.winner),
    fileGroups: [
      {
        partitionId: PARTITION,
        locations: copies.map((c) => c.location),
        files: copies.map((c) => ({
          uniqueId: uniqueId(c.location),
          mode: c.location.mode,
          storage: c.location.storage,
          bytes: c.bytes,
          chunkOffsets: c.offsets,
        })),
        expected: s.maps.map((_, mapId) => {
          const mine = winners.filter((b) => b.mapId === mapId);
          return {
            mapId,
            partitionId: PARTITION,
            batches: mine.length,
            bytes: mine.reduce((n, b) => n + size(b), 0),
          };
        }),
      },
    ],
  };
  return { copies, group, winners };
}

/** Runs the task to its end; what the consumer got, the most chunks ever ahead, and the final state. */
/** Runs the scenario to its end, or until `stop` holds after a step. */
function run(s: Scenario, stop: (state: ReduceTaskState) => boolean = () => false) {
  const { copies, group, winners } = build(s);
  let state: ReduceTaskState = initialReduceTaskState({
    release: '0.6.0',
    appId: 'app',
    shuffleId: 0,
    partitionId: PARTITION,
    lifecycleManager: 'lm',
    requestTimeoutMs: 1_000,
    maxRequestAttempts: 1,
    fileGroupRetryIntervalMs: 1_000,
    maxFileGroupAttempts: 1,
    fetchTimeoutMs: 1_000,
    maxChunksAhead: s.maxChunksAhead,
    stageRerunEnabled: true,
    cachedFileGroup: group,
  });
  const outstanding: Extract<Effect, { kind: 'send' }>[] = [];
  const streams = new Map<number, ServedCopy>();
  let nextStream = 1;
  let maxAhead = 0;
  const got: string[] = [];
  let taken = -1;
  const step = (input: Input) => {
    const result = reduceTaskMachine.step(state, input, 0, { next: () => 0 });
    state = result.state;
    for (const effect of result.effects) {
      if (effect.kind === 'send' && effect.requestId !== undefined) outstanding.push(effect);
    }
    maxAhead = Math.max(maxAhead, chunksAhead(state));
  };
  const answer = (request: Extract<Effect, { kind: 'send' }>): Message => {
    const message = request.message;
    if (message.type === 'OpenStream') {
      const copy = copies.find(
        (c) => workerKey(c.location.worker) === request.to && uniqueId(c.location) === message.uniqueId,
      )!;
      const streamId = nextStream++;
      streams.set(streamId, copy);
      return {
        type: 'OpenStreamResponse',
        status: 'SUCCESS',
        streamId,
        chunkOffsets: copy.offsets,
        message: '',
        ...(copy.chunks.length > 0 ? { firstChunk: copy.chunks[0]! } : {}),
      };
    }
    assert.equal(message.type, 'FetchChunk');
    if (message.type !== 'FetchChunk') throw new Error('unexpected request');
    const copy = streams.get(message.streamId)!;
    const failing =
      s.replicated &&
      s.failAt !== undefined &&
      copy.location.mode === 'PRIMARY' &&
      copy.location.epoch === s.failAt[0] &&
      message.chunkIndex === s.failAt[1];
    return failing
      ? {
          type: 'ChunkData',
          status: 'REQUEST_FAILED',
          streamId: message.streamId,
          chunkIndex: message.chunkIndex,
          bytes: new Uint8Array(0),
          message: 'disk error',
        }
      : {
          type: 'ChunkData',
          status: 'SUCCESS',
          streamId: message.streamId,
          chunkIndex: message.chunkIndex,
          bytes: copy.chunks[message.chunkIndex]!,
          message: '',
        };
  };
  const consume = () => {
    const fresh = state.ready.filter((c) => c.seq > taken);
    if (fresh.length === 0) return false;
    // Take one chunk at a time: the slowest consumer keeps the budget full.
    const chunk = fresh[0]!;
    for (const record of chunkRecords([chunk])) got.push(new TextDecoder().decode(record));
    taken = chunk.seq;
    step({ kind: 'consumed', chunk: taken });
    return true;
  };

  step({ kind: 'start', recovered: new Map() });
  let choice = 0;
  for (
    let guard = 0;
    guard < 10_000 && state.phase !== 'done' && state.phase !== 'failed' && !stop(state);
    guard += 1
  ) {
    const pick = s.choices[choice++ % s.choices.length]!;
    if ((pick % 3 === 0 || outstanding.length === 0) && consume()) continue;
    if (outstanding.length === 0) {
      consume();
      continue;
    }
    const [request] = outstanding.splice(pick % outstanding.length, 1);
    step({
      kind: 'receive',
      envelope: {
        from: request!.to,
        to: 'reduce',
        fromRelease: '0.6.0',
        inReplyTo: request!.requestId,
        message: answer(request!),
      },
    });
  }
  return { state, got, maxAhead, winners };
}

describe('streaming reduce task (property)', () => {
  it('hands every winning record out exactly once and never holds more chunks ahead than its budget', () => {
    fc.assert(
      fc.property(scenario, (s) => {
        const { state, got, maxAhead, winners } = run(s);
        assert.equal(state.phase, 'done', state.error?.message);
        assert.ok(maxAhead <= s.maxChunksAhead, `${maxAhead} chunks ahead, budget ${s.maxChunksAhead}`);
        const want = winners.flatMap((b) => b.records);
        assert.deepEqual([...got].sort(), [...want].sort());
        // Per map attempt, batches come out in the order the files hold them, so one map's batches of an epoch
        // written in order come out in order.
        assert.equal(state.ready.length, 0);
      }),
      { numRuns: 300 },
    );
  });

  it('with budget 1, asks for the next chunk only once the consumer took the previous one', () => {
    const s: Scenario = {
      maps: [{ attempts: [3], winner: 0 }],
      epochs: 1,
      placement: Array.from({ length: 24 }, () => [0, []] as [number, number[]]),
      framesPerChunk: 1,
      maxChunksAhead: 1,
      replicated: false,
      failAt: undefined,
      choices: Array.from({ length: 200 }, (_, i) => i),
    };
    const { state, got, maxAhead } = run(s);
    assert.equal(state.phase, 'done', state.error?.message);
    assert.equal(maxAhead, 1);
    assert.deepEqual(got, ['m0a0b0r0', 'm0a0b0r1', 'm0a0b1r0', 'm0a0b1r1', 'm0a0b2r0', 'm0a0b2r1']);
  });

  it('given up mid-read, closes the open stream on its worker; once its last chunk is asked for, or at the end, nothing', () => {
    const s: Scenario = {
      maps: [{ attempts: [3], winner: 0 }],
      epochs: 1,
      placement: Array.from({ length: 24 }, () => [0, []] as [number, number[]]),
      framesPerChunk: 1,
      maxChunksAhead: 1,
      replicated: false,
      failAt: undefined,
      choices: Array.from({ length: 200 }, (_, i) => i),
    };
    const midway = run(s, (state) => state.ready.length > 0).state;
    assert.equal(midway.phase, 'fetching');
    const close = closeOnAbandon(midway);
    assert.ok(close !== undefined, 'a stream is open with chunks left to ask for');
    assert.deepEqual(close.message, { type: 'CloseStream', streamId: midway.cursor!.streamId });
    const copy = midway.plan!.epochs[midway.cursor!.epochIndex]!.copies[midway.cursor!.copyIndex]!;
    assert.equal(close.to, workerKey(copy.location.worker), 'to the worker serving the stream');
    const lastAsked = run(s, (state) => {
      const cursor = state.cursor;
      const chunks = (cursor?.chunkOffsets?.length ?? 1) - 1;
      return cursor?.streamId !== undefined && cursor.nextRequest >= chunks;
    }).state;
    assert.equal(
      closeOnAbandon(lastAsked),
      undefined,
      'the worker ends a stream once its last chunk is served',
    );
    assert.equal(closeOnAbandon(run(s).state), undefined, 'a finished read has nothing to close');
  });
});
