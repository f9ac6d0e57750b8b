import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import fc from 'fast-check';
import type { StatusCode } from '../../domain/index.ts';
import type { Effect, IoCompletion, IoError } from '../effects.ts';
import { DISK_CHECK_TIMER } from './disk-health.ts';
import { isBatchable } from './io-batch.ts';
import type { WorkerMachineState } from './index.ts';
import {
  CLIENT,
  HDD_MASK_STORAGE,
  ioOps,
  KEY,
  location,
  MAPPER,
  OTHER_PEER,
  PEER,
  pushData,
  plainData,
  pushMergedData,
  registeredWorker,
  SELF,
  type Harness,
  type IoEffect,
  commitFiles,
} from './test-kit.ts';

/**
 * One step per ioBatchDone must change nothing but the number of steps: for generated worker histories (reserves,
 * plain and merged pushes to memory and disk files, replica answers and failures, commits, destroys, reads, disk
 * probes), a worker that gets a set of completions as one ioBatchDone ends in the same state, with the same effects
 * (I/O operations unfolded from their batch), as a worker that gets them one by one as ioDone / ioFailed inputs.
 */

const PARTITIONS = 6;

type Action =
  | { kind: 'reserve'; epoch: number; partitions: number[] }
  | {
      kind: 'push';
      merged: boolean;
      epoch: number;
      batches: { partitionId: number; size: number }[];
    }
  | { kind: 'complete'; picks: { index: number; error: IoError | null }[] }
  | { kind: 'forward'; index: number; answer: 'ack' | 'writeFail' | 'short' | 'timeout' | 'unreachable' }
  | { kind: 'commit'; partitions: number[] }
  | { kind: 'destroy'; partitions: number[] }
  | { kind: 'fetch'; partitionId: number }
  | { kind: 'diskCheck' };

const partitionsArb = fc.uniqueArray(fc.integer({ min: 0, max: PARTITIONS - 1 }), {
  minLength: 1,
  maxLength: 4,
});
const actionArb: fc.Arbitrary<Action> = fc.oneof(
  {
    weight: 1,
    arbitrary: fc.record({
      kind: fc.constant('reserve'),
      epoch: fc.integer({ min: 0, max: 1 }),
      partitions: partitionsArb,
    }),
  },
  {
    weight: 4,
    arbitrary: fc.record({
      kind: fc.constant('push'),
      merged: fc.boolean(),
      epoch: fc.integer({ min: 0, max: 1 }),
      batches: fc.array(
        fc.record({
          partitionId: fc.integer({ min: 0, max: PARTITIONS }),
          size: fc.integer({ min: 1, max: 90 }),
        }),
        { minLength: 1, maxLength: 5 },
      ),
    }),
  },
  {
    weight: 5,
    arbitrary: fc.record({
      kind: fc.constant('complete'),
      picks: fc.array(
        fc.record({
          // Mostly the oldest operations, as disks tend to complete them, so that commits and reads happen too.
          index: fc.oneof(fc.nat({ max: 2 }), fc.nat()),
          error: fc.oneof(
            { weight: 6, arbitrary: fc.constant(null) },
            { weight: 1, arbitrary: fc.constantFrom<IoError>('IO_ERROR', 'NO_SPACE') },
          ),
        }),
        { minLength: 1, maxLength: 8 },
      ),
    }),
  },
  {
    weight: 2,
    arbitrary: fc.record({
      kind: fc.constant('forward'),
      index: fc.nat(),
      answer: fc.constantFrom('ack', 'ack', 'writeFail', 'short', 'timeout', 'unreachable'),
    }),
  },
  { weight: 1, arbitrary: fc.record({ kind: fc.constant('commit'), partitions: partitionsArb }) },
  { weight: 1, arbitrary: fc.record({ kind: fc.constant('destroy'), partitions: partitionsArb }) },
  {
    weight: 1,
    arbitrary: fc.record({
      kind: fc.constant('fetch'),
      partitionId: fc.integer({ min: 0, max: PARTITIONS - 1 }),
    }),
  },
  { weight: 1, arbitrary: fc.constant({ kind: 'diskCheck' as const }) },
);

/** Partitions 0-2 have a replica on a peer; even ones may live in memory (then move to disk as they grow). */
function slot(partitionId: number, epoch: number) {
  const peer = partitionId === 2 ? OTHER_PEER : partitionId < 2 ? PEER : undefined;
  const storage =
    partitionId % 2 === 0 ? { type: 'HDD' as const, mountPoint: '', availableTypes: 3 } : HDD_MASK_STORAGE;
  return location(partitionId, epoch, 'PRIMARY', SELF, peer === undefined ? { storage } : { peer, storage });
}

function newWorker(): Harness<WorkerMachineState> {
  return registeredWorker(SELF, {
    memory: { capacityBytes: 400, maxFileBytes: 120, evictRatio: 0.6, refuseImplicitMemory: false },
    chunkSizeBytes: 64,
    diskCheckIntervalMs: 1_000,
    split: { enabled: true, minBytes: 1, maxBytes: 10_000 },
  });
}

/** What a driver has outstanding: I/O operations and forwards to replicas, in the order they were issued. */
interface Outstanding {
  io: IoEffect[];
  forwards: Extract<Effect, { kind: 'send' }>[];
}

function track(outstanding: Outstanding, effects: readonly Effect[]): void {
  outstanding.io.push(...ioOps(effects));
  for (const effect of effects) {
    if (effect.kind !== 'send') continue;
    const type = effect.message.type;
    if ((type === 'PushData' || type === 'PushMergedData') && effect.requestId !== undefined)
      outstanding.forwards.push(effect);
  }
}

/** Feeds one action (other than `complete`, which the two workers receive differently) to a worker. */
function step(
  harness: Harness<WorkerMachineState>,
  action: Exclude<Action, { kind: 'complete' }>,
  outstanding: Outstanding,
): Effect[] {
  const options = { requestId: harness.now };
  switch (action.kind) {
    case 'reserve':
      return harness.receive(
        CLIENT,
        {
          type: 'ReserveSlots',
          appId: 'app',
          shuffleId: 1,
          primaries: action.partitions.map((id) => slot(id, action.epoch)),
          replicas: [],
          splitThreshold: 150,
          splitMode: 'SOFT',
          memoryEnabled: true,
        },
        options,
      );
    case 'push': {
      const [first] = action.batches;
      const message = action.merged
        ? pushMergedData(
            KEY,
            'PRIMARY',
            action.batches.map((batch) => ({ ...batch, epoch: action.epoch })),
          )
        : pushData(KEY, first!.partitionId, action.epoch, 'PRIMARY', { size: first!.size });
      return harness.receive(MAPPER, message, options);
    }
    case 'commit':
      return harness.receive(CLIENT, commitFiles(idsOf(action.partitions), [-1]), options);
    case 'destroy':
      return harness.receive(
        CLIENT,
        {
          type: 'DestroySlots',
          appId: 'app',
          shuffleId: 1,
          primaryIds: idsOf(action.partitions),
          replicaIds: [],
        },
        options,
      );
    case 'fetch': {
      const open = harness.receive(
        MAPPER,
        { type: 'OpenStream', shuffleKey: KEY, uniqueId: `${action.partitionId}-0`, mode: 'PRIMARY' },
        options,
      );
      const opened = open.find((effect) => effect.kind === 'send')?.message;
      if (opened?.type !== 'OpenStreamResponse' || opened.status !== 'SUCCESS') return open;
      const fetch = harness.receive(
        MAPPER,
        { type: 'FetchChunk', streamId: opened.streamId, chunkIndex: 0 },
        options,
      );
      return [...open, ...fetch];
    }
    case 'diskCheck':
      return harness.timer(DISK_CHECK_TIMER);
    case 'forward':
      return answerForward(harness, action, outstanding);
  }
}

function idsOf(partitions: readonly number[]): string[] {
  return partitions.flatMap((id) => [`${id}-0`, `${id}-1`]);
}

/** The replica's answer to an outstanding forward, its timeout, or the failure to reach it. */
function answerForward(
  harness: Harness<WorkerMachineState>,
  action: Extract<Action, { kind: 'forward' }>,
  outstanding: Outstanding,
): Effect[] {
  const forward = outstanding.forwards[action.index % Math.max(1, outstanding.forwards.length)];
  if (forward === undefined) return [];
  const requestId = forward.requestId!;
  const count = forward.message.type === 'PushMergedData' ? forward.message.batches.length : 1;
  const status: StatusCode = action.answer === 'writeFail' ? 'PUSH_DATA_WRITE_FAIL_REPLICA' : 'SUCCESS';
  switch (action.answer) {
    case 'timeout':
      return harness.timer(`req:${requestId}`);
    case 'unreachable':
      return harness.step({ kind: 'sendFailed', to: forward.to, requestId, message: forward.message });
    case 'short':
      return harness.receive(
        forward.to,
        { type: 'PushMergedDataResponse', statuses: [], message: '' },
        { inReplyTo: requestId },
      );
    case 'ack':
    case 'writeFail':
      return harness.receive(
        forward.to,
        forward.message.type === 'PushData'
          ? { type: 'PushDataResponse', status, message: '' }
          : { type: 'PushMergedDataResponse', statuses: Array<StatusCode>(count).fill(status), message: '' },
        { inReplyTo: requestId },
      );
  }
}

function completionOf(op: IoEffect, error: IoError | null): IoCompletion {
  if (error !== null) return { kind: 'ioFailed', op: op.op, error };
  return op.kind === 'read'
    ? { kind: 'ioDone', op: op.op, bytes: new Uint8Array(op.length) }
    : { kind: 'ioDone', op: op.op };
}

function unfold(effects: readonly Effect[]): Effect[] {
  return effects.flatMap((effect): readonly Effect[] => (effect.kind === 'ioBatch' ? effect.ops : [effect]));
}

/** How often the histories exercised what the property is about (checked after the run, so it cannot be vacuous). */
const seen = { batches: 0, pushAnswers: 0, moves: 0, reads: 0, failures: 0 };

function note(completions: readonly IoCompletion[], together: readonly Effect[]): void {
  if (completions.length > 1) seen.batches += 1;
  if (completions.some((completion) => completion.kind === 'ioFailed')) seen.failures += 1;
  for (const effect of unfold(together)) {
    if (effect.kind === 'moveFile') seen.moves += 1;
    if (effect.kind === 'send' && effect.message.type.startsWith('Push') && effect.to === MAPPER)
      seen.pushAnswers += 1;
  }
}

describe('worker: ioBatchDone', () => {
  it('ends in the same state with the same effects as its completions delivered one by one', () => {
    fc.assert(
      fc.property(fc.array(actionArb, { minLength: 5, maxLength: 40, size: 'medium' }), (actions) => {
        const batched = newWorker();
        const single = newWorker();
        const outstanding: Outstanding = { io: [], forwards: [] };
        // Epoch 0 of every partition starts reserved; the history may reserve epoch 1 of some.
        const setup: Action = { kind: 'reserve', epoch: 0, partitions: [0, 1, 2, 3, 4, 5] };
        for (const harness of [batched, single]) {
          harness.completeIo(step(harness, setup, outstanding));
          // Partition 3 starts committed with two chunks, so that reads are part of the histories.
          for (const batchId of [0, 1]) {
            const push = pushData(KEY, 3, 0, 'PRIMARY', { batchId, size: 60 });
            harness.completeIo(harness.receive(MAPPER, push, { requestId: batchId }));
          }
          const commit: Action = { kind: 'commit', partitions: [3] };
          harness.completeIo(step(harness, commit, outstanding));
        }
        for (const action of actions) {
          batched.now += 7;
          single.now += 7;
          if (action.kind !== 'complete') {
            const effects = step(batched, action, outstanding);
            assert.deepEqual(step(single, action, outstanding), effects, action.kind);
            if (action.kind === 'forward' && outstanding.forwards.length > 0)
              outstanding.forwards.splice(action.index % outstanding.forwards.length, 1);
            track(outstanding, effects);
            continue;
          }
          const completions: IoCompletion[] = [];
          for (const pick of action.picks) {
            if (outstanding.io.length === 0) break;
            const [op] = outstanding.io.splice(pick.index % outstanding.io.length, 1);
            if (op!.kind === 'read') seen.reads += 1;
            completions.push(completionOf(op!, pick.error));
          }
          if (completions.length === 0) continue;
          const together = batched.step({ kind: 'ioBatchDone', completions });
          const apart = completions.flatMap((completion) => single.step(completion));
          assert.deepEqual(
            unfold(together).filter((effect) => !isBatchable(effect)),
            unfold(apart).filter((effect) => !isBatchable(effect)),
            'the same other effects, in the same order',
          );
          assert.deepEqual(ioOps(together), ioOps(apart), 'the same I/O operations, in the same order');
          assert.ok(together.filter((effect) => effect.kind === 'ioBatch').length <= 1, 'one batch per step');
          if (together.filter((effect) => isBatchable(effect)).length > 1) {
            // Left unbatched only so that no operation overtakes a deleteFile of its file (io-batch.ts).
            assert.ok(
              together.some((effect) => effect.kind === 'deleteFile'),
              'several I/O operations, no batch',
            );
          }
          assert.deepEqual(plainData(batched.state), plainData(single.state), 'the same state');
          note(completions, together);
          track(outstanding, together);
        }
      }),
      { numRuns: 150 },
    );
    if (process.env.SHOW_SEEN) console.log(seen);
    for (const [what, times] of Object.entries(seen)) assert.ok(times > 0, `the histories never had ${what}`);
  });
});
