// A map's memory is bounded by its writer's budget, whatever it writes: one map of the demo writes 128 MiB into 100
// partitions through a streaming writer with a budget of 8 MiB, in a real executor process, which measures its own
// peak resident memory (maxRSS). A map holding its whole output (records and their frames) would need more than
// twice its data.
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { rmSync } from 'node:fs';
import { createInterface } from 'node:readline';
import { fileURLToPath } from 'node:url';
import { after, describe, it } from 'node:test';
import { RUN_WAIT_MS } from '../cluster/server-process.ts';
import { within } from '../testing/deadline.ts';

const CLI = fileURLToPath(new URL('../cli/main.ts', import.meta.url));
const MIB = 2 ** 20;
const MAP_BYTES = 128 * MIB;
const BUDGET = 8 * MIB;
/** The executor's own footprint (Node, the TypeScript loader, the client library, sockets) and GC slack. */
const MARGIN = 256 * MIB;

describe('map memory', () => {
  const children: ReturnType<typeof spawn>[] = [];
  const dirs: string[] = [];
  after(async () => {
    for (const child of children) {
      if (child.exitCode !== null || child.signalCode !== null) continue;
      const exited = new Promise((resolve) => child.once('exit', resolve));
      child.kill('SIGINT'); // the demo stops its cluster and executors, and removes its directory
      await within(exited, 'the demo to exit after Ctrl-C');
    }
    for (const dir of dirs) rmSync(dir, { recursive: true, force: true });
  });

  it(`one map writing ${MAP_BYTES / MIB} MiB keeps its executor under its ${BUDGET / MIB} MiB budget + ${MARGIN / MIB} MiB`, async () => {
    const child = spawn(
      process.execPath,
      [
        '--import',
        'tsx',
        CLI,
        'demo',
        ...['--size', String(MAP_BYTES), '--maps', '1', '--reduces', '100', '--executors', '1'],
        ...['--workers', '1', '--replication', 'off', '--progress', 'lines'],
        ...['--conf', `svc.client.push.maxUnacknowledgedBytes=${BUDGET}`],
      ],
      { stdio: ['ignore', 'pipe', 'pipe'], env: { ...process.env, CI: '' } },
    );
    children.push(child);
    const lines: string[] = [];
    const onLine = (line: string) => {
      lines.push(line);
      const dir = /data under (\S+)/.exec(line)?.[1];
      if (dir !== undefined) dirs.push(dir);
    };
    createInterface({ input: child.stdout }).on('line', onLine);
    createInterface({ input: child.stderr }).on('line', onLine);
    const code = await within(
      new Promise((resolve) => child.once('exit', resolve)),
      'the one-map demo to end',
      RUN_WAIT_MS,
    );
    const output = lines.join('\n');
    assert.equal(code, 0, output);
    assert.match(output, /verification OK: 100 partitions/);
    const peak = /maps done: executor peak RSS ([\d.]+) MiB/.exec(output);
    assert.ok(peak !== null, `the demo reports the executor's peak RSS:\n${output}`);
    const peakBytes = Number(peak[1]) * MIB;
    assert.ok(
      peakBytes < BUDGET + MARGIN,
      `the executor peaked at ${peak[1]} MiB writing ${MAP_BYTES / MIB} MiB with a ${BUDGET / MIB} MiB budget`,
    );
  });
});
