import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import type { Effect, Input } from '../../core/machines/effects.ts';
import type { Machine } from '../../core/machines/machine.ts';
import type { PlantedBug } from '../../core/planted-bugs.ts';
import type { StatusResponse } from '../../core/protocol/messages.ts';
import { World } from '../world/world.ts';
import { unansweredRequestsFailed } from './unanswered.ts';

function numbered(n: number): StatusResponse {
  return { type: 'StatusResponse', status: 'SUCCESS', message: String(n) };
}

function scripted(script: (input: Input) => Effect[]): Machine<Input[]> {
  return { step: (state, input) => ({ state: [...state, input], effects: script(input) }) };
}

/**
 * 'a' asks 'b' three times on start and wakes later (an input after the deadline); 'b' answers the first request
 * only, then ends as `end` says, at 50 ms (after 'a' crashed and restarted, with `senderEndsFirst`). Returns the
 * run's violation, if any.
 */
function run(end: (world: World) => void, plantedBug?: PlantedBug, senderEndsFirst = false) {
  const asker = scripted((input) =>
    input.kind === 'start'
      ? [
          ...[1, 2, 3].map((n): Effect => ({ kind: 'send', to: 'b', message: numbered(n), requestId: n })),
          { kind: 'setTimer', name: 'later', at: 80 },
        ]
      : [],
  );
  const answerer = scripted((input) =>
    input.kind === 'receive' && input.envelope.requestId === 1
      ? [{ kind: 'send', to: 'a', message: numbered(1), inReplyTo: 1 }]
      : [],
  );
  const world = new World({ seed: 1, ...(plantedBug === undefined ? {} : { plantedBug }) });
  world.observe(unansweredRequestsFailed());
  world.addNode({ id: 'a', role: 'toy', machine: asker, initialState: () => [] as Input[] });
  world.addNode({ id: 'b', role: 'toy', machine: answerer, initialState: () => [] as Input[] });
  world.start('b');
  world.start('a');
  world.run({ until: 50, maxEvents: 100 });
  if (senderEndsFirst) {
    // A new process of the sender waits for nothing its predecessor asked (and wakes after the deadline).
    world.crash('a');
    world.start('a');
  }
  end(world);
  world.run({ until: 100, maxEvents: 100 });
  return world.violation;
}

const ENDS: Record<string, (world: World) => void> = {
  crash: (world) => world.crash('b'),
  relaunch: (world) => world.relaunch('b'),
};

describe('unanswered-requests-failed', () => {
  for (const [how, end] of Object.entries(ENDS)) {
    it(`holds when the world fails what a process left unanswered (${how})`, () => {
      assert.equal(run(end), undefined);
    });

    it(`catches a world that fails nothing (planted bug unanswered-not-failed, ${how})`, () => {
      const violation = run(end, 'unanswered-not-failed');
      assert.equal(violation?.invariant, 'unanswered-requests-failed');
      assert.match(violation.detail, /b ended at 50 ms without answering StatusResponse #2 of a/);
    });
  }

  it('asks nothing for a sender whose own process ended first', () => {
    assert.equal(run(ENDS.crash!, 'unanswered-not-failed', true), undefined);
  });
});
