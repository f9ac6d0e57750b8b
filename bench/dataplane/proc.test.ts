import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { once } from 'node:events';
import { createInterface } from 'node:readline';
import { describe, it } from 'node:test';
import { cpuSeconds, mainThreadCpuSeconds } from './proc.ts';

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
  });
});
