// scripts/end-at-exit.mjs ends a test file's process at its 'exit' event: what runs at exit still runs, and the
// file's result (its exit code) is the runner's as before.
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { after, describe, it } from 'node:test';

const root = path.resolve(import.meta.dirname, '..');
const dir = mkdtempSync(path.join(tmpdir(), 'svc-end-at-exit-'));
after(() => rmSync(dir, { recursive: true, force: true }));

/** Runs a test file of `body` the way scripts/run-tests.mjs does, with only this import. */
function runFile(name: string, body: string) {
  const file = path.join(dir, name);
  writeFileSync(file, `import { it } from 'node:test';\n${body}\n`);
  return spawnSync(process.execPath, ['--import', './scripts/end-at-exit.mjs', '--test', file], {
    cwd: root,
    encoding: 'utf8',
    // A runner of its own: this process's runner context would make it skip the file.
    env: { ...process.env, NODE_TEST_CONTEXT: undefined },
  });
}

describe('a test file ended at its exit event', () => {
  it('runs the exit listeners registered after it and passes with code 0', () => {
    const run = runFile(
      'passing.test.mjs',
      `process.on('exit', (code) => console.error('later listener saw code ' + code));\nit('passes', () => {});`,
    );
    assert.equal(run.status, 0, run.stdout + run.stderr);
    assert.match(run.stdout + run.stderr, /later listener saw code 0/);
    assert.match(run.stdout, /pass 1/);
  });

  it('keeps a failing file failing', () => {
    const run = runFile('failing.test.mjs', `it('fails', () => { throw new Error('planted'); });`);
    assert.equal(run.status, 1, run.stdout + run.stderr);
    assert.match(run.stdout, /fail 1/);
  });
});
