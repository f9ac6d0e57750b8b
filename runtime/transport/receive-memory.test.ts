import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { ReceiveMemory, type HoldingConnection } from './receive-memory.ts';

/** A connection that records why it was closed, and resolves `closed` then. */
class FakeConnection implements HoldingConnection {
  cause: string | undefined;
  reason = '';
  readonly closed: Promise<void>;
  private resolveClosed!: () => void;

  constructor(readonly name: string) {
    this.closed = new Promise((resolve) => (this.resolveClosed = resolve));
  }

  destroy(reason: string, cause?: string): void {
    this.reason = reason;
    this.cause = cause;
    this.resolveClosed();
  }
}

describe('ReceiveMemory', () => {
  it('past its limit, closes the largest holders at once', () => {
    const gaveUp: string[] = [];
    const memory = new ReceiveMemory<FakeConnection>({
      limitBytes: 100,
      limitKey: 'the key',
      gaveUp: (cause) => gaveUp.push(cause),
    });
    const small = new FakeConnection('small');
    const large = new FakeConnection('large');
    memory.update(small, 40);
    memory.update(large, 70);
    assert.equal(large.cause, 'receiveMemoryFull');
    assert.match(large.reason, /more than its limit of 100 \(the key\)/);
    assert.equal(small.cause, undefined);
    assert.equal(memory.totalBytes, 40);
    assert.deepEqual(gaveUp, ['receiveMemoryFull'], 'counted once (PartialFrameGivenUpCount)');
  });

  it('above the pause threshold, closes only frames under way for the stall time, the largest of them first', async (t) => {
    let clock = 0;
    // The check's timer does not hold a process open; this test's does, until the test ends.
    const keepAlive = setInterval(() => undefined, 1_000);
    t.after(() => clearInterval(keepAlive));
    const gaveUp: string[] = [];
    const memory = new ReceiveMemory<FakeConnection>({
      limitBytes: 1_000,
      stalled: { pauseBytes: 50, stalledMs: 20, now: () => clock },
      gaveUp: (cause) => gaveUp.push(cause),
    });
    const old = new FakeConnection('old');
    const young = new FakeConnection('young');
    memory.update(old, 30);
    clock = 15;
    memory.update(young, 60);
    clock = 20; // when the check armed at the first growth above 50 runs: old is 20 ms under way, young 5
    await old.closed;
    assert.equal(old.cause, 'frameStalled');
    assert.match(old.reason, /under way for 20 ms \(stalled after 20 ms\)/);
    assert.equal(young.cause, undefined, 'the larger frame, still arriving in time, is kept');
    assert.equal(memory.totalBytes, 60);
    // Still above 50: the next check comes when young turns stalled.
    clock = 35;
    await young.closed;
    assert.equal(young.cause, 'frameStalled');
    assert.equal(memory.totalBytes, 0);
    assert.deepEqual(gaveUp, ['frameStalled', 'frameStalled'], 'each counted');
    memory.close();
  });
});
