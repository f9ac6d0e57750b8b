// The systemd units (deploy/systemd/) are checked by systemd's own verifier, and for the settings an operator relies
// on: the allocator threshold, the file limit, SIGTERM as the stop signal with a stop timeout longer than the
// worker's graceful shutdown, and a readiness check. The verifier runs against a scratch root holding the package's
// sbin/ where the units expect it, so that it checks their commands exist and are executable.
import assert from 'node:assert/strict';
import { execFile, execFileSync } from 'node:child_process';
import { cpSync, mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { after, before, describe, it } from 'node:test';
import { promisify } from 'node:util';
import { resolveConfig } from '../../conf/index.ts';
import { localPlatform } from '../../runtime/platform.ts';
import { MALLOC_MMAP_THRESHOLD_BYTES, MALLOC_TRIM_THRESHOLD_BYTES } from '../../runtime/process/allocator.ts';

const run = promisify(execFile);
const ROOT = path.resolve(import.meta.dirname, '../..');
const UNITS = ['svc-master.service', 'svc-worker.service'] as const;

function verifierMissing(): string | undefined {
  try {
    execFileSync('systemd-analyze', ['--version'], { stdio: 'ignore' });
    return undefined;
  } catch {
    return 'systemd-analyze is not installed (Debian package systemd; .ci/run installs it)';
  }
}

/** The unit's settings of `section`, key to values (a key may repeat). */
function settings(unit: string, section: string): Map<string, string[]> {
  const out = new Map<string, string[]>();
  let current = '';
  for (const raw of unit.split('\n')) {
    const line = raw.trim();
    if (line.startsWith('#') || line === '') continue;
    if (line.startsWith('[')) {
      current = line.slice(1, -1);
      continue;
    }
    if (current !== section) continue;
    const at = line.indexOf('=');
    const key = line.slice(0, at);
    out.set(key, [...(out.get(key) ?? []), line.slice(at + 1)]);
  }
  return out;
}

const unitText = (name: string): string => readFileSync(path.join(ROOT, 'deploy', 'systemd', name), 'utf8');

describe('the systemd units', { skip: verifierMissing() }, () => {
  let root = '';

  before(() => {
    root = mkdtempSync(path.join(tmpdir(), 'svc-systemd-'));
    cpSync(path.join(ROOT, 'sbin'), path.join(root, 'opt', 'svc', 'sbin'), { recursive: true });
    // systemd's own units (targets the ours are ordered after), copied: a symlink would loop inside the root.
    cpSync('/usr/lib/systemd/system', path.join(root, 'usr', 'lib', 'systemd', 'system'), {
      recursive: true,
      verbatimSymlinks: true,
    });
    mkdirSync(path.join(root, 'etc', 'systemd', 'system'), { recursive: true });
  });

  after(() => rmSync(root, { recursive: true, force: true }));

  /** What the verifier says about `units` (written into the root under their names): its complaints about them. */
  async function verify(units: Record<string, string>): Promise<string[]> {
    for (const [name, text] of Object.entries(units))
      writeFileSync(path.join(root, 'etc', 'systemd', 'system', name), text);
    const names = Object.keys(units);
    const result = await run(
      'systemd-analyze',
      ['verify', `--root=${root}`, ...names.map((name) => `/etc/systemd/system/${name}`)],
      {},
    ).then(
      ({ stderr }) => ({ code: 0, stderr }),
      (error: { code: number; stderr: string }) => error,
    );
    // The verifier warns (exit 0) about a setting it ignores: any line naming one of ours is a complaint.
    const complaints = result.stderr.split('\n').filter((line) => names.some((name) => line.includes(name)));
    if (result.code !== 0) complaints.push(`exit ${result.code}: ${result.stderr}`);
    return complaints;
  }

  it('pass systemd-analyze verify', async () => {
    assert.deepEqual(await verify(Object.fromEntries(UNITS.map((name) => [name, unitText(name)]))), []);
  });

  it('would fail it with a setting systemd does not know (the check can fail)', async () => {
    const broken = unitText('svc-worker.service').replace('Type=exec', 'Type=bogus');
    const complaints = await verify({ 'svc-broken.service': broken });
    assert.ok(
      complaints.some((line) => /service type/.test(line)),
      complaints.join('\n'),
    );
  });

  for (const name of UNITS) {
    it(`${name}: the allocator threshold, file limit, SIGTERM and a readiness check`, () => {
      const service = settings(unitText(name), 'Service');
      assert.ok(
        (service.get('Environment') ?? []).some((value) =>
          value.split(' ').includes(`MALLOC_MMAP_THRESHOLD_=${MALLOC_MMAP_THRESHOLD_BYTES}`),
        ),
        'MALLOC_MMAP_THRESHOLD_',
      );
      assert.ok(
        (service.get('Environment') ?? []).some((value) =>
          value.split(' ').includes(`MALLOC_TRIM_THRESHOLD_=${MALLOC_TRIM_THRESHOLD_BYTES}`),
        ),
        'MALLOC_TRIM_THRESHOLD_',
      );
      assert.ok(Number(service.get('LimitNOFILE')?.[0]) >= 65536, 'LimitNOFILE');
      assert.deepEqual(service.get('KillSignal'), ['SIGTERM']);
      const role = name.includes('worker') ? 'worker' : 'master';
      assert.match(service.get('ExecStart')?.[0] ?? '', new RegExp(`sbin/start-${role}\\.sh$`));
      assert.match(service.get('ExecStartPost')?.[0] ?? '', new RegExp(`svc admin ready ${role}`));
      assert.ok(
        (service.get('Environment') ?? []).some((value) => value.includes('SVC_FOREGROUND=1')),
        'svc runs in the foreground, as systemd expects of Type=exec',
      );
    });
  }

  it("gives the worker a stop timeout longer than its graceful shutdown's", () => {
    const service = settings(unitText('svc-worker.service'), 'Service');
    const stopMs = Number(service.get('TimeoutStopSec')?.[0]) * 1000;
    const defaults = resolveConfig({ role: 'worker', env: {}, platform: localPlatform() });
    const graceful = defaults.getDurationMs('svc.worker.graceful.shutdown.timeout');
    assert.ok(stopMs > graceful, `TimeoutStopSec ${stopMs} ms <= graceful shutdown ${graceful} ms`);
  });
});
