import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import type { Effect, FileRef, Input } from '../../core/machines/effects.ts';
import type { Machine } from '../../core/machines/machine.ts';
import type { PushData } from '../../core/protocol/messages.ts';
import { World } from './world.ts';

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

function run(messages: readonly PushData[]): Input[] {
  const world = new World({ seed: 5 });
  world.modelTransport({ authenticated: false, routeIdleMs: 60_000 });
  world.addNode({
    id: 'w',
    role: 'worker',
    disks,
    // One push's write (15 bytes) pauses pushes; two pause replication too; nothing in flight resumes both.
    backPressure: { pauseReceiveBytes: 10, pauseReplicateBytes: 30, resumeBytes: 0 },
    machine: writer,
    initialState: () => [],
  });
  world.addNode({
    id: 'map-app-1-0-0-0',
    role: 'map',
    addressless: true,
    machine: pusher(messages),
    initialState: () => null,
  });
  world.start('w');
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
