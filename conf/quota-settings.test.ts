// The quota settings a master resolves: limits as the release names them, so that a refusal names the key an
// operator of that release writes (svc.quota.tenant.* before 0.6.0, svc.quota.user.* from 0.6.0).
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { quotaSettingsFrom } from './quota-settings.ts';
import { resolveConfig } from './resolve.ts';

describe('quotaSettingsFrom', () => {
  it('names the per-user limit keys as the release does', () => {
    const at = (release: '0.5.1' | '0.6.0', key: string) => {
      const resolved = resolveConfig({ release, role: 'master', overrides: { [key]: '1' } });
      assert.deepEqual(
        resolved.errors.map((error) => error.message),
        [],
      );
      return quotaSettingsFrom(resolved);
    };
    const old = at('0.5.1', 'svc.quota.tenant.diskBytesWritten');
    assert.equal(old.user.diskBytesWritten, 1);
    assert.equal(old.userKeys?.diskBytesWritten, 'svc.quota.tenant.diskBytesWritten');
    assert.equal(old.userKeys?.diskFileCount, 'svc.quota.tenant.diskFileCount');
    const current = at('0.6.0', 'svc.quota.user.diskBytesWritten');
    assert.equal(current.user.diskBytesWritten, 1);
    assert.equal(current.userKeys?.diskBytesWritten, 'svc.quota.user.diskBytesWritten');
  });
});
