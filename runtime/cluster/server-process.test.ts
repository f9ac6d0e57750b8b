// A test's wait for a server's log line ends at its own deadline, saying which line of which process it waited for,
// instead of hanging to the test runner's global timeout; so does any wait given to `within`.
import assert from 'node:assert/strict';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { after, before, describe, it } from 'node:test';
import { WaitTimedOutError, within } from '../testing/deadline.ts';
import { STARTUP_WAIT_MS, ServerProcess } from './server-process.ts';

describe('waiting for a server’s log line', () => {
  let dir: string;
  let master: ServerProcess;
  before(async () => {
    dir = mkdtempSync(path.join(tmpdir(), 'svc-wait-'));
    master = new ServerProcess({
      name: 'master-under-test',
      args: [
        'master',
        ...[
          'svc.master.host=127.0.0.1',
          'svc.master.port=0',
          `svc.master.state.dir=${path.join(dir, 'state')}`,
        ].flatMap((setting) => ['--conf', setting]),
      ],
      logFile: path.join(dir, 'master.log'),
    });
    await master.waitForEvent('listening', STARTUP_WAIT_MS);
  });
  after(async () => {
    await master?.stop();
    rmSync(dir, { recursive: true, force: true });
  });

  it('rejects at its deadline, naming the line and the process, and forgets the waiter', async () => {
    await assert.rejects(master.waitForEvent('never.logged', 300), (error: unknown) => {
      assert.ok(error instanceof Error, 'error instanceof Error');
      assert.match(
        error.message,
        /^master-under-test \(pid \d+\) did not log 'never\.logged' within 300 ms; last output:\n.*listening/s,
      );
      return true;
    });
    await assert.rejects(
      master.waitForCount((line) => line.event === 'listening', 2, 'a second listening line', 0, 300),
      /did not log a second listening line within 300 ms/,
    );
    assert.equal((master as unknown as { waiters: Set<unknown> }).waiters.size, 0, 'no waiter left behind');
  });

  it('still resolves with a line already seen', async () => {
    const line = await master.waitForEvent('listening', 1);
    assert.equal(line.event, 'listening');
  });
});

describe('within', () => {
  it('rejects with WaitTimedOutError naming what was awaited, and passes a result or an error through', async () => {
    await assert.rejects(
      within(new Promise(() => undefined), 'an event that never comes', 50),
      (error: unknown) =>
        error instanceof WaitTimedOutError &&
        error.message === 'timed out after 50 ms waiting for an event that never comes',
    );
    assert.equal(await within(Promise.resolve(7), 'seven', 50), 7);
    await assert.rejects(within(Promise.reject(new Error('boom')), 'a failure', 50), /boom/);
  });
});
