import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { once } from 'node:events';
import { availableParallelism } from 'node:os';
import { createInterface } from 'node:readline';
import { describe, it } from 'node:test';
import { cpuSeconds, mainThreadCpuSeconds, mainThreadWaitSeconds } from './proc.ts';

/**
 * A process whose CPU is spent on a worker thread (as V8's compiler threads spend a worker's): it prints `burnt`
 * once its worker has run a fixed number of loop iterations, then waits for its stdin to close.
 */
const BURNER = `
const { Worker } = require('node:worker_threads');
const worker = new Worker('let x = 0; for (let i = 0; i < 1.5e8; i += 1) x = (x + i) % 7919; require("node:worker_threads").parentPort.postMessage(x);', { eval: true });
worker.once('message', () => { console.log('burnt'); process.stdin.resume(); });
process.stdin.on('end', () => process.exit(0));
`;

/** A process that spins on its main thread for a fixed number of iterations, prints `burnt`, then waits. */
const MAIN_BURNER = `
let x = 0; for (let i = 0; i < 1e8; i += 1) x = (x + i) % 7919;
console.log('burnt', x > -1 ? '' : x); process.stdin.resume(); process.stdin.on('end', () => process.exit(0));
`;

describe('bench/dataplane/proc', () => {
  it("tells a process's main-thread CPU from its other threads'", async () => {
    const child = spawn(process.execPath, ['-e', BURNER], { stdio: ['pipe', 'pipe', 'inherit'] });
    try {
      const lines = createInterface({ input: child.stdout });
      const [line] = (await once(lines, 'line')) as [string];
      assert.equal(line, 'burnt', 'the burner reports its work done');
      const pid = child.pid!;
      const total = cpuSeconds(pid);
      const main = mainThreadCpuSeconds(pid);
      const all = total.user + total.system;
      assert.ok(all > 0.2, `the burner used CPU (${all} s)`);
      assert.ok(main >= 0, `the main thread's CPU is read (${main} s)`);
      assert.ok(main < all / 2, `most of the CPU was the worker thread's: main ${main} s of ${all} s`);
    } finally {
      child.stdin.end();
      if (child.exitCode === null) await once(child, 'exit');
    }
  });

  it('reads NaN for a process that is gone', () => {
    assert.ok(Number.isNaN(mainThreadCpuSeconds(2 ** 22 + 1)), 'no such pid');
    assert.ok(Number.isNaN(mainThreadWaitSeconds(2 ** 22 + 1)), 'no such pid: no wait either');
  });

  it('counts the time a main thread waits for a CPU while more threads than CPUs are busy', async (t) => {
    // More burners than CPUs, each its own process: the measured one's main thread must wait for a CPU.
    const burners = availableParallelism() + 1;
    const children = Array.from({ length: burners }, () =>
      spawn(process.execPath, ['-e', MAIN_BURNER], { stdio: ['pipe', 'pipe', 'inherit'] }),
    );
    try {
      const measured = children[0]!;
      const before = mainThreadWaitSeconds(measured.pid!);
      if (Number.isNaN(before)) {
        t.skip('this kernel keeps no scheduler statistics (/proc/<pid>/task/<pid>/schedstat)');
        return;
      }
      await Promise.all(
        children.map(async (child) => once(createInterface({ input: child.stdout }), 'line')),
      );
      const waited = mainThreadWaitSeconds(measured.pid!) - before;
      const ran = mainThreadCpuSeconds(measured.pid!);
      // n + 1 spinning threads on n CPUs: a fair scheduler keeps each waiting about 1/n of the time it runs.
      assert.ok(
        waited >= ran / (4 * (burners - 1)),
        `the main thread waited on the run queue: ${waited} s while it ran ${ran} s, ${burners} burners`,
      );
    } finally {
      for (const child of children) child.stdin.end();
      await Promise.all(
        children.map(async (child) => (child.exitCode === null ? once(child, 'exit') : undefined)),
      );
    }
  });
});
