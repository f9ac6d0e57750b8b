import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { unprefixedConf } from './engine-prefix.ts';

describe('configuration handed over under an engine’s prefix', () => {
  it('reads <prefix>.svc.* as svc.*, leaves the engine’s own keys out and keeps unprefixed keys', () => {
    const { conf, conflicts } = unprefixedConf(
      {
        'spark.svc.client.spark.shuffle.fallback.policy': 'NEVER',
        'spark.executor.memory': '4g',
        'svc.rpc.askTimeout': '5s',
        'spark.svc.rpc.askTimeout': '5s',
      },
      'spark',
    );
    assert.deepEqual(conf, {
      'svc.client.spark.shuffle.fallback.policy': 'NEVER',
      'svc.rpc.askTimeout': '5s',
    });
    assert.deepEqual(conflicts, [], 'the same value under both names is no conflict');
  });

  it('names a key set under both names to different values', () => {
    const { conflicts } = unprefixedConf(
      { 'svc.rpc.askTimeout': '5s', 'spark.svc.rpc.askTimeout': '6s' },
      'spark',
    );
    assert.deepEqual(conflicts, ['svc.rpc.askTimeout']);
  });
});
