import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import fc from 'fast-check';
import { workerKey, type PartitionLocation, type StatusCode, type WorkerId } from '../../domain/index.ts';
import { decodeBatchFrame } from '../../protocol/batch-frame.ts';
import type { MessageOf } from '../../protocol/messages.ts';
import type { Envelope } from '../effects.ts';
import type { Probe } from '../testing/in-memory-cluster.ts';
import { ProbeHarness } from '../testing/probe-harness.ts';
import { initialMapTaskState, mapTaskMachine, type MapTaskConfig, type MapTaskState } from './map-task.ts';
import { decodeRecords } from './records.ts';

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
const text = (s: string) => new TextEncoder().encode(s);

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
  records: [[text('p0-r00'), text('p0-r01'), text('p0-r02')], [text('p1-r00')]],
  batchSizeBytes: 20,
  maxReviveRetries: 2,
  pushTimeoutMs: 1_000,
  requestTimeoutMs: 5_000,
  maxRequestAttempts: 3,
  excludeWorkerOnFailure: false,
};

class Harness extends ProbeHarness<MapTaskState> {
  readonly lm: Probe;
  constructor(config: Partial<MapTaskConfig> = {}) {
    super(ME, { machine: mapTaskMachine, init: () => initialMapTaskState({ ...baseConfig, ...config }) });
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

  reviveWith(results: (request: MessageOf<'Revive'>) => MessageOf<'ReviveResponse'>): void {
    this.answer(this.lm, 'Revive', ({ message }) => results(message));
    this.advance(5);
  }
}

function framesOf(pushes: readonly Envelope<MessageOf<'PushData'>>[]) {
  return pushes.map(({ message }) => {
    const frame = decodeBatchFrame(message.payload);
    assert.ok(frame.ok);
    return frame.value;
  });
}

describe('map task', () => {
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
      assert.ok(decoded.ok);
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

  it('on HARD_SPLIT revives and resends the same batch, framed with the new epoch, at no cost to the budget', () => {
    const h = new Harness({ maxReviveRetries: 0 });
    h.register();
    h.pushes(0, 'HARD_SPLIT');
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
    assert.equal(h.node.state().phase, 'pushing');
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
        fc.array(fc.array(fc.string({ maxLength: 12 }), { maxLength: 6 }), { minLength: 1, maxLength: 3 }),
        fc.infiniteStream(fc.constantFrom(...statuses)),
        (records, outcomes) => {
          const encoded = records.map((rs) => rs.map(text));
          const h = new Harness({ numPartitions: encoded.length, records: encoded, maxReviveRetries: 1000 });
          h.register(encoded.map((_, p) => location(p, 0, p % 4)));
          let epoch = 1;
          for (let round = 0; round < 200 && h.node.state().phase === 'pushing'; round += 1) {
            for (let i = 0; i < 4; i += 1) {
              h.answer(h.w(i), 'PushData', () => ({
                type: 'PushDataResponse',
                status: outcomes.next().value as StatusCode,
                message: '',
              }));
            }
            h.answer(h.lm, 'Revive', ({ message }) => ({
              type: 'ReviveResponse',
              results: message.requests.map((r) => ({
                partitionId: r.partitionId,
                status: 'SUCCESS',
                newLocation: location(r.partitionId, epoch++, epoch % 4),
                oldAvailable: true,
              })),
              endedMapIds: [],
            }));
            h.advance(5);
          }
          assert.equal(h.node.state().phase, 'ending');
          const written = h.last(h.lm, 'MapperEnd').written;
          const planned = h.node.state().partitions.filter((p) => p.payloads.length > 0);
          assert.deepEqual(
            written,
            planned.map((p) => ({
              partitionId: p.partitionId,
              batches: p.payloads.length,
              bytes: p.payloads.reduce((n, b) => n + b.length, 0),
            })),
          );
        },
      ),
      { numRuns: 60 },
    );
  });
});
