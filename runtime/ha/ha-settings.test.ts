import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { DEFAULT_HA_TIMING, timingProblems } from '../../core/ha/timing.ts';
import { resolveConfig } from '../../conf/resolve.ts';
import { haSettingsFrom } from './ha-settings.ts';

const GROUP = {
  'svc.master.ha.enabled': 'true',
  'svc.master.ha.node.id': 'm2',
  'svc.master.ha.node.m1.host': 'master-1',
  'svc.master.ha.node.m2.host': 'master-2',
  'svc.master.ha.node.m2.port': '19097',
  'svc.master.ha.etcd.endpoints': 'etcd-1:2379,etcd-2:2379',
};

describe('the high-availability settings', () => {
  it('reads the members, the etcd endpoints and maps the raft.client.rpc timeouts to the etcd client', () => {
    const conf = resolveConfig({
      role: 'master',
      overrides: { ...GROUP, 'raft.client.rpc.request.timeout': '4s' },
    });
    assert.deepEqual(conf.errors, []);
    const settings = haSettingsFrom(conf);
    assert.equal(settings.enabled, true);
    assert.equal(settings.nodeId, 'm2');
    assert.deepEqual(settings.members, [
      { id: 'm1', host: 'master-1', port: 9097, internalPort: 8097 },
      { id: 'm2', host: 'master-2', port: 19097, internalPort: 8097 },
    ]);
    assert.deepEqual(settings.etcd.endpoints, ['etcd-1:2379', 'etcd-2:2379']);
    assert.equal(settings.etcd.requestTimeoutMs, 4000);
    // The contract's default for the watch timeout at this release.
    assert.equal(settings.etcd.watchTimeoutMs, 20_000);
    assert.equal(settings.keyPrefix, '/svc/');
  });

  it('takes TLS and credentials for etcd, and refuses halves of a pair', () => {
    const conf = resolveConfig({
      role: 'master',
      overrides: {
        ...GROUP,
        'svc.master.ha.etcd.ssl.caFile': '/etc/svc/etcd-ca.pem',
        'svc.master.ha.etcd.user': 'svc',
        'svc.master.ha.etcd.password': 'secret',
      },
    });
    const settings = haSettingsFrom(conf);
    assert.deepEqual(settings.etcd.tls, { caFile: '/etc/svc/etcd-ca.pem' });
    assert.deepEqual(settings.etcd.user, { name: 'svc', password: 'secret' });
    assert.equal(
      new Map(conf.show().map((s) => [s.key, s.value])).get('svc.master.ha.etcd.password'),
      '******',
    );
    const half = resolveConfig({
      role: 'master',
      overrides: { ...GROUP, 'svc.master.ha.etcd.ssl.certFile': '/etc/svc/master.pem' },
    });
    assert.throws(() => haSettingsFrom(half), /ssl.certFile and svc.master.ha.etcd.ssl.keyFile go together/);
  });

  it('refuses a group without etcd endpoints, or whose node id names no member', () => {
    const { 'svc.master.ha.etcd.endpoints': _endpoints, ...withoutEtcd } = GROUP;
    assert.throws(
      () => haSettingsFrom(resolveConfig({ role: 'master', overrides: withoutEtcd })),
      /svc.master.ha.etcd.endpoints names no etcd member/,
    );
    assert.throws(
      () =>
        haSettingsFrom(
          resolveConfig({ role: 'master', overrides: { ...GROUP, 'svc.master.ha.node.id': 'm9' } }),
        ),
      /must name one of the members .*m1, m2/,
    );
  });

  it('takes the lease, its renewal and the campaign retry from the keys, and refuses a lease too short to lead on', () => {
    assert.deepEqual(
      haSettingsFrom(resolveConfig({ role: 'master', overrides: GROUP })).timing,
      DEFAULT_HA_TIMING,
    );
    const short = haSettingsFrom(
      resolveConfig({
        role: 'master',
        overrides: {
          ...GROUP,
          'svc.master.ha.lease.timeout': '4s',
          'svc.master.ha.lease.renew.interval': '500ms',
          'svc.master.ha.campaign.retry.interval': '1s',
        },
      }),
    ).timing;
    assert.deepEqual(
      { ...short },
      {
        leaseTtlMs: 4000,
        keepAliveIntervalMs: 500,
        campaignRetryMs: 1000,
        clockDrift: 0.01,
        stepDownMarginMs: 500,
      },
    );
    assert.deepEqual(timingProblems(short), []);
    assert.throws(
      () =>
        haSettingsFrom(
          resolveConfig({
            role: 'master',
            overrides: {
              ...GROUP,
              'svc.master.ha.lease.timeout': '4s',
              'svc.master.ha.lease.renew.interval': '3s',
            },
          }),
        ),
      /cannot keep a leader: the lease \(4000 ms\) leaves a leader .*\(svc.master.ha.lease.timeout/,
    );
  });

  it('is off by default and needs nothing then', () => {
    const settings = haSettingsFrom(resolveConfig({ role: 'master' }));
    assert.equal(settings.enabled, false);
    assert.equal(settings.nodeId, undefined);
    assert.deepEqual(settings.members, []);
  });
});
