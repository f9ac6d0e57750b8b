import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { topDiskUsedAppsQuery } from '../../core/release/prometheus.ts';
import { METRIC_CATALOGUE, seriesFamilies } from './catalogue.ts';
import { statfsDevices } from './devices.ts';

const root = path.resolve(import.meta.dirname, '../..');
const doc = readFileSync(path.join(root, 'docs/metrics.md'), 'utf8');
const dashboard = JSON.parse(readFileSync(path.join(root, 'docs/grafana-dashboard.json'), 'utf8')) as {
  panels: { type: string; title: string; targets?: { expr: string }[] }[];
};

/** The section of docs/metrics.md under a `## ` heading. */
function section(heading: string): string {
  const start = doc.indexOf(`\n## ${heading}\n`);
  assert.ok(start >= 0, `docs/metrics.md has a section ${heading}`);
  const end = doc.indexOf('\n## ', start + 1);
  return doc.slice(start, end < 0 ? undefined : end);
}

describe('docs/metrics.md', () => {
  it('lists every metric of the catalogue in its role’s table, with its kind', () => {
    for (const spec of METRIC_CATALOGUE) {
      const table =
        spec.source === 'process'
          ? section('Process (master and worker)')
          : section(spec.role === 'master' ? 'Master' : 'Worker');
      const row = table.split('\n').find((line) => line.startsWith(`| ${spec.name} |`));
      assert.ok(row !== undefined, `${spec.role} ${spec.name} is documented`);
      if (spec.source !== 'process') assert.ok(row.startsWith(`| ${spec.name} | ${spec.kind} |`), row);
    }
  });

  it('gives the section 4.3 query exactly as topDiskUsedAppsQuery() writes it', () => {
    assert.ok(doc.includes(topDiskUsedAppsQuery()), 'doc.includes(topDiskUsedAppsQuery())');
  });
});

describe('docs/grafana-dashboard.json', () => {
  const rendered = new Set(
    METRIC_CATALOGUE.flatMap((spec) =>
      seriesFamilies(spec.role, '0.6.0', spec.name, spec.kind).map((family) => family.name),
    ),
  );
  const exprs = dashboard.panels.flatMap((panel) => (panel.targets ?? []).map((target) => target.expr));

  it('queries only series svc renders', () => {
    assert.ok(exprs.length > 10, 'exprs.length > 10');
    for (const expr of exprs) {
      const names = expr.match(/metrics_\w+/g) ?? [];
      assert.ok(names.length > 0, expr);
      for (const name of names) assert.ok(rendered.has(name), `${name} in ${expr}`);
    }
  });

  it('ranks the top applications with the section 4.3 query', () => {
    assert.ok(exprs.includes(topDiskUsedAppsQuery()), 'exprs.includes(topDiskUsedAppsQuery())');
  });

  it('shows what the issue asks for', () => {
    const all = exprs.join('\n');
    for (const name of [
      'metrics_WorkerCount_Value',
      'metrics_LostWorkerCount_Value',
      'metrics_PrimaryPushDataSize_Count',
      'metrics_FetchChunkSize_Count',
      'metrics_FlushDataTime_99thPercentile',
      'metrics_FetchChunkTime_99thPercentile',
      'metrics_MemoryFileStorageSize_Value',
      'metrics_DeviceOSFreeBytes_Value',
      'metrics_DeviceOSTotalBytes_Value',
    ]) {
      assert.ok(all.includes(name), name);
    }
  });
});

describe('statfsDevices', () => {
  it('reads the filesystem of each disk directory and leaves out one it cannot read', async () => {
    const dir = mkdtempSync(path.join(tmpdir(), 'svc-metrics-'));
    try {
      const devices = await statfsDevices([
        { mountPoint: '/mnt/a', dir },
        { mountPoint: '/mnt/gone', dir: path.join(dir, 'missing') },
      ])();
      assert.equal(devices.length, 1);
      const [device] = devices;
      assert.equal(device!.mountPoint, '/mnt/a');
      assert.ok(device!.totalBytes > 0, 'device!.totalBytes > 0');
      assert.ok(
        device!.freeBytes >= 0 && device!.freeBytes <= device!.totalBytes,
        'device!.freeBytes >= 0 && device!.freeBytes <= device!.totalBytes',
      );
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });
});
