import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { PauseReasons } from './pause-reasons.ts';

describe('PauseReasons', () => {
  it('pauses a service at its first hold and resumes it only when the last hold is cleared', () => {
    const calls: [string, boolean][] = [];
    const pauses = new PauseReasons((service, paused) => calls.push([service, paused]));
    pauses.hold('memory', 'push', true);
    pauses.hold('backlog', 'push', true);
    pauses.hold('memory', 'push', false);
    assert.deepEqual(calls, [['push', true]], 'the backlog still holds push');
    assert.ok(pauses.isHeldBy('backlog', 'push'), "pauses.isHeldBy('backlog', 'push')");
    assert.ok(!pauses.isHeldBy('memory', 'push'), "!pauses.isHeldBy('memory', 'push')");
    pauses.hold('backlog', 'push', false);
    pauses.hold('backlog', 'push', false);
    assert.deepEqual(calls, [
      ['push', true],
      ['push', false],
    ]);
  });

  it('keeps services apart', () => {
    const calls: [string, boolean][] = [];
    const pauses = new PauseReasons((service, paused) => calls.push([service, paused]));
    pauses.hold('backlog', 'rpc', true);
    pauses.hold('memory', 'push', true);
    pauses.hold('backlog', 'rpc', false);
    assert.deepEqual(calls, [
      ['rpc', true],
      ['push', true],
      ['rpc', false],
    ]);
  });
});
