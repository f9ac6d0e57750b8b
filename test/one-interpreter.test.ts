// The simulator and the runtime run one interpreter (core/interpreter/interpreter.ts): for the same inputs at the
// same times and the same store latency, a node's messages leave in the same order at the same times under both
// drivers, and what follows a persist leaves only once the store confirmed it. The runtime side is the real
// NodeDriver with a durable store whose writes the test confirms; the simulator side is the real World.
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import fc from 'fast-check';
import type { Effect } from '../core/machines/effects.ts';
import type { Machine } from '../core/machines/machine.ts';
import type { StatusResponse } from '../core/protocol/messages.ts';
import { NodeDriver } from '../runtime/driver/node-driver.ts';
import { createLogger } from '../runtime/log.ts';
import type { DurableStore } from '../runtime/storage/durable-store.ts';
import { World } from '../sim/world/world.ts';

type Token = 'p' | 's';

/** Input n (a timer named n) makes the script's effects for n: 'p' persists `n.i`, 's' sends message `n.i`. */
function scripted(script: readonly (readonly Token[])[]): Machine<null> {
  return {
    step(state, input) {
      if (input.kind !== 'timer') return { state, effects: [] };
      const n = Number(input.name);
      const effects: Effect[] = (script[n] ?? []).map((token, i) =>
        token === 'p'
          ? { kind: 'persist', store: 'coordination', key: `${n}.${i}`, value: 'v' }
          : { kind: 'send', to: 'peer', message: numbered(`${n}.${i}`) },
      );
      return { state, effects };
    },
  };
}

function numbered(name: string): StatusResponse {
  return { type: 'StatusResponse', status: 'SUCCESS', message: name };
}

const recorder: Machine<null> = { step: (state) => ({ state, effects: [] }) };

/** A departure: the message's name, when it left, and which keys the store held then. */
interface Departure {
  readonly name: string;
  readonly at: number;
  readonly durable: string;
}

function underSimulator(script: readonly (readonly Token[])[], arrivals: readonly number[], latency: number) {
  const world = new World({ seed: 1, storeLatency: { minMs: latency, maxMs: latency } });
  world.addNode({
    id: 'n',
    role: 'master',
    machine: scripted(script),
    initialState: () => null,
    durableStore: 'coordination',
  });
  world.addNode({ id: 'peer', role: 'toy', machine: recorder, initialState: () => null });
  const departures: Departure[] = [];
  world.observe({
    onDeparture(node, effect, at) {
      if (node !== 'n' || effect.kind !== 'send') return;
      const durable = [...at.durableStoreOf('n').keys()].sort().join(',');
      departures.push({ name: (effect.message as StatusResponse).message, at: at.now, durable });
    },
  });
  world.start('peer');
  world.start('n');
  arrivals.forEach((at, n) => world.inject('n', { kind: 'timer', name: String(n) }, at));
  world.run({ until: 1e6, maxEvents: 1e5 });
  return departures;
}

async function underRuntime(
  script: readonly (readonly Token[])[],
  arrivals: readonly number[],
  latency: number,
) {
  let now = 0;
  const stored = new Map<string, string>();
  const writes: { at: number; changes: { key: string; value: string | null }[]; done: () => void }[] = [];
  const durable: DurableStore = {
    load: () => Promise.resolve(new Map(stored)),
    write: (changes) =>
      new Promise((resolve) => {
        writes.push({
          at: now + latency,
          changes: [...changes],
          done: () => {
            for (const { key, value } of changes) {
              if (value === null) stored.delete(key);
              else stored.set(key, value);
            }
            resolve();
          },
        });
      }),
    close: () => Promise.resolve(),
  };
  const departures: Departure[] = [];
  const node = new NodeDriver('n', scripted(script), null, '0.6.0', {
    send: (envelope) => {
      const durableKeys = [...stored.keys()].sort().join(',');
      departures.push({ name: (envelope.message as StatusResponse).message, at: now, durable: durableKeys });
    },
    logger: createLogger('silent', {}),
    durable,
    durableStoreKind: 'coordination',
    clock: () => now,
  });
  node.start(new Map());
  let next = 0;
  // The events in time order, as the simulator's queue takes them: an input arrives, or the write in flight is
  // confirmed (the latency is never a whole number, so the two never tie).
  for (;;) {
    const write = writes[0];
    const arrival = arrivals[next];
    if (write === undefined && arrival === undefined) break;
    if (write !== undefined && (arrival === undefined || write.at < arrival)) {
      writes.shift();
      now = write.at;
      write.done();
      await new Promise((resolve) => setImmediate(resolve)); // the store's promise settles
    } else {
      now = arrival!;
      node.input({ kind: 'timer', name: String(next) });
      next += 1;
    }
  }
  node.stop();
  return departures;
}

const scripts = fc.array(fc.array(fc.constantFrom<Token>('p', 's'), { maxLength: 4 }), {
  minLength: 1,
  maxLength: 10,
});

describe('one interpreter for the simulator and the runtime', () => {
  it('sends the same messages in the same order at the same times under both drivers', async () => {
    await fc.assert(
      fc.asyncProperty(
        scripts,
        fc.integer({ min: 1, max: 30 }),
        fc.array(fc.integer({ min: 1, max: 20 }), { minLength: 10, maxLength: 10 }),
        async (script, latencyMs, gaps) => {
          const latency = latencyMs + 0.5;
          const arrivals = script.map((_, n) => gaps.slice(0, n + 1).reduce((a, b) => a + b, 0));
          const simulated = underSimulator(script, arrivals, latency);
          const real = await underRuntime(script, arrivals, latency);
          assert.deepEqual(real, simulated);
          const sent = script.flat().filter((token) => token === 's').length;
          assert.equal(real.length, sent, 'every message left');
        },
      ),
      { numRuns: 200, interruptAfterTimeLimit: 60_000, markInterruptAsFailure: true },
    );
  });

  it('holds a reply behind its persist under both drivers', async () => {
    const script: Token[][] = [['p', 's']];
    const simulated = underSimulator(script, [10], 5.5);
    const real = await underRuntime(script, [10], 5.5);
    assert.deepEqual(simulated, [{ name: '0.1', at: 15.5, durable: '0.0' }]);
    assert.deepEqual(real, simulated);
  });
});
