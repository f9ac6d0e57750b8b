// The etcd TLS and credential keys of a master group (svc.master.ha.etcd.ssl.*, .user, .password) on real master
// processes against a real etcd that serves TLS only, asks every client for a certificate signed by its authority,
// and has its authentication on: with all of them a master leads, its election key in etcd under the group's prefix;
// without its credentials, or trusting another authority, it never leads and says why.
import assert from 'node:assert/strict';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { after, before, describe, it } from 'node:test';
import { ServerProcess } from './cluster/server-process.ts';
import { EtcdClient } from './ha/etcd-client.ts';
import { EtcdStore } from './ha/etcd-store.ts';
import { closedPort } from './testing/closed-port.ts';
import {
  enableEtcdAuth,
  etcdctlSkipReason,
  etcdSkipReason,
  startTestEtcd,
  type TestEtcd,
} from './testing/etcd.ts';
import { confArgs, LOOPBACK_MASTER_CONF } from './testing/master-group-processes.ts';
import { generateTestCertificates, type TestCertificates } from './testing/tls-certs.ts';

const USER = { name: 'svc-master', password: 'etcd-secret', prefix: '/svc/' };
const skip = etcdSkipReason ?? etcdctlSkipReason;

if (skip !== undefined) console.log(`# skipping the etcd TLS and authentication tests: ${skip}`);

describe(
  'a master group on an etcd with TLS, client certificates and authentication',
  { skip, timeout: 120_000 },
  () => {
    let dir: string;
    let certs: TestCertificates;
    let etcd: TestEtcd;
    let memberPort: number;
    const started: ServerProcess[] = [];

    before(async () => {
      dir = mkdtempSync(path.join(tmpdir(), 'svc-etcd-security-'));
      // One certificate for localhost serves as etcd's and, signed by the same authority, as the masters' own.
      certs = generateTestCertificates(dir);
      etcd = await startTestEtcd('svc-etcd-security', {
        tls: { certFile: certs.certFile, keyFile: certs.keyFile, clientCaFile: certs.caFile },
      });
      enableEtcdAuth(etcd.etcd, USER, certs);
      memberPort = await closedPort();
    });

    after(async () => {
      for (const server of started) await server.stop();
      await etcd?.close();
      if (dir !== undefined) rmSync(dir, { recursive: true, force: true });
    });

    function master(name: string, conf: readonly string[]): ServerProcess {
      const server = new ServerProcess({
        name,
        logFile: path.join(dir, `${name}.log`),
        args: [
          'master',
          '--log-level',
          'info',
          ...confArgs([
            ...LOOPBACK_MASTER_CONF,
            'svc.master.ha.enabled=true',
            'svc.master.ha.node.id=m1',
            'svc.master.ha.node.m1.host=127.0.0.1',
            `svc.master.ha.node.m1.port=${memberPort}`,
            `svc.master.ha.etcd.endpoints=${etcd.etcd.endpoint}`,
            'raft.client.rpc.request.timeout=3s',
            ...conf,
          ]),
        ],
      });
      started.push(server);
      return server;
    }

    const tlsConf = (caFile: string): string[] => [
      `svc.master.ha.etcd.ssl.caFile=${caFile}`,
      `svc.master.ha.etcd.ssl.certFile=${certs.certFile}`,
      `svc.master.ha.etcd.ssl.keyFile=${certs.keyFile}`,
    ];

    it('without the etcd user, the master never leads and says etcd refused it', async () => {
      const refused = master('master-no-user', tlsConf(certs.caFile));
      const line = await refused.waitForEvent('ha.store.unreachable', 30_000);
      assert.match(String(line.detail), /PERMISSION_DENIED|UNAUTHENTICATED|permission denied|user name/i);
      assert.equal(refused.seen((l) => l.event === 'listening').length, 0, 'it does not lead');
      refused.kill('SIGTERM');
      assert.equal(await refused.exited(), 0, 'a clean exit');
    });

    it('trusting another authority, the master never leads and says the TLS handshake failed', async () => {
      const refused = master('master-other-ca', [
        ...tlsConf(certs.otherCaFile),
        `svc.master.ha.etcd.user=${USER.name}`,
        `svc.master.ha.etcd.password=${USER.password}`,
      ]);
      const line = await refused.waitForEvent('ha.store.unreachable', 30_000);
      assert.match(String(line.detail), /UNAVAILABLE|certificate|handshake|self.signed/i);
      assert.equal(refused.seen((l) => l.event === 'listening').length, 0, 'it does not lead');
      refused.kill('SIGTERM');
      assert.equal(await refused.exited(), 0, 'a clean exit');
    });

    it('with the certificates and the user, the master leads, its election key under the group’s prefix', async () => {
      const leader = master('master-admitted', [
        ...tlsConf(certs.caFile),
        `svc.master.ha.etcd.user=${USER.name}`,
        `svc.master.ha.etcd.password=${USER.password}`,
      ]);
      await leader.waitForEvent('listening', 30_000);
      assert.equal(leader.seen((l) => l.event === 'ha.leading').length, 1, 'one ha.leading line');
      const client = new EtcdClient({
        endpoints: [etcd.etcd.endpoint],
        requestTimeoutMs: 3_000,
        tls: { caFile: certs.caFile, certFile: certs.certFile, keyFile: certs.keyFile },
        user: { name: USER.name, password: USER.password },
      });
      try {
        const election = await new EtcdStore(client).list(`${USER.prefix}master/election/`);
        assert.equal(election.values.length, 1, 'its election key');
      } finally {
        client.close();
      }
    });
  },
);
