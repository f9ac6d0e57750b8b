// Golden tests of the real `svc conf` command line, run as a child process. The expected outputs sit beside the
// inputs; after an intended change, regenerate them with `SVC_UPDATE_GOLDEN=1 npm test -- conf/golden` and review
// the diff.
import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import { readFileSync, writeFileSync } from 'node:fs';
import { describe, it } from 'node:test';

const root = new URL('../../', import.meta.url);
const update = process.env.SVC_UPDATE_GOLDEN === '1';

/**
 * Runs `svc ...` from the repository root with an environment that holds nothing of svc's. Asynchronously: a
 * synchronous child of several seconds each, one after another, left the test watchdog no turn of the event loop.
 */
function svc(...args: string[]): Promise<{ stdout: string; stderr: string; status: number | null }> {
  return new Promise((resolve) => {
    execFile(
      process.execPath,
      ['--import', 'tsx', 'runtime/cli/main.ts', ...args],
      { cwd: root, env: { PATH: process.env.PATH ?? '' }, encoding: 'utf8' },
      (error, stdout, stderr) => {
        const code = (error as { code?: unknown } | null)?.code;
        resolve({ stdout, stderr, status: error === null ? 0 : typeof code === 'number' ? code : null });
      },
    );
  });
}

function expectGolden(actual: string, name: string): void {
  const path = new URL(`conf/golden/${name}`, root);
  if (update) writeFileSync(path, actual);
  assert.equal(actual, readFileSync(path, 'utf8'), `output differs from conf/golden/${name}`);
}

describe('svc conf (golden)', () => {
  it('check: a removed key, a deprecated key, a typo and a bad value, as of 0.6.0 → exit 1', async () => {
    const result = await svc('conf', 'check', 'conf/golden/check-mixed.conf');
    expectGolden(result.stdout, 'check-mixed.expected.txt');
    const lines = result.stdout.trimEnd().split('\n');
    assert.match(lines[0] ?? '', /:3: error: .*removed in 0\.6\.0/);
    assert.match(lines[1] ?? '', /:4: warning: .*deprecated since 0\.4\.0; use svc\.storage\.availableTypes/);
    assert.match(lines[2] ?? '', /:5: warning: .*did you mean svc\.master\.slot\.assign\.extraSlots\?/);
    assert.match(
      lines[3] ?? '',
      /:6: error: svc\.worker\.flusher\.buffer\.size: invalid value '12 parsecs'; expected a byte size/,
    );
    assert.match(
      lines[4] ?? '',
      /:6: notice: svc\.worker\.flusher\.buffer\.size is accepted for compatibility, no effect/,
    );
    assert.equal(
      lines[5],
      'conf/golden/check-mixed.conf: 2 errors, 2 warnings as of release 0.6.0; 1 key set with no effect in svc',
    );
    assert.equal(result.stderr, '');
    assert.equal(result.status, 1);
  });

  it('check: the same file as of 0.5.0, when the removed key still existed → still exit 1 (the bad value)', async () => {
    const result = await svc('conf', 'check', 'conf/golden/check-mixed.conf', '--release', '0.5.0');
    expectGolden(result.stdout, 'check-mixed-0.5.0.expected.txt');
    assert.equal(result.status, 1);
  });

  it('check: a clean file → exit 0, a key with no effect in svc named in a notice that does not change it', async () => {
    const result = await svc('conf', 'check', 'conf/golden/check-clean.conf');
    assert.equal(
      result.stdout,
      'conf/golden/check-clean.conf:5: notice: svc.worker.flusher.buffer.size is accepted for compatibility, no ' +
        'effect in svc: a worker queues each accepted push for its file as it arrives; there is no flush buffer to ' +
        'size\nconf/golden/check-clean.conf: no problems as of release 0.6.0; 1 key set with no effect in svc\n',
    );
    assert.equal(result.status, 0);
  });

  it('migrate: a 0.3-era file to 0.6.0 → the upgraded file on stdout, the report on stderr, exit 0', async () => {
    const result = await svc(
      'conf',
      'migrate',
      'conf/golden/migrate-0.3.conf',
      '--from',
      '0.3.0',
      '--to',
      '0.6.0',
    );
    expectGolden(result.stdout, 'migrate-0.3.expected.conf');
    expectGolden(result.stderr, 'migrate-0.3.expected-report.txt');
    assert.match(result.stdout, /^svc\.storage\.availableTypes HDD,SSD$/m);
    assert.match(result.stdout, /^# svc\.client\.shuffle\.mapPartition\.split\.enabled true$/m);
    assert.match(result.stderr, /0\.6\.0 {2}svc\.master\.slot\.assign\.extraSlots: 2 → 100/);
    assert.match(result.stderr, /0\.6\.0 {2}svc\.client\.spark\.stageRerun\.enabled: false → true/);
    assert.equal(result.status, 0);
  });

  it('refuses a release that is not one, and a file that does not exist, with exit 2', async () => {
    const badRelease = await svc('conf', 'check', 'conf/golden/check-clean.conf', '--release', 'latest');
    assert.match(badRelease.stderr, /'latest' is not a release/);
    assert.equal(badRelease.status, 2);
    const missing = await svc('conf', 'check', 'conf/golden/no-such-file.conf');
    assert.match(missing.stderr, /no such file/);
    assert.equal(missing.status, 2);
  });
});
