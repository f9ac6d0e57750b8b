import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import type { Effect, Input } from '../../core/machines/effects.ts';
import type { Machine } from '../../core/machines/machine.ts';
import { World } from './world.ts';

/** On its first start only: persists `k`, then tells `peer`; records every input. */
function persistThenTell(): Machine<Input[]> {
  let first = true;
  return {
    step(state, input) {
      const effects: Effect[] =
        input.kind === 'start' && first
          ? [
              { kind: 'persist', store: 'recovery', key: 'k', value: 'v' },
              {
                kind: 'send',
                to: 'peer',
                message: { type: 'StatusResponse', status: 'SUCCESS', message: 'k' },
              },
            ]
          : [];
      if (input.kind === 'start') first = false;
      return { state: [...state, input], effects };
    },
  };
}

const recorder: Machine<Input[]> = { step: (state, input) => ({ state: [...state, input], effects: [] }) };

function world(crashAt?: number) {
  const w = new World({ seed: 1, storeLatency: { minMs: 5, maxMs: 6 } });
  w.addNode({ id: 'n', role: 'worker', machine: persistThenTell(), initialState: () => [] });
  w.addNode({ id: 'peer', role: 'toy', machine: recorder, initialState: () => [] });
  const departures: number[] = [];
  w.observe({ onDeparture: (_node, _effect, at) => departures.push(at.now) });
  w.start('peer');
  w.start('n');
  if (crashAt !== undefined) {
    w.schedule(crashAt, 'crash n', (at) => at.crash('n'));
    w.schedule(crashAt + 10, 'restart n', (at) => at.start('n'));
  }
  w.run({ until: 100, maxEvents: 100 });
  return { w, departures };
}

describe('World durable stores', () => {
  it('sends what follows a persist only once the store confirmed the write', () => {
    const { w, departures } = world();
    assert.equal(departures.length, 1);
    assert.ok(departures[0]! >= 5, `the send left at ${departures[0]} ms, after the write's latency`);
    assert.equal(w.durableStoreOf('n').get('k'), 'v');
    assert.equal((w.stateOf('peer') as Input[]).filter((input) => input.kind === 'receive').length, 1);
  });

  it('loses the write in flight, and what waited for it, when the node crashes', () => {
    const { w, departures } = world(2);
    assert.deepEqual(departures, [], 'the send died with the process, unsent');
    assert.equal(w.durableStoreOf('n').size, 0, 'the unconfirmed write is lost');
    const restarted = w.stateOf('n') as Input[];
    assert.deepEqual(restarted[0], { kind: 'start', recovered: new Map() });
  });
});
