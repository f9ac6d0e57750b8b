import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import fc from 'fast-check';
import { workerKey, type PartitionLocation, type StatusCode, type WorkerId } from '../../domain/index.ts';
import { FRAME_HEADER_BYTES, decodeBatchFrame } from '../../protocol/batch-frame.ts';
import type { Message, MessageOf } from '../../protocol/messages.ts';
import { replayRng } from '../../rng.ts';
import type { Effect, Envelope, Input } from '../effects.ts';
import type { Machine } from '../machine.ts';
import type { Probe } from '../testing/in-memory-cluster.ts';
import { ProbeHarness } from '../testing/probe-harness.ts';
import {
  initialMapTaskState,
  MAX_BATCHES_PER_PUSH,
  mapTaskHasRoom,
  unsentLimit,
  staleAfterBytes,
  mapTaskMachine,
  mapTaskWritingAll,
  NO_BATCH,
  partitionOf,
  allPartitionsOf,
  unacknowledgedBatchesOf,
  type MapTaskConfig,
  type MapTaskState,
} from './map-task.ts';
import { decodeRecords, recordRuns } from './records.ts';

const LM = 'lm-app';
const ME = 'map-app-0-0-0';
const worker = (i: number): WorkerId => ({
  host: `w${i}`,
  rpcPort: 1,
  pushPort: 2,
  fetchPort: 3,
  replicatePort: 4,
});
const location = (partitionId: number, epoch: number, on: number): PartitionLocation => ({
  partitionId,
  epoch,
  worker: worker(on),
  mode: 'PRIMARY',
  storage: { type: 'HDD', mountPoint: '', availableTypes: 2 },
});
/** A replicated location: primary on worker `on`, its replica on worker `peer`. */
const replicated = (partitionId: number, epoch: number, on: number, peer: number): PartitionLocation => {
  const primary = location(partitionId, epoch, on);
  return { ...primary, peer: { ...primary, worker: worker(peer), mode: 'REPLICA' } };
};
const text = (s: string) => new TextEncoder().encode(s);
/** One record of 6 bytes is a records payload of 10 bytes, framed in 50. */
const FRAME_OF_ONE_RECORD = 50;

/** Records of 6 bytes each: with a batch size of 20 bytes, two records (2 × (4 + 6)) fill a batch. */
const baseConfig: MapTaskConfig = {
  release: '0.6.0',
  appId: 'app',
  shuffleId: 0,
  mapId: 0,
  attemptId: 0,
  numMappers: 1,
  numPartitions: 2,
  lifecycleManager: LM,
  batchSizeBytes: 20,
  maxUnacknowledgedBytes: 1 << 20,
  mergeSizeBytes: 20,
  maxInFlightPerPartition: 1,
  maxReviveRetries: 2,
  pushTimeoutMs: 1_000,
  requestTimeoutMs: 5_000,
  maxRequestAttempts: 3,
  excludeWorkerOnFailure: false,
};

/** What the tests' map writes unless they say otherwise, all at once when it starts. */
const baseRecords = [[text('p0-r00'), text('p0-r01'), text('p0-r02')], [text('p1-r00')]];

type Records = readonly (readonly Uint8Array[])[];

class Harness extends ProbeHarness<MapTaskState> {
  readonly lm: Probe;
  constructor({ records = baseRecords, ...config }: Partial<MapTaskConfig> & { records?: Records } = {}) {
    // A test that sets only the batch size merges up to it, as the cap was before it had a key of its own.
    const merge = { mergeSizeBytes: config.batchSizeBytes ?? baseConfig.mergeSizeBytes };
    super(ME, {
      machine: mapTaskWritingAll(records),
      init: () => initialMapTaskState({ ...baseConfig, ...merge, ...config }),
    });
    this.lm = this.probe(LM);
    for (let i = 0; i < 4; i += 1) this.probe(workerKey(worker(i)));
    this.start();
    this.advance(5);
  }

  w(i: number): Probe {
    return this.probe(workerKey(worker(i)));
  }

  register(locations: PartitionLocation[] = [location(0, 0, 0), location(1, 0, 1)]): void {
    this.answer(this.lm, 'RegisterShuffle', () => ({
      type: 'RegisterShuffleResponse',
      status: 'SUCCESS',
      locations,
      message: '',
    }));
    this.advance(5);
  }

  /** Answers every pending push on worker i with `status`. */
  pushes(i: number, status: StatusCode): Envelope<MessageOf<'PushData'>>[] {
    const pending = this.pending(this.w(i), 'PushData');
    this.answer(this.w(i), 'PushData', () => ({ type: 'PushDataResponse', status, message: '' }));
    this.advance(5);
    return pending;
  }

  /** Answers every pending merged push on worker i with `statuses(request)`. */
  merged(
    i: number,
    statuses: (request: MessageOf<'PushMergedData'>) => readonly StatusCode[],
  ): Envelope<MessageOf<'PushMergedData'>>[] {
    const pending = this.pending(this.w(i), 'PushMergedData');
    this.answer(this.w(i), 'PushMergedData', ({ message }) => ({
      type: 'PushMergedDataResponse',
      statuses: statuses(message),
      message: '',
    }));
    this.advance(5);
    return pending;
  }

  /** Revives every asked partition to `at(partitionId)` at epoch `epoch`. */
  reviveTo(epoch: number, at: (partitionId: number) => PartitionLocation): void {
    this.reviveWith((request) => ({
      type: 'ReviveResponse',
      results: request.requests.map((r) => ({
        partitionId: r.partitionId,
        status: 'SUCCESS',
        newLocation: { ...at(r.partitionId), epoch },
        oldAvailable: true,
      })),
      endedMapIds: [],
    }));
  }

  reviveWith(results: (request: MessageOf<'Revive'>) => MessageOf<'ReviveResponse'>): void {
    this.answer(this.lm, 'Revive', ({ message }) => results(message));
    this.advance(5);
  }
}

function framesOf(pushes: readonly Envelope<MessageOf<'PushData'>>[]) {
  return pushes.map(({ message }) => frameOf(message.payload));
}

function frameOf(payload: Uint8Array) {
  const frame = decodeBatchFrame(payload);
  assert.ok(frame.ok, 'frame.ok');
  return frame.value;
}

/** `[partitionId, batchId, epoch]` of each batch of a merged push, checked against its frame. */
function batchesOf(push: Envelope<MessageOf<'PushMergedData'>>): [number, number, number][] {
  return push.message.batches.map((b) => {
    const frame = frameOf(b.payload);
    assert.deepEqual(
      [frame.partitionId, frame.batchId, frame.epoch],
      [b.partitionId, b.batchId, b.epoch],
      'each batch is framed exactly as its PushData would be',
    );
    return [b.partitionId, b.batchId, b.epoch];
  });
}

/** One record per partition (at most 10), so each partition is one batch framed in FRAME_OF_ONE_RECORD bytes. */
function oneRecordEach(partitions: number): readonly (readonly Uint8Array[])[] {
  return Array.from({ length: partitions }, (_, p) => [text(`p${p}-r00`)]);
}

describe('map task', () => {
  it('copies records into their batch’s frame as it takes them, seals it when first pushed, and lets it go once acknowledged', () => {
    // Marked memory: a byte still 0xee was never written.
    const h = new Harness({ allocate: (length) => new Uint8Array(length).fill(0xee) });
    const [first, second] = unacknowledgedFrames(h.node.state(), 0);
    assert.ok(first !== undefined && second !== undefined, 'two batches cut before registration');
    const header = (frame: Uint8Array) => frame.subarray(0, FRAME_HEADER_BYTES);
    assert.ok(
      header(second).every((byte) => byte === 0xee),
      'not sealed before it is pushed',
    );
    assert.deepEqual(decodeRecords(second.subarray(FRAME_HEADER_BYTES)), {
      ok: true,
      records: [text('p0-r02')],
    });
    h.register();
    const pushed = h.pending(h.w(0), 'PushData');
    assert.equal(pushed.length, 1);
    assert.equal(pushed[0]!.message.payload, first, 'the frame is sent as it was filled, no copy');
    assert.deepEqual(decodeRecords(frameOf(pushed[0]!.message.payload).payload), {
      ok: true,
      records: [text('p0-r00'), text('p0-r01')],
    });
    assert.ok(
      header(second).every((byte) => byte === 0xee),
      'the batch after it, not pushed yet, is not sealed',
    );
    h.pushes(0, 'SUCCESS');
    assert.deepEqual(
      unacknowledgedFrames(h.node.state(), 0),
      [second],
      'an acknowledged batch lets its frame go',
    );
    assert.ok(!header(second).every((byte) => byte === 0xee), 'and the next is sealed once pushed');
  });

  it('registers, pushes framed batches one at a time per partition, and reports what was acknowledged', () => {
    const h = new Harness();
    assert.deepEqual(h.last(h.lm, 'RegisterShuffle'), {
      type: 'RegisterShuffle',
      appId: 'app',
      shuffleId: 0,
      numMappers: 1,
      numPartitions: 2,
    });
    h.register();
    const first = h.pushes(0, 'SUCCESS');
    assert.equal(first.length, 1, 'one batch in flight per partition');
    const second = h.pushes(0, 'SUCCESS');
    const other = h.pushes(1, 'SUCCESS');
    const frames = framesOf([...first, ...second, ...other]);
    assert.deepEqual(
      frames.map((f) => [f.partitionId, f.batchId, f.epoch, f.mapId, f.attemptId]),
      [
        [0, 0, 0, 0, 0],
        [0, 1, 0, 0, 0],
        [1, 2, 0, 0, 0],
      ],
    );
    const records = frames.flatMap((f) => {
      const decoded = decodeRecords(f.payload);
      assert.ok(decoded.ok, 'decoded.ok');
      return decoded.records.map((r) => new TextDecoder().decode(r));
    });
    assert.deepEqual(records, ['p0-r00', 'p0-r01', 'p0-r02', 'p1-r00']);
    assert.equal(first[0]!.message.shuffleKey, 'app-0');
    assert.equal(first[0]!.message.mode, 'PRIMARY');

    const end = h.last(h.lm, 'MapperEnd');
    assert.deepEqual(end.written, [
      { partitionId: 0, batches: 2, bytes: 30 },
      { partitionId: 1, batches: 1, bytes: 10 },
    ]);
    h.answer(h.lm, 'MapperEnd', () => ({ type: 'StatusResponse', status: 'SUCCESS', message: '' }));
    h.advance(5);
    assert.equal(h.node.state().phase, 'won');
  });

  it('given the locations its executor holds, pushes at once and never registers', () => {
    const h = new Harness({ registeredLocations: [location(0, 0, 0), location(1, 0, 1)] });
    assert.equal(h.received(h.lm, 'RegisterShuffle').length, 0, 'no RegisterShuffle');
    const pushes = [...h.pushes(0, 'SUCCESS'), ...h.pushes(0, 'SUCCESS'), ...h.pushes(1, 'SUCCESS')];
    assert.deepEqual(
      framesOf(pushes).map((f) => [f.partitionId, f.batchId, f.epoch]),
      [
        [0, 0, 0],
        [0, 1, 0],
        [1, 2, 0],
      ],
    );
    h.answer(h.lm, 'MapperEnd', () => ({ type: 'StatusResponse', status: 'SUCCESS', message: '' }));
    h.advance(5);
    assert.equal(h.node.state().phase, 'won');
  });

  it('on HARD_SPLIT revives and resends the same batch, framed with the new epoch, at no cost to the budget', () => {
    const h = new Harness({ maxReviveRetries: 0 });
    h.register();
    const split = h.pushes(0, 'HARD_SPLIT');
    const revive = h.last(h.lm, 'Revive');
    assert.deepEqual(
      revive.requests.map((r) => [r.partitionId, r.epoch, r.cause]),
      [[0, 0, 'HARD_SPLIT']],
    );
    h.reviveWith(() => ({
      type: 'ReviveResponse',
      results: [{ partitionId: 0, status: 'SUCCESS', newLocation: location(0, 1, 2), oldAvailable: true }],
      endedMapIds: [],
    }));
    const resent = framesOf(h.pushes(2, 'SUCCESS'));
    assert.deepEqual(
      resent.map((f) => [f.batchId, f.epoch]),
      [[0, 1]],
    );
    // The batch was framed in place for its first push; the resend is a copy, so the bytes sent first (which a
    // socket may still hold) still say epoch 0.
    assert.deepEqual(
      framesOf(split).map((f) => [f.batchId, f.epoch]),
      [[0, 0]],
    );
    assert.equal(h.node.state().phase, 'pushing');
  });

  it('frames batches in a buffer it need not zero: every header byte is written before a push', () => {
    const h = new Harness({ allocate: (length) => new Uint8Array(length).fill(0xa5) });
    h.register();
    const frames = framesOf([
      ...h.pushes(0, 'SUCCESS'),
      ...h.pushes(0, 'SUCCESS'),
      ...h.pushes(1, 'SUCCESS'),
    ]);
    assert.deepEqual(
      frames.map((f) => [f.partitionId, f.batchId, f.epoch, f.payload.length]),
      [
        [0, 0, 0, 20],
        [0, 1, 0, 10],
        [1, 2, 0, 10],
      ],
    );
  });

  it('on SOFT_SPLIT counts the batch and revives in the background, moving on when the answer comes', () => {
    const h = new Harness();
    h.register();
    h.pushes(0, 'SOFT_SPLIT');
    assert.equal(h.last(h.lm, 'Revive').requests[0]!.cause, 'SOFT_SPLIT');
    const next = framesOf(h.pushes(0, 'SUCCESS'));
    assert.deepEqual(
      next.map((f) => [f.batchId, f.epoch]),
      [[1, 0]],
      'the old location still takes the next batch',
    );
    h.reviveWith(() => ({
      type: 'ReviveResponse',
      results: [{ partitionId: 0, status: 'SUCCESS', newLocation: location(0, 1, 3), oldAvailable: true }],
      endedMapIds: [],
    }));
    h.pushes(1, 'SUCCESS');
    assert.deepEqual(h.last(h.lm, 'MapperEnd').written[0], { partitionId: 0, batches: 2, bytes: 30 });
  });

  it('spends one revive per failure and fails clearly when none is left', () => {
    const h = new Harness({ maxReviveRetries: 1 });
    h.register();
    h.pushes(0, 'PUSH_DATA_WRITE_FAIL_PRIMARY');
    h.reviveWith(() => ({
      type: 'ReviveResponse',
      results: [{ partitionId: 0, status: 'SUCCESS', newLocation: location(0, 1, 2), oldAvailable: false }],
      endedMapIds: [],
    }));
    h.pushes(2, 'PUSH_DATA_WRITE_FAIL_REPLICA');
    const state = h.node.state();
    assert.equal(state.phase, 'failed');
    assert.match(state.error ?? '', /PUSH_DATA_WRITE_FAIL_REPLICA and no revive is left/);
  });

  it('reports a push timeout and an unreachable worker as their causes', () => {
    const h = new Harness();
    h.register();
    h.advance(baseConfig.pushTimeoutMs + 5);
    const causes = h.received(h.lm, 'Revive').flatMap((r) => r.requests.map((q) => [q.partitionId, q.cause]));
    assert.deepEqual(causes, [
      [0, 'PUSH_DATA_TIMEOUT_PRIMARY'],
      [1, 'PUSH_DATA_TIMEOUT_PRIMARY'],
    ]);

    const down = new Harness();
    down.register([location(0, 0, 0), { ...location(1, 0, 1), worker: { ...worker(9) } }]);
    const revive = down.last(down.lm, 'Revive');
    assert.deepEqual(
      revive.requests.map((r) => [r.partitionId, r.cause]),
      [[1, 'PUSH_DATA_CREATE_CONNECTION_FAIL_PRIMARY']],
    );
  });

  it('revives a partition it has no location for from epoch -1', () => {
    const h = new Harness();
    h.register([location(0, 0, 0)]);
    const revive = h.last(h.lm, 'Revive');
    assert.deepEqual(
      revive.requests.map((r) => [r.partitionId, r.epoch]),
      [[1, -1]],
    );
  });

  it('stops as lost when another attempt ended first, and fails on a registration refusal', () => {
    const ended = new Harness();
    ended.register();
    ended.pushes(0, 'MAP_ENDED');
    assert.equal(ended.node.state().phase, 'lost');

    const revived = new Harness();
    revived.register();
    revived.pushes(0, 'HARD_SPLIT');
    revived.reviveWith(() => ({ type: 'ReviveResponse', results: [], endedMapIds: [0] }));
    assert.equal(revived.node.state().phase, 'lost');

    const refused = new Harness();
    refused.answer(refused.lm, 'RegisterShuffle', () => ({
      type: 'RegisterShuffleResponse',
      status: 'CLIENT_RELEASE_REFUSED',
      locations: [],
      message: 'server release 0.6.0 refuses client release 0.2.0',
    }));
    refused.advance(5);
    assert.equal(refused.node.state().phase, 'failed');
    assert.match(refused.node.state().error ?? '', /CLIENT_RELEASE_REFUSED: server release 0\.6\.0 refuses/);
  });

  it('property: whatever mix of splits and failures, a winning attempt reports exactly its planned batches', () => {
    const statuses: StatusCode[] = [
      'SUCCESS',
      'SOFT_SPLIT',
      'HARD_SPLIT',
      'PUSH_DATA_WRITE_FAIL_PRIMARY',
      'PUSH_DATA_TIMEOUT_REPLICA',
      'PUSH_DATA_SUCCESS_PRIMARY_CONGESTED',
    ];
    fc.assert(
      fc.property(
        fc.array(fc.array(fc.string({ maxLength: 12 }), { maxLength: 6 }), { minLength: 1, maxLength: 5 }),
        fc.integer({ min: 20, max: 160 }),
        // From batches that never merge (every frame is over the cap) to several batches per merged push.
        fc.integer({ min: 20, max: 400 }),
        fc.integer({ min: 1, max: 4 }),
        fc.infiniteStream(fc.constantFrom(...statuses)),
        (records, batchSizeBytes, mergeSizeBytes, maxInFlightPerPartition, outcomes) => {
          const encoded = records.map((rs) => rs.map(text));
          const h = new Harness({
            numPartitions: encoded.length,
            records: encoded,
            maxReviveRetries: 1000,
            batchSizeBytes,
            mergeSizeBytes,
            maxInFlightPerPartition,
          });
          // Every batch is cut at the start (the records and their end come with it).
          const planned = allPartitionsOf(h.node.state())
            .filter((p) => p.cut > 0)
            .map((p) => ({
              partitionId: p.partitionId,
              batches: p.cut,
              bytes: unacknowledgedBatchesOf(h.node.state(), p.partitionId).reduce(
                (n, slot) => n + h.node.state().batches.payloadBytes[slot]!,
                0,
              ),
            }));
          const outcome = () => outcomes.next().value as StatusCode;
          h.register(encoded.map((_, p) => location(p, 0, p % 2)));
          let epoch = 1;
          // Rounds enough for a long run of CONGESTED answers: each pause waits for the next long advance (a drawn
          // mix once needed 471 rounds, over a bound of 400 then).
          for (let round = 0; round < 2000 && h.node.state().phase === 'pushing'; round += 1) {
            for (let i = 0; i < 4; i += 1) {
              h.answer(h.w(i), 'PushData', () => ({
                type: 'PushDataResponse',
                status: outcome(),
                message: '',
              }));
              h.answer(h.w(i), 'PushMergedData', ({ message }) => ({
                type: 'PushMergedDataResponse',
                statuses: message.batches.map(outcome),
                message: '',
              }));
            }
            h.answer(h.lm, 'Revive', ({ message }) => ({
              type: 'ReviveResponse',
              results: message.requests.map((r) => ({
                partitionId: r.partitionId,
                status: 'SUCCESS',
                newLocation: location(r.partitionId, epoch++, epoch % 2),
                oldAvailable: true,
              })),
              endedMapIds: [],
            }));
            // Now and then long enough for a congested worker's push pause (core/client/slow-start.ts) to end.
            h.advance(round % 20 === 19 ? 500 : 5);
          }
          assert.equal(h.node.state().phase, 'ending');
          const written = h.last(h.lm, 'MapperEnd').written;
          assert.deepEqual(written, planned);
        },
      ),
      { numRuns: 60 },
    );
  });
});

describe('map task: several batches of a partition in flight', () => {
  /** Partition 0 of five one-record batches (a 10-byte cap holds one 6-byte record), a window of 3, all merged. */
  const fiveBatchesWindowOfThree = () =>
    new Harness({
      numPartitions: 1,
      records: [Array.from({ length: 5 }, (_, i) => text(`p0-r${i}`.padEnd(6, '-')))],
      batchSizeBytes: 10,
      mergeSizeBytes: 1_000,
      maxInFlightPerPartition: 3,
    });

  it('keeps up to maxInFlightPerPartition batches in flight and pushes the next as each is answered', () => {
    const h = fiveBatchesWindowOfThree();
    h.register([location(0, 0, 0)]);
    const first = h.merged(0, (m) => m.batches.map(() => 'SUCCESS'));
    assert.deepEqual(
      batchesOf(first[0]!).map(([, batchId]) => batchId),
      [0, 1, 2],
    );
    const second = h.merged(0, (m) => m.batches.map(() => 'SUCCESS'));
    assert.deepEqual(
      batchesOf(second[0]!).map(([, batchId]) => batchId),
      [3, 4],
    );
    assert.deepEqual(h.last(h.lm, 'MapperEnd').written, [{ partitionId: 0, batches: 5, bytes: 50 }]);
  });

  it('slows down on a CONGESTED answer (smaller window, a pause) and grows back on plain successes', () => {
    const h = new Harness({
      numPartitions: 1,
      records: [Array.from({ length: 12 }, (_, i) => text(`p0-r${i}`.padEnd(6, '-')))],
      batchSizeBytes: 10,
      mergeSizeBytes: 1_000,
      maxInFlightPerPartition: 4,
    });
    h.register([location(0, 0, 0)]);
    const w0 = workerKey(worker(0));
    // Batches 0-3 answered congested: acknowledged (the worker kept them), the window halves, twice.
    const first = h.merged(0, (m) => m.batches.map(() => 'PUSH_DATA_SUCCESS_PRIMARY_CONGESTED'));
    assert.equal(batchesOf(first[0]!).length, 4, 'the full window went first');
    assert.equal(h.node.state().pushLimits.get(w0)?.limit, 1, 'four congested answers: 4 → 2 → 1 → 1 → 1');
    assert.equal(partitionOf(h.node.state(), 0).acknowledgedBatches, 4, 'congested batches count as written');
    // One batch at a time now, each followed by a pause of at least 440 ms before the next push to the worker.
    h.advance(400);
    assert.equal(
      h.pending(h.w(0), 'PushData').length + h.pending(h.w(0), 'PushMergedData').length,
      0,
      'nothing pushed while the pause lasts',
    );
    h.advance(2_000);
    const one = h.pushes(0, 'SUCCESS');
    assert.equal(one.length, 1, 'a window of one');
    assert.equal(h.node.state().pushLimits.get(w0)?.limit, 2, 'a plain success grows the window back');
    for (let round = 0; round < 20 && h.node.state().phase === 'pushing'; round += 1) {
      h.advance(500);
      h.pushes(0, 'SUCCESS');
      h.merged(0, (m) => m.batches.map(() => 'SUCCESS'));
    }
    assert.equal(h.node.state().pushLimits.has(w0), false, 'back at the maximum, the worker is forgotten');
    assert.deepEqual(h.last(h.lm, 'MapperEnd').written, [{ partitionId: 0, batches: 12, bytes: 120 }]);
  });

  it('on failures in a full window, counts the others, asks one revive, and pushes each failed batch again', () => {
    const h = fiveBatchesWindowOfThree();
    h.register([location(0, 0, 0)]);
    h.merged(0, () => ['SUCCESS', 'PUSH_DATA_WRITE_FAIL_PRIMARY', 'PUSH_DATA_WRITE_FAIL_PRIMARY']);
    assert.equal(h.received(h.lm, 'Revive').length, 1, 'one revive for the partition');
    assert.equal(h.pending(h.w(0), 'PushMergedData').length + h.pending(h.w(0), 'PushData').length, 0);
    const state = h.node.state();
    assert.deepEqual(
      [partitionOf(state, 0).status, retryIdsOf(state, 0), revivesLeftOf(state, 0)],
      ['waiting', [1, 2], [1, 1, 2, 2]],
      'nothing is pushed while the revive is out; each failed batch spent a revive of its own',
    );
    h.reviveTo(1, (p) => location(p, 1, 2));
    const again = h.merged(2, (m) => m.batches.map(() => 'SUCCESS'));
    assert.deepEqual(batchesOf(again[0]!), [
      [0, 1, 1],
      [0, 2, 1],
      [0, 3, 1],
    ]);
    h.pushes(2, 'SUCCESS');
    assert.deepEqual(h.last(h.lm, 'MapperEnd').written, [{ partitionId: 0, batches: 5, bytes: 50 }]);
  });

  it('a batch failing at an epoch older than the newest known goes to the newest location, with no revive', () => {
    const driver = new Driver(
      { ...baseConfig, numPartitions: 1, batchSizeBytes: 10, mergeSizeBytes: 10, maxInFlightPerPartition: 2 },
      [[text('p0-r0-'), text('p0-r1-')]],
    );
    const registration = sentOf(driver.step({ kind: 'start', recovered: new Map() }))[0]!;
    const [b0, b1] = sentOf(
      driver.answer(registration, {
        type: 'RegisterShuffleResponse',
        status: 'SUCCESS',
        locations: [location(0, 0, 0)],
        message: '',
      }),
    ).filter(isPush);
    assert.ok(b0 !== undefined && b1 !== undefined, 'both batches in flight, one PushData each');
    const [retried] = splitAndMovePartition0(driver, b0);
    assert.deepEqual(
      [retried?.to, retried?.message.type === 'PushData' && retried.message.batchId],
      [workerKey(worker(2)), 0],
    );
    const late = sentOf(driver.answer(b1, { type: 'PushDataResponse', status: 'HARD_SPLIT', message: '' }));
    assert.deepEqual(
      late.map((e) => [e.to, e.message.type, e.message.type === 'PushData' ? e.message.epoch : -1]),
      [[workerKey(worker(2)), 'PushData', 1]],
      'straight to the newest location, framed for its epoch, and no second revive',
    );
  });

  it('seals a batch as it is cut once its location is known, and again in place if the location moves before its first push', () => {
    const driver = new Driver(
      { ...baseConfig, numPartitions: 1, batchSizeBytes: 10, mergeSizeBytes: 10, maxInFlightPerPartition: 1 },
      [],
    );
    registerWith(driver, [location(0, 0, 0)]);
    const [b0] = sentOf(driver.plainStep(recordsIn([0], [text('p0-r0-')]))).filter(isPush);
    assert.ok(b0 !== undefined, 'the first batch is pushed as it is cut');
    assert.deepEqual(sentOf(driver.plainStep(recordsIn([0], [text('p0-r1-')]))).filter(isPush), []);
    const waiting = unacknowledgedFrames(driver.state, 0)[1]!;
    const sealed = frameOf(waiting);
    assert.deepEqual(
      [sealed.batchId, sealed.epoch, new TextDecoder().decode(sealed.payload.subarray(4))],
      [1, 0, 'p0-r1-'],
      'the batch behind a full window is sealed (its checksum valid) before any push',
    );
    const [retried] = splitAndMovePartition0(driver, b0);
    assert.ok(retried !== undefined, 'the failed batch is pushed again first');
    const [b1] = sentOf(driver.answer(retried, succeeded(retried.message))).filter(isPush);
    assert.ok(b1?.message.type === 'PushData', 'then the batch sealed at its cut');
    assert.equal(b1.message.payload, waiting, 'from its own frame: never pushed, so sealed again in place');
    assert.deepEqual(
      [frameOf(b1.message.payload).batchId, frameOf(b1.message.payload).epoch, b1.message.epoch],
      [1, 1, 1],
      'for the epoch of the location it goes to',
    );
  });
});

describe('map task: merged pushes', () => {
  it('merges the batches of one step bound for the same primary and peer; other pairs and lone batches go apart', () => {
    const h = new Harness({ numPartitions: 5, records: oneRecordEach(5), batchSizeBytes: 1_000 });
    h.register([
      replicated(0, 0, 0, 1),
      replicated(1, 0, 0, 1),
      replicated(2, 0, 0, 2), // same primary, another peer
      location(3, 0, 0), // same primary, no peer
      replicated(4, 0, 0, 1),
    ]);
    const merged = h.pending(h.w(0), 'PushMergedData');
    assert.equal(merged.length, 1);
    assert.deepEqual(
      batchesOf(merged[0]!),
      [
        [0, 0, 0],
        [1, 1, 0],
        [4, 4, 0],
      ],
      'in the order the batches were queued',
    );
    const { batches: _batches, ...header } = merged[0]!.message;
    assert.deepEqual(header, {
      type: 'PushMergedData',
      shuffleKey: 'app-0',
      mode: 'PRIMARY',
      mapId: 0,
      attemptId: 0,
    });
    const single = h.pending(h.w(0), 'PushData');
    assert.deepEqual(
      single.map(({ message }) => [message.partitionId, message.batchId, message.epoch]),
      [
        [2, 2, 0],
        [3, 3, 0],
      ],
      'a message of one batch is a PushData, as without merging',
    );
    for (let i = 1; i < 4; i += 1) {
      assert.equal(h.pending(h.w(i), 'PushData').length + h.pending(h.w(i), 'PushMergedData').length, 0);
    }
  });

  it('cuts a group into messages of at most mergeSizeBytes of frames, each holding at least one batch', () => {
    const h = new Harness({
      numPartitions: 5,
      records: oneRecordEach(5),
      batchSizeBytes: 20,
      mergeSizeBytes: 2 * FRAME_OF_ONE_RECORD + 10,
    });
    h.register([0, 1, 2, 3, 4].map((p) => location(p, 0, 0)));
    assert.deepEqual(h.pending(h.w(0), 'PushMergedData').map(batchesOf), [
      [
        [0, 0, 0],
        [1, 1, 0],
      ],
      [
        [2, 2, 0],
        [3, 3, 0],
      ],
    ]);
    assert.deepEqual(
      h.pending(h.w(0), 'PushData').map(({ message }) => message.partitionId),
      [4],
    );

    const tiny = new Harness({
      numPartitions: 2,
      records: oneRecordEach(2),
      batchSizeBytes: 1_000,
      mergeSizeBytes: 20,
    });
    tiny.register([location(0, 0, 0), location(1, 0, 0)]);
    assert.equal(tiny.pending(tiny.w(0), 'PushData').length, 2, 'a frame larger than the cap travels alone');
    assert.equal(tiny.pending(tiny.w(0), 'PushMergedData').length, 0);
  });

  it('reacts to each status of a mixed answer on its own, and merges the re-pushes after the revive', () => {
    const records = [[new Uint8Array(600), new Uint8Array(600)], [text('p1-r00')], [text('p2-r00')]];
    const h = new Harness({ numPartitions: 3, records, maxReviveRetries: 1, batchSizeBytes: 1_000 });
    h.register([0, 1, 2].map((p) => replicated(p, 0, 0, 1)));
    const first = h.merged(0, () => ['SUCCESS', 'HARD_SPLIT', 'PUSH_DATA_WRITE_FAIL_PRIMARY']);
    assert.deepEqual(batchesOf(first[0]!), [
      [0, 0, 0],
      [1, 2, 0],
      [2, 3, 0],
    ]);

    const revive = h.last(h.lm, 'Revive');
    assert.deepEqual(
      revive.requests.map((r) => [r.partitionId, r.epoch, r.cause]),
      [
        [1, 0, 'HARD_SPLIT'],
        [2, 0, 'PUSH_DATA_WRITE_FAIL_PRIMARY'],
      ],
      'one Revive for both, each with its own cause',
    );
    const state = h.node.state();
    assert.deepEqual(
      allPartitionsOf(state).map((p) => [
        p.cut - p.unpushed,
        p.inFlight,
        retryIdsOf(state, p.partitionId),
        p.status,
        revivesLeftOf(state, p.partitionId),
      ]),
      [
        [2, 1, [], 'active', [1]],
        [1, 0, [2], 'waiting', [1]],
        [1, 0, [3], 'waiting', [0]],
      ],
      'the success moves on; the split is free; the failure spends a revive of its batch',
    );
    const next = h.pending(h.w(0), 'PushData');
    assert.deepEqual(
      next.map(({ message }) => [message.partitionId, message.batchId]),
      [[0, 1]],
      'partition 0 pushes its next batch at once',
    );

    h.reviveTo(1, (p) => replicated(p, 1, 2, 3));
    const again = h.pending(h.w(2), 'PushMergedData');
    assert.equal(again.length, 1, 're-pushes learnt in one step merge too');
    assert.deepEqual(batchesOf(again[0]!), [
      [1, 2, 1],
      [2, 3, 1],
    ]);
  });

  it('a batch whose status ends the attempt stops it: later batches of the answer and queued pushes are dropped', () => {
    const records = [[new Uint8Array(600), new Uint8Array(600)], [text('p1-r00')], [text('p2-r00')]];
    const h = new Harness({ numPartitions: 3, records, batchSizeBytes: 1_000 });
    h.register([0, 1, 2].map((p) => location(p, 0, 0)));
    h.merged(0, () => ['SUCCESS', 'MAP_ENDED', 'HARD_SPLIT']);
    const state = h.node.state();
    assert.equal(state.phase, 'lost');
    assert.equal(h.pending(h.w(0), 'PushData').length, 0, "partition 0's next batch is not sent");
    assert.equal(h.received(h.lm, 'Revive').length, 0, 'the split after the end asks for nothing');
  });

  it('reports a push whose connection closed before its answer as CONNECTION_EXCEPTION', () => {
    const h = new Harness();
    h.register();
    for (const pending of h.pending(h.w(0), 'PushData')) h.cluster.connectionLost(pending);
    h.advance(5);
    const causes = h.received(h.lm, 'Revive').flatMap((r) => r.requests.map((q) => [q.partitionId, q.cause]));
    assert.deepEqual(causes, [[0, 'PUSH_DATA_CONNECTION_EXCEPTION_PRIMARY']]);
  });

  it('a merged push that times out fails every batch of it, counted per batch', () => {
    const h = new Harness({ numPartitions: 2, records: oneRecordEach(2), batchSizeBytes: 1_000 });
    h.register([location(0, 0, 0), location(1, 0, 0)]);
    assert.equal(h.pending(h.w(0), 'PushMergedData').length, 1);
    h.advance(baseConfig.pushTimeoutMs + 5);
    assert.deepEqual(
      h.last(h.lm, 'Revive').requests.map((r) => [r.partitionId, r.cause]),
      [
        [0, 'PUSH_DATA_TIMEOUT_PRIMARY'],
        [1, 'PUSH_DATA_TIMEOUT_PRIMARY'],
      ],
    );
    const failures = h.cluster.metrics.filter((m) => m.name === 'PushDataFailCount');
    assert.deepEqual(
      failures.map((m) => [m.value, m.labels?.['cause']]),
      [[2, 'PUSH_DATA_TIMEOUT_PRIMARY']],
    );
    assert.deepEqual(
      [0, 1].map((p) => revivesLeftOf(h.node.state(), p)),
      [[1], [1]],
    );

    const down = new Harness({ numPartitions: 2, records: oneRecordEach(2), batchSizeBytes: 1_000 });
    const nowhere = (p: number) => ({ ...location(p, 0, 0), worker: worker(9) });
    down.register([nowhere(0), nowhere(1)]);
    assert.deepEqual(
      down.last(down.lm, 'Revive').requests.map((r) => [r.partitionId, r.cause]),
      [
        [0, 'PUSH_DATA_CREATE_CONNECTION_FAIL_PRIMARY'],
        [1, 'PUSH_DATA_CREATE_CONNECTION_FAIL_PRIMARY'],
      ],
    );
  });

  it('an answer of the wrong length or type is a logged protocol error for every batch; a refusal fails the task', () => {
    const short = new Harness({ numPartitions: 2, records: oneRecordEach(2), batchSizeBytes: 1_000 });
    short.register([location(0, 0, 0), location(1, 0, 0)]);
    short.merged(0, () => ['SUCCESS']);
    assert.deepEqual(
      short.last(short.lm, 'Revive').requests.map((r) => [r.partitionId, r.cause]),
      [
        [0, 'PUSH_DATA_FAIL_NON_CRITICAL_CAUSE_PRIMARY'],
        [1, 'PUSH_DATA_FAIL_NON_CRITICAL_CAUSE_PRIMARY'],
      ],
      'not even the first batch counts as written',
    );
    assert.deepEqual(
      allPartitionsOf(short.node.state()).map((p) => p.acknowledgedBatches),
      [0, 0],
    );
    const logged = short.cluster.logs.filter((l) => l.level === 'error' && l.node === ME);
    assert.equal(logged.length, 1);
    assert.deepEqual(logged[0]!.fields?.['partitions'], [0, 1]);

    const wrongType = new Harness({ numPartitions: 2, records: oneRecordEach(2), batchSizeBytes: 1_000 });
    wrongType.register([location(0, 0, 0), location(1, 0, 0)]);
    wrongType.answer(wrongType.w(0), 'PushMergedData', () => ({
      type: 'PushDataResponse',
      status: 'SUCCESS',
      message: '',
    }));
    wrongType.advance(5);
    assert.deepEqual(
      wrongType.last(wrongType.lm, 'Revive').requests.map((r) => r.cause),
      ['PUSH_DATA_FAIL_NON_CRITICAL_CAUSE_PRIMARY', 'PUSH_DATA_FAIL_NON_CRITICAL_CAUSE_PRIMARY'],
    );

    const refused = new Harness({ numPartitions: 2, records: oneRecordEach(2), batchSizeBytes: 1_000 });
    refused.register([location(0, 0, 0), location(1, 0, 0)]);
    refused.answer(refused.w(0), 'PushMergedData', () => ({
      type: 'StatusResponse',
      status: 'CLIENT_RELEASE_REFUSED',
      message: 'server release 0.6.0 refuses client release 0.2.0',
    }));
    refused.advance(5);
    assert.equal(refused.node.state().phase, 'failed');
    assert.match(refused.node.state().error ?? '', /CLIENT_RELEASE_REFUSED/);
  });

  it('sends MapperEnd only once every batch of every merged push is acknowledged', () => {
    const records = [[new Uint8Array(600), new Uint8Array(600)], [text('p1-r00')], [text('p2-r00')]];
    const h = new Harness({ numPartitions: 3, records, batchSizeBytes: 1_000 });
    h.register([0, 1, 2].map((p) => location(p, 0, 0)));
    h.merged(0, () => ['SUCCESS', 'SUCCESS', 'HARD_SPLIT']);
    assert.equal(h.received(h.lm, 'MapperEnd').length, 0);
    h.reviveTo(1, (p) => location(p, 1, 0));
    // Partition 0's second batch and partition 2's re-push were queued in different steps: two PushData.
    const answerPushOf = (partitionId: number) => {
      h.answer(h.w(0), 'PushData', ({ message }) =>
        message.partitionId === partitionId
          ? { type: 'PushDataResponse', status: 'SUCCESS', message: '' }
          : undefined,
      );
      h.advance(5);
    };
    answerPushOf(2);
    assert.equal(h.received(h.lm, 'MapperEnd').length, 0, 'partition 0 still has a batch in flight');
    assert.equal(h.node.state().phase, 'pushing');
    answerPushOf(0);
    assert.equal(h.node.state().phase, 'ending');
    assert.deepEqual(h.last(h.lm, 'MapperEnd').written, [
      { partitionId: 0, batches: 2, bytes: 1_208 },
      { partitionId: 1, batches: 1, bytes: 10 },
      { partitionId: 2, batches: 1, bytes: 10 },
    ]);
  });

  it('property: each step fills every window exactly, sends each batch once, in messages within the cap, one pair each', () => {
    const placement = fc.record({
      primary: fc.integer({ min: 0, max: 3 }),
      peer: fc.option(fc.integer({ min: 0, max: 3 }), { nil: undefined }),
    });
    const partition = fc.tuple(placement, fc.array(fc.integer({ min: 0, max: 60 }), { maxLength: 6 }));
    fc.assert(
      fc.property(
        fc.array(partition, { minLength: 1, maxLength: 8 }),
        fc.integer({ min: 20, max: 400 }),
        fc.integer({ min: 1, max: 4 }),
        fc.nat(),
        (spec, batchSizeBytes, window, order) => {
          const locations = spec.map(([{ primary, peer }], p) =>
            peer === undefined ? location(p, 0, primary) : replicated(p, 0, primary, peer),
          );
          const driver = new Driver(
            {
              ...baseConfig,
              numPartitions: spec.length,
              batchSizeBytes,
              maxInFlightPerPartition: window,
            },
            spec.map(([, sizes]) => sizes.map((n) => new Uint8Array(n))),
          );
          const registration = sentOf(driver.step({ kind: 'start', recovered: new Map() }))[0]!;
          let effects = driver.answer(registration, {
            type: 'RegisterShuffleResponse',
            status: 'SUCCESS',
            locations,
            message: '',
          });
          const inFlight: PushSend[] = [];
          const sent = new Set<number>();
          const acknowledged = new Map<number, number>();
          const pushedOf = new Map<number, number>();
          const lastIdOf = new Map<number, number>();
          let answered = 0;
          while (driver.state.phase === 'pushing') {
            const pushes = sentOf(effects).filter(isPush);
            for (const { partitionId, batchId } of pushes.flatMap((push) =>
              checkPush(push, locations, batchSizeBytes),
            )) {
              assert.ok(!sent.has(batchId), `batch ${batchId} sent twice`);
              sent.add(batchId);
              // Batch ids grow in the order batches are cut.
              assert.ok(
                batchId > (lastIdOf.get(partitionId) ?? -1),
                'a partition pushes its batches in order',
              );
              lastIdOf.set(partitionId, batchId);
              pushedOf.set(partitionId, (pushedOf.get(partitionId) ?? 0) + 1);
            }
            for (const p of allPartitionsOf(driver.state)) {
              const left = p.cut - (acknowledged.get(p.partitionId) ?? 0);
              assert.equal(
                (pushedOf.get(p.partitionId) ?? 0) - (acknowledged.get(p.partitionId) ?? 0),
                Math.min(window, left),
                `partition ${p.partitionId} keeps its window full while it has batches left`,
              );
            }
            inFlight.push(...pushes);
            // Answers come back in any order: each worker answers its own pushes when it gets to them.
            const next = inFlight.splice((order + answered++) % inFlight.length, 1)[0];
            assert.ok(next !== undefined, 'a pushing task has a push in flight');
            effects = driver.answer(next, succeeded(next.message));
            for (const p of partitionsOf(next.message)) acknowledged.set(p, (acknowledged.get(p) ?? 0) + 1);
          }
          assert.equal(driver.state.phase, 'ending');
          // Partitions finish in the answers' order, not theirs: the end waits for the last answer, whichever it is.
          assert.equal(inFlight.length, 0, 'the task ends only once every push is answered');
          assert.equal(
            sent.size,
            allPartitionsOf(driver.state).reduce((n, p) => n + p.cut, 0),
          );
        },
      ),
      { numRuns: 150 },
    );
  });
});

describe('map task: merging across steps', () => {
  it('property: a push under the merge cap goes only while no other push to its pair awaits an answer; every batch goes once and the task ends', () => {
    const placement = fc.record({
      primary: fc.integer({ min: 0, max: 2 }),
      peer: fc.option(fc.integer({ min: 0, max: 2 }), { nil: undefined }),
    });
    const partition = fc.tuple(placement, fc.array(fc.integer({ min: 0, max: 60 }), { maxLength: 8 }));
    fc.assert(
      fc.property(
        fc.array(partition, { minLength: 1, maxLength: 8 }),
        fc.integer({ min: 20, max: 200 }),
        fc.integer({ min: 1, max: 8 }),
        fc.integer({ min: 1, max: 4 }),
        fc.array(fc.nat(), { minLength: 1, maxLength: 40 }),
        (spec, batchSizeBytes, capInBatches, window, picks) => {
          const locations = spec.map(([{ primary, peer }], p) =>
            peer === undefined ? location(p, 0, primary) : replicated(p, 0, primary, peer),
          );
          const pairOf = (p: number) => {
            const at = locations[p]!;
            return `${workerKey(at.worker)} ${at.peer === undefined ? '' : workerKey(at.peer.worker)}`;
          };
          const cap = capInBatches * (FRAME_HEADER_BYTES + batchSizeBytes);
          const full = cap - (FRAME_HEADER_BYTES + batchSizeBytes);
          const driver = new Driver(
            {
              ...baseConfig,
              numPartitions: spec.length,
              batchSizeBytes,
              mergeSizeBytes: cap,
              maxInFlightPerPartition: window,
            },
            spec.map(([, sizes]) => sizes.map((n) => new Uint8Array(n))),
          );
          const registration = sentOf(driver.step({ kind: 'start', recovered: new Map() }))[0]!;
          let effects = driver.answer(registration, {
            type: 'RegisterShuffleResponse',
            status: 'SUCCESS',
            locations,
            message: '',
          });
          const inFlight: PushSend[] = [];
          const sent = new Set<number>();
          for (let step = 0; driver.state.phase === 'pushing'; step += 1) {
            assert.ok(step < 10_000, 'the task makes progress');
            const pushes = sentOf(effects).filter(isPush);
            const bytesTo = new Map<string, number>();
            for (const push of pushes) {
              const batches = checkPush(push, locations, cap);
              for (const { batchId } of batches) {
                assert.ok(!sent.has(batchId), `batch ${batchId} sent twice`);
                sent.add(batchId);
              }
              const pair = pairOf(batches[0]!.partitionId);
              bytesTo.set(pair, (bytesTo.get(pair) ?? 0) + pushBytes(push));
            }
            for (const [pair, bytes] of bytesTo) {
              const waiting = inFlight.filter(
                (push) => pairOf(partitionsOf(push.message)[0]!) === pair,
              ).length;
              assert.ok(
                waiting === 0 || bytes >= full,
                `${bytes} bytes sent to ${pair} while ${waiting} push(es) to it await an answer (full: ${full})`,
              );
            }
            inFlight.push(...pushes);
            const next = inFlight.splice(picks[step % picks.length]! % inFlight.length, 1)[0];
            assert.ok(next !== undefined, 'a pushing task has a push in flight');
            effects = driver.answer(next, succeeded(next.message));
          }
          assert.equal(driver.state.phase, 'ending');
          assert.equal(
            sent.size,
            allPartitionsOf(driver.state).reduce((n, p) => n + p.cut, 0),
          );
        },
      ),
      { numRuns: 200 },
    );
  });

  it('holds a step’s few batches while a push to their worker is answered, then sends them in one message', () => {
    const driver = new Driver(
      {
        ...baseConfig,
        numPartitions: 3,
        batchSizeBytes: 20,
        mergeSizeBytes: 600,
        maxInFlightPerPartition: 4,
      },
      [],
    );
    registerWith(
      driver,
      [0, 1, 2].map((p) => location(p, 0, 0)),
    );
    const write = (partitionId: number) =>
      sentOf(
        driver.plainStep({
          ...recordsIn([partitionId, partitionId], [text('rec-00'), text('rec-01')]),
        }),
      ).filter(isPush);
    const [first] = write(0);
    assert.ok(first !== undefined, 'nothing awaits an answer: the batch goes at once');
    assert.deepEqual(write(1), [], 'a push to the worker awaits its answer: held');
    assert.deepEqual(write(2), []);
    const after = sentOf(driver.answer(first, succeeded(first.message))).filter(isPush);
    assert.deepEqual(
      after.map((push) => partitionsOf(push.message)),
      [[1, 2]],
      'the answer lets the held batches go, merged',
    );
  });
});

/** The frame bytes a push carries. */
function pushBytes(push: PushSend): number {
  return push.message.type === 'PushData'
    ? push.message.payload.length
    : push.message.batches.reduce((n, b) => n + b.payload.length, 0);
}

type SendEffect = Extract<Effect, { kind: 'send' }>;
type PushSend = SendEffect & { readonly message: MessageOf<'PushData'> | MessageOf<'PushMergedData'> };

/** Steps the machine directly, so that a test sees exactly what each step sends. */
class Driver {
  state: MapTaskState;
  private now = 0;
  private readonly rng = replayRng([]);
  private readonly machine: Machine<MapTaskState>;

  constructor(config: MapTaskConfig, records: Records = baseRecords) {
    this.state = initialMapTaskState(config);
    this.machine = mapTaskWritingAll(records);
  }

  step(input: Input): readonly Effect[] {
    this.now += 1;
    const result = this.machine.step(this.state, input, this.now, this.rng);
    this.state = result.state;
    return result.effects;
  }

  /** One step of the machine alone: a start takes no records. */
  plainStep(input: Input): readonly Effect[] {
    this.now += 1;
    const result = mapTaskMachine.step(this.state, input, this.now, this.rng);
    this.state = result.state;
    return result.effects;
  }

  answer(request: SendEffect, message: Message): readonly Effect[] {
    const { requestId } = request;
    assert.ok(requestId !== undefined, 'requestId !== undefined');
    return this.step({
      kind: 'receive',
      envelope: { from: request.to, to: ME, fromRelease: '0.6.0', inReplyTo: requestId, message },
    });
  }
}

function sentOf(effects: readonly Effect[]): SendEffect[] {
  return effects.filter((e): e is SendEffect => e.kind === 'send');
}

function isPush(send: SendEffect): send is PushSend {
  return send.message.type === 'PushData' || send.message.type === 'PushMergedData';
}

function partitionsOf(message: PushSend['message']): number[] {
  return message.type === 'PushData' ? [message.partitionId] : message.batches.map((b) => b.partitionId);
}

function succeeded(message: PushSend['message']): Message {
  return message.type === 'PushData'
    ? { type: 'PushDataResponse', status: 'SUCCESS', message: '' }
    : { type: 'PushMergedDataResponse', statuses: message.batches.map(() => 'SUCCESS'), message: '' };
}

/**
 * A push goes to the primary of each of its batches, all of which share that primary and its peer; a merged one
 * holds two or more batches whose frames total at most the cap; every batch is framed for its location.
 */
function checkPush(push: PushSend, locations: readonly PartitionLocation[], cap: number) {
  const { message } = push;
  const batches =
    message.type === 'PushData'
      ? [
          {
            partitionId: message.partitionId,
            epoch: message.epoch,
            batchId: message.batchId,
            payload: message.payload,
          },
        ]
      : message.batches;
  if (message.type === 'PushMergedData') {
    assert.ok(batches.length >= 2, 'a merged push holds two batches or more');
    assert.ok(batches.reduce((n, b) => n + b.payload.length, 0) <= cap, 'a merged push stays within the cap');
    assert.ok(batches.length <= MAX_BATCHES_PER_PUSH, `${batches.length} batches in one merged push`);
  }
  const peerOf = (l: PartitionLocation) => (l.peer === undefined ? 'none' : workerKey(l.peer.worker));
  const first = locations[batches[0]!.partitionId]!;
  return batches.map((b) => {
    const at = locations[b.partitionId]!;
    assert.equal(workerKey(at.worker), push.to, 'sent to the primary');
    assert.equal(peerOf(at), peerOf(first), 'one peer per message');
    const frame = frameOf(b.payload);
    assert.deepEqual([frame.partitionId, frame.batchId, frame.epoch], [b.partitionId, b.batchId, at.epoch]);
    return { partitionId: b.partitionId, batchId: b.batchId };
  });
}

describe('map task: records written over time', () => {
  const statuses: StatusCode[] = [
    'SUCCESS',
    'SUCCESS',
    'SOFT_SPLIT',
    'HARD_SPLIT',
    'PUSH_DATA_WRITE_FAIL_PRIMARY',
    'PUSH_DATA_TIMEOUT_REPLICA',
  ];
  type Command =
    | { readonly kind: 'write' }
    | { readonly kind: 'answer'; readonly pick: number; readonly status: StatusCode }
    | { readonly kind: 'revive' };
  const command: fc.Arbitrary<Command> = fc.oneof(
    fc.constant({ kind: 'write' as const }),
    fc.record({
      kind: fc.constant('answer' as const),
      pick: fc.nat(),
      status: fc.constantFrom(...statuses),
    }),
    fc.constant({ kind: 'revive' as const }),
  );

  it('property: whatever the interleaving of writes, answers and failures, each record is acknowledged once, in order, and the memory held stays within the budget', () => {
    fc.assert(
      fc.property(
        fc.integer({ min: 1, max: 4 }),
        fc.array(fc.tuple(fc.nat(), fc.integer({ min: 0, max: 40 })), { maxLength: 60 }),
        fc.integer({ min: 44, max: 200 }),
        fc.integer({ min: 1, max: 600 }),
        fc.integer({ min: 1, max: 3 }),
        fc.array(command, { maxLength: 120 }),
        fc.boolean(),
        fc.boolean(),
        fc.constantFrom(1, 100),
        (
          numPartitions,
          spec,
          batchBytes,
          budgetBytes,
          window,
          commands,
          reuseAcknowledgedFrames,
          pooled,
          scale,
        ) => {
          // At scale 100 a batch spans several chunks (CHUNK_BYTES), copied into a frame of its size at its cut.
          const batchSizeBytes = batchBytes * scale;
          const budget = budgetBytes * scale;
          const written = spec.map(([p, length], i) => ({
            partitionId: p % numPartitions,
            record: new Uint8Array(length * scale).fill(i % 251),
          }));
          // What the task gives back is scribbled over and handed out again: a buffer still in use would show.
          const pool = pooled ? scribblingPool() : undefined;
          const driver = new Driver(
            {
              ...baseConfig,
              numPartitions,
              batchSizeBytes,
              mergeSizeBytes: 2 * batchSizeBytes,
              maxInFlightPerPartition: window,
              maxUnacknowledgedBytes: budget,
              maxReviveRetries: 10_000,
              reuseAcknowledgedFrames,
              ...(pool === undefined ? {} : { allocate: pool.allocate, giveBack: pool.giveBack }),
            },
            [],
          );
          // Steps the plain machine: records arrive only through the commands.
          let epoch = 1;
          const inFlight: PushSend[] = [];
          const revives: SendEffect[] = [];
          const acknowledged = new Map<number, Uint8Array[]>(); // batchId -> its records
          const partitionOf = new Map<number, number>();
          let next = 0;
          let takenBytes = 0;
          let ackedBytes = 0;
          let heldBefore = 0;
          let batchesBefore = 0;
          /** Checks the state after a step; `input` is the record bytes the step took (records and recordsEnd). */
          const collect = (effects: readonly Effect[], input?: { readonly bytes: number }) => {
            for (const send of sentOf(effects)) {
              if (isPush(send)) inFlight.push(send);
              else if (send.message.type === 'Revive') revives.push(send);
            }
            const state = driver.state;
            assert.equal(
              state.unacknowledgedBytes,
              takenBytes - ackedBytes,
              'the task counts the records it holds',
            );
            assert.equal(
              state.heldBytes,
              referencedBytes(state),
              'held bytes are the capacity of every buffer the task still references',
            );
            if (pool !== undefined) {
              const referenced = referencedBuffers(state);
              for (const inUse of inFlight)
                for (const frame of payloadsOf(inUse)) referenced.add(frame.buffer);
              assert.ok(
                pool.free.every((free) => !referenced.has(free.buffer)),
                'a buffer given back is neither referenced by the task nor in a push awaiting its answer',
              );
            }
            assert.equal(
              state.unsentBytes,
              unsentPayloadBytes(state),
              'unsent bytes are the payloads of the batches cut and never pushed',
            );
            // A step that takes records (only given while there is room) may go past the budget by what it brought,
            // a batch's worth of buffer per partition, and a frame header per batch it cut; any other step only
            // lets memory go (a frame copied for a new epoch replaces its original).
            const cut = state.nextBatchId - batchesBefore;
            const bound =
              input === undefined
                ? heldBefore
                : Math.max(heldBefore, budget) +
                  input.bytes +
                  numPartitions * batchSizeBytes +
                  cut * FRAME_HEADER_BYTES;
            assert.ok(
              state.heldBytes <= bound,
              `${state.heldBytes} bytes held after a step, over ${bound} (budget ${budget}, before ${heldBefore})`,
            );
            heldBefore = state.heldBytes;
            batchesBefore = state.nextBatchId;
            for (const partition of allPartitionsOf(state)) {
              // Cut at the latest once the task took twice its stale wait since (cutStaleOpenBatches).
              assert.ok(
                partition.openBuffers.length === 0 ||
                  state.takenBytes - partition.openWrittenAt < 2 * state.staleAfterBytes,
                `partition ${partition.partitionId}'s open batch is stale and was not cut`,
              );
            }
          };
          let ended = false;
          const write = () => {
            if (ended || !mapTaskHasRoom(driver.state)) return;
            if (next === written.length) {
              ended = true;
              collect(driver.plainStep({ kind: 'recordsEnd' }), { bytes: 0 });
              return;
            }
            const partitionIds: number[] = [];
            const records: Uint8Array[] = [];
            let bytes = 0;
            while (next < written.length && bytes + 4 + written[next]!.record.length <= batchSizeBytes) {
              partitionIds.push(written[next]!.partitionId);
              records.push(written[next]!.record);
              bytes += 4 + written[next]!.record.length;
              next += 1;
            }
            takenBytes += bytes;
            collect(driver.plainStep(recordsIn(partitionIds, records)), { bytes });
          };
          const answer = (push: PushSend, status: (b: { batchId: number }) => StatusCode) => {
            const batches =
              push.message.type === 'PushData'
                ? [
                    {
                      partitionId: push.message.partitionId,
                      batchId: push.message.batchId,
                      payload: push.message.payload,
                    },
                  ]
                : push.message.batches;
            const answers = batches.map((b) => status(b));
            batches.forEach((b, i) => {
              if (answers[i] !== 'SUCCESS' && answers[i] !== 'SOFT_SPLIT') return;
              assert.ok(!acknowledged.has(b.batchId), `batch ${b.batchId} acknowledged twice`);
              const frame = frameOf(b.payload);
              // A frame is never filled again while a push of it is out (reuseAcknowledgedFrames).
              assert.deepEqual(
                [frame.partitionId, frame.batchId],
                [b.partitionId, b.batchId],
                'the frame is its own',
              );
              const decoded = decodeRecords(frame.payload);
              assert.ok(decoded.ok, 'decoded.ok');
              // Copies: an acknowledged frame's memory may be filled again.
              acknowledged.set(
                b.batchId,
                decoded.records.map((r) => r.slice()),
              );
              partitionOf.set(b.batchId, b.partitionId);
              ackedBytes += decoded.records.reduce((n, r) => n + 4 + r.length, 0);
            });
            const reply: Message =
              push.message.type === 'PushData'
                ? { type: 'PushDataResponse', status: answers[0]!, message: '' }
                : { type: 'PushMergedDataResponse', statuses: answers, message: '' };
            collect(driver.answer(push, reply));
          };
          const revive = (request: SendEffect) => {
            assert.equal(request.message.type, 'Revive');
            if (request.message.type !== 'Revive') return;
            collect(
              driver.answer(request, {
                type: 'ReviveResponse',
                results: request.message.requests.map((r) => ({
                  partitionId: r.partitionId,
                  status: 'SUCCESS',
                  newLocation: location(r.partitionId, epoch++, epoch % 3),
                  oldAvailable: true,
                })),
                endedMapIds: [],
              }),
            );
          };

          const registration = sentOf(driver.plainStep({ kind: 'start', recovered: new Map() }))[0]!;
          let registered = false;
          const register = () => {
            registered = true;
            collect(
              driver.answer(registration, {
                type: 'RegisterShuffleResponse',
                status: 'SUCCESS',
                locations: [...Array(numPartitions).keys()].map((p) => location(p, 0, p % 3)),
                message: '',
              }),
            );
          };
          for (const c of commands) {
            if (c.kind === 'write') write();
            else if (!registered) register();
            else if (c.kind === 'answer' && inFlight.length > 0) {
              answer(inFlight.splice(c.pick % inFlight.length, 1)[0]!, () => c.status);
            } else if (c.kind === 'revive' && revives.length > 0) revive(revives.shift()!);
          }
          if (!registered) register();
          // Then everything goes well: the application writes the rest as room comes, and every push succeeds.
          for (
            let round = 0;
            driver.state.phase === 'pushing' || driver.state.phase === 'registering';
            round += 1
          ) {
            assert.ok(round < 10_000, 'the task makes progress');
            const before = next;
            const endedBefore: boolean = ended;
            write();
            if (inFlight.length > 0) answer(inFlight.shift()!, () => 'SUCCESS');
            else if (revives.length > 0) revive(revives.shift()!);
            else
              assert.ok(
                next > before || ended !== endedBefore,
                `stuck: nothing in flight, no revive, and no room to write (${driver.state.heldBytes} held)`,
              );
          }
          assert.equal(driver.state.phase, 'ending');
          assert.equal(driver.state.unacknowledgedBytes, 0);
          assert.equal(driver.state.heldBytes, 0, 'once every batch is acknowledged, the task holds nothing');
          for (let p = 0; p < numPartitions; p += 1) {
            const got = [...acknowledged.keys()]
              .filter((batchId) => partitionOf.get(batchId) === p)
              .sort((a, b) => a - b)
              .flatMap((batchId) => acknowledged.get(batchId)!);
            const expected = written.filter((w) => w.partitionId === p).map((w) => w.record);
            assert.deepEqual(got, expected, `partition ${p}: every record once, in order`);
          }
        },
      ),
      { numRuns: 200 },
    );
  });

  it('pushes a partition’s batch as soon as it is full, and its largest open batches once the budget is reached', () => {
    // Batches of 20 bytes are filled in chunks of 60: a frame's 40-byte header, then the records; a batch that fits
    // its first chunk is sent from it.
    const driver = new Driver(
      { ...baseConfig, numPartitions: 5, batchSizeBytes: 20, maxUnacknowledgedBytes: 250 },
      [],
    );
    registerWith(
      driver,
      [0, 1, 2, 3, 4].map((p) => location(p, 0, p % 2)),
    );
    const one = (partitionId: number, s: string) =>
      sentOf(driver.plainStep(recordsIn([partitionId], [text(s)]))).filter(isPush);
    assert.deepEqual(one(1, 'p1-r00'), [], 'half a batch waits');
    assert.deepEqual(one(2, 'x'), []);
    assert.deepEqual(one(3, 'p3-r00'), []);
    assert.deepEqual(one(0, 'p0-r00'), []);
    assert.equal(driver.state.heldBytes, 4 * 60, 'a chunk per open batch');
    assert.ok(mapTaskHasRoom(driver.state), 'mapTaskHasRoom(driver.state)');
    // Partition 4's chunk takes the task past its budget of 250, so the open batches (300 bytes of chunks) are cut,
    // largest first, until they hold at most half of it: 0's, 1's and 3's (10 bytes of records each), not 4's (as
    // large, a higher id) nor 2's (5 bytes). Each is sent from its chunk: nothing more is held.
    const pushed = one(4, 'p4-r00');
    assert.deepEqual(
      pushed
        .map((p) => partitionsOf(p.message))
        .flat()
        .sort(),
      [0, 1, 3],
    );
    assert.equal(driver.state.heldBytes, 5 * 60, 'three frames and two open chunks');
    assert.ok(!mapTaskHasRoom(driver.state), 'no room: the driver stops feeding');
    for (const push of pushed) driver.answer(push, succeeded(push.message));
    assert.equal(driver.state.heldBytes, 2 * 60, 'acknowledged frames are let go');
    assert.ok(mapTaskHasRoom(driver.state), 'room again once batches are acknowledged');
    const full = one(2, 'p2-r01-xxxx');
    assert.deepEqual(full.map((p) => partitionsOf(p.message)).flat(), [2], 'a full batch is pushed at once');
    assert.equal(driver.state.heldBytes, 2 * 60, 'from its chunk, nothing copied');
  });

  it('cuts the open batch of a partition the map moved on from once it has taken staleAfterBytes of records since', () => {
    // A budget of 800: open batches go stale after 100 bytes of records (an eighth). Batches of 60 bytes; records
    // of 26 bytes (30 encoded): two fill a batch. Merged pushes of up to 1,000 bytes: a push waits for the answer
    // to the one before.
    const config = {
      ...baseConfig,
      numPartitions: 4,
      batchSizeBytes: 60,
      maxUnacknowledgedBytes: 800,
      mergeSizeBytes: 1000,
    };
    assert.equal(staleAfterBytes(config), 100);
    const driver = new Driver(config, []);
    registerWith(
      driver,
      [0, 1, 2, 3].map((p) => location(p, 0, 0)),
    );
    const record = (p: number, i: number) => text(`p${p}-r${String(i).padStart(2, '0')}`.padEnd(26, '.'));
    const pushedPartitions = (effects: readonly Effect[]) =>
      sentOf(effects)
        .filter(isPush)
        .flatMap((p) => partitionsOf(p.message));
    // Partition 0 gets one record (30 bytes), then the map writes partition 1: 90 bytes since partition 0's last
    // write, not yet stale.
    assert.deepEqual(pushedPartitions(driver.plainStep(recordsIn([0], [record(0, 0)]))), []);
    assert.deepEqual(
      pushedPartitions(driver.plainStep(recordsIn([1, 1, 1], [record(1, 0), record(1, 1), record(1, 2)]))),
      [1],
      'only partition 1’s full batch goes',
    );
    assert.equal(partitionOf(driver.state, 0).openBytes, 30, 'partition 0 still open at 90 bytes since');
    // Ten more bytes would do: partition 2's record takes it to 120 bytes since partition 0's write, which is cut;
    // partition 1's open record (written 30 bytes ago) is not.
    const cut = driver.plainStep(recordsIn([2], [record(2, 0)]));
    assert.equal(partitionOf(driver.state, 0).openBytes, 0, 'partition 0’s batch is cut');
    assert.equal(partitionOf(driver.state, 1).openBytes, 30, 'partition 1’s is not');
    // Its push waits for the answer to partition 1's (merging across steps), then both go.
    assert.deepEqual(pushedPartitions(cut), []);
    assert.equal(driver.state.unsentBytes, 30, 'partition 0’s record waits, cut');
    // Partition 3's two records fill its batch: 90 bytes since partition 1's last write (its third record opened a
    // batch at 120), 60 since partition 2's; neither is cut. One more record and partition 1's is.
    driver.plainStep(recordsIn([3, 3], [record(3, 0), record(3, 1)]));
    assert.deepEqual(
      [1, 2].map((p) => partitionOf(driver.state, p).openBytes),
      [30, 30],
      'written 90 and 60 bytes ago: open',
    );
    driver.plainStep(recordsIn([3], [record(3, 2)]));
    assert.deepEqual(
      [1, 2].map((p) => partitionOf(driver.state, p).openBytes),
      [0, 30],
      'partition 1 cut at 120 bytes since its last write, partition 2 open at 90',
    );
    const batchesOf = (p: number) => partitionOf(driver.state, p).cut;
    assert.deepEqual([0, 1, 2, 3].map(batchesOf), [1, 2, 0, 1], 'batches cut so far, by partition');
  });

  it('waits twice as long before cutting a stale batch once the map comes back to a partition it cut', () => {
    // A budget of 8,000: open batches go stale after 1,000 bytes of records. Records of 246 bytes (250 encoded), two
    // to a batch of 500; each partition below gets one record at a time, so only staleness cuts.
    const config = {
      ...baseConfig,
      numPartitions: 16,
      batchSizeBytes: 500,
      maxUnacknowledgedBytes: 8000,
      mergeSizeBytes: 100_000,
    };
    assert.equal(staleAfterBytes(config), 1000);
    const driver = new Driver(config, []);
    registerWith(
      driver,
      Array.from({ length: 16 }, (_, p) => location(p, 0, 0)),
    );
    const write = (...partitions: number[]) =>
      driver.plainStep(
        recordsIn(
          partitions,
          partitions.map((p) => new Uint8Array(246).fill(p)),
        ),
      );
    const open = (p: number) => partitionOf(driver.state, p).openBytes;
    write(0);
    write(1, 2, 3, 4, 5); // 1,250 bytes since partition 0's record
    assert.equal(open(0), 0, 'partition 0’s batch is cut as stale');
    assert.equal(driver.state.staleAfterBytes, 1000);
    write(0); // the map comes back to partition 0: it spreads its records
    assert.equal(driver.state.staleAfterBytes, 2000, 'the wait doubles');
    write(6, 7, 8, 9, 10, 11); // 1,500 bytes since partition 0's second record
    assert.equal(open(0), 250, 'not cut: under the longer wait');
    write(12, 13, 14, 15, 6, 7, 8, 9, 10); // 3,750 since: past twice the wait
    assert.equal(open(0), 0, 'cut once past the longer wait');
    assert.equal(partitionOf(driver.state, 0).cut, 2, 'its two batches');
  });

  it('opens a whole batch’s buffer for an input bringing more than a chunk, and sends the batch from it when later inputs fill it', () => {
    // Chunks are 4,136 bytes; a batch is 16 KiB. Each input brings partition 0 about 6 KiB (two records).
    const driver = new Driver({ ...baseConfig, batchSizeBytes: 16384, maxUnacknowledgedBytes: 1 << 20 }, []);
    registerWith(driver, [location(0, 0, 0), location(1, 0, 1)]);
    const record = (fill: number) => new Uint8Array(2044).fill(fill);
    const write = (a: number, b: number, c: number) =>
      sentOf(driver.plainStep(recordsIn([0, 0, 0], [record(a), record(b), record(c)]))).filter(isPush);
    assert.deepEqual(write(1, 2, 3), []);
    assert.equal(driver.state.heldBytes, 40 + 16384, 'one buffer of a whole batch, no chunks');
    assert.deepEqual(write(4, 5, 6), []);
    const [push] = write(7, 8, 9);
    assert.ok(push?.message.type === 'PushData', "push?.message.type === 'PushData'");
    assert.equal(
      push.message.payload.buffer.byteLength,
      40 + 16384,
      'sent from the batch’s own buffer, not copied',
    );
    const decoded = decodeRecords(frameOf(push.message.payload).payload);
    assert.ok(decoded.ok, 'decoded.ok');
    assert.deepEqual(
      decoded.records,
      [1, 2, 3, 4, 5, 6, 7, 8].map(record),
      'eight records of 2,048 fill 16 KiB',
    );
  });

  it('holds at most an eighth of its budget until its registration is answered', () => {
    const driver = new Driver(
      { ...baseConfig, numPartitions: 4, batchSizeBytes: 1000, maxUnacknowledgedBytes: 16_000 },
      [],
    );
    sentOf(driver.plainStep({ kind: 'start', recovered: new Map() }));
    // One record in each of four partitions: four open chunks, no batch cut, nothing unsent yet.
    driver.plainStep(recordsIn([0, 1, 2, 3], ['p0', 'p1', 'p2', 'p3'].map(text)));
    assert.equal(driver.state.phase, 'registering');
    assert.equal(driver.state.unsentBytes, 0);
    assert.ok(
      driver.state.heldBytes >= 200,
      `${driver.state.heldBytes} bytes held, an eighth of the budget or more`,
    );
    assert.ok(!mapTaskHasRoom(driver.state), 'no room while the registration is unanswered');
  });

  it('cuts a merged push at MAX_BATCHES_PER_PUSH batches, however small they are', () => {
    const partitions = MAX_BATCHES_PER_PUSH + 72;
    const driver = new Driver({ ...baseConfig, numPartitions: partitions, mergeSizeBytes: 1 << 20 }, []);
    registerWith(
      driver,
      Array.from({ length: partitions }, (_, p) => location(p, 0, 0)),
    );
    // A full batch (two records of 6 bytes) for every partition, all bound for worker 0, in one input.
    const ids = Array.from({ length: partitions }, (_, p) => [p, p]).flat();
    const pushes = sentOf(
      driver.plainStep(
        recordsIn(
          ids,
          ids.map((p) => text(`r-${String(p).padStart(4, '0')}`)),
        ),
      ),
    );
    const sizes = pushes
      .filter(isPush)
      .map((p) => (p.message.type === 'PushMergedData' ? p.message.batches.length : 1));
    assert.deepEqual(sizes, [MAX_BATCHES_PER_PUSH, 72], 'two messages, the first at the limit');
  });

  it('fails the attempt, taking nothing, when a run is not whole records', () => {
    const driver = new Driver(baseConfig, []);
    registerWith(driver, [location(0, 0, 0), location(1, 0, 1)]);
    const whole = recordsIn([0], [text('p0-r00')]).runs[0]!;
    driver.plainStep({
      kind: 'records',
      partitionIds: [1, 0],
      runs: [whole, whole.subarray(0, whole.length - 1)],
    });
    assert.equal(driver.state.phase, 'failed');
    assert.match(driver.state.error ?? '', /run for partition 0 is not whole records: record at byte 0/);
    assert.equal(driver.state.unacknowledgedBytes, 0, 'nothing of the input was taken');
  });

  it('says it has no room once an eighth of its budget waits behind full windows, well before the budget', () => {
    // Batches of 20 bytes (two records), a window of 1, a budget of 1,600: at most 200 bytes may wait unsent.
    const driver = new Driver({ ...baseConfig, numPartitions: 2, maxUnacknowledgedBytes: 1600 }, []);
    registerWith(driver, [location(0, 0, 0), location(1, 0, 1)]);
    assert.equal(unsentLimit(driver.state.config), 200);
    // Partition after partition, as a sorting writer writes: partition 0's first batch goes, the rest wait.
    const records = Array.from({ length: 22 }, (_, i) => text(`p0-r${String(i).padStart(2, '0')}`));
    const sent = sentOf(
      driver.plainStep(
        recordsIn(
          records.map(() => 0),
          records,
        ),
      ),
    ).filter(isPush);
    assert.equal(sent.length, 1, 'one batch in flight: the window of 1 is full');
    assert.equal(driver.state.unsentBytes, 10 * 20, 'ten batches of 20 bytes wait');
    assert.ok(driver.state.heldBytes < 1600, `${driver.state.heldBytes} bytes held, under the budget`);
    assert.ok(!mapTaskHasRoom(driver.state), 'no room: an eighth of the budget waits unsent');
    driver.answer(sent[0]!, succeeded(sent[0]!.message));
    assert.equal(driver.state.unsentBytes, 9 * 20, 'the answer opened the window for the next batch');
    assert.ok(mapTaskHasRoom(driver.state), 'room again');
  });

  it('sends a batch filled in one input from its own buffer; one filled over several chunks is copied into a frame of its size, its chunks filled again', () => {
    // Chunks are 4,136 bytes: a frame's header, then 4 KiB of records.
    const driver = new Driver({ ...baseConfig, batchSizeBytes: 8192, maxUnacknowledgedBytes: 1 << 20 }, []);
    registerWith(driver, [location(0, 0, 0), location(1, 0, 1)]);
    const step = (partitionIds: number[], records: Uint8Array[]) =>
      sentOf(driver.plainStep(recordsIn(partitionIds, records))).filter(isPush);
    const record = (length: number, fill: number) => new Uint8Array(length).fill(fill);
    const [whole] = step([0, 0], [record(4092, 1), record(4092, 2)]);
    assert.ok(whole?.message.type === 'PushData', "whole?.message.type === 'PushData'");
    assert.equal(
      whole.message.payload.buffer.byteLength,
      40 + 8192,
      'the frame is the batch’s own buffer, no larger',
    );
    assert.equal(driver.state.heldBytes, 8232);
    assert.deepEqual(step([1], [record(3000, 3)]), []);
    assert.deepEqual(step([1], [record(3000, 4)]), []);
    assert.equal(driver.state.heldBytes, 8232 + 2 * 4136, 'the second record ran into a second chunk');
    const [pieced] = step([1], [record(2180, 5)]);
    assert.ok(pieced?.message.type === 'PushData', "pieced?.message.type === 'PushData'");
    assert.equal(pieced.message.payload.buffer.byteLength, 8232, 'a frame of exactly the batch');
    const decoded = decodeRecords(frameOf(pieced.message.payload).payload);
    assert.ok(decoded.ok, 'decoded.ok');
    assert.deepEqual(decoded.records, [record(3000, 3), record(3000, 4), record(2180, 5)]);
    assert.equal(driver.state.spareChunks.length, 2, 'the chunks are kept to be filled again');
    assert.equal(driver.state.heldBytes, 2 * 8232 + 2 * 4136);
    step([1], [record(10, 6)]);
    assert.equal(driver.state.spareChunks.length, 1);
    assert.equal(
      driver.state.heldBytes,
      2 * 8232 + 2 * 4136,
      'a spare chunk was filled, nothing new allocated',
    );
    driver.plainStep({ kind: 'recordsEnd' });
    assert.equal(
      driver.state.heldBytes,
      2 * 8232 + 4136,
      'the end cuts the last batch, sent from its chunk; no spare is kept',
    );
  });

  it('gives its allocator back what it lets go of a chunk’s or a batch’s length once nothing holds it: spares at its end, frames once acknowledged', () => {
    const given: Uint8Array[] = [];
    const driver = new Driver(
      {
        ...baseConfig,
        batchSizeBytes: 8192,
        maxUnacknowledgedBytes: 1 << 20,
        reuseAcknowledgedFrames: true,
        giveBack: (buffer) => given.push(buffer),
      },
      [],
    );
    registerWith(driver, [location(0, 0, 0), location(1, 0, 1)]);
    const record = (length: number, fill: number) => new Uint8Array(length).fill(fill);
    const pushes: PushSend[] = [];
    const step = (input: Input) => pushes.push(...sentOf(driver.plainStep(input)).filter(isPush));
    // Partition 1's batch over two chunks, copied into a frame of its size at its cut: the chunks become spares.
    step(recordsIn([1], [record(3000, 1)]));
    step(recordsIn([1], [record(3000, 2)]));
    step(recordsIn([1], [record(2180, 3)]));
    // Partition 0's record goes into one of them, sent as it is at the end.
    step(recordsIn([0], [record(100, 4)]));
    assert.equal(driver.state.spareChunks.length, 1);
    assert.equal(given.length, 0, 'nothing is given back while the task may fill it again');
    step({ kind: 'recordsEnd' });
    assert.deepEqual(
      given.map((buffer) => buffer.length),
      [4136],
      'the spare goes back at the end',
    );
    assert.equal(pushes.length, 2);
    for (const push of pushes) {
      driver.answer(push, { type: 'PushDataResponse', status: 'SUCCESS', message: '' });
    }
    assert.equal(driver.state.heldBytes, 0);
    assert.deepEqual(
      given.map((buffer) => buffer.length),
      [4136, 8232, 4136],
      'each acknowledged frame goes back once: the batch-sized frame and the chunk sent as it was',
    );
    assert.deepEqual(
      given.slice(1).map((buffer) => buffer.buffer),
      pushes.map((push) => payloadsOf(push)[0]!.buffer),
      'the frames’ own memory',
    );
  });
});

/** Starts the driver's task and answers its registration with these locations. */
/** Answers `push` (of partition 0) HARD_SPLIT and its revive with epoch 1 on worker 2: the pushes that follow. */
function splitAndMovePartition0(driver: Driver, push: PushSend): PushSend[] {
  const revive = sentOf(
    driver.answer(push, { type: 'PushDataResponse', status: 'HARD_SPLIT', message: '' }),
  )[0]!;
  assert.equal(revive.message.type, 'Revive');
  return sentOf(
    driver.answer(revive, {
      type: 'ReviveResponse',
      results: [{ partitionId: 0, status: 'SUCCESS', newLocation: location(0, 1, 2), oldAvailable: true }],
      endedMapIds: [],
    }),
  ).filter(isPush);
}

function registerWith(driver: Driver, locations: readonly PartitionLocation[]): void {
  const registration = sentOf(driver.plainStep({ kind: 'start', recovered: new Map() }))[0]!;
  driver.answer(registration, {
    type: 'RegisterShuffleResponse',
    status: 'SUCCESS',
    locations: [...locations],
    message: '',
  });
}

/** A `records` input of these records, in order (consecutive records of one partition in one run). */
function recordsIn(
  partitionIds: readonly number[],
  records: readonly Uint8Array[],
): Extract<Input, { kind: 'records' }> {
  return { kind: 'records', ...recordRuns(partitionIds, records) };
}

/** The frames of a partition's batches cut and not yet acknowledged, oldest first. */
function unacknowledgedFrames(state: MapTaskState, partitionId: number): Uint8Array[] {
  return unacknowledgedBatchesOf(state, partitionId).map((slot) => state.batches.frames[slot]!);
}

/** The revives each of a partition's batches cut and not yet acknowledged may still spend, oldest first. */
function revivesLeftOf(state: MapTaskState, partitionId: number): number[] {
  return unacknowledgedBatchesOf(state, partitionId).map((slot) => state.batches.revivesLeft[slot]!);
}

/** The batch ids of a partition's batches to push again, in order. */
function retryIdsOf(state: MapTaskState, partitionId: number): number[] {
  return partitionOf(state, partitionId).retries.map((slot) => state.batches.batchIds[slot]!);
}

/** The payload bytes of every batch cut and not yet pushed once. */
function unsentPayloadBytes(state: MapTaskState): number {
  let bytes = 0;
  const { payloadBytes, nextUnpushed } = state.batches;
  for (const partition of allPartitionsOf(state)) {
    for (let slot = partition.next; slot !== NO_BATCH; slot = nextUnpushed[slot]!)
      bytes += payloadBytes[slot]!;
  }
  return bytes;
}

/** The capacity of every buffer a map task's state references: open batches, spare chunks, unacknowledged frames. */
function referencedBytes(state: MapTaskState): number {
  let bytes = 0;
  for (const buffer of referencedBuffers(state)) bytes += buffer.byteLength;
  return bytes;
}

/** The memory of every buffer a map task's state references. */
function referencedBuffers(state: MapTaskState): Set<ArrayBufferLike> {
  const buffers = new Set<ArrayBufferLike>();
  for (const partition of allPartitionsOf(state)) {
    for (const buffer of partition.openBuffers) buffers.add(buffer.buffer);
  }
  const { frames, capacities, partitionIds } = state.batches;
  frames.forEach((frame, slot) => {
    if (partitionIds[slot] !== NO_BATCH && capacities[slot]! > 0) buffers.add(frame.buffer);
  });
  for (const spare of [...state.spareChunks, ...state.spareBatches]) buffers.add(spare.buffer);
  return buffers;
}

/** The frames a push carries, as sent. */
function payloadsOf(push: PushSend): Uint8Array[] {
  return push.message.type === 'PushData'
    ? [push.message.payload]
    : push.message.batches.map((batch) => batch.payload);
}

/**
 * An allocator (MapTaskConfig.allocate and giveBack) that hands out again what the task gave back, last first, each
 * buffer its own memory; what comes back is scribbled over first, and must come back once.
 */
function scribblingPool(): {
  readonly free: Uint8Array[];
  readonly allocate: (length: number) => Uint8Array;
  readonly giveBack: (buffer: Uint8Array) => void;
} {
  const free: Uint8Array[] = [];
  return {
    free,
    allocate: (length) => {
      for (let at = free.length - 1; at >= 0; at -= 1)
        if (free[at]!.length === length) return free.splice(at, 1)[0]!;
      return new Uint8Array(length);
    },
    giveBack: (buffer) => {
      assert.ok(!free.some((kept) => kept.buffer === buffer.buffer), 'a buffer is given back once');
      assert.equal(buffer.byteOffset, 0, 'the whole buffer comes back');
      buffer.fill(0xee);
      free.push(buffer);
    },
  };
}
