import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { FileLanes } from './file-lanes.ts';

/** A promise with its resolve function exposed, to hold an operation open until the test lets it end. */
function gate(): { promise: Promise<void>; open: () => void } {
  let open!: () => void;
  const promise = new Promise<void>((resolve) => (open = resolve));
  return { promise, open };
}

/**
 * An appendAll that records the first byte of every chunk of each call, and holds the first call open until
 * `release` (so that the appends queued meanwhile are merged).
 */
function recordingAppends(): {
  calls: number[][];
  appendAll: (chunks: readonly Uint8Array[]) => Promise<void>;
  release: () => void;
} {
  const calls: number[][] = [];
  const first = gate();
  const appendAll = async (chunks: readonly Uint8Array[]) => {
    calls.push(chunks.map((chunk) => chunk[0]!));
    if (calls.length === 1) await first.promise;
  };
  return { calls, appendAll, release: first.open };
}

describe('FileLanes', () => {
  it('hands the appends queued behind a running one to the file in a single call, in order', async () => {
    const lanes = new FileLanes();
    const { calls, appendAll, release } = recordingAppends();
    const appends = [1, 2, 3, 4, 5].map((n) => lanes.append('f', [new Uint8Array([n])], appendAll));
    release();
    await Promise.all(appends);
    assert.deepEqual(calls, [[1], [2, 3, 4, 5]]);
  });

  it('keeps an append of several chunks whole and in order, merged with the appends queued after it', async () => {
    const lanes = new FileLanes();
    const { calls, appendAll, release } = recordingAppends();
    const one = (n: number) => new Uint8Array([n]);
    const appends = [
      lanes.append('f', [one(1), one(2)], appendAll),
      lanes.append('f', [one(3), one(4), one(5)], appendAll),
      lanes.append('f', [one(6)], appendAll),
    ];
    release();
    await Promise.all(appends);
    assert.deepEqual(calls, [
      [1, 2],
      [3, 4, 5, 6],
    ]);
  });

  it('fails every append of a merged call when the call fails', async () => {
    const lanes = new FileLanes();
    const first = gate();
    let calls = 0;
    const appendAll = async () => {
      calls += 1;
      if (calls === 1) return first.promise;
      throw new Error('disk full');
    };
    const appends = [1, 2, 3].map((n) => lanes.append('f', [new Uint8Array([n])], appendAll));
    first.open();
    const results = await Promise.allSettled(appends);
    assert.deepEqual(
      results.map((result) => result.status),
      ['fulfilled', 'rejected', 'rejected'],
    );
  });

  it('runs neighbouring reads together, but never alongside an append or an exclusive task', async () => {
    const lanes = new FileLanes();
    const log: string[] = [];
    // Held first, so that everything below is queued before any of it starts.
    const created = gate();
    const create = lanes.exclusive(['f'], () => created.promise);
    let running = 0;
    const read = (name: string) =>
      lanes.read('f', async () => {
        running += 1;
        log.push(`${name} starts with ${running} running`);
        await Promise.resolve();
        running -= 1;
        return name;
      });
    const append = () =>
      lanes.append('f', [new Uint8Array([0])], async () => {
        log.push(`append with ${running} running`);
        await Promise.resolve();
      });
    const pending = Promise.all([
      read('r1'),
      read('r2'),
      append(),
      read('r3'),
      lanes.exclusive(['f'], async () => {
        log.push(`exclusive with ${running} running`);
        await Promise.resolve();
        return 'x';
      }),
    ]);
    created.open();
    await create;
    assert.deepEqual(await pending, ['r1', 'r2', undefined, 'r3', 'x']);
    assert.deepEqual(log, [
      'r1 starts with 1 running',
      'r2 starts with 2 running',
      'append with 0 running',
      'r3 starts with 1 running',
      'exclusive with 0 running',
    ]);
  });

  it('runs a task on two files after everything queued on either, and before anything queued later', async () => {
    const lanes = new FileLanes();
    const log: string[] = [];
    const slow = gate();
    const step = (key: string, name: string, wait?: Promise<void>) =>
      lanes.exclusive([key], async () => {
        await wait;
        log.push(name);
      });
    const done = [
      step('a', 'a1', slow.promise),
      step('b', 'b1'),
      lanes.exclusive(['a', 'b'], async () => {
        log.push('move a->b');
        await Promise.resolve();
      }),
      step('b', 'b2'),
      step('c', 'c1'),
    ];
    await done[1];
    await done[4];
    assert.deepEqual(log, ['b1', 'c1']);
    slow.open();
    await Promise.all(done);
    assert.deepEqual(log, ['b1', 'c1', 'a1', 'move a->b', 'b2']);
  });

  it('never deadlocks two tasks that each span the same two files in opposite orders', async () => {
    const lanes = new FileLanes();
    const log: string[] = [];
    await Promise.all([
      lanes.exclusive(['a', 'b'], async () => {
        log.push('a->b');
        await Promise.resolve();
      }),
      lanes.exclusive(['b', 'a'], async () => {
        log.push('b->a');
        await Promise.resolve();
      }),
    ]);
    assert.deepEqual(log, ['a->b', 'b->a']);
  });

  it('resolves idle once nothing is queued', async () => {
    const lanes = new FileLanes();
    await lanes.idle();
    const held = gate();
    let ended = false;
    void lanes.exclusive(['a'], async () => {
      await held.promise;
      ended = true;
    });
    const idle = lanes.idle();
    held.open();
    await idle;
    assert.equal(ended, true);
  });
});
