import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import fc from 'fast-check';
import { parseMasterUrl } from './master-url.ts';

describe('master URL', () => {
  it('reads svc://host:port', () => {
    assert.deepEqual(parseMasterUrl('svc://master-1:9097'), { ok: true, host: 'master-1', port: 9097 });
    fc.assert(
      fc.property(fc.domain(), fc.integer({ min: 1, max: 65535 }), (host, port) => {
        assert.deepEqual(parseMasterUrl(`svc://${host}:${port}`), { ok: true, host, port });
      }),
    );
  });

  it('refuses rss:// from 0.3.0 with a message naming 0.3.0 and the URL to write', () => {
    const refused = parseMasterUrl('rss://master-1:9097', '0.3.0');
    assert.equal(refused.ok, false);
    const message = refused.ok ? '' : refused.message;
    assert.match(message, /scheme is svc:\/\/ since 0\.3\.0/);
    assert.match(message, /write svc:\/\/master-1:9097/);
  });

  it('takes rss:// before 0.3.0, as that release did', () => {
    assert.deepEqual(parseMasterUrl('rss://m:9097', '0.2.1'), { ok: true, host: 'm', port: 9097 });
    assert.equal(parseMasterUrl('svc://m:9097', '0.2.1').ok, false);
  });

  it('refuses anything that is not scheme://host:port, saying the form', () => {
    for (const text of ['master-1:9097', 'svc://master-1', 'svc://m:0', 'svc://m:70000', 'http://m:1']) {
      const parsed = parseMasterUrl(text);
      assert.equal(parsed.ok, false, text);
    }
    const parsed = parseMasterUrl('master-1:9097');
    assert.match(parsed.ok ? '' : parsed.message, /expected svc:\/\/<master-host>:<master-port>/);
  });
});
