import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import type { CongestionConfig } from '../../storage/index.ts';
import type { Effect } from '../effects.ts';
import { CONGESTION_CHECK_TIMER } from './congestion.ts';
import { HEARTBEAT_TIMER } from './membership.ts';
import type { WorkerMachineState } from './state.ts';
import {
  CLIENT,
  KEY,
  location,
  MAPPER,
  metricNames,
  ofKind,
  onlySent,
  pushData,
  registeredWorker,
  SELF,
  type Harness,
} from './test-kit.ts';

const UNLIMITED = { low: Infinity, high: Infinity };

function congestion(overrides: Partial<CongestionConfig>): CongestionConfig {
  return {
    diskBuffer: UNLIMITED,
    userProduceSpeed: UNLIMITED,
    workerProduceSpeed: UNLIMITED,
    sampleWindowMs: 1_000,
    checkIntervalMs: 10,
    ...overrides,
  };
}

/** A registered worker holding partition 0 of the test shuffle (application `app`), its file created. */
function reservedWorker(config: CongestionConfig | undefined): Harness<WorkerMachineState> {
  const harness = registeredWorker(SELF, config === undefined ? {} : { congestion: config });
  const effects = harness.receive(
    CLIENT,
    {
      type: 'ReserveSlots',
      appId: 'app',
      shuffleId: 1,
      primaries: [location(0, 0, 'PRIMARY', SELF)],
      replicas: [],
      splitThreshold: 1024 ** 3,
      splitMode: 'SOFT',
      memoryEnabled: false,
    },
    { requestId: 77 },
  );
  harness.completeIo(effects);
  return harness;
}

let nextRequest = 100;
/** Pushes one batch; returns the step's effects, its I/O left for the caller to complete. */
function push(harness: Harness<WorkerMachineState>, batchId: number, size: number): Effect[] {
  return harness.receive(MAPPER, pushData(KEY, 0, 0, 'PRIMARY', { batchId, size }), {
    requestId: nextRequest++,
  });
}

function statusOf(effects: readonly Effect[]): string {
  return onlySent(effects, 'PushDataResponse').message.status;
}

function logs(effects: readonly Effect[], event: string) {
  return ofKind(effects, 'log').filter((line) => line.event === event);
}

function heartbeatHighWorkload(harness: Harness<WorkerMachineState>): boolean {
  return onlySent(harness.timer(HEARTBEAT_TIMER), 'WorkerHeartbeat').message.highWorkload;
}

describe('worker: congestion control', () => {
  it('answers a user over the user watermark CONGESTED (data written), one line at the start and the end', () => {
    const harness = reservedWorker(congestion({ userProduceSpeed: { low: 100, high: 1_000 } }));
    const first = push(harness, 0, 2_000);
    assert.ok(
      ofKind(first, 'setTimer').some((t) => t.name === CONGESTION_CHECK_TIMER),
      'data flowing arms the check',
    );
    assert.equal(statusOf(harness.completeIo(first)), 'SUCCESS', 'nothing was measured yet');

    const check = harness.timer(CONGESTION_CHECK_TIMER, 10);
    const [started] = logs(check, 'worker.congestion.started');
    assert.match(
      String(started?.fields?.cause),
      /user app produce speed 2\d{3} B\/s > high watermark 1000 B\/s/,
    );
    assert.equal(started?.fields?.congestedUsers, 'app');
    assert.ok(metricNames(check).includes('CongestionEpisodeCount'), 'the episode is counted');

    const second = harness.completeIo(push(harness, 1, 16));
    assert.equal(statusOf(second), 'PUSH_DATA_SUCCESS_PRIMARY_CONGESTED');
    assert.ok(metricNames(second).includes('PushDataCongestedCount'), 'the congested reply is counted');
    assert.ok(metricNames(second).includes('WriteDataSuccessCount'), 'a congested batch is written');
    assert.equal(heartbeatHighWorkload(harness), false, 'one fast user is not a loaded worker');

    // Quiet checks in between say nothing; the window passes and the episode ends with its summary.
    assert.deepEqual(logs(harness.timer(CONGESTION_CHECK_TIMER, 20), 'worker.congestion.started'), []);
    const end = harness.timer(CONGESTION_CHECK_TIMER, 1_500);
    const [ended] = logs(end, 'worker.congestion.ended');
    assert.equal(ended?.fields?.congestedReplies, 1);
    assert.equal(ended?.fields?.users, 'app');
    assert.equal(
      statusOf(harness.completeIo(push(harness, 2, 16))),
      'SUCCESS',
      'resumed below the low watermark',
    );
  });

  it('counts bytes not yet written as the disk buffer: past its high watermark the worker reports high workload', () => {
    const harness = reservedWorker(congestion({ diskBuffer: { low: 1_000, high: 4_000 } }));
    const pending = [push(harness, 0, 3_000), push(harness, 1, 3_000)];
    const check = harness.timer(CONGESTION_CHECK_TIMER, 10);
    assert.match(String(logs(check, 'worker.congestion.started')[0]?.fields?.cause), /disk buffer 6\d{3} B/);
    assert.equal(heartbeatHighWorkload(harness), true);
    const answers = pending.flatMap((effects) => harness.completeIo(effects));
    assert.deepEqual(
      ofKind(answers, 'send').map((s) =>
        s.message.type === 'PushDataResponse' ? s.message.status : s.message.type,
      ),
      ['PUSH_DATA_SUCCESS_PRIMARY_CONGESTED', 'PUSH_DATA_SUCCESS_PRIMARY_CONGESTED'],
    );
    const end = harness.timer(CONGESTION_CHECK_TIMER, 20);
    assert.equal(logs(end, 'worker.congestion.ended')[0]?.fields?.congestedReplies, 2);
    assert.equal(heartbeatHighWorkload(harness), false);
  });

  it('takes new watermarks from its driver (the dynamic configuration) and checks against them at once', () => {
    const harness = reservedWorker(congestion({}));
    harness.completeIo(push(harness, 0, 2_000));
    harness.timer(CONGESTION_CHECK_TIMER, 10);
    assert.equal(statusOf(harness.completeIo(push(harness, 1, 16))), 'SUCCESS', 'unlimited: not congested');

    const lowered = harness.step({
      kind: 'admin',
      command: {
        type: 'congestionWatermarks',
        watermarks: { ...congestion({}), userProduceSpeed: { low: 100, high: 1_000 } },
      },
      commandId: 5,
    });
    assert.deepEqual(
      ofKind(lowered, 'adminReply').map((r) => [r.commandId, r.success]),
      [[5, true]],
    );
    assert.equal(
      logs(lowered, 'worker.congestion.watermarks')[0]?.fields?.userProduceSpeed,
      'low 100, high 1000',
    );
    assert.deepEqual(harness.state.config.congestion?.userProduceSpeed, { low: 100, high: 1_000 });
    assert.equal(harness.state.config.congestion?.checkIntervalMs, 10, 'the check interval stays');
    const check = harness.timer(CONGESTION_CHECK_TIMER, 20);
    assert.match(
      String(logs(check, 'worker.congestion.started')[0]?.fields?.cause),
      /high watermark 1000 B\/s/,
    );
    assert.equal(statusOf(harness.completeIo(push(harness, 2, 16))), 'PUSH_DATA_SUCCESS_PRIMARY_CONGESTED');
  });

  it('with congestion control off refuses new watermarks, saying they change nothing', () => {
    const harness = reservedWorker(undefined);
    const reply = harness.step({
      kind: 'admin',
      command: { type: 'congestionWatermarks', watermarks: congestion({}) },
      commandId: 6,
    });
    const [answer] = ofKind(reply, 'adminReply');
    assert.equal(answer?.success, false);
    assert.match(String(answer?.message), /congestion control is off/);
    assert.equal(harness.state.config.congestion, undefined);
  });

  it('with congestion control off never measures, never answers CONGESTED', () => {
    const harness = reservedWorker(undefined);
    const first = push(harness, 0, 1_000_000);
    assert.ok(!ofKind(first, 'setTimer').some((t) => t.name === CONGESTION_CHECK_TIMER), 'no check is armed');
    assert.equal(statusOf(harness.completeIo(first)), 'SUCCESS');
    assert.equal(harness.state.congestion.produced.size, 0);
  });
});
