import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { uniqueId, workerKey, type PartitionLocation, type WorkerId } from '../../domain/index.ts';
import { encodeBatchFrame } from '../../protocol/batch-frame.ts';
import type { CommittedFile, GetReducerFileGroupResponse, Message } from '../../protocol/messages.ts';
import type { Probe } from '../testing/in-memory-cluster.ts';
import { ProbeHarness } from '../testing/probe-harness.ts';
import { encodeRecords } from './records.ts';
import {
  chunkRecords,
  chunksAhead,
  initialReduceTaskState,
  reduceTaskMachine,
  type ReduceTaskConfig,
  type ReduceTaskState,
} from './reduce-task.ts';

const LM = 'lm-app';
const worker = (i: number): WorkerId => ({
  host: `w${i}`,
  rpcPort: 1,
  pushPort: 2,
  fetchPort: 3,
  replicatePort: 4,
});

const baseConfig: ReduceTaskConfig = {
  release: '0.6.0',
  appId: 'app',
  shuffleId: 0,
  partitionId: 3,
  lifecycleManager: LM,
  requestTimeoutMs: 5_000,
  maxRequestAttempts: 2,
  fileGroupRetryIntervalMs: 1_000,
  maxFileGroupAttempts: 3,
  fetchTimeoutMs: 1_000,
  maxChunksAhead: 2,
  stageRerunEnabled: true,
};

/** A committed partition file: frames for each (map, attempt, batch, record) given, two frames per chunk. */
function fileBytes(epoch: number, batches: readonly [number, number, number, string][]) {
  const frames = batches.map(([mapId, attemptId, batchId, record]) =>
    encodeBatchFrame(
      { shuffleId: 0, mapId, attemptId, batchId, partitionId: 3, epoch },
      encodeRecords([new TextEncoder().encode(record)]),
    ),
  );
  const bytes = new Uint8Array(frames.reduce((n, f) => n + f.length, 0));
  const offsets = [0];
  let at = 0;
  frames.forEach((frame, i) => {
    bytes.set(frame, at);
    at += frame.length;
    if (i % 2 === 1 || i === frames.length - 1) offsets.push(at);
  });
  return { bytes, offsets };
}

interface Copy {
  readonly location: PartitionLocation;
  readonly file: CommittedFile;
  readonly bytes: Uint8Array;
}

function copy(
  epoch: number,
  mode: 'PRIMARY' | 'REPLICA',
  on: number,
  batches: [number, number, number, string][],
): Copy {
  const { bytes, offsets } = fileBytes(epoch, batches);
  const location: PartitionLocation = {
    partitionId: 3,
    epoch,
    worker: worker(on),
    mode,
    storage: { type: 'HDD', mountPoint: '/d', availableTypes: 2 },
  };
  return {
    location,
    bytes,
    file: {
      uniqueId: uniqueId(location),
      mode,
      storage: location.storage,
      bytes: bytes.length,
      chunkOffsets: offsets,
    },
  };
}

/** Map 0 won with attempt 1 (batches 0 and 1), map 1 with attempt 0 (batch 2); attempt 0 of map 0 lost. */
const epoch0 = [
  [0, 0, 0, 'loser'],
  [0, 1, 0, 'a'],
  [1, 0, 2, 'c'],
] as [number, number, number, string][];
const epoch1 = [
  [0, 1, 0, 'a'],
  [0, 1, 1, 'b'],
] as [number, number, number, string][];

function group(copies: readonly Copy[]): GetReducerFileGroupResponse {
  return {
    type: 'GetReducerFileGroupResponse',
    status: 'SUCCESS',
    mapAttempts: [1, 0],
    message: '',
    fileGroups: [
      {
        partitionId: 3,
        locations: copies.map((c) => c.location),
        files: copies.map((c) => c.file),
        expected: [
          { mapId: 0, partitionId: 3, batches: 2, bytes: 2 * encodeRecords([new Uint8Array(1)]).length },
          { mapId: 1, partitionId: 3, batches: 1, bytes: encodeRecords([new Uint8Array(1)]).length },
        ],
      },
    ],
  };
}

/** Chunk `index` of a served copy, its last byte flipped when the copy is the damaged one. */
function chunkOf(served: Copy, index: number, damage: { corrupt?: Copy }): Uint8Array {
  const offsets = served.file.chunkOffsets;
  const bytes = served.bytes.slice(offsets[index], offsets[index + 1]);
  if (served === damage.corrupt) bytes[bytes.length - 1]! ^= 0xff;
  return bytes;
}

class Harness extends ProbeHarness<ReduceTaskState> {
  readonly lm: Probe;
  private nextStream = 1;
  private readonly streams = new Map<number, Copy>();
  /** What the consumer got, in order, and the last chunk it took. */
  private readonly consumed: string[] = [];
  private taken = -1;
  /** The most chunks the task ever held ahead of its consumer. */
  maxAhead = 0;

  constructor(config: Partial<ReduceTaskConfig> = {}) {
    super('reduce-app-0-3', {
      machine: reduceTaskMachine,
      init: () => initialReduceTaskState({ ...baseConfig, ...config }),
    });
    this.lm = this.probe(LM);
    for (let i = 0; i < 4; i += 1) this.probe(workerKey(worker(i)));
    this.start();
    this.advance(5);
  }

  /** Serves the copies from the worker probes; `corrupt` flips a byte of that copy's chunks, `refuse` refuses it. */
  /** `inlineFirstChunk`: answer an OpenStream that asks for it with chunk 0, as our workers do. */
  serve(
    copies: readonly Copy[],
    damage: { corrupt?: Copy; refuse?: Copy } = {},
    inlineFirstChunk = false,
  ): void {
    for (let round = 0; round < 20; round += 1) {
      for (let i = 0; i < 4; i += 1) {
        const w = this.probe(workerKey(worker(i)));
        this.answer(w, 'OpenStream', ({ message }): Message => {
          const found = copies.find(
            (c) =>
              c.file.uniqueId === message.uniqueId &&
              c.file.mode === message.mode &&
              c.location.worker.host === `w${i}`,
          );
          if (found === undefined || found === damage.refuse) {
            return {
              type: 'OpenStreamResponse',
              status: 'OPEN_STREAM_FAILED',
              streamId: 0,
              chunkOffsets: [],
              message: 'not committed here',
            };
          }
          const streamId = this.nextStream++;
          this.streams.set(streamId, found);
          const offsets = found.file.chunkOffsets;
          const inline = inlineFirstChunk && message.readFirstChunk === true && offsets.length > 1;
          return {
            type: 'OpenStreamResponse',
            status: 'SUCCESS',
            streamId,
            chunkOffsets: offsets,
            message: '',
            ...(inline ? { firstChunk: chunkOf(found, 0, damage) } : {}),
          };
        });
        this.answer(w, 'FetchChunk', ({ message }): Message => {
          const served = this.streams.get(message.streamId)!;
          const bytes = chunkOf(served, message.chunkIndex, damage);
          return {
            type: 'ChunkData',
            status: 'SUCCESS',
            streamId: message.streamId,
            chunkIndex: message.chunkIndex,
            bytes,
            message: '',
          };
        });
      }
      this.advance(5);
      this.consume();
    }
  }

  /** The consumer takes every chunk handed out since it last looked and says so. */
  consume(): void {
    const state = this.node.state();
    this.maxAhead = Math.max(this.maxAhead, chunksAhead(state));
    const fresh = state.ready.filter((chunk) => chunk.seq > this.taken);
    if (fresh.length === 0) return;
    for (const record of chunkRecords(fresh)) this.consumed.push(new TextDecoder().decode(record));
    this.taken = fresh[fresh.length - 1]!.seq;
    this.cluster.consumed(this.node.id, this.taken);
    this.advance(1);
  }

  output(): string[] {
    return [...this.consumed];
  }
}

describe('reduce task', () => {
  const copies = [
    copy(0, 'PRIMARY', 0, epoch0),
    copy(0, 'REPLICA', 1, epoch0),
    copy(1, 'PRIMARY', 2, epoch1),
    copy(1, 'REPLICA', 3, epoch1),
  ];

  it('asks again while the stage has not ended, then reads every epoch from its primary', () => {
    const h = new Harness();
    h.answer(h.lm, 'GetReducerFileGroup', () => ({
      type: 'GetReducerFileGroupResponse',
      status: 'STAGE_END_TIMEOUT',
      fileGroups: [],
      mapAttempts: [],
      message: 'not yet',
    }));
    h.advance(baseConfig.fileGroupRetryIntervalMs + 10);
    assert.equal(h.received(h.lm, 'GetReducerFileGroup').length, 2);
    h.answer(h.lm, 'GetReducerFileGroup', () => group(copies));
    h.advance(5);
    h.serve(copies);
    const state = h.node.state();
    assert.equal(state.phase, 'done', state.error?.message);
    assert.deepEqual(h.output(), ['a', 'c', 'b'], 'winners only, each batch once, in file order');
    assert.ok(h.maxAhead <= baseConfig.maxChunksAhead, 'h.maxAhead <= baseConfig.maxChunksAhead');
    assert.equal(
      h.received(h.probe(workerKey(worker(1))), 'OpenStream').length,
      0,
      'replicas are not read when primaries are fine',
    );
    assert.equal(
      h.received(h.probe(workerKey(worker(0))), 'CloseStream').length,
      0,
      'a stream read to its end is ended by the worker: nothing to close',
    );
  });

  it("reads with its executor's cached file group without asking the lifecycle manager; only a SUCCESS is used", () => {
    const cached = new Harness({ cachedFileGroup: group(copies) });
    cached.serve(copies);
    assert.equal(cached.node.state().phase, 'done', cached.node.state().error?.message);
    assert.deepEqual(cached.output(), ['a', 'c', 'b']);
    assert.equal(cached.received(cached.lm, 'GetReducerFileGroup').length, 0);

    const notCommitted = new Harness({
      cachedFileGroup: {
        type: 'GetReducerFileGroupResponse',
        status: 'STAGE_END_TIMEOUT',
        fileGroups: [],
        mapAttempts: [],
        message: 'not yet',
      },
    });
    assert.equal(notCommitted.received(notCommitted.lm, 'GetReducerFileGroup').length, 1);
  });

  it('takes chunk 0 from the OpenStream answer when the worker sends it, and fetches only the rest', () => {
    for (const damage of [{}, { corrupt: copies[0] }] as const) {
      const h = new Harness();
      h.answer(h.lm, 'GetReducerFileGroup', () => group(copies));
      h.advance(5);
      h.serve(copies, damage, true);
      const state = h.node.state();
      assert.equal(state.phase, 'done', state.error?.message);
      assert.deepEqual(h.output(), ['a', 'c', 'b']);
      const opens = h.received(h.probe(workerKey(worker(0))), 'OpenStream');
      assert.ok(
        opens.length > 0 && opens.every((o) => o.readFirstChunk === true),
        'opens.length > 0 && opens.every((o) => o.readFirstChunk === true)',
      );
      for (const copy of copies) {
        const chunks = copy.file.chunkOffsets.length - 1;
        const fetched = h
          .received(h.probe(workerKey(copy.location.worker)), 'FetchChunk')
          .filter((f) => f.chunkIndex === 0);
        assert.equal(
          fetched.length,
          0,
          `chunk 0 of ${copy.file.uniqueId} came with the open (${chunks} chunks)`,
        );
      }
      if ('corrupt' in damage) {
        assert.equal(
          state.copyFailures.length,
          1,
          'a corrupt inline chunk fails its copy like a fetched one',
        );
        assert.equal(h.received(h.probe(workerKey(worker(1))), 'OpenStream').length, 1);
      }
    }
  });

  it('reads the replica when the primary refuses, is unreachable, or serves a corrupt chunk', () => {
    for (const [damage, replicaWorker] of [
      [{ refuse: copies[0] }, 1],
      [{ corrupt: copies[2] }, 3],
    ] as const) {
      const h = new Harness();
      h.answer(h.lm, 'GetReducerFileGroup', () => group(copies));
      h.advance(5);
      h.serve(copies, damage);
      assert.equal(h.node.state().phase, 'done', h.node.state().error?.message);
      assert.deepEqual(h.output(), ['a', 'c', 'b']);
      assert.equal(h.received(h.probe(workerKey(worker(replicaWorker))), 'OpenStream').length, 1);
      assert.equal(h.node.state().copyFailures.length, 1);
      if ('corrupt' in damage) {
        assert.equal(
          h.received(h.probe(workerKey(worker(2))), 'CloseStream').length,
          1,
          'a stream given up before its end is closed',
        );
      }
    }
    const moved = [
      { ...copies[0]!, location: { ...copies[0]!.location, worker: worker(9) } },
      ...copies.slice(1),
    ];
    const h = new Harness();
    h.answer(h.lm, 'GetReducerFileGroup', () => group(moved));
    h.advance(5);
    h.serve(moved);
    assert.deepEqual(h.output(), ['a', 'c', 'b']);
  });

  it('reads a copy committed empty as empty without asking its worker, which may be down (upgrade seed 381476)', () => {
    // Epoch 0's pushes all failed and went to epoch 1: its one committed copy is empty, on a worker restarting.
    const empty = copy(0, 'REPLICA', 1, []);
    assert.equal(empty.file.bytes, 0);
    const copies = [empty, copy(1, 'PRIMARY', 2, epoch1)];
    const h = new Harness();
    h.answer(h.lm, 'GetReducerFileGroup', () => ({
      ...group(copies),
      mapAttempts: [1],
      fileGroups: group(copies).fileGroups.map((g) => ({ ...g, expected: [g.expected[0]!] })),
    }));
    h.advance(5);
    h.serve(copies, { refuse: empty });
    assert.equal(h.node.state().phase, 'done', h.node.state().error?.message);
    assert.deepEqual(h.output(), ['a', 'b']);
    assert.equal(
      h.received(h.probe(workerKey(worker(1))), 'OpenStream').length,
      0,
      'the empty copy is not asked',
    );
  });

  it('turns an epoch without a readable copy into a FetchFailure when stage rerun is on, an unreadable failure when off', () => {
    for (const stageRerunEnabled of [true, false]) {
      const h = new Harness({ stageRerunEnabled });
      const lost = [copies[0]!, copies[2]!];
      h.answer(h.lm, 'GetReducerFileGroup', () => group(lost));
      h.advance(5);
      h.serve(lost, { refuse: copies[2] });
      const { phase, error } = h.node.state();
      assert.equal(phase, 'failed');
      assert.equal(error?.kind, stageRerunEnabled ? 'fetch-failure' : 'unreadable');
      assert.match(error?.message ?? '', /no copy of epoch 1 could be read: PRIMARY copy of epoch 1 on w2/);
      assert.match(
        error?.message ?? '',
        stageRerunEnabled ? /^FetchFailure .* reruns the map stage/ : /Stage rerun is off/,
      );
    }
  });

  it('reports SHUFFLE_DATA_LOST as a fetch failure, and a count mismatch as an integrity error', () => {
    const lostData = new Harness();
    lostData.answer(lostData.lm, 'GetReducerFileGroup', () => ({
      type: 'GetReducerFileGroupResponse',
      status: 'SHUFFLE_DATA_LOST',
      fileGroups: [],
      mapAttempts: [],
      message: 'partition 3 epoch 0 lost',
    }));
    lostData.advance(5);
    assert.equal(lostData.node.state().error?.kind, 'fetch-failure');

    const short = new Harness();
    const onlyEpoch0 = [copies[0]!, copies[1]!];
    short.answer(short.lm, 'GetReducerFileGroup', () => group(onlyEpoch0));
    short.advance(5);
    short.serve(onlyEpoch0);
    const { error } = short.node.state();
    assert.equal(error?.kind, 'integrity');
    assert.match(error?.message ?? '', /map 0 reported 2 batches/);
  });

  it('hands out duplicates and losing attempts under the planted bug dedupe-disabled', () => {
    const h = new Harness({ plantedBug: 'dedupe-disabled' });
    h.answer(h.lm, 'GetReducerFileGroup', () => group(copies));
    h.advance(5);
    h.serve(copies);
    assert.deepEqual(h.output(), ['loser', 'a', 'c', 'a', 'b']);
  });

  it('fails when the lifecycle manager never answers', () => {
    const h = new Harness();
    h.advance(2 * baseConfig.requestTimeoutMs + 10);
    assert.equal(h.received(h.lm, 'GetReducerFileGroup').length, 2);
    assert.equal(h.node.state().error?.kind, 'failure');
    assert.match(h.node.state().error?.message ?? '', /did not answer GetReducerFileGroup/);
  });
});
