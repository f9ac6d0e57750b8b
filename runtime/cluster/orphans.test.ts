// A local cluster's servers stop with the process that started them, even when it is killed outright (SIGKILL
// leaves it no chance to stop them): they watch their stdin, which the dead parent's end closes.
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { createInterface } from 'node:readline';
import { after, describe, it } from 'node:test';
import { fileURLToPath } from 'node:url';
import { within } from '../testing/deadline.ts';
import { pollUntil } from '../testing/poll.ts';
import { STARTUP_WAIT_MS } from './server-process.ts';

const HOLDER = fileURLToPath(new URL('../testing/hold-cluster.ts', import.meta.url));

function alive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch {
    return false;
  }
}

describe('local cluster servers', () => {
  const dir = mkdtempSync(path.join(tmpdir(), 'svc-orphans-'));
  const started: number[] = [];
  after(() => {
    for (const pid of started) if (alive(pid)) process.kill(pid, 'SIGKILL');
    rmSync(dir, { recursive: true, force: true });
  });

  it('stop when the process that started them is killed with SIGKILL', async () => {
    const holder = spawn(process.execPath, ['--import', 'tsx', HOLDER, dir], {
      stdio: ['ignore', 'pipe', 'inherit'],
    });
    const held = new Promise<number[]>((resolve, reject) => {
      createInterface({ input: holder.stdout }).on('line', (line) => {
        if (line.includes('"held"')) resolve((JSON.parse(line) as { pids: number[] }).pids);
      });
      holder.on('exit', (code) =>
        reject(new Error(`the holder exited (${String(code)}) before its cluster was up`)),
      );
    });
    held.catch(() => undefined); // seen by within() below; never unhandled once its deadline has passed
    const pids = await within(held, 'the holder’s cluster to be up', STARTUP_WAIT_MS).catch(
      (error: unknown) => {
        holder.kill('SIGKILL');
        throw error;
      },
    );
    started.push(...pids, holder.pid!);
    assert.equal(pids.length, 2);
    assert.ok(pids.every(alive), 'pids.every(alive)');
    holder.kill('SIGKILL');
    // The servers are not our children: nothing signals their end, so look until they are gone (bounded).
    await pollUntil(
      () => !pids.some(alive),
      () => `servers ${pids.filter(alive).join(', ')} still run 30 s after their parent’s death`,
      { timeoutMs: 30_000, intervalMs: 100 },
    );
  });
});
