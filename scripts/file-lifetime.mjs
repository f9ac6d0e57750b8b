// Loaded into every test file's process by scripts/run-tests.mjs (`--import`): at exit, appends how long this
// process lived to the file SVC_TEST_LIFETIMES names. node's runner reports a file's results only once the files
// before it are reported, so the time of its last event says when it was reported, not when it ended; the process
// itself knows. A process killed at the runner's limit writes nothing, and the runner's own time stands.
import { appendFileSync } from 'node:fs';
import { performance } from 'node:perf_hooks';

const target = process.env.SVC_TEST_LIFETIMES;
if (
  target !== undefined &&
  process.env.NODE_TEST_CONTEXT !== undefined &&
  !process.execArgv.includes('--test')
) {
  process.on('exit', () => {
    appendFileSync(
      target,
      `${JSON.stringify({ file: process.argv[1], ms: Math.round(performance.now()) })}\n`,
    );
  });
}
