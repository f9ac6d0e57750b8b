import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import fc from 'fast-check';
import { parseProperties, splitSetting } from './properties.ts';
import { substituteEnv } from './substitution.ts';

describe('properties files', () => {
  it('reads key value, key=value and key: value, skipping comments and blank lines', () => {
    const text = [
      '# a comment',
      '! also a comment',
      '',
      'svc.master.port 9097',
      'svc.master.host=master-1',
      '  svc.metrics.extraLabels  =  zone=a,rack=r1  ',
      'svc.master.ha.enabled: true',
      'svc.tags.tagsExpr',
      '= 5',
    ].join('\n');
    const parsed = parseProperties(text);
    assert.deepEqual(parsed.settings, [
      { key: 'svc.master.port', value: '9097', line: 4 },
      { key: 'svc.master.host', value: 'master-1', line: 5 },
      { key: 'svc.metrics.extraLabels', value: 'zone=a,rack=r1', line: 6 },
      { key: 'svc.master.ha.enabled', value: 'true', line: 7 },
      { key: 'svc.tags.tagsExpr', value: '', line: 8 },
    ]);
    assert.deepEqual(parsed.malformed, [{ line: 9, text: '= 5' }]);
  });

  it('accepts CRLF line ends and keeps line numbers', () => {
    const parsed = parseProperties('a 1\r\n\r\nb 2\r\n');
    assert.deepEqual(
      parsed.settings.map((setting) => [setting.key, setting.value, setting.line]),
      [
        ['a', '1', 1],
        ['b', '2', 3],
      ],
    );
  });

  it('splits any key and value written with any separator back into the same pair', () => {
    const key = fc.stringMatching(/^[a-zA-Z][a-zA-Z0-9._-]{0,30}$/);
    // As in Java properties, a value cannot start with = or : (that character would be read as the separator).
    const value = fc.stringMatching(/^[^\s=:]([^\n]*[^\s])?$/);
    fc.assert(
      fc.property(key, value, fc.constantFrom(' ', '=', ' = ', ':', '\t'), (k, v, separator) => {
        assert.deepEqual(splitSetting(`${k}${separator}${v}`), { key: k, value: v });
      }),
    );
  });
});

describe('${env:VAR} substitution', () => {
  it('replaces references from the environment map', () => {
    assert.deepEqual(substituteEnv('${env:DISK}/shuffle,${env:DISK}/b', { DISK: '/mnt/a' }), {
      ok: true,
      value: '/mnt/a/shuffle,/mnt/a/b',
    });
    assert.deepEqual(substituteEnv('plain', {}), { ok: true, value: 'plain' });
  });

  it('refuses a variable that is not set and any other reference form, naming them', () => {
    const missing = substituteEnv('${env:NOPE}', {});
    assert.equal(missing.ok, false);
    assert.match(missing.ok ? '' : missing.message, /NOPE, which is not set/);
    const other = substituteEnv('${svc.master.host}', {});
    assert.equal(other.ok, false);
    assert.match(other.ok ? '' : other.message, /not a reference svc understands/);
  });
});
