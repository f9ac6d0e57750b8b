// The key-effect rows judge behaviour: against honest 0.6.0 servers they pass (a quota refuses, a denied host is
// refused, congestion slows the client), and against servers launched by a wrapper that silently drops those keys
// (the servers start as if they took them and change nothing) each row fails.
import assert from 'node:assert/strict';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { after, before, describe, it } from 'node:test';
import type { RuleRow, Target } from '../report/row.ts';
import { keyEffectsCheck } from './key-effects.ts';

const SVC = path.resolve(import.meta.dirname, '../../bin/svc.mjs');
const RULES = [
  '9.2/behaviour-quota-refusal',
  '3/denied-worker-host-refused',
  '8/congestion-control',
] as const;
/** The settings the ignoring launcher drops: every key whose effect the rows judge. */
const IGNORED = ['svc.quota.', 'svc.master.denyWorkerHostPattern', 'svc.worker.congestionControl.enabled'];

function target(serverCommand: readonly string[], release = '0.6.0'): Target {
  // The rows start servers of their own: the deployment's addresses are never used.
  return { release, masterUrl: 'http://127.0.0.1:1', workerUrls: [], serverCommand };
}

function verdicts(rows: readonly RuleRow[]): Record<string, string> {
  return Object.fromEntries(rows.map((row) => [row.ruleId, row.verdict]));
}

describe('key-effect rows (quota, denied worker host, congestion)', () => {
  let dir: string;
  let ignoring: string;
  before(() => {
    dir = mkdtempSync(path.join(tmpdir(), 'svc-key-effects-test-'));
    ignoring = path.join(dir, 'ignoring-svc.mjs');
    writeFileSync(
      ignoring,
      `import { spawn } from 'node:child_process';
const ignored = ${JSON.stringify(IGNORED)};
const args = process.argv.slice(2);
const dropped = (arg) => ignored.some((prefix) => (arg ?? '').startsWith(prefix));
const kept = args.filter((arg, i) => !dropped(arg) && !(arg === '--conf' && dropped(args[i + 1])));
const child = spawn(process.execPath, [${JSON.stringify(SVC)}, ...kept], { stdio: 'inherit' });
for (const signal of ['SIGTERM', 'SIGINT']) process.on(signal, () => child.kill(signal));
child.on('exit', (code) => process.exit(code ?? 1));
`,
    );
  });
  after(() => {
    rmSync(dir, { recursive: true, force: true });
  });

  it('pass on servers that act on the keys', async () => {
    const rows = await keyEffectsCheck(target([process.execPath, SVC]));
    assert.deepEqual(
      verdicts(rows),
      Object.fromEntries(RULES.map((rule) => [rule, 'pass'])),
      rows.map((row) => `${row.ruleId}: ${row.evidence}`).join('\n'),
    );
    const quota = rows.find((row) => row.ruleId === RULES[0])!;
    assert.match(quota.evidence, /QUOTA_EXCEEDED.*svc\.quota\.user\.diskBytesWritten/);
  });

  it('fail, each of them, on servers that accept the keys and ignore them', async () => {
    const rows = await keyEffectsCheck(target([process.execPath, ignoring]));
    assert.deepEqual(
      verdicts(rows),
      Object.fromEntries(RULES.map((rule) => [rule, 'fail'])),
      rows.map((row) => `${row.ruleId}: ${row.evidence}`).join('\n'),
    );
    const byRule = new Map(rows.map((row) => [row.ruleId, row.evidence]));
    assert.match(byRule.get(RULES[0])!, /none refused: the quota changed nothing/);
    assert.match(byRule.get(RULES[1])!, /1 worker\(s\) listed|after saying it registered/);
    assert.match(byRule.get(RULES[2])!, /slowed down 0 time/);
  });

  it('are not applicable before the keys exist, saying since when', async () => {
    const rows = await keyEffectsCheck(target([process.execPath, SVC], '0.2.0'));
    assert.deepEqual(verdicts(rows), Object.fromEntries(RULES.map((rule) => [rule, 'not-applicable'])));
    for (const row of rows) assert.match(row.evidence, /arrived in 0\.\d\.\d/);
  });
});
