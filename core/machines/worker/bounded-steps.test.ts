import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import fc from 'fast-check';
import type { Effect } from '../effects.ts';
import { masterNodeId } from '../../protocol/node-ids.ts';
import type { WorkerMachineState } from './index.ts';
import { COMMIT_STEP_TIMER, DELETE_STEP_TIMER } from './commit.ts';
import { RESERVE_STEP_TIMER } from './reserve.ts';
import type { Harness } from './test-kit.ts';
import {
  CLIENT,
  commitFiles,
  ioOps,
  KEY,
  location,
  ofKind,
  onlySent,
  registeredWorker,
  SELF,
  sentOf,
} from './test-kit.ts';

function reserveSlots(partitions: number) {
  return {
    type: 'ReserveSlots' as const,
    appId: 'app',
    shuffleId: 1,
    primaries: Array.from({ length: partitions }, (_, id) => location(id, 0, 'PRIMARY', SELF)),
    replicas: [],
    splitThreshold: 1024 ** 3,
    splitMode: 'SOFT' as const,
    memoryEnabled: false,
  };
}

function stepTimers(effects: readonly Effect[]): string[] {
  return ofKind(effects, 'setTimer')
    .map((timer) => timer.name)
    .filter(
      (name) =>
        name.startsWith(RESERVE_STEP_TIMER) ||
        name.startsWith(COMMIT_STEP_TIMER) ||
        name === DELETE_STEP_TIMER,
    );
}

/** Completes every I/O and fires every step timer the effects ask for, until none is left; returns all effects. */
function runToQuiet(harness: Harness<WorkerMachineState>, first: readonly Effect[]): Effect[] {
  const all = [...first];
  let pending = [...first];
  while (pending.length > 0) {
    const done = harness.completeIo(pending);
    const timers = stepTimers([...pending, ...done]);
    all.push(...done);
    pending = [];
    for (const name of timers) pending.push(...harness.timer(name));
    all.push(...pending);
  }
  return all;
}

const IDS = (n: number) => Array.from({ length: n }, (_, id) => `${id}-0`);

describe('worker: a reserve or commit of many files in bounded steps', () => {
  it('creates at most filesPerStep files a step and answers once every file exists', () => {
    const harness = registeredWorker(SELF, { filesPerStep: 3 });
    const first = harness.receive(CLIENT, reserveSlots(7), { requestId: 9 });
    assert.equal(ofKind(ioOps(first), 'createFile').length, 3);
    assert.equal(stepTimers(first).length, 1, 'the rest go on in a later step');
    assert.equal(ofKind(first, 'setTimer')[0]!.at, harness.now, 'at once: only other inputs come between');
    assert.equal(sentOf(harness.completeIo(first), 'StatusResponse').length, 0, 'no answer before all exist');

    const second = harness.timer(stepTimers(first)[0]!);
    assert.equal(ofKind(ioOps(second), 'createFile').length, 3);
    const rest = runToQuiet(harness, second);
    assert.equal(ofKind(ioOps(rest), 'createFile').length, 4, 'each location created once');
    const answer = onlySent(rest, 'StatusResponse');
    assert.equal(answer.message.status, 'SUCCESS');
    assert.equal(answer.inReplyTo, 9);
    assert.equal(harness.state.shuffles.get(KEY)?.files.size, 7);
    assert.equal(harness.state.reserves.size, 0);
  });

  it('flushes at most filesPerStep files a step and answers with every committed file', () => {
    const harness = registeredWorker(SELF, { filesPerStep: 4 });
    runToQuiet(harness, harness.receive(CLIENT, reserveSlots(10), { requestId: 1 }));
    const first = harness.receive(CLIENT, commitFiles(IDS(10), [0]), { requestId: 2 });
    assert.equal(ofKind(ioOps(first), 'flush').length, 4);
    assert.equal(stepTimers(first).length, 1);
    const all = runToQuiet(harness, first);
    assert.equal(ofKind(ioOps(all), 'flush').length, 10);
    const answer = onlySent(all, 'CommitFilesResponse');
    assert.equal(answer.message.status, 'SUCCESS');
    assert.equal(answer.message.committedPrimaries.length, 10);
    assert.equal(harness.state.commits.size, 0);
  });

  it('answers as one step would, whatever the step size', () => {
    fc.assert(
      fc.property(fc.integer({ min: 1, max: 12 }), fc.integer({ min: 0, max: 12 }), (perStep, partitions) => {
        const answers = [perStep, 1_000].map((filesPerStep) => {
          const harness = registeredWorker(SELF, { filesPerStep });
          const reserve = runToQuiet(
            harness,
            harness.receive(CLIENT, reserveSlots(partitions), { requestId: 1 }),
          );
          // Listed twice and with an unknown id: each file is flushed once, the unknown one fails.
          const ids = [...IDS(partitions), '99-0', ...IDS(partitions)];
          const commit = runToQuiet(
            harness,
            harness.receive(CLIENT, commitFiles(ids, [0]), { requestId: 2 }),
          );
          return {
            reserve: onlySent(reserve, 'StatusResponse').message.status,
            commit: onlySent(commit, 'CommitFilesResponse').message,
            flushes: ofKind(ioOps(commit), 'flush').length,
            files: [...(harness.state.shuffles.get(KEY)?.files.values() ?? [])].map((f) => f.status),
          };
        });
        assert.deepEqual(answers[0], answers[1]);
      }),
      { numRuns: 60 },
    );
  });
});

/** The master's heartbeat answer saying the shuffle expired, to the worker's next heartbeat. */
function expire(harness: Harness<WorkerMachineState>): Effect[] {
  const heartbeat = onlySent(harness.timer('heartbeat', harness.now + 30_000), 'WorkerHeartbeat');
  return harness.receive(
    masterNodeId(),
    { type: 'WorkerHeartbeatResponse', registered: true, expiredShuffleKeys: [KEY], workerEvent: 'None' },
    { inReplyTo: heartbeat.requestId! },
  );
}

const deletedFiles = (effects: readonly Effect[]) =>
  ofKind(effects, 'deleteFile')
    .map((effect) => JSON.stringify(effect.file))
    .sort();

describe('worker: a dropped shuffle of many files deleted in bounded steps', () => {
  it('forgets the shuffle at once and deletes at most filesPerStep of its files a step', () => {
    const harness = registeredWorker(SELF, { filesPerStep: 4 });
    runToQuiet(harness, harness.receive(CLIENT, reserveSlots(10), { requestId: 1 }));
    const answer = expire(harness);
    assert.equal(harness.state.shuffles.size, 0, 'pushes and reads find no file from now on');
    assert.equal(ofKind(answer, 'deleteFile').length, 0, 'the deletes go in later steps');
    assert.deepEqual(stepTimers(answer), [DELETE_STEP_TIMER]);
    const perStep: number[] = [];
    let effects = answer;
    while (stepTimers(effects).includes(DELETE_STEP_TIMER)) {
      effects = harness.timer(DELETE_STEP_TIMER);
      perStep.push(ofKind(effects, 'deleteFile').length);
    }
    assert.deepEqual(perStep, [4, 4, 2]);
    assert.equal(harness.state.pendingDeletes.length, 0);
  });

  it('deletes every file of the shuffle once, whatever the step size', () => {
    fc.assert(
      fc.property(fc.integer({ min: 1, max: 12 }), fc.integer({ min: 0, max: 12 }), (perStep, partitions) => {
        const deletes = [perStep, 1_000].map((filesPerStep) => {
          const harness = registeredWorker(SELF, { filesPerStep });
          runToQuiet(harness, harness.receive(CLIENT, reserveSlots(partitions), { requestId: 1 }));
          return deletedFiles(runToQuiet(harness, expire(harness)));
        });
        assert.deepEqual(deletes[0], deletes[1]);
        assert.equal(new Set(deletes[0]).size, partitions, 'each file once');
      }),
      { numRuns: 60 },
    );
  });

  it('deletes what a drop left queued before the worker exits', () => {
    const harness = registeredWorker(SELF, { filesPerStep: 2 });
    runToQuiet(harness, harness.receive(CLIENT, reserveSlots(7), { requestId: 1 }));
    expire(harness);
    const first = harness.timer(DELETE_STEP_TIMER);
    assert.equal(ofKind(first, 'deleteFile').length, 2);
    const exit = harness.step({ kind: 'admin', command: { type: 'exit', exitType: 'IMMEDIATELY' } });
    assert.equal(ofKind(exit, 'deleteFile').length, 5, 'the rest, before the exit report');
    assert.equal(harness.state.pendingDeletes.length, 0);
  });
});
