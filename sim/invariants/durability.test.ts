import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import type { Effect, Input } from '../../core/machines/effects.ts';
import type { Machine } from '../../core/machines/machine.ts';
import { masterMachine } from '../../core/machines/master/machine.ts';
import { appKey, MASTER_STATE_PREFIX } from '../../core/machines/master/layout.ts';
import { initialMasterState } from '../../core/machines/master/state.ts';
import { testMasterConfig } from '../../core/machines/master/testing.ts';
import type { PlantedBug } from '../../core/planted-bugs.ts';
import { World } from '../world/world.ts';
import { acknowledgedSurvivesCrash } from './durability.ts';

const MASTER = 'master-0';

/** A lifecycle manager that registers its application once, and records the master's answers. */
const registering: Machine<string[]> = {
  step(state, input: Input) {
    if (input.kind === 'start') {
      const effects: Effect[] = [
        {
          kind: 'send',
          to: MASTER,
          requestId: 1,
          message: { type: 'RegisterApplication', appId: 'app-1', user: 'u' },
        },
      ];
      return { state, effects };
    }
    if (input.kind === 'receive') return { state: [...state, input.envelope.message.type], effects: [] };
    return { state, effects: [] };
  },
};

/**
 * A real master and a lifecycle manager; the master crashes the moment its answer arrives (the worst moment for a
 * master that answered before its write) and restarts 10 ms later.
 */
function run(plantedBug?: PlantedBug) {
  const world = new World({ seed: 7, storeLatency: { minMs: 5, maxMs: 10 } });
  const config = testMasterConfig(plantedBug === undefined ? {} : { plantedBug });
  world.addNode({
    id: MASTER,
    role: 'master',
    machine: masterMachine,
    initialState: () => initialMasterState(config),
  });
  world.addNode({ id: 'lm', role: 'lifecycle-manager', machine: registering, initialState: () => [] });
  world.observe(
    acknowledgedSurvivesCrash(
      (node) => node === MASTER,
      () => false,
    ),
  );
  world.observe({
    inputs: ['receive'],
    onInput(node, input, w) {
      if (node !== 'lm' || input.kind !== 'receive') return;
      w.crash(MASTER);
      w.schedule(w.now + 10, 'restart the master', (later) => later.start(MASTER));
    },
  });
  world.start(MASTER);
  world.schedule(1, 'start the lifecycle manager', (w) => w.start('lm'));
  world.run({ until: 1_000, maxEvents: 10_000 });
  return world;
}

describe('acknowledged-survives-crash', () => {
  it('holds when the master answers a registration only once its store confirmed it', () => {
    const world = run();
    assert.equal(world.violation, undefined);
    assert.deepEqual(world.stateOf('lm'), ['StatusResponse'], 'the master answered, then crashed');
    assert.ok(world.coordination.has(appKey(MASTER_STATE_PREFIX, 'app-1')), 'the registration is stored');
  });

  it('catches a master that answers before it persists (planted bug ack-before-persist)', () => {
    const world = run('ack-before-persist');
    assert.equal(world.violation?.invariant, 'acknowledged-survives-crash');
    assert.match(world.violation.detail, /application app-1 registered/);
  });
});
