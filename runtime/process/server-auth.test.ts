// A server's internal secret (svc.auth.enabled): from the key or the first line of its file; a server with
// authentication on and no usable secret does not start; TLS off is warned of.
import assert from 'node:assert/strict';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { after, describe, it } from 'node:test';
import { pino } from 'pino';
import { resolveConfig } from '../../conf/index.ts';
import { internalSecret } from './server-auth.ts';
import { ServerConfigError } from './server-config.ts';

const dir = mkdtempSync(path.join(tmpdir(), 'svc-server-auth-'));

function secretOf(overrides: Record<string, string>): { secret: string | undefined; warnings: string[] } {
  const warnings: string[] = [];
  const logger = pino({ level: 'warn' }, { write: (line: string) => warnings.push(line) });
  const conf = resolveConfig({ role: 'master', overrides });
  assert.deepEqual(conf.errors, []);
  return { secret: internalSecret(conf, 'master', logger), warnings };
}

describe('a server’s internal secret', () => {
  after(() => rmSync(dir, { recursive: true, force: true }));

  it('is not read, nor needed, with authentication off', () => {
    assert.deepEqual(secretOf({}), { secret: undefined, warnings: [] });
  });

  it('comes from svc.auth.internal.secret, or the first line of svc.auth.internal.secretFile', () => {
    assert.equal(secretOf({ 'svc.auth.enabled': 'true', 'svc.auth.internal.secret': 's3' }).secret, 's3');
    const file = path.join(dir, 'secret');
    writeFileSync(file, 'from-the-file\nanything else\n', { mode: 0o600 });
    assert.equal(
      secretOf({ 'svc.auth.enabled': 'true', 'svc.auth.internal.secretFile': file }).secret,
      'from-the-file',
    );
  });

  it('stops the server, naming the keys, when it is missing, empty or unreadable', () => {
    assert.throws(
      () => secretOf({ 'svc.auth.enabled': 'true' }),
      (error: unknown) =>
        error instanceof ServerConfigError &&
        /svc\.auth\.internal\.secretFile.*svc\.auth\.internal\.secret/.test(error.message),
    );
    const empty = path.join(dir, 'empty');
    writeFileSync(empty, '\nsecret on the second line\n');
    assert.throws(
      () => secretOf({ 'svc.auth.enabled': 'true', 'svc.auth.internal.secretFile': empty }),
      /first line is empty/,
    );
    assert.throws(
      () =>
        secretOf({ 'svc.auth.enabled': 'true', 'svc.auth.internal.secretFile': path.join(dir, 'missing') }),
      /svc\.auth\.internal\.secretFile .*missing: ENOENT/,
    );
  });

  it('warns when TLS is off, since applications register their secrets in clear', () => {
    const { warnings } = secretOf({ 'svc.auth.enabled': 'true', 'svc.auth.internal.secret': 's' });
    assert.equal(warnings.length, 1);
    assert.match(warnings[0]!, /"event":"auth\.withoutTls".*turn svc\.ssl\.enabled on/);
  });
});
