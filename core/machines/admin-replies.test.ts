import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { workerKey } from '../domain/index.ts';
import { masterNodeId } from '../protocol/node-ids.ts';
import type { Effect } from './effects.ts';
import { initialMasterState, masterMachine } from './master/index.ts';
import { testMasterConfig } from './master/testing.ts';
import { InMemoryCluster } from './testing/in-memory-cluster.ts';
import { initialWorkerState, workerMachine } from './worker/index.ts';
import { Harness, workerId } from './worker/test-kit.ts';
import { testWorkerConfig } from './worker/testing.ts';

/**
 * Every operator command gets exactly one answer with its id: what the management interface returns as
 * `{ success, message }`. The message names each worker the command could not apply to, and why.
 */
const WORKERS = [workerId('w1'), workerId('w2')];
const MASTER = masterNodeId();

function cluster() {
  const c = new InMemoryCluster({ seed: 3 });
  c.addNode(MASTER, { machine: masterMachine, init: () => initialMasterState(testMasterConfig()) });
  for (const id of WORKERS) {
    c.addNode(workerKey(id), {
      machine: workerMachine,
      init: () =>
        initialWorkerState(
          testWorkerConfig(id, {
            gracefulShutdown: { enabled: true, checkIntervalMs: 1_000, timeoutMs: 60_000 },
          }),
        ),
    });
  }
  c.startAll();
  c.run({ maxTime: 5_000 });
  return c;
}

function replyTo(c: InMemoryCluster, commandId: number) {
  const replies = c.adminReplies.filter((reply) => reply.commandId === commandId);
  assert.equal(
    replies.length,
    1,
    `exactly one answer to command ${commandId}: ${JSON.stringify(c.adminReplies)}`,
  );
  return replies[0]!;
}

describe('answers to operator commands', () => {
  it('excluding a known and an unknown worker: not a success, and the message names the unknown one', () => {
    const c = cluster();
    const known = workerKey(WORKERS[0]!);
    c.admin(MASTER, { type: 'excludeWorkers', add: [known, 'ghost:1:2:3:4'], remove: [] }, 1);
    c.run({ maxTime: 6_000 });
    const reply = replyTo(c, 1);
    assert.equal(reply.success, false, 'an unknown worker makes the command fail');
    assert.match(reply.message, new RegExp(`excluded: ${known}`), reply.message);
    assert.match(reply.message, /unknown to this master[^:]*: ghost:1:2:3:4/, reply.message);
  });

  it('answers a command that arrives before start, at master and worker alike', () => {
    for (const [role, h] of [
      ['master', new Harness(masterMachine, initialMasterState(testMasterConfig()))],
      ['worker', new Harness(workerMachine, initialWorkerState(testWorkerConfig(WORKERS[0]!)))],
    ] as const) {
      const effects = h.step({
        kind: 'admin',
        command: { type: 'exit', exitType: 'GRACEFUL' },
        commandId: 9,
      });
      const replies = effects.filter((e) => e.kind === 'adminReply');
      assert.deepEqual(
        replies,
        [{ kind: 'adminReply', commandId: 9, success: false, message: `the ${role} has not started yet` }],
        role,
      );
    }
  });

  it('a worker event to registered workers succeeds; an unknown event type fails with the valid names', () => {
    const c = cluster();
    c.admin(MASTER, { type: 'workerEvent', eventType: 'Decommission', workers: [workerKey(WORKERS[1]!)] }, 2);
    c.admin(MASTER, { type: 'workerEvent', eventType: 'Vanish', workers: [workerKey(WORKERS[1]!)] }, 3);
    c.run({ maxTime: 6_000 });
    assert.equal(replyTo(c, 2).success, true, replyTo(c, 2).message);
    assert.match(replyTo(c, 2).message, /Decommission sent/);
    assert.equal(replyTo(c, 3).success, false);
    assert.match(replyTo(c, 3).message, /Vanish/);
  });

  it('a worker says what exit does now, refuses what its state forbids with the reason, and sends master commands away', () => {
    const h = new Harness(
      workerMachine,
      initialWorkerState(
        testWorkerConfig(WORKERS[0]!, {
          gracefulShutdown: { enabled: true, checkIntervalMs: 1_000, timeoutMs: 60_000 },
        }),
      ),
    );
    h.start();
    const answer = (effects: readonly Effect[], commandId: number) => {
      const replies = effects.filter(
        (e): e is Extract<Effect, { kind: 'adminReply' }> =>
          e.kind === 'adminReply' && e.commandId === commandId,
      );
      assert.equal(replies.length, 1, `exactly one answer to command ${commandId}`);
      return replies[0]!;
    };
    const moved = answer(
      h.step({ kind: 'admin', command: { type: 'exit', exitType: 'GRACEFUL' }, commandId: 4 }),
      4,
    );
    assert.equal(moved.success, true, moved.message);
    assert.match(moved.message, /now InGraceful \(was Normal\)/);
    // Holding nothing, the worker drained and exited at once; another plan is refused with the table's reason.
    const refused = answer(
      h.step({ kind: 'admin', command: { type: 'exit', exitType: 'DECOMMISSION' }, commandId: 5 }),
      5,
    );
    assert.equal(refused.success, false);
    assert.match(refused.message, /refused in state Exit: .+/);
    const misdirected = answer(
      h.step({ kind: 'admin', command: { type: 'excludeWorkers', add: [], remove: [] }, commandId: 6 }),
      6,
    );
    assert.equal(misdirected.success, false);
    assert.match(misdirected.message, /send it to the master/);
  });
});
