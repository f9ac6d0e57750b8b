import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import fc from 'fast-check';
import { masterEndpoints, parseMasterUrl, parseMasterUrls } from './master-url.ts';
import { resolveConfig } from './resolve.ts';

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

describe('the master URL of a high-availability group', () => {
  it('reads svc://h1:p1,h2:p2,h3:p3 in order, and a single master as a group of one', () => {
    assert.deepEqual(parseMasterUrls('svc://m1:9097,m2:9098,10.0.0.3:9097'), {
      ok: true,
      masters: [
        { host: 'm1', port: 9097 },
        { host: 'm2', port: 9098 },
        { host: '10.0.0.3', port: 9097 },
      ],
    });
    assert.deepEqual(parseMasterUrls('svc://m1:9097'), { ok: true, masters: [{ host: 'm1', port: 9097 }] });
  });

  it('refuses an address without a port, a duplicate, or the scheme of another release, naming the address', () => {
    const noPort = parseMasterUrls('svc://m1:9097,m2');
    assert.match(noPort.ok ? '' : noPort.message, /'svc:\/\/m2' is not a master URL/);
    const twice = parseMasterUrls('svc://m1:9097,m1:9097');
    assert.match(twice.ok ? '' : twice.message, /names m1:9097 twice/);
    const old = parseMasterUrls('rss://m1:9097,m2:9097');
    assert.match(old.ok ? '' : old.message, /scheme is svc:\/\/ since 0\.3\.0/);
    assert.equal(parseMasterUrls('m1:9097,m2:9097').ok, false, 'no scheme');
  });
});

describe('the masters a worker or client talks to', () => {
  const worker = (fileText = '') => resolveConfig({ role: 'worker', fileText });
  it('takes a given URL of a group, with or without the scheme', () => {
    const group = [
      { host: 'h1', port: 1 },
      { host: 'h2', port: 2 },
    ];
    assert.deepEqual(masterEndpoints(worker(), 'svc://h1:1,h2:2'), { ok: true, masters: group });
    assert.deepEqual(masterEndpoints(worker(), 'h1:1,h2:2'), { ok: true, masters: group });
  });
  it('else every entry of svc.master.endpoints', () => {
    assert.deepEqual(masterEndpoints(worker('svc.master.endpoints h1:1,h2:2,h3:3\n'), undefined), {
      ok: true,
      masters: [
        { host: 'h1', port: 1 },
        { host: 'h2', port: 2 },
        { host: 'h3', port: 3 },
      ],
    });
  });
});
