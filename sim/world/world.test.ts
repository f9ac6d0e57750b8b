import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import fc from 'fast-check';
import type { Effect, FileRef, Input } from '../../core/machines/effects.ts';
import type { Machine } from '../../core/machines/machine.ts';
import type { StatusResponse } from '../../core/protocol/messages.ts';
import { World } from './world.ts';

// Toy machines: just enough behaviour to exercise every effect the world executes.

/** A numbered message: any real message type will do, the world never looks inside. */
function numbered(n: number): StatusResponse {
  return { type: 'StatusResponse', status: 'SUCCESS', message: String(n) };
}

function numberOf(message: unknown): number {
  return Number((message as StatusResponse).message);
}

/** Sends `count` numbered messages to `peer` on start and records what it receives. */
function chatter(peer: string, count: number): Machine<{ received: number[]; failed: number[] }> {
  return {
    step(state, input) {
      if (input.kind === 'start') {
        const effects: Effect[] = [];
        for (let n = 0; n < count; n += 1) effects.push({ kind: 'send', to: peer, message: numbered(n) });
        return { state, effects };
      }
      if (input.kind === 'receive') {
        return {
          state: { ...state, received: [...state.received, numberOf(input.envelope.message)] },
          effects: [],
        };
      }
      if (input.kind === 'sendFailed') {
        return { state: { ...state, failed: [...state.failed, numberOf(input.message)] }, effects: [] };
      }
      return { state, effects: [] };
    },
  };
}

const emptyInbox = () => ({ received: [] as number[], failed: [] as number[] });

/** Records every input it sees; effects to run are scripted per input index. */
function scripted(script: (input: Input, index: number) => Effect[]): Machine<Input[]> {
  return {
    step(state, input) {
      return { state: [...state, input], effects: script(input, state.length) };
    },
  };
}

const file: FileRef = { id: 'app-1-0/0-0-0', tier: 'HDD', mountPoint: '/d1' };
const disks = [{ mountPoint: '/d1', type: 'HDD' as const, capacityBytes: 1000 }];

describe('World', () => {
  it('delivers messages in order on a FIFO link, whatever the jitter', () => {
    fc.assert(
      fc.property(
        fc.integer({ min: 0, max: 1e6 }),
        fc.double({ min: 0, max: 50, noNaN: true }),
        (seed, jitterMs) => {
          const world = new World({
            seed,
            network: { latencyMs: 1, jitterMs, drop: 0, duplicate: 0, reorder: 0 },
          });
          world.addNode({ id: 'a', role: 'toy', machine: chatter('b', 20), initialState: emptyInbox });
          world.addNode({ id: 'b', role: 'toy', machine: chatter('a', 0), initialState: emptyInbox });
          world.start('b');
          world.start('a');
          assert.equal(world.run({ until: 1e6, maxEvents: 1e5 }), 'idle');
          const received = (world.stateOf('b') as { received: number[] }).received;
          assert.deepEqual(received, [...Array(20).keys()]);
        },
      ),
      { numRuns: 100 },
    );
  });

  it('loses, duplicates and reorders messages only as the rates say, and replays them exactly from the seed', () => {
    const run = (seed: number) => {
      const world = new World({
        seed,
        trace: true,
        network: { latencyMs: 1, jitterMs: 5, drop: 0.2, duplicate: 0.2, reorder: 0.5 },
      });
      world.addNode({ id: 'a', role: 'toy', machine: chatter('b', 50), initialState: emptyInbox });
      world.addNode({ id: 'b', role: 'toy', machine: chatter('a', 0), initialState: emptyInbox });
      world.start('b');
      world.start('a');
      world.run({ until: 1e6, maxEvents: 1e5 });
      return { trace: world.trace.text(), received: (world.stateOf('b') as { received: number[] }).received };
    };
    const first = run(7);
    assert.equal(run(7).trace, first.trace, 'same seed, same trace');
    assert.notEqual(run(8).trace, first.trace, 'another seed, another run');
    const distinct = new Set(first.received);
    assert.ok(distinct.size < 50, 'some messages were lost');
    assert.ok(first.received.length > distinct.size, 'some messages were duplicated');
    assert.notDeepEqual(
      first.received,
      [...first.received].sort((x, y) => x - y),
      'some were reordered',
    );
  });

  it('answers a send to a node that is down with sendFailed after a round trip, and loses sends across a partition silently', () => {
    const world = new World({ seed: 1 });
    world.addNode({ id: 'a', role: 'toy', machine: chatter('b', 3), initialState: emptyInbox });
    world.addNode({ id: 'b', role: 'toy', machine: chatter('a', 0), initialState: emptyInbox });
    world.start('a');
    world.run({ until: 100, maxEvents: 100 });
    assert.deepEqual((world.stateOf('a') as { failed: number[] }).failed, [0, 1, 2]);

    const second = new World({ seed: 1 });
    second.addNode({ id: 'a', role: 'toy', machine: chatter('b', 3), initialState: emptyInbox });
    second.addNode({ id: 'b', role: 'toy', machine: chatter('a', 0), initialState: emptyInbox });
    second.network.partition(['a'], 'rest');
    second.start('b');
    second.start('a');
    second.run({ until: 100, maxEvents: 100 });
    assert.deepEqual(second.stateOf('a'), emptyInbox());
    assert.deepEqual((second.stateOf('b') as { received: number[] }).received, []);
  });

  it('fails the requests a process took and had not answered at its sender when it crashes, as a closed connection does', () => {
    // 'a' asks 'b' three times (requests 1-3); 'b' answers the first only, then crashes.
    const asker = scripted((input) =>
      input.kind === 'start'
        ? [1, 2, 3].map((n): Effect => ({ kind: 'send', to: 'b', message: numbered(n), requestId: n }))
        : [],
    );
    const answerer = scripted((input) =>
      input.kind === 'receive' && input.envelope.requestId === 1
        ? [{ kind: 'send', to: 'a', message: numbered(1), inReplyTo: 1 }]
        : [],
    );
    const world = new World({ seed: 1 });
    world.addNode({ id: 'a', role: 'toy', machine: asker, initialState: () => [] as Input[] });
    world.addNode({ id: 'b', role: 'toy', machine: answerer, initialState: () => [] as Input[] });
    world.start('b');
    world.start('a');
    world.run({ until: 50, maxEvents: 100 });
    world.crash('b');
    world.run({ until: 100, maxEvents: 100 });
    const failed = (world.stateOf('a') as Input[]).flatMap((input) =>
      input.kind === 'sendFailed' ? [input.requestId] : [],
    );
    assert.deepEqual(failed.sort(), [2, 3], 'the unanswered requests fail; the answered one does not');

    // The record is the interpreter's (core/interpreter/unanswered-requests.ts): its planted bug reaches the world.
    const buggy = new World({ seed: 1, plantedBug: 'unanswered-not-failed' });
    buggy.addNode({ id: 'a', role: 'toy', machine: asker, initialState: () => [] as Input[] });
    buggy.addNode({ id: 'b', role: 'toy', machine: answerer, initialState: () => [] as Input[] });
    buggy.start('b');
    buggy.start('a');
    buggy.run({ until: 50, maxEvents: 100 });
    buggy.crash('b');
    buggy.run({ until: 100, maxEvents: 100 });
    assert.ok(
      (buggy.stateOf('a') as Input[]).every((input) => input.kind !== 'sendFailed'),
      "(buggy.stateOf('a') as Input[]).every((input) => input.kind !== 'sendFailed')",
    );
  });

  it('fires the latest setting of a timer once, never a cancelled one, never one set before a crash', () => {
    const world = new World({ seed: 1, trace: true });
    world.addNode({
      id: 'n',
      role: 'toy',
      initialState: () => [] as Input[],
      machine: scripted((input) =>
        input.kind === 'start' && input.recovered.size === 0
          ? [
              { kind: 'persist', store: 'recovery', key: 'started', value: 'yes' },
              { kind: 'setTimer', name: 'a', at: 10 },
              { kind: 'setTimer', name: 'a', at: 20 },
              { kind: 'setTimer', name: 'b', at: 5 },
              { kind: 'cancelTimer', name: 'b' },
              { kind: 'setTimer', name: 'c', at: 50 },
            ]
          : [],
      ),
    });
    world.start('n');
    world.schedule(30, 'crash n', (w) => w.crash('n'));
    world.schedule(31, 'restart n', (w) => w.start('n'));
    world.run({ until: 1000, maxEvents: 100 });
    assert.match(world.trace.text(), /0\.020s n +timer a/);
    assert.doesNotMatch(world.trace.text(), /timer b/);
    assert.doesNotMatch(world.trace.text(), /timer c/, 'c died with the process it was set by');
    assert.equal(world.trace.text().match(/timer a/g)?.length, 1);
    // After the restart the state is fresh: only the second start is left.
    assert.deepEqual(world.stateOf('n'), [{ kind: 'start', recovered: new Map([['started', 'yes']]) }]);
  });

  it('keeps only synced bytes across a crash, and the recovery store always', () => {
    const bytes = (n: number) => new Uint8Array(n).fill(7);
    const world = new World({ seed: 3 });
    world.addNode({
      id: 'w',
      role: 'worker',
      disks,
      initialState: () => [] as Input[],
      machine: scripted((input, index) => {
        if (input.kind === 'start' && input.recovered.size === 0 && index === 0) {
          return [
            { kind: 'createFile', op: 1, file },
            { kind: 'write', op: 2, file, bytes: bytes(100) },
            { kind: 'flush', op: 3, file },
            { kind: 'write', op: 4, file, bytes: bytes(50) },
            { kind: 'persist', store: 'recovery', key: 'k', value: 'v' },
          ];
        }
        if (input.kind === 'start' && input.recovered.size > 0) {
          return [{ kind: 'read', op: 9, file, offset: 0, length: 1000 }];
        }
        return [];
      }),
    });
    world.start('w');
    world.schedule(500, 'crash w', (w) => w.crash('w'));
    world.schedule(600, 'restart w', (w) => w.start('w'));
    world.run({ until: 1000, maxEvents: 100 });
    const inputs = world.stateOf('w') as Input[];
    // The restarted worker's start also lists the files on its disks (the driver's I/O, in both worlds).
    assert.deepEqual(inputs[0], { kind: 'start', recovered: new Map([['k', 'v']]), leftovers: [file] });
    const read = inputs[1];
    assert.ok(read?.kind === 'ioDone' && read.op === 9, "read?.kind === 'ioDone' && read.op === 9");
    assert.equal(read.bytes?.length, 100);
    assert.equal(world.storageOf('w')?.usedBytes('/d1'), 100);
  });

  it('keeps unsynced disk bytes but not memory files when a process exits on its own', () => {
    const memoryFile: FileRef = { id: 'm', tier: 'MEMORY', mountPoint: '' };
    const world = new World({ seed: 3 });
    world.addNode({
      id: 'w',
      role: 'worker',
      disks,
      initialState: () => [] as Input[],
      machine: scripted((input, index) =>
        input.kind === 'start' && index === 0
          ? [
              { kind: 'createFile', op: 1, file },
              { kind: 'write', op: 2, file, bytes: new Uint8Array(40) },
              { kind: 'createFile', op: 3, file: memoryFile },
              { kind: 'exit', code: 0, reason: 'done' },
              { kind: 'setTimer', name: 'never', at: 1 },
            ]
          : [],
      ),
    });
    world.start('w');
    world.run({ until: 1000, maxEvents: 100 });
    assert.equal(world.isUp('w'), false);
    assert.equal(world.storageOf('w')?.fileLength(file), 40);
    assert.equal(world.storageOf('w')?.fileLength(memoryFile), undefined);
  });

  it('runs an ioBatch as its operations one by one and reports them together when the slowest completed', () => {
    const other: FileRef = { id: 'app-1-0/1-0-0', tier: 'HDD', mountPoint: '/d1' };
    const world = new World({ seed: 3, trace: true });
    world.addNode({
      id: 'w',
      role: 'worker',
      disks,
      initialState: () => [] as Input[],
      machine: scripted((input) =>
        input.kind === 'start'
          ? [
              { kind: 'createFile', op: 1, file },
              {
                kind: 'ioBatch',
                ops: [
                  { kind: 'write', op: 2, file, bytes: new Uint8Array(10) },
                  { kind: 'write', op: 3, file: other, bytes: new Uint8Array(5) },
                  { kind: 'flush', op: 4, file },
                ],
              },
            ]
          : [],
      ),
    });
    world.start('w');
    world.run({ until: 1000, maxEvents: 100 });
    const inputs = world.stateOf('w') as Input[];
    assert.deepEqual(
      inputs.map((i) => i.kind),
      ['start', 'ioDone', 'ioBatchDone'],
      'one input for the create, one for the whole batch',
    );
    const batch = inputs[2];
    assert.ok(batch?.kind === 'ioBatchDone', "batch?.kind === 'ioBatchDone'");
    assert.deepEqual(
      batch.completions.map((c) => (c.kind === 'ioFailed' ? `${c.op}:${c.error}` : `${c.op}`)),
      ['2', '3:NOT_FOUND', '4'],
      'each operation completes as it would alone, in the batch order: the never-created file is not found',
    );
    assert.equal(world.storageOf('w')?.fileLength(file), 10);
    assert.match(world.trace.text(), /write op=2 .*\n.*write op=3 .*\n.*flush op=4/);
  });

  it('drops completions and messages meant for an earlier incarnation of a node', () => {
    const world = new World({ seed: 5 });
    world.addNode({
      id: 'w',
      role: 'worker',
      disks,
      initialState: () => [] as Input[],
      machine: scripted((input) => (input.kind === 'start' ? [{ kind: 'createFile', op: 1, file }] : [])),
    });
    world.addNode({ id: 'a', role: 'toy', machine: chatter('w', 1), initialState: emptyInbox });
    world.start('w');
    world.start('a');
    // Crash before the HDD completes the create and before the message arrives, then restart at once.
    world.schedule(0.1, 'crash w', (w) => w.crash('w'));
    world.schedule(0.2, 'restart w', (w) => w.start('w'));
    world.run({ until: 1000, maxEvents: 100 });
    const inputs = world.stateOf('w') as Input[];
    assert.deepEqual(
      inputs.map((i) => i.kind),
      ['start', 'ioFailed'],
      'the new process sees its own create fail (the file survived the crash); nothing from before',
    );
  });

  it('turns a scheduled action of the simulator that throws into a violation that names it and ends the run', () => {
    const world = new World({ seed: 1 });
    world.schedule(5, 'engine: a buggy model', () => {
      throw new Error('model bug');
    });
    world.schedule(6, 'never reached', () => assert.fail('the run should have ended'));
    assert.equal(world.run({ until: 10, maxEvents: 10 }), 'failed');
    assert.equal(world.violation?.invariant, 'simulator-threw');
    assert.match(world.violation?.detail ?? '', /engine: a buggy model: Error: model bug/);
  });

  it('turns a machine that throws into a violation that names the node and ends the run', () => {
    const world = new World({ seed: 1 });
    world.addNode({
      id: 'bad',
      role: 'toy',
      initialState: () => null,
      machine: {
        step() {
          throw new Error('boom');
        },
      },
    });
    world.start('bad');
    assert.equal(world.run({ until: 10, maxEvents: 10 }), 'failed');
    assert.equal(world.violation?.invariant, 'machine-threw');
    assert.equal(world.violation?.node, 'bad');
    assert.match(world.violation?.detail ?? '', /boom/);
  });
});
