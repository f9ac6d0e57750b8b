import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { checkConfigText } from './check.ts';
import { formatNoEffectNotice, noEffectWarning } from './no-effect.ts';
import { notImplementedYet } from './registry/spec.ts';
import { resolveConfig } from './resolve.ts';

describe('keys svc accepts but does not act on', () => {
  it('are listed as set, with the file line; a key that takes effect is not', () => {
    const conf = resolveConfig({
      fileText: 'svc.cluster.name east\nsvc.master.port 9097\nsvc.ha.master.enabled false\n',
      fileName: 'm.conf',
    });
    // svc.master.ha.enabled (set here under its deprecated name) runs a master group now: no notice.
    assert.deepEqual(
      conf.settingsWithoutEffect.map((setting) => [setting.key, setting.where]),
      [['svc.cluster.name', { kind: 'file', file: 'm.conf', line: 1 }]],
    );
    assert.equal(
      formatNoEffectNotice(conf.settingsWithoutEffect[0]!),
      'm.conf:1: notice: svc.cluster.name is accepted for compatibility, no effect in svc: svc keeps nothing in a ' +
        'store shared between clusters, so nothing is named after one',
    );
    assert.match(
      formatNoEffectNotice({
        key: 'svc.example.key',
        where: { kind: 'file', file: 'm.conf', line: 3 },
        effect: notImplementedYet('not built', 'issue 99'),
      }),
      /^m\.conf:3: notice: svc\.example\.key is not implemented yet, accepted and ignored \(issue 99\): not built$/,
    );
  });

  it('leave out a key that does not exist at the release (setting it is an error of its own)', () => {
    const text = 'svc.client.shuffle.mapPartition.split.enabled true\n';
    assert.equal(resolveConfig({ fileText: text }).settingsWithoutEffect.length, 0);
    assert.equal(resolveConfig({ fileText: text, release: '0.5.0' }).settingsWithoutEffect.length, 1);
  });

  it('make one warning line for a server, each key once, and none when no such key is set', () => {
    const conf = resolveConfig({
      fileText: 'svc.rpc.io.serverThreads 8\nsvc.push.io.serverThreads 8\n',
      overrides: { 'svc.rpc.io.serverThreads': '4' },
    });
    const line = noEffectWarning(conf) ?? '';
    assert.ok(!line.includes('\n'), "!line.includes('\\n')");
    assert.match(
      line,
      /^configuration sets 2 keys svc accepts but does not act on: svc\.rpc\.io\.serverThreads \(/,
    );
    assert.equal(line.split('svc.rpc.io.serverThreads').length - 1, 1);
    assert.equal(noEffectWarning(resolveConfig({ fileText: 'svc.master.port 9097\n' })), undefined);
  });

  it('are notices in `svc conf check`, in line order, counted apart from errors and warnings', () => {
    const report = checkConfigText('svc.cluster.name east\nsvc.master.port abc\n', { fileName: 'm.conf' });
    assert.equal(report.errorCount, 1);
    assert.equal(report.warningCount, 0);
    assert.equal(report.withoutEffect.length, 1);
    assert.match(report.lines[0] ?? '', /^m\.conf:1: notice: svc\.cluster\.name /);
    assert.match(report.lines[1] ?? '', /^m\.conf:2: error: /);
    assert.equal(
      report.lines[2],
      'm.conf: 1 error, 0 warnings as of release 0.6.0; 1 key set with no effect in svc',
    );
  });
});
