import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import type { Effect, FileRef, Input } from '../../core/machines/effects.ts';
import type { Machine } from '../../core/machines/machine.ts';
import type { PushData } from '../../core/protocol/messages.ts';
import type { BackPressureLimits } from '../../core/storage/back-pressure.ts';
import { WorkerBackPressure } from './back-pressure.ts';
import { CALM_NETWORK } from './network.ts';
import { World } from './world.ts';

/** Pushes pause at 100 bytes held, replication at 200, both resume at 50. */
const PORT_LIMITS = { pauseReceiveBytes: 100, pauseReplicateBytes: 200, resumeBytes: 50 };

const file: FileRef = { id: 'app-1-0/0-0-0', tier: 'HDD', mountPoint: '/d1' };
const disks = [{ mountPoint: '/d1', type: 'HDD' as const, capacityBytes: 10_000 }];

function push(batchId: number, mode: PushData['mode'] = 'PRIMARY'): PushData {
  return {
    type: 'PushData',
    mode,
    shuffleKey: 'app-1-0',
    partitionId: 0,
    epoch: 0,
    mapId: 0,
    attemptId: 0,
    batchId,
    payload: new Uint8Array(15),
  };
}

/** A worker that writes each push's 15 bytes to one file and records its inputs. */
const writer: Machine<Input[]> = {
  step(state, input) {
    const effects: Effect[] = [];
    if (input.kind === 'start') effects.push({ kind: 'createFile', op: 0, file });
    if (input.kind === 'receive' && input.envelope.message.type === 'PushData') {
      const { batchId } = input.envelope.message;
      effects.push({ kind: 'write', op: batchId, file, bytes: new Uint8Array(15) });
    }
    return { state: [...state, input], effects };
  },
};

/** A map task that pushes `messages` at once when it starts. */
function pusher(messages: readonly PushData[]): Machine<null> {
  return {
    step(state, input) {
      const effects: Effect[] =
        input.kind === 'start' ? messages.map((message) => ({ kind: 'send', to: 'w', message })) : [];
      return { state, effects };
    },
  };
}

/** Adds the worker `w` (the writer machine on `disks`) with these limits, and the map tasks `maps`, started with it. */
function workerWithMaps(
  world: World,
  limits: {
    readonly backPressure: BackPressureLimits;
    readonly partialFrameLimitBytes?: number;
    readonly stalledMs?: number;
  },
  maps: readonly { readonly id: string; readonly machine: Machine<unknown>; readonly initial?: unknown }[],
): void {
  world.modelTransport({ authenticated: false, routeIdleMs: 60_000 });
  world.addNode({
    id: 'w',
    role: 'worker',
    disks,
    backPressure: limits.backPressure,
    ...(limits.partialFrameLimitBytes === undefined
      ? {}
      : {
          partialFrames: {
            limitBytes: limits.partialFrameLimitBytes,
            ...(limits.stalledMs === undefined ? {} : { stalledMs: limits.stalledMs }),
          },
        }),
    machine: writer,
    initialState: () => [],
  });
  for (const map of maps)
    world.addNode({
      id: map.id,
      role: 'map',
      addressless: true,
      machine: map.machine,
      initialState: () => map.initial ?? [],
    });
  world.start('w');
}

function run(messages: readonly PushData[]): Input[] {
  const world = new World({ seed: 5 });
  // One push's write (15 bytes) pauses pushes; two pause replication too; nothing in flight resumes both.
  workerWithMaps(
    world,
    { backPressure: { pauseReceiveBytes: 10, pauseReplicateBytes: 30, resumeBytes: 0 } },
    [{ id: 'map-app-1-0-0-0', machine: pusher(messages), initial: null }],
  );
  world.schedule(5, 'the map starts', (w) => w.start('map-app-1-0-0-0'));
  world.run({ until: 10_000, maxEvents: 1_000 });
  return world.stateOf('w') as Input[];
}

const kinds = (inputs: readonly Input[]) =>
  inputs.map((input) =>
    input.kind === 'receive' && input.envelope.message.type === 'PushData'
      ? `push ${input.envelope.message.batchId}`
      : input.kind,
  );

describe('back-pressure in simulated workers', () => {
  it('reads no push while its writes hold the pause threshold, and reads the held ones in order once they are written', () => {
    const inputs = run([push(1), push(2), push(3)]);
    assert.deepEqual(kinds(inputs), [
      'start',
      'ioDone',
      'push 1',
      'ioDone',
      'push 2',
      'ioDone',
      'push 3',
      'ioDone',
    ]);
  });

  it('keeps reading replicas below their own, higher threshold', () => {
    const inputs = run([push(1), push(2, 'REPLICA'), push(3)]);
    assert.deepEqual(kinds(inputs).slice(0, 5), ['start', 'ioDone', 'push 1', 'push 2', 'ioDone']);
  });
});

describe('partly received frames in simulated workers', () => {
  const frame = (id: number, link: string, bytes: number) => ({ id, link, bytes, detail: id });

  it('counts one frame per connection, the first in flight, and the next once it arrived', () => {
    const pressure = new WorkerBackPressure<number>(PORT_LIMITS, { limitBytes: 1_000 });
    pressure.frameSent(frame(1, 'a', 30), 'push', 0);
    pressure.frameSent(frame(2, 'a', 40), 'push', 0);
    pressure.frameSent(frame(3, 'b', 20), 'push', 0);
    assert.equal(pressure.partialFrameBytes, 50);
    pressure.frameArrived(1, 'push', 0);
    assert.equal(pressure.partialFrameBytes, 60);
    pressure.frameArrived(2, 'push', 0);
    pressure.frameArrived(3, 'push', 0);
    assert.equal(pressure.partialFrameBytes, 0);
  });

  it('counts partly received bytes up to the resume threshold: alone they never pause, with writes they do', () => {
    const alone = new WorkerBackPressure<number>(PORT_LIMITS, { limitBytes: 1_000 });
    assert.deepEqual(alone.frameSent(frame(1, 'a', 120), 'push', 0).change.pausedByPartialFrames, []);
    assert.equal(
      alone.isPaused('push'),
      false,
      'a frame larger than the pause threshold does not pause on its own',
    );

    const pressure = new WorkerBackPressure<number>(PORT_LIMITS, { limitBytes: 1_000 });
    pressure.change(60);
    const sent = pressure.frameSent(frame(1, 'a', 120), 'push', 0);
    assert.deepEqual(sent.change.pausedByPartialFrames, ['push'], '60 in flight + 50 of the frame');
    assert.equal(pressure.isPaused('push'), true);
    assert.equal(pressure.isPaused('replicate'), false);
    const arrived = pressure.frameArrived(1, 'push', 0);
    assert.notEqual(arrived, 'shed');
    assert.equal(pressure.isPaused('push'), true, 'still above the resume threshold');
    assert.equal(pressure.change(-60), true, 'written: resumed');
  });

  it('holds nothing for a frame that comes under way on a paused port', () => {
    const pressure = new WorkerBackPressure<number>(PORT_LIMITS, { limitBytes: 1_000 });
    pressure.change(150);
    pressure.frameSent(frame(1, 'a', 70), 'push', 0);
    assert.equal(pressure.partialFrameBytes, 0);
    pressure.frameSent(frame(2, 'b', 70), 'replicate', 0);
    assert.equal(pressure.partialFrameBytes, 70, 'replication is read up to its own, higher threshold');
  });

  it('past the limit gives up the connection holding the most, with every frame in flight on it', () => {
    const pressure = new WorkerBackPressure<number>(
      { pauseReceiveBytes: 10_000, pauseReplicateBytes: 10_000, resumeBytes: 5_000 },
      { limitBytes: 100 },
    );
    pressure.frameSent(frame(1, 'small', 30), 'push', 0);
    pressure.frameSent(frame(2, 'large', 60), 'push', 0);
    pressure.frameSent(frame(3, 'large', 5), 'push', 0);
    const sent = pressure.frameSent(frame(4, 'other', 40), 'push', 0);
    assert.deepEqual(
      sent.shed.map((shed) => shed.id),
      [2, 3],
    );
    assert.equal(pressure.partialFrameBytes, 70);
    assert.equal(pressure.frameArrived(2, 'push', 0), 'shed');
    assert.equal(pressure.frameArrived(3, 'push', 0), 'shed');
    assert.notEqual(pressure.frameArrived(1, 'push', 0), 'shed');
    assert.equal(pressure.partialFrameBytes, 40);
  });

  it('above their pause threshold, pauses both ports until the frames under way arrived; new ones hold nothing', () => {
    const pressure = new WorkerBackPressure<number>(
      { ...PORT_LIMITS, partialFramePauseBytes: 60 },
      { limitBytes: 160 },
    );
    assert.deepEqual(pressure.frameSent(frame(1, 'a', 50), 'push', 0).change.pausedByPartialFrames, []);
    const second = pressure.frameSent(frame(2, 'b', 40), 'replicate', 0);
    assert.deepEqual(second.change.pausedByPartialFrames, ['push', 'replicate'], '90 bytes above 60');
    assert.deepEqual(second.shed, [], 'under the limit: nothing given up');
    pressure.frameSent(frame(3, 'c', 100), 'push', 0);
    assert.equal(pressure.partialFrameBytes, 90, 'a frame under way on a paused port holds nothing');
    pressure.frameArrived(1, 'push', 1);
    assert.equal(pressure.isPaused('push'), false, '40 bytes: read again');
    assert.equal(pressure.isPaused('replicate'), false);
  });

  it('gives up only frames under way for the stall time, the largest first, down to the pause threshold', () => {
    const pressure = new WorkerBackPressure<number>(
      { ...PORT_LIMITS, partialFramePauseBytes: 90 },
      { limitBytes: 200, stalledMs: 100 },
    );
    pressure.frameSent(frame(1, 'old-small', 30), 'replicate', 0);
    pressure.frameSent(frame(2, 'old-large', 50), 'replicate', 0);
    pressure.frameSent(frame(3, 'young', 70), 'replicate', 50);
    assert.equal(pressure.isPaused('replicate'), true, '150 bytes above 90');
    assert.equal(pressure.nextStallCheck(100), 100, 'the oldest turns stalled at 100');
    assert.deepEqual(pressure.shedStalled(99, 100).shed, [], 'none stalled yet');
    assert.deepEqual(
      pressure.shedStalled(100, 100).shed.map((shed) => shed.id),
      [2, 1],
      'the old ones, larger first, until 70 remain: the largest, young, is arriving in time',
    );
    assert.equal(pressure.partialFrameBytes, 70);
    assert.equal(pressure.isPaused('replicate'), false, 'at or below the pause threshold: read again');
    assert.equal(pressure.nextStallCheck(100), undefined, 'and no check');
    assert.equal(pressure.frameArrived(2, 'replicate', 150), 'shed');
  });

  it('without a limit for them, counts no partly received frame', () => {
    const pressure = new WorkerBackPressure<number>(PORT_LIMITS);
    assert.equal(pressure.countsPartialFrames, false);
  });
});

/** A map task that pushes `messages` when it starts and records what it hears back. */
function recordingPusher(messages: readonly PushData[]): Machine<Input[]> {
  return {
    step(state, input) {
      const effects: Effect[] =
        input.kind === 'start'
          ? messages.map((message, index) => ({ kind: 'send', to: 'w', message, requestId: index + 1 }))
          : [];
      return { state: [...state, input], effects };
    },
  };
}

function pushOf(batchId: number, bytes: number): PushData {
  return { ...push(batchId), payload: new Uint8Array(bytes) };
}

/** Two maps push at once to a worker whose partly received frames may hold `limitBytes` (none: not modelled). */
function runTwoMaps(
  limitBytes: number | undefined,
  pauseBytes?: number,
): { world: World; worker: Input[]; maps: Input[][] } {
  const world = new World({ seed: 5, trace: true, network: { ...CALM_NETWORK, latencyMs: 5 } });
  const maps = ['map-app-1-0-0-0', 'map-app-1-0-1-0'];
  const sizes = [40, 90];
  workerWithMaps(
    world,
    {
      backPressure: {
        ...PORT_LIMITS,
        ...(pauseBytes === undefined ? {} : { partialFramePauseBytes: pauseBytes }),
      },
      ...(limitBytes === undefined ? {} : { partialFrameLimitBytes: limitBytes }),
    },
    maps.map((id, index) => ({ id, machine: recordingPusher([pushOf(index + 1, sizes[index]!)]) })),
  );
  world.schedule(5, 'the maps start', (w) => maps.forEach((id) => w.start(id)));
  world.run({ until: 10_000, maxEvents: 1_000 });
  return {
    world,
    worker: world.stateOf('w') as Input[],
    maps: maps.map((id) => world.stateOf(id) as Input[]),
  };
}

describe('a simulated worker giving up partly received frames', () => {
  it('closes the connection of the larger frame past its limit: that push is lost and its map hears sendFailed', () => {
    const { world, worker, maps } = runTwoMaps(100);
    assert.deepEqual(kinds(worker), ['start', 'ioDone', 'push 1', 'ioDone']);
    assert.deepEqual(
      maps.map((inputs) => inputs.map((input) => input.kind)),
      [['start'], ['start', 'sendFailed']],
    );
    const failed = maps[1]![1]!;
    assert.ok(
      failed.kind === 'sendFailed' && failed.requestId === 1 && failed.to === 'w',
      "failed.kind === 'sendFailed' && failed.requestId === 1 && failed.to === 'w'",
    );
    assert.equal(world.trace.counters.get('partialFrames.shed'), 1);
    // 130 bytes partly received, counted up to the resume threshold (50): no pause on them alone.
    assert.equal(world.trace.counters.get('backPressure.partialFramesPaused.push'), undefined);
  });

  it('paused one frame under its limit instead, reads both in turn and loses neither (seed 157058)', () => {
    // Frames of 40 and 90 bytes, a limit of 100: the pause threshold a worker derives is 100 - 90 = 10.
    const { world, worker, maps } = runTwoMaps(100, 10);
    assert.deepEqual(
      kinds(worker)
        .filter((kind) => kind.startsWith('push'))
        .sort(),
      ['push 1', 'push 2'],
    );
    assert.deepEqual(
      maps.map((inputs) => inputs.map((input) => input.kind)),
      [['start'], ['start']],
      'no map hears sendFailed',
    );
    assert.equal(world.trace.counters.get('partialFrames.shed'), undefined);
    assert.ok(
      (world.trace.counters.get('backPressure.partialFramesPaused.push') ?? 0) > 0,
      'the first frame under way paused the port',
    );
  });

  it('takes both while they fit, and without the model counts nothing', () => {
    for (const limitBytes of [130, undefined]) {
      const { world, worker, maps } = runTwoMaps(limitBytes);
      assert.equal(kinds(worker).filter((kind) => kind.startsWith('push')).length, 2);
      assert.deepEqual(
        maps.map((inputs) => inputs.map((input) => input.kind)),
        [['start'], ['start']],
      );
      assert.equal(world.trace.counters.get('partialFrames.shed'), undefined);
      assert.equal(world.trace.counters.get('backPressure.partialFramesPaused.push'), undefined);
    }
  });
});

describe("a hostile peer's stalled frames in a simulated worker", () => {
  /** A worker pausing pushes at 100 bytes, resuming at 50, holding at most 150 of partly received frames. */
  function stalledWorld(): World {
    const world = new World({ seed: 5, trace: true });
    workerWithMaps(
      world,
      {
        backPressure: PORT_LIMITS,
        partialFrameLimitBytes: 150,
      },
      [{ id: 'map-app-1-0-0-0', machine: recordingPusher([pushOf(1, 40)]) }],
    );
    return world;
  }

  it('does not pause on a stalled frame alone, however large: the push is read at once', () => {
    const world = stalledWorld();
    world.schedule(1, 'a peer stalls', (w) =>
      assert.ok(
        w.stallFrame('w', 'push', 'peer', 120, 1_000),
        "w.stallFrame('w', 'push', 'peer', 120, 1_000)",
      ),
    );
    world.schedule(5, 'the map starts', (w) => w.start('map-app-1-0-0-0'));
    const seen: number[] = [];
    world.observe({
      inputs: ['PushData'],
      onInput: (_node, _input, w) => seen.push(w.now),
    });
    world.run({ until: 10_000, maxEvents: 1_000 });
    assert.equal(seen.length, 1);
    assert.ok(seen[0]! < 1_000, `the push was read at ${seen[0]} ms, before the stalled frame's deadline`);
    assert.equal(world.trace.counters.get('partialFrames.stalled'), 1);
    assert.equal(world.trace.counters.get('backPressure.partialFramesPaused.push'), undefined);
  });

  it('paused by a stalled frame above the pause threshold, gives it up once stalled and reads the push', () => {
    const world = new World({ seed: 5, trace: true });
    workerWithMaps(
      world,
      {
        backPressure: { ...PORT_LIMITS, partialFramePauseBytes: 30 },
        partialFrameLimitBytes: 150,
        stalledMs: 200,
      },
      [{ id: 'map-app-1-0-0-0', machine: recordingPusher([pushOf(1, 40)]) }],
    );
    world.schedule(1, 'a peer stalls', (w) => w.stallFrame('w', 'push', 'peer', 120, 1_000));
    world.schedule(5, 'the map starts', (w) => w.start('map-app-1-0-0-0'));
    const seen: number[] = [];
    world.observe({ inputs: ['PushData'], onInput: (_node, _input, w) => seen.push(w.now) });
    world.run({ until: 10_000, maxEvents: 1_000 });
    assert.equal(world.trace.counters.get('partialFrames.shedStalled'), 1);
    assert.match(world.trace.text(), /closed peer push's stalled frame of 120 bytes/);
    assert.equal(seen.length, 1);
    assert.ok(
      seen[0]! >= 201 && seen[0]! < 1_000,
      `the push was read at ${seen[0]} ms: once the frame stalled (201 ms), before its deadline`,
    );
  });

  it('gives up the largest stalled frame past the limit, and keeps the rest until their deadline', () => {
    const world = stalledWorld();
    world.schedule(1, 'a peer stalls twice', (w) => {
      w.stallFrame('w', 'replicate', 'peer-a', 70, 1_000);
      w.stallFrame('w', 'replicate', 'peer-b', 90, 1_000);
    });
    world.run({ until: 10_000, maxEvents: 1_000 });
    assert.equal(world.trace.counters.get('partialFrames.stalled'), 2);
    assert.equal(world.trace.counters.get('partialFrames.shedStalled'), 1);
    assert.match(world.trace.text(), /closed peer-b replicate's stalled frame of 90 bytes/);
  });
});
