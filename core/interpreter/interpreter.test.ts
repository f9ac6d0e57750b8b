import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import fc from 'fast-check';
import type { Effect, Input } from '../machines/effects.ts';
import type { Machine } from '../machines/machine.ts';
import type { PlantedBug } from '../planted-bugs.ts';
import { Interpreter, type PersistEffect } from './interpreter.ts';

// Each input is a number n; the machine answers with the script's effects for n: 'p' a persist of key `n.i`,
// 's' a send numbered `n.i`. The world is a list of events: an input arrives, or the write in flight is confirmed.

type Token = 'p' | 's';

function machineFor(script: readonly (readonly Token[])[]): Machine<number> {
  return {
    step(state, input) {
      if (input.kind !== 'timer') return { state, effects: [] };
      const n = Number(input.name);
      const effects: Effect[] = (script[n] ?? []).map((token, i) =>
        token === 'p'
          ? { kind: 'persist', store: 'coordination', key: `${n}.${i}`, value: 'v' }
          : { kind: 'setTimer', name: `${n}.${i}`, at: 0 },
      );
      return { state: state + 1, effects };
    },
  };
}

interface Outcome {
  /** Effects carried out, by name, in order; each with the keys the store held when it ran. */
  readonly executed: { readonly name: string; readonly durable: ReadonlySet<string> }[];
  readonly writes: string[][];
  readonly maxWritesInFlight: number;
  readonly backlogAtEnd: number;
}

function run(
  script: readonly (readonly Token[])[],
  events: readonly ('input' | 'confirm')[],
  plantedBug?: PlantedBug,
): Outcome {
  const durable = new Set<string>();
  let inFlight: PersistEffect[] | undefined;
  let writesInFlight = 0;
  let maxWritesInFlight = 0;
  const executed: { name: string; durable: ReadonlySet<string> }[] = [];
  const writes: string[][] = [];
  const interpreter = new Interpreter(
    machineFor(script),
    0,
    { next: () => 0.5 },
    {
      now: () => 0,
      execute: (effect) => {
        if (effect.kind === 'setTimer') executed.push({ name: effect.name, durable: new Set(durable) });
      },
      write: (persists) => {
        writesInFlight += 1;
        maxWritesInFlight = Math.max(maxWritesInFlight, writesInFlight);
        inFlight = [...persists];
        writes.push(persists.map((p) => p.key));
      },
    },
    plantedBug === undefined ? {} : { plantedBug },
  );
  const confirm = () => {
    if (inFlight === undefined) return;
    for (const persist of inFlight) durable.add(persist.key);
    inFlight = undefined;
    writesInFlight -= 1;
    interpreter.written();
  };
  let next = 0;
  for (const event of events) {
    if (event === 'confirm') confirm();
    else if (next < script.length) interpreter.input({ kind: 'timer', name: String(next++) } satisfies Input);
  }
  while (next < script.length) interpreter.input({ kind: 'timer', name: String(next++) });
  while (inFlight !== undefined) confirm();
  return { executed, writes, maxWritesInFlight, backlogAtEnd: interpreter.backlog };
}

const scripts = fc.array(fc.array(fc.constantFrom<Token>('p', 's'), { maxLength: 5 }), {
  minLength: 1,
  maxLength: 12,
});
const events = fc.array(fc.constantFrom<'input' | 'confirm'>('input', 'confirm'), { maxLength: 40 });

/** The keys of every persist decided before effect `name` (all earlier steps, and earlier in its own step). */
function persistsBefore(script: readonly (readonly Token[])[], name: string): string[] {
  const [n, i] = name.split('.').map(Number) as [number, number];
  const keys: string[] = [];
  for (let step = 0; step <= n; step += 1) {
    const tokens = script[step] ?? [];
    for (let j = 0; j < (step === n ? i : tokens.length); j += 1)
      if (tokens[j] === 'p') keys.push(`${step}.${j}`);
  }
  return keys;
}

describe('Interpreter', () => {
  it('carries out every effect once, in the order the machine decided them', () => {
    fc.assert(
      fc.property(scripts, events, (script, order) => {
        const { executed, backlogAtEnd } = run(script, order);
        const decided = script.flatMap((tokens, n) =>
          tokens.flatMap((token, i) => (token === 's' ? [`${n}.${i}`] : [])),
        );
        assert.deepEqual(
          executed.map((e) => e.name),
          decided,
        );
        assert.equal(backlogAtEnd, 0, 'nothing waits once every write is confirmed');
      }),
      { interruptAfterTimeLimit: 20_000, markInterruptAsFailure: true },
    );
  });

  it('carries out an effect only once every persist decided before it is durable', () => {
    fc.assert(
      fc.property(scripts, events, (script, order) => {
        const { executed, maxWritesInFlight, writes } = run(script, order);
        for (const { name, durable } of executed) {
          for (const key of persistsBefore(script, name)) {
            assert.ok(durable.has(key), `${name} ran before ${key} was durable`);
          }
        }
        assert.ok(maxWritesInFlight <= 1, 'one write at a time');
        const written = writes.flat();
        assert.equal(new Set(written).size, written.length, 'each persist is written once');
        assert.equal(written.length, script.flat().filter((t) => t === 'p').length);
      }),
      { interruptAfterTimeLimit: 20_000, markInterruptAsFailure: true },
    );
  });

  it("with the planted bug 'effects-before-persist', lets an effect run ahead of its persist", () => {
    const { executed } = run([['p', 's']], [], 'effects-before-persist');
    assert.deepEqual(
      executed.map((e) => e.name),
      ['0.1'],
    );
    assert.equal(
      executed[0]!.durable.has('0.0'),
      false,
      'the bug: the send left before the write was confirmed',
    );
  });

  it('groups the persists of steps that waited into one write', () => {
    // Step 0 persists and its write stays in flight while steps 1 and 2 arrive; their persists go together.
    const { writes } = run([['p', 's'], ['p'], ['s', 'p']], ['input', 'input', 'input', 'confirm']);
    assert.deepEqual(writes, [['0.0'], ['1.0', '2.1']]);
  });

  it('bounds the backlog: full at the limit, free again at half', () => {
    const changes: [boolean, number][] = [];
    let confirm: (() => void) | undefined;
    const interpreter: Interpreter<number> = new Interpreter(
      machineFor(Array.from({ length: 10 }, () => ['p'] as Token[])),
      0,
      { next: () => 0.5 },
      {
        now: () => 0,
        execute: () => undefined,
        write: () => {
          confirm = () => interpreter.written();
        },
        backlogFull: (full, backlog) => changes.push([full, backlog]),
      },
      { inputLimit: 4 },
    );
    for (let n = 0; n < 6; n += 1) interpreter.input({ kind: 'timer', name: String(n) });
    assert.deepEqual(changes, [[true, 4]], 'full once four steps wait');
    confirm!(); // the first write: the five steps that waited go to the store in one write
    assert.deepEqual(changes, [[true, 4]], 'still waiting for the grouped write');
    confirm!();
    assert.deepEqual(changes, [
      [true, 4],
      [false, 0],
    ]);
  });

  it('drops what waited when the process stops, and steps nothing after', () => {
    const executed: string[] = [];
    const interpreter = new Interpreter(
      machineFor([['p', 's'], ['s']]),
      0,
      { next: () => 0.5 },
      {
        now: () => 0,
        execute: (effect) => {
          if (effect.kind === 'setTimer') executed.push(effect.name);
        },
        write: () => undefined,
      },
    );
    interpreter.input({ kind: 'timer', name: '0' });
    interpreter.stop();
    interpreter.input({ kind: 'timer', name: '1' });
    interpreter.written();
    assert.deepEqual(executed, []);
    assert.equal(interpreter.backlog, 0);
    assert.equal(interpreter.state, 1);
  });
});
