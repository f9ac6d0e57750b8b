import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import type { Effect, Input } from '../../core/machines/effects.ts';
import type { Machine } from '../../core/machines/machine.ts';
import { createLogger } from '../log.ts';
import { NodeDriver, NodeStoppedError } from './node-driver.ts';

/** Answers `exit now` after its exit effect (as a machine must not), and anything else with a reply. */
const machine: Machine<null> = {
  step(state, input: Input) {
    if (input.kind !== 'admin') return { state, effects: [] };
    const effects: Effect[] =
      input.command.type === 'exit'
        ? [
            { kind: 'exit', code: 0, reason: 'asked' },
            { kind: 'adminReply', commandId: input.commandId, success: true, message: 'too late' },
          ]
        : [{ kind: 'adminReply', commandId: input.commandId, success: true, message: 'done' }];
    return { state, effects };
  },
};

function driver(): NodeDriver<null> {
  return new NodeDriver('n', machine, null, '0.6.0', {
    send: () => undefined,
    logger: createLogger('silent', {}),
  });
}

describe('NodeDriver admin commands', () => {
  it('resolves with the machine’s answer', async () => {
    const node = driver();
    assert.deepEqual(await node.admin({ type: 'excludeWorkers', add: [], remove: [] }), {
      success: true,
      message: 'done',
    });
  });

  it('rejects a command the node stopped before answering, and any command after it stopped', async () => {
    const node = driver();
    await assert.rejects(node.admin({ type: 'exit', exitType: 'IMMEDIATELY' }), NodeStoppedError);
    assert.ok(node.isStopped);
    await assert.rejects(node.admin({ type: 'excludeWorkers', add: [], remove: [] }), NodeStoppedError);
  });
});

describe('NodeDriver waits when the node stops', () => {
  it('resolves a wait with undefined when the node stops without a reason', async () => {
    const node = driver();
    const waiting = node.until(() => undefined);
    node.stop();
    assert.equal(await waiting, undefined);
  });

  it('rejects a wait, and every later one, with the reason the node was stopped with', async () => {
    const node = driver();
    const waiting = node.until(() => undefined);
    const reason = new Error('the client was closed');
    node.stop(reason);
    node.stop(); // a later stop without a reason (a task's own cleanup) keeps the first reason
    await assert.rejects(waiting, (error) => error === reason);
    await assert.rejects(
      node.until(() => undefined),
      (error) => error === reason,
    );
    assert.equal(await node.until(() => 'ready'), 'ready', 'a check that holds still answers');
  });
});
