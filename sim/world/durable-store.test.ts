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

/** Persists on every input and records the numbered messages it receives, in order. */
const persistEach: Machine<number[]> = {
  step(state, input) {
    if (input.kind !== 'receive') return { state, effects: [] };
    const n = Number((input.envelope.message as { message: string }).message);
    return {
      state: [...state, n],
      effects: [{ kind: 'persist', store: 'recovery', key: `k${n}`, value: 'v' }],
    };
  },
};

describe('World backlog', () => {
  it('stops reading a server whose backlog is full until it fell to half, losing nothing', () => {
    const w = new World({ seed: 3, storeLatency: { minMs: 20, maxMs: 21 } });
    w.addNode({ id: 'n', role: 'worker', machine: persistEach, initialState: () => [], inputLimit: 4 });
    const sends: Effect[] = Array.from({ length: 30 }, (_, n) => ({
      kind: 'send',
      to: 'n',
      message: { type: 'StatusResponse', status: 'SUCCESS', message: String(n) },
    }));
    w.addNode({
      id: 'peer',
      role: 'toy',
      machine: { step: (state, input) => ({ state, effects: input.kind === 'start' ? sends : [] }) },
      initialState: () => null,
    });
    w.start('n');
    w.start('peer');
    assert.equal(w.run({ until: 10_000, maxEvents: 10_000 }), 'idle');
    assert.deepEqual(w.stateOf('n'), [...Array(30).keys()], 'every message stepped once, in order');
    assert.ok(w.trace.counters.get('backlog.full')! >= 1, 'the backlog filled');
    assert.ok(w.trace.counters.get('backlog.held')! >= 1, 'arrivals waited while it was full');
    assert.equal(w.durableStoreOf('n').size, 30);
  });
});
