import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import fc from 'fast-check';
import { workerKey, type StatusCode, type WorkerId } from '../../domain/index.ts';
import type { PushMergedData } from '../../protocol/messages.ts';
import type { Effect } from '../effects.ts';
import type { WorkerConfig, WorkerMachineState } from './index.ts';
import type { Harness } from './test-kit.ts';
import {
  CLIENT,
  damaged,
  ioOps,
  KEY,
  location,
  MAPPER,
  ofKind,
  onlySent,
  OTHER_PEER,
  PEER,
  pushData,
  pushMergedData,
  registeredWorker,
  SELF,
  sentOf,
  type TestBatch,
} from './test-kit.ts';

interface Slot {
  readonly partitionId: number;
  readonly peer?: WorkerId;
}

/** A registered worker holding primaries (with the given peers) of shuffle app-1, their files created. */
function workerWith(
  slots: readonly Slot[],
  options: { splitMode?: 'SOFT' | 'HARD'; splitThreshold?: number; config?: Partial<WorkerConfig> } = {},
): Harness<WorkerMachineState> {
  const harness = registeredWorker(SELF, options.config);
  const reserve = harness.receive(
    CLIENT,
    {
      type: 'ReserveSlots',
      appId: 'app',
      shuffleId: 1,
      primaries: slots.map(({ partitionId, peer }) =>
        location(partitionId, 0, 'PRIMARY', SELF, peer === undefined ? {} : { peer }),
      ),
      replicas: [],
      splitThreshold: options.splitThreshold ?? 1024 ** 3,
      splitMode: options.splitMode ?? 'SOFT',
      memoryEnabled: false,
    },
    { requestId: 1 },
  );
  assert.equal(onlySent(harness.completeIo(reserve), 'StatusResponse').message.status, 'SUCCESS');
  return harness;
}

function push(harness: Harness<WorkerMachineState>, message: PushMergedData, requestId = 50): Effect[] {
  return harness.receive(MAPPER, message, { requestId });
}

/** Completes each I/O operation of the effects (a batch with one ioBatchDone), one level deep. */
function finishIo(harness: Harness<WorkerMachineState>, effects: readonly Effect[]): Effect[] {
  const produced: Effect[] = [];
  for (const effect of effects) {
    if (effect.kind === 'ioBatch') {
      produced.push(
        ...harness.step({
          kind: 'ioBatchDone',
          completions: effect.ops.map((op) => ({ kind: 'ioDone', op: op.op })),
        }),
      );
    } else if (effect.kind === 'write') produced.push(...harness.ioDone(effect.op));
  }
  return produced;
}

function answerOf(effects: readonly Effect[]) {
  return onlySent(effects, 'PushMergedDataResponse');
}

function metricValues(effects: readonly Effect[]): Record<string, number> {
  const values: Record<string, number> = {};
  for (const metric of ofKind(effects, 'metric')) {
    assert.equal(values[metric.name], undefined, `${metric.name} is emitted once per message`);
    values[metric.name] = metric.value;
  }
  return values;
}

function forwardAck(
  harness: Harness<WorkerMachineState>,
  forward: { to: string; requestId?: number },
  statuses: readonly StatusCode[],
): Effect[] {
  return harness.receive(
    forward.to,
    { type: 'PushMergedDataResponse', statuses, message: '' },
    { inReplyTo: forward.requestId! },
  );
}

describe('worker: PushMergedData', () => {
  it('judges each batch as a PushData of it, and answers once with one status per batch', () => {
    const harness = workerWith(
      [{ partitionId: 0, peer: PEER }, { partitionId: 1 }, { partitionId: 2 }, { partitionId: 3 }],
      { splitMode: 'HARD', splitThreshold: 100 },
    );
    // Partition 2's writer fails first: later batches to it fail as PushData would.
    const earlier = harness.receive(MAPPER, pushData(KEY, 2, 0, 'PRIMARY'), { requestId: 2 });
    harness.ioFailed(ofKind(earlier, 'write')[0]!.op);

    const message = pushMergedData(KEY, 'PRIMARY', [
      { partitionId: 0 }, // success, forwarded
      { partitionId: 1, size: 200 }, // success, and fills the file past the threshold
      { partitionId: 1 }, // hard split: the queued batch before it counts
      { partitionId: 9 }, // unknown location of a known shuffle
      { partitionId: 3 }, // damaged below
      { partitionId: 2 }, // writer failed
    ]);
    const batches = message.batches.map((batch, index) =>
      index === 4 ? { ...batch, payload: damaged(batch.payload) } : batch,
    );
    const effects = push(harness, { ...message, batches });

    const writes = ofKind(ioOps(effects), 'write');
    assert.deepEqual(
      writes.map((write) => write.file.id),
      [`${KEY}/0-0-0`, `${KEY}/1-0-0`],
      'only the accepted batches are written, each to its file',
    );
    assert.equal(ofKind(effects, 'ioBatch').length, 1, 'the writes go to the disks as one batch');
    const forward = onlySent(effects, 'PushMergedData');
    assert.deepEqual(
      forward.message.batches.map((batch) => batch.batchId),
      [0],
      'only the replicated batch is forwarded',
    );
    assert.equal(sentOf(effects, 'PushMergedDataResponse').length, 0, 'no answer before the copies end');

    const written = finishIo(harness, effects);
    assert.equal(sentOf(written, 'PushMergedDataResponse').length, 0, 'the replica is still outstanding');
    const done = forwardAck(harness, forward, ['SUCCESS']);
    const answer = answerOf(done);
    assert.equal(answer.to, MAPPER);
    assert.equal(answer.inReplyTo, 50);
    assert.deepEqual(answer.message.statuses, [
      'SUCCESS',
      'SUCCESS',
      'HARD_SPLIT',
      'HARD_SPLIT',
      'PUSH_DATA_FAIL_NON_CRITICAL_CAUSE_PRIMARY',
      'PUSH_DATA_WRITE_FAIL_PRIMARY',
    ]);
    assert.match(answer.message.message, /CRC/);
    assert.match(answer.message.message, /earlier write to this partition file failed/);
    assert.match(answer.message.message, /2 batch\(es\) HARD_SPLIT|1 batch\(es\) HARD_SPLIT/);
    assert.deepEqual(metricValues(done), {
      WriteDataSuccessCount: 2,
      WriteDataHardSplitCount: 2,
      WriteDataFailCount: 2,
    });
    const logs = ofKind(done, 'log').filter((line) => line.event === 'worker.push.notWritten');
    assert.equal(logs.length, 1, 'one line per message');
    assert.equal(logs[0]!.level, 'warn');
    assert.equal(logs[0]!.fields?.['failed'], 4);
    assert.equal(harness.state.pushes.size, 0);
  });

  it('answers a message whose batches are all refused at once, without writing', () => {
    const harness = workerWith([{ partitionId: 0 }]);
    const effects = push(harness, pushMergedData(KEY, 'PRIMARY', [{ partitionId: 5 }, { partitionId: 6 }]));
    assert.deepEqual(answerOf(effects).message.statuses, ['HARD_SPLIT', 'HARD_SPLIT']);
    assert.deepEqual(ioOps(effects), []);
    const logs = ofKind(effects, 'log').filter((line) => line.event === 'worker.push.notWritten');
    assert.deepEqual(
      logs.map((line) => line.level),
      ['debug'],
      'hard splits alone are no warning',
    );
  });

  it('forwards the replicated batches in one message per peer, whatever the client grouped', () => {
    const harness = workerWith([
      { partitionId: 0, peer: PEER },
      { partitionId: 1, peer: PEER },
      { partitionId: 2, peer: OTHER_PEER },
      { partitionId: 3 },
    ]);
    const message = pushMergedData(
      KEY,
      'PRIMARY',
      [{ partitionId: 0 }, { partitionId: 2 }, { partitionId: 1 }, { partitionId: 3 }],
      { mapId: 4, attemptId: 1 },
    );
    const effects = push(harness, message);
    const forwards = sentOf(effects, 'PushMergedData');
    assert.deepEqual(
      forwards.map((forward) => [forward.to, forward.message.batches.map((batch) => batch.partitionId)]),
      [
        [workerKey(PEER), [0, 1]],
        [workerKey(OTHER_PEER), [2]],
      ],
    );
    for (const forward of forwards) {
      assert.equal(forward.message.mode, 'REPLICA');
      assert.equal(forward.message.mapId, 4);
      assert.equal(forward.message.attemptId, 1);
      for (const batch of forward.message.batches) {
        assert.equal(batch.payload, message.batches.find((b) => b.batchId === batch.batchId)!.payload);
      }
    }
    const requestIds = forwards.map((forward) => forward.requestId!);
    assert.equal(new Set(requestIds).size, 2, 'one request per forward');
    assert.deepEqual(
      ofKind(effects, 'setTimer').map((timer) => timer.name),
      requestIds.map((id) => `req:${id}`),
      'one timeout per forward',
    );
    finishIo(harness, effects);
    forwardAck(harness, forwards[1]!, ['SUCCESS']);
    const answer = answerOf(forwardAck(harness, forwards[0]!, ['SUCCESS', 'SOFT_SPLIT']));
    assert.deepEqual(answer.message.statuses, ['SUCCESS', 'SUCCESS', 'SOFT_SPLIT', 'SUCCESS']);
    assert.equal(answer.message.message, '');
  });

  it('times out only the batches of the forward that did not answer', () => {
    const harness = workerWith([
      { partitionId: 0, peer: PEER },
      { partitionId: 1, peer: OTHER_PEER },
      { partitionId: 3 },
    ]);
    const effects = push(
      harness,
      pushMergedData(KEY, 'PRIMARY', [{ partitionId: 0 }, { partitionId: 1 }, { partitionId: 3 }]),
    );
    const [slow, fast] = sentOf(effects, 'PushMergedData');
    finishIo(harness, effects);
    forwardAck(harness, fast!, ['SUCCESS']);
    const done = harness.timer(`req:${slow!.requestId}`, harness.now + 120_000);
    assert.deepEqual(answerOf(done).message.statuses, ['PUSH_DATA_TIMEOUT_REPLICA', 'SUCCESS', 'SUCCESS']);
    assert.deepEqual(metricValues(done), {
      WriteDataSuccessCount: 2,
      ReplicateDataFailCount: 1,
      ReplicateDataTimeoutCount: 1,
    });
  });

  it('takes the replica status of each forwarded batch, and marks an unreachable peer for fast-fail', () => {
    const harness = workerWith([
      { partitionId: 0, peer: PEER },
      { partitionId: 1, peer: PEER },
      { partitionId: 2, peer: OTHER_PEER },
    ]);
    const effects = push(
      harness,
      pushMergedData(KEY, 'PRIMARY', [{ partitionId: 0 }, { partitionId: 1 }, { partitionId: 2 }]),
    );
    const [toPeer, toOther] = sentOf(effects, 'PushMergedData');
    finishIo(harness, effects);
    forwardAck(harness, toPeer!, ['PUSH_DATA_WRITE_FAIL_REPLICA', 'SUCCESS']);
    const done = harness.step({
      kind: 'sendFailed',
      to: toOther!.to,
      requestId: toOther!.requestId!,
      message: toOther!.message,
    });
    assert.deepEqual(answerOf(done).message.statuses, [
      'PUSH_DATA_WRITE_FAIL_REPLICA',
      'SUCCESS',
      'PUSH_DATA_CREATE_CONNECTION_FAIL_REPLICA',
    ]);
    // Inside the fast-fail window only the batches for the unreachable peer are refused.
    const next = push(harness, pushMergedData(KEY, 'PRIMARY', [{ partitionId: 2 }, { partitionId: 0 }]), 51);
    assert.deepEqual(
      sentOf(next, 'PushMergedData').map((forward) => forward.to),
      [workerKey(PEER)],
    );
    assert.deepEqual(
      ofKind(ioOps(next), 'write').map((write) => write.file.id),
      [`${KEY}/0-0-0`],
    );
  });

  it('counts every forwarded batch as refused when the replica answers the wrong number of statuses', () => {
    const harness = workerWith([
      { partitionId: 0, peer: PEER },
      { partitionId: 1, peer: PEER },
    ]);
    const effects = push(harness, pushMergedData(KEY, 'PRIMARY', [{ partitionId: 0 }, { partitionId: 1 }]));
    finishIo(harness, effects);
    const done = forwardAck(harness, onlySent(effects, 'PushMergedData'), ['SUCCESS']);
    assert.deepEqual(answerOf(done).message.statuses, [
      'PUSH_DATA_FAIL_NON_CRITICAL_CAUSE_REPLICA',
      'PUSH_DATA_FAIL_NON_CRITICAL_CAUSE_REPLICA',
    ]);
    assert.ok(
      ofKind(done, 'log').some((line) => line.event === 'worker.replicate.malformedAnswer'),
      "ofKind(done, 'log').some((line) => line.event === 'worker.replicate.malformedAnswer')",
    );
  });

  it('answers PARTITION_NOT_FOUND for the batches of a destroyed file, once the others are known', () => {
    const harness = workerWith([{ partitionId: 0 }, { partitionId: 1 }]);
    const effects = push(harness, pushMergedData(KEY, 'PRIMARY', [{ partitionId: 0 }, { partitionId: 1 }]));
    const [, second] = ofKind(ioOps(effects), 'write');
    const destroy = harness.receive(
      CLIENT,
      { type: 'DestroySlots', appId: 'app', shuffleId: 1, primaryIds: ['0-0'], replicaIds: [] },
      { requestId: 3 },
    );
    assert.equal(sentOf(destroy, 'PushMergedDataResponse').length, 0, 'batch 1 is still being written');
    const done = harness.ioDone(second!.op);
    assert.deepEqual(answerOf(done).message.statuses, ['PUSH_DATA_FAIL_PARTITION_NOT_FOUND', 'SUCCESS']);
    assert.equal(harness.state.pushes.size, 0);
  });

  it('answers in the destroy step when every waiting batch was on the destroyed files', () => {
    const harness = workerWith([{ partitionId: 0 }, { partitionId: 1 }]);
    push(harness, pushMergedData(KEY, 'PRIMARY', [{ partitionId: 0 }, { partitionId: 1 }]));
    const destroy = harness.receive(
      CLIENT,
      { type: 'DestroySlots', appId: 'app', shuffleId: 1, primaryIds: ['0-0', '1-0'], replicaIds: [] },
      { requestId: 3 },
    );
    assert.deepEqual(answerOf(destroy).message.statuses, [
      'PUSH_DATA_FAIL_PARTITION_NOT_FOUND',
      'PUSH_DATA_FAIL_PARTITION_NOT_FOUND',
    ]);
  });

  it('refuses a batch whose frame names another map attempt than the message', () => {
    const harness = workerWith([{ partitionId: 0 }]);
    const framed = pushMergedData(KEY, 'PRIMARY', [{ partitionId: 0 }], { mapId: 1 });
    const effects = push(harness, { ...framed, mapId: 2 });
    const answer = answerOf(effects);
    assert.deepEqual(answer.message.statuses, ['PUSH_DATA_FAIL_NON_CRITICAL_CAUSE_PRIMARY']);
    assert.match(answer.message.message, /mapId 1 vs 2/);
  });

  it('refuses a client whose release the worker does not admit, writing nothing', () => {
    const harness = workerWith([{ partitionId: 0 }]);
    const effects = harness.receive(MAPPER, pushMergedData(KEY, 'PRIMARY', [{ partitionId: 0 }]), {
      requestId: 5,
      fromRelease: '0.2.0',
    });
    assert.equal(onlySent(effects, 'StatusResponse').message.status, 'CLIENT_RELEASE_REFUSED');
    assert.deepEqual(ioOps(effects), []);
  });

  it('writes a REPLICA merged push without forwarding it, and answers the primary per batch', () => {
    const harness = registeredWorker(PEER);
    const reserve = harness.receive(
      CLIENT,
      {
        type: 'ReserveSlots',
        appId: 'app',
        shuffleId: 1,
        primaries: [],
        replicas: [0, 1].map((id) => location(id, 0, 'REPLICA', PEER, { peer: SELF })),
        splitThreshold: 1024 ** 3,
        splitMode: 'SOFT',
        memoryEnabled: false,
      },
      { requestId: 1 },
    );
    harness.completeIo(reserve);
    const effects = harness.receive(
      workerKey(SELF),
      pushMergedData(KEY, 'REPLICA', [{ partitionId: 1 }, { partitionId: 0 }, { partitionId: 7 }]),
      { requestId: 8, fromRelease: '0.2.0' },
    );
    assert.equal(sentOf(effects, 'PushMergedData').length, 0);
    const answer = answerOf(finishIo(harness, effects));
    assert.equal(answer.to, workerKey(SELF));
    assert.deepEqual(answer.message.statuses, ['SUCCESS', 'SUCCESS', 'HARD_SPLIT']);
  });

  it('still answers a PushData with a PushDataResponse, and forwards it as a PushData', () => {
    const harness = workerWith([{ partitionId: 0, peer: PEER }]);
    const effects = harness.receive(MAPPER, pushData(KEY, 0, 0, 'PRIMARY'), { requestId: 9 });
    const forward = onlySent(effects, 'PushData');
    assert.equal(forward.message.mode, 'REPLICA');
    assert.equal(sentOf(effects, 'PushMergedData').length, 0);
    finishIo(harness, effects);
    const done = harness.receive(
      forward.to,
      { type: 'PushDataResponse', status: 'SUCCESS', message: '' },
      { inReplyTo: forward.requestId! },
    );
    assert.equal(onlySent(done, 'PushDataResponse').message.status, 'SUCCESS');
    assert.equal(onlySent(done, 'PushDataResponse').message.message, 'written');
    assert.equal(sentOf(done, 'PushMergedDataResponse').length, 0);
  });
});

/**
 * The promise of the merged push: each batch gets the status a PushData of it would get. The same batches are sent
 * to two identical workers, once as one merged push and once as PushData after PushData; every write completes or
 * fails the same way on both, each peer answers each batch the same way, and the statuses must agree.
 */
describe('worker: a merged push is judged as its batches pushed one by one', () => {
  const SLOTS: readonly Slot[] = [
    { partitionId: 0, peer: PEER },
    { partitionId: 1, peer: PEER },
    { partitionId: 2, peer: OTHER_PEER },
    { partitionId: 3 },
  ];
  const batchArb = fc.record({
    partitionId: fc.integer({ min: 0, max: 5 }),
    size: fc.integer({ min: 1, max: 120 }),
    damaged: fc.boolean(),
  });
  const replicaStatusArb = fc.constantFrom<StatusCode>(
    'SUCCESS',
    'SUCCESS',
    'HARD_SPLIT',
    'PUSH_DATA_WRITE_FAIL_REPLICA',
  );

  it('gives every batch the same status either way', () => {
    fc.assert(
      fc.property(
        fc.array(batchArb, { minLength: 1, maxLength: 12 }),
        fc.constantFrom<'SOFT' | 'HARD'>('SOFT', 'HARD'),
        fc.subarray([0, 1, 2, 3]),
        fc.array(replicaStatusArb, { minLength: 12, maxLength: 12 }),
        (generated, splitMode, failingFiles, replicaStatuses) => {
          const batches: TestBatch[] = generated.map((batch, batchId) => ({ ...batch, batchId }));
          const damage = (payload: Uint8Array, index: number) =>
            generated[index]!.damaged ? damaged(payload) : payload;
          const failing = new Set(failingFiles.map((id) => `${KEY}/${id}-0-0`));
          const options = { splitMode, splitThreshold: 150 };

          const merged = workerWith(SLOTS, options);
          const message = pushMergedData(KEY, 'PRIMARY', batches);
          const mergedEffects = push(merged, {
            ...message,
            batches: message.batches.map((batch, index) => ({
              ...batch,
              payload: damage(batch.payload, index),
            })),
          });
          const mergedAnswers = settleAll(merged, mergedEffects, failing, replicaStatuses);

          const single = workerWith(SLOTS, options);
          const singleEffects = batches.flatMap((batch, index) => {
            const one = pushData(KEY, batch.partitionId, 0, 'PRIMARY', { batchId: index, size: batch.size });
            return single.receive(
              MAPPER,
              { ...one, payload: damage(one.payload, index) },
              { requestId: 100 + index },
            );
          });
          const singleAnswers = settleAll(single, singleEffects, failing, replicaStatuses);

          const merge = mergedAnswers.filter((answer) => answer.type === 'PushMergedDataResponse');
          assert.equal(merge.length, 1, 'one answer to the merged push');
          const byRequest = new Map(
            singleAnswers.flatMap((answer) =>
              answer.type === 'PushDataResponse' ? [[answer.inReplyTo, answer.status] as const] : [],
            ),
          );
          assert.deepEqual(
            merge[0]!.statuses,
            batches.map((_, index) => byRequest.get(100 + index)),
          );
          for (const slot of SLOTS) {
            const name = `${slot.partitionId}-0-0`;
            assert.equal(
              merged.state.shuffles.get(KEY)?.files.get(name)?.bytes,
              single.state.shuffles.get(KEY)?.files.get(name)?.bytes,
              `bytes of ${name}`,
            );
          }
        },
      ),
      { numRuns: 150 },
    );
  });
});

type Answer =
  | { type: 'PushDataResponse'; inReplyTo: number | undefined; status: StatusCode }
  | { type: 'PushMergedDataResponse'; statuses: readonly StatusCode[] };

/**
 * Runs every write (failing those to the `failing` files) and answers every forward (batch id k gets
 * `replicaStatuses[k]`), until nothing is outstanding; returns the answers the mapper got.
 */
function settleAll(
  harness: Harness<WorkerMachineState>,
  first: readonly Effect[],
  failing: ReadonlySet<string>,
  replicaStatuses: readonly StatusCode[],
): Answer[] {
  const answers: Answer[] = [];
  let pending: Effect[] = [...first];
  while (pending.length > 0) {
    const effects = pending;
    pending = [];
    for (const effect of effects) {
      if (effect.kind === 'send') {
        const { message } = effect;
        if (message.type === 'PushDataResponse')
          answers.push({ type: message.type, inReplyTo: effect.inReplyTo, status: message.status });
        else if (message.type === 'PushMergedDataResponse')
          answers.push({ type: message.type, statuses: message.statuses });
        else if (message.type === 'PushData') {
          pending.push(
            ...harness.receive(
              effect.to,
              { type: 'PushDataResponse', status: replicaStatuses[message.batchId]!, message: '' },
              { inReplyTo: effect.requestId! },
            ),
          );
        } else if (message.type === 'PushMergedData') {
          pending.push(
            ...harness.receive(
              effect.to,
              {
                type: 'PushMergedDataResponse',
                statuses: message.batches.map((batch) => replicaStatuses[batch.batchId]!),
                message: '',
              },
              { inReplyTo: effect.requestId! },
            ),
          );
        }
      }
      for (const op of ioOps([effect])) {
        pending.push(
          ...(failing.has(op.file.id) && op.kind === 'write'
            ? harness.ioFailed(op.op)
            : harness.ioDone(op.op)),
        );
      }
    }
  }
  return answers;
}
