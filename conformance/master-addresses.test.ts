// `--master` takes the master's client address, its management address or both (the conformance package's
// `npx @svc-shuffle/conformance --master svc://HOST:PORT`); `--data` stays the client address's older spelling.
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { masterAddresses } from './command.ts';

describe('--master', () => {
  it('takes both addresses, in either order', () => {
    assert.deepEqual(masterAddresses(['svc://m:9097', 'http://m:19098'], undefined), {
      masterUrl: 'http://m:19098',
      dataUrl: 'svc://m:9097',
    });
    assert.deepEqual(masterAddresses(['http://m:19098'], 'rss://m:9097'), {
      masterUrl: 'http://m:19098',
      dataUrl: 'rss://m:9097',
    });
  });

  it('given only the client address, assumes the default management port', () => {
    assert.deepEqual(masterAddresses(['svc://master-1.example.com:9097'], undefined), {
      masterUrl: 'http://master-1.example.com:9098',
      dataUrl: 'svc://master-1.example.com:9097',
    });
  });

  it('refuses no master, two of a kind, and other schemes', () => {
    assert.throws(() => masterAddresses([], undefined), /--master is required/);
    assert.throws(() => masterAddresses(['svc://a:1'], 'svc://b:1'), /one master/);
    assert.throws(() => masterAddresses(['ftp://a:1'], undefined), /expected http/);
  });
});
