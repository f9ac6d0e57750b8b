// The dynamic configuration's refresher on a real file: a good file is applied once per change, a bad one keeps the
// last good values and is reported once, and an empty read after a good file (a rewrite in place caught between its
// truncate and its write) does not lift every limit.
import assert from 'node:assert/strict';
import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { Writable } from 'node:stream';
import { describe, it } from 'node:test';
import type { DynamicConfig } from '../../conf/dynamic.ts';
import { resolveConfig } from '../../conf/resolve.ts';
import { createLogger } from '../log.ts';
import { DynamicConfigRefresher } from './dynamic-config.ts';

interface Harness {
  readonly file: string;
  readonly refresher: DynamicConfigRefresher<number>;
  /** The number of users in each configuration applied, in order. */
  readonly applied: number[];
  readonly events: () => Record<string, unknown>[];
}

function harness(): Harness {
  const file = path.join(mkdtempSync(path.join(tmpdir(), 'svc-dynamic-')), 'dynamicConfig.yaml');
  const lines: Record<string, unknown>[] = [];
  const sink = new Writable({
    write(chunk: Buffer, _encoding, done) {
      for (const text of chunk.toString('utf8').split('\n'))
        if (text !== '') lines.push(JSON.parse(text) as Record<string, unknown>);
      done();
    },
  });
  const conf = resolveConfig({ role: 'master', overrides: { 'svc.dynamicConfig.store.backend': 'FS' } });
  const applied: number[] = [];
  const usersOf = (config: DynamicConfig): number =>
    [...config.tenants.values()].reduce((sum, tenant) => sum + tenant.users.size, 0);
  const refresher = new DynamicConfigRefresher(conf, file, createLogger('debug', {}, sink), {
    resolve: usersOf,
    apply: (users) => Promise.resolve(applied.push(users)),
  });
  return { file, refresher, applied, events: () => lines };
}

function users(...names: string[]): string {
  const lines = ['- level: TENANT', '  tenantId: t', '  users:'];
  for (const name of names)
    lines.push(`    - name: ${name}`, '      config:', '        svc.quota.user.diskBytesWritten: 1');
  return `${lines.join('\n')}\n`;
}

const eventsNamed = (h: Harness, event: string): Record<string, unknown>[] =>
  h.events().filter((line) => line.event === event);

describe('the dynamic configuration refresher', () => {
  it('applies a changed file once, and not again while it stays the same', async () => {
    const h = harness();
    writeFileSync(h.file, users('alice'));
    await h.refresher.refresh();
    await h.refresher.refresh();
    writeFileSync(h.file, users('alice', 'bob'));
    await h.refresher.refresh();
    assert.deepEqual(h.applied, [1, 2]);
    assert.equal(eventsNamed(h, 'dynamicConfig.loaded').length, 2);
  });

  it('keeps the last good values for an empty read after a good file, reports it once, and takes [] to clear', async () => {
    const h = harness();
    writeFileSync(h.file, users('alice', 'bob'));
    await h.refresher.refresh();
    writeFileSync(h.file, '');
    await h.refresher.refresh();
    await h.refresher.refresh();
    assert.deepEqual(h.applied, [2], 'the empty read is not applied');
    const rejected = eventsNamed(h, 'dynamicConfig.rejected');
    assert.equal(rejected.length, 1, 'one report for the empty file');
    assert.match(String(rejected[0]?.reason), /is empty.*`\[\]`/);
    writeFileSync(h.file, '[]\n');
    await h.refresher.refresh();
    assert.deepEqual(h.applied, [2, 0], '[] clears every value');
    // Once the good file is empty by intent, an empty read is nothing new.
    writeFileSync(h.file, '');
    await h.refresher.refresh();
    assert.deepEqual(h.applied, [2, 0]);
    assert.equal(eventsNamed(h, 'dynamicConfig.rejected').length, 1);
  });

  it('takes an empty file that was never preceded by a good one as no values', async () => {
    const h = harness();
    writeFileSync(h.file, '');
    await h.refresher.refresh();
    assert.deepEqual(h.applied, [0]);
    assert.deepEqual(eventsNamed(h, 'dynamicConfig.rejected'), []);
  });
});
