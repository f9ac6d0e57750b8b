// The suite against deliberately broken servers: a real 0.6.0 cluster behind a proxy that breaks one thing at a
// time, and a server launcher that silently drops a removed key. Each break is caught by the precise row of the
// rule it breaks, and the same checks through the unbroken proxy pass (so the rows fail because of the break).
import assert from 'node:assert/strict';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { after, before, describe, it } from 'node:test';
import { LocalCluster } from '../runtime/cluster/local-cluster.ts';
import { removedRows } from './checks/config.ts';
import { endpointsCheck } from './checks/endpoints.ts';
import { legacyCheck } from './checks/legacy.ts';
import { metricsCheck } from './checks/metrics.ts';
import type { RuleRow, Target } from './report/row.ts';
import { runChecks, type NamedCheck } from './runner.ts';
import { FaultProxy } from './testing/fault-proxy.ts';

const SVC = path.resolve(import.meta.dirname, '../bin/svc.mjs');
const HTTP_CHECKS: NamedCheck[] = [
  { name: 'endpoints', check: endpointsCheck },
  { name: 'legacy', check: legacyCheck },
  { name: 'metrics', check: metricsCheck },
];

function failing(rows: readonly RuleRow[]): string[] {
  return rows.filter((r) => r.verdict === 'fail').map((r) => r.ruleId);
}

function rowOf(rows: readonly RuleRow[], ruleId: string): RuleRow {
  const found = rows.find((r) => r.ruleId === ruleId);
  assert.ok(found, `no row ${ruleId}`);
  return found;
}

describe('the conformance suite against deliberately broken servers', () => {
  let cluster: LocalCluster;
  let master: FaultProxy;
  let worker: FaultProxy;
  let target: Target;

  before(async () => {
    cluster = await LocalCluster.start({ workers: 1, release: '0.6.0' });
    master = await FaultProxy.start(cluster.masterHttpUrl);
    worker = await FaultProxy.start(cluster.workerHttpUrl(0));
    target = { release: '0.6.0', masterUrl: master.url, workerUrls: [worker.url] };
  });

  after(async () => {
    await master?.stop();
    await worker?.stop();
    await cluster?.stop();
  });

  it('passes every HTTP rule through the unbroken proxy', async () => {
    const rows = await runChecks(target, HTTP_CHECKS);
    assert.deepEqual(failing(rows), []);
    assert.ok(
      rows.filter((r) => r.verdict === 'pass').length > 50,
      "rows.filter((r) => r.verdict === 'pass').length > 50",
    );
  });

  it('fails the decommissioningWorkers row when /api/v1/workers lacks the field', async () => {
    master.fault = {
      rewrite: (method, p, answer) => {
        if (p !== '/api/v1/workers') return answer;
        const { decommissioningWorkers: _dropped, ...rest } = JSON.parse(answer.body) as Record<
          string,
          unknown
        >;
        return { ...answer, body: JSON.stringify(rest) };
      },
    };
    try {
      const rows = await runChecks(target, HTTP_CHECKS);
      const row = rowOf(rows, '2/master-workers-field-decommissioningWorkers');
      assert.equal(row.verdict, 'fail');
      assert.match(
        row.evidence,
        /GET http:\/\/127\.0\.0\.1:\d+\/api\/v1\/workers -> 200 application\/json: no field decommissioningWorkers/,
      );
      assert.deepEqual(failing(rows), ['2/master-workers-field-decommissioningWorkers']);
    } finally {
      master.fault = {};
    }
  });

  it('fails the 4.3 row when a 0.6.0 master still serves /listTopDiskUsedApps', async () => {
    master.fault = {
      respond: (method, p) =>
        p === '/listTopDiskUsedApps'
          ? { status: 200, contentType: 'text/plain', body: '=== Top Disk Used Apps ===\n' }
          : undefined,
    };
    try {
      const rows = await runChecks(target, HTTP_CHECKS);
      assert.deepEqual(failing(rows), ['4.3/master-/listTopDiskUsedApps']);
      assert.match(
        rowOf(rows, '4.3/master-/listTopDiskUsedApps').evidence,
        /-> 200 text\/plain: still served at 0\.6\.0/,
      );
    } finally {
      master.fault = {};
    }
  });

  it('fails the rename row when a 0.6.0 worker serves /shuffles, the name it lost in 0.5.0', async () => {
    worker.fault = {
      respond: (method, p) =>
        p === '/shuffles'
          ? { status: 200, contentType: 'text/plain', body: '=== Shuffles ===\n' }
          : undefined,
    };
    try {
      const rows = await runChecks(target, HTTP_CHECKS);
      assert.deepEqual(failing(rows), ['4.4/worker-rename-/shuffles-/shuffle']);
      assert.match(
        rowOf(rows, '4.4/worker-rename-/shuffles-/shuffle').evidence,
        /\/shuffles is served although its name at 0\.6\.0 is \/shuffle/,
      );
    } finally {
      worker.fault = {};
    }
  });

  it('fails the metric row when the master exports LostWorkerCount under its old name LostWorkers', async () => {
    master.fault = {
      rewrite: (method, p, answer) =>
        p === '/metrics/prometheus'
          ? { ...answer, body: answer.body.replaceAll('metrics_LostWorkerCount_', 'metrics_LostWorkers_') }
          : answer,
    };
    try {
      const rows = await runChecks(target, HTTP_CHECKS);
      assert.deepEqual(failing(rows), ['9.4/master-LostWorkerCount']);
      assert.match(rowOf(rows, '9.4/master-LostWorkerCount').evidence, /exports metrics_LostWorkers_\*/);
    } finally {
      master.fault = {};
    }
  });

  it('fails the removed-key row when a server silently accepts a removed key', async () => {
    // A launcher that drops the removed key before starting the real server: the server starts as if it accepted it.
    const dir = mkdtempSync(path.join(tmpdir(), 'svc-conformance-test-'));
    try {
      const launcher = path.join(dir, 'lenient-svc.mjs');
      writeFileSync(
        launcher,
        `import { spawn } from 'node:child_process';
const args = process.argv.slice(2);
const kept = args.filter((arg, i) => !arg.startsWith('svc.worker.userResourceConsumption.') && !(arg === '--conf' && (args[i + 1] ?? '').startsWith('svc.worker.userResourceConsumption.')));
const child = spawn(process.execPath, [${JSON.stringify(SVC)}, ...kept], { stdio: 'inherit' });
for (const signal of ['SIGTERM', 'SIGINT']) process.on(signal, () => child.kill(signal));
child.on('exit', (code) => process.exit(code ?? 1));
`,
      );
      // Only the removed keys' rows: the whole check starts a server per deprecated key too, minutes on a loaded host.
      const honest = await removedRows(target, [process.execPath, SVC], path.join(dir, 'honest'));
      assert.deepEqual(failing(honest), []);
      assert.equal(
        rowOf(honest, '9.2/removed-svc.worker.userResourceConsumption.update.interval').verdict,
        'pass',
      );

      const rows = await removedRows(target, [process.execPath, launcher], path.join(dir, 'lenient'));
      assert.deepEqual(failing(rows), ['9.2/removed-svc.worker.userResourceConsumption.update.interval']);
      assert.match(
        rowOf(rows, '9.2/removed-svc.worker.userResourceConsumption.update.interval').evidence,
        /started and listened .* the removed key was silently accepted/,
      );
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });
});
