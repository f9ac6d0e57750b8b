// Application authentication (svc.auth.enabled) on real processes: a whole replicated shuffle with every connection
// proven; an application without its secret, or with another's, refused on every port; a connection that proved
// application A refused by the core for anything about B's shuffle, B's files intact; a peer posing as a worker
// without the internal secret refused on the replicate port; the master's check of a first registration's proof.
import assert from 'node:assert/strict';
import { createHash } from 'node:crypto';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { after, before, describe, it } from 'node:test';
import type { StatusCode } from '../core/domain/status.ts';
import type { Message } from '../core/protocol/messages.ts';
import { startApplication, type Application } from './client/application.ts';
import { AuthenticationFailedError } from './client/errors.ts';
import { connectExecutor } from './client/shuffle-client.ts';
import { clientAuthConf, LocalCluster } from './cluster/local-cluster.ts';
import { ServerProcess } from './cluster/server-process.ts';
import { AuthProbe, type ProbeIdentity, type ProbeOutcome } from './testing/auth-probe.ts';
import { within } from './testing/deadline.ts';
import { filesUnder } from './testing/files-under.ts';
import { generateTestCertificates } from './testing/tls-certs.ts';
import {
  clientSide,
  readAndVerify,
  runVerifiedJob,
  winnersOf,
  writeMaps,
  type SmallJob,
} from './testing/small-job.ts';

const JOB: SmallJob = { maps: 3, partitions: 4, recordsPerPartition: 20 };
const AUTH = { ...clientAuthConf(), 'svc.client.push.replicate.enabled': 'true' };

/** Every file under `dir` with a digest of its bytes. */
function digestsUnder(dir: string): Map<string, string> {
  return new Map(
    filesUnder(dir).map((file) => [file, createHash('sha256').update(readFileSync(file)).digest('hex')]),
  );
}

function assertStatus(outcome: ProbeOutcome, status: StatusCode, what: string): string {
  const message =
    outcome.kind === 'refused'
      ? outcome.message
      : outcome.kind === 'reply' && outcome.message.type === 'StatusResponse'
        ? outcome.message.message
        : undefined;
  const got =
    outcome.kind === 'refused'
      ? outcome.status
      : outcome.kind === 'reply' && outcome.message.type === 'StatusResponse'
        ? outcome.message.status
        : undefined;
  assert.equal(got, status, `${what}: ${JSON.stringify(outcome)}`);
  return message ?? '';
}

/** The sum of a server's AuthenticationFailCount series, from its Prometheus endpoint. */
async function authenticationFailures(httpUrl: string): Promise<number> {
  const text = await (await fetch(`${httpUrl}/metrics/prometheus`)).text();
  return text
    .split('\n')
    .filter((line) => line.startsWith('metrics_AuthenticationFailCount_Count'))
    .reduce((sum, line) => sum + Number(line.slice(line.lastIndexOf(' ') + 1)), 0);
}

describe('application authentication on real processes', () => {
  let cluster: LocalCluster;
  let appA: Application;
  let appB: Application;

  before(async () => {
    cluster = await LocalCluster.start({ workers: 2, auth: true });
    appA = await startApplication({ master: cluster.masterUrl, conf: AUTH, logLevel: 'silent' });
    appB = await startApplication({ master: cluster.masterUrl, conf: AUTH, logLevel: 'silent' });
  });
  after(async () => {
    await appA?.close();
    await appB?.close();
    await cluster?.stop();
  });

  /** Every port of the cluster, with the node id behind it. */
  const ports = (): { name: string; port: number; node: string }[] => {
    const worker = cluster.workerIds[0]!;
    const [, rpc, push, fetch, replicate] = worker.split(':').map(Number);
    return [
      { name: 'master rpc', port: cluster.masterPort, node: 'master-0' },
      { name: 'worker rpc', port: rpc!, node: worker },
      { name: 'worker push', port: push!, node: worker },
      { name: 'worker fetch', port: fetch!, node: worker },
      { name: 'worker replicate', port: replicate!, node: worker },
    ];
  };

  /** Asks `message` of each port as `identity`, on a fresh connection each. */
  async function askEveryPort(identity: ProbeIdentity, message: Message): Promise<ProbeOutcome[]> {
    const outcomes: ProbeOutcome[] = [];
    for (const { port, node } of ports()) {
      const probe = new AuthProbe(identity);
      try {
        outcomes.push(await probe.ask(port, node, `map-${identity.application ?? 'x'}-0-0-0`, message));
      } finally {
        await probe.close();
      }
    }
    return outcomes;
  }

  it('runs a whole replicated shuffle with every connection proven', async () => {
    await runVerifiedJob(cluster.masterUrl, JOB, { conf: AUTH });
    for (const server of [cluster.master, ...cluster.workers]) {
      const refused = server.seen((line) => String(line.event).endsWith('authentication.refused'));
      assert.deepEqual(refused, [], `${server.options.name} refused nothing of the job`);
    }
  });

  it('refuses an application without its secret, or with another’s, on every port', async () => {
    const request: Message = {
      type: 'ApplicationHeartbeat',
      appId: appA.appId,
      bytesWritten: 0,
      fileCount: 0,
    };
    const withoutSecret = await askEveryPort(
      { role: 'client', nodeId: 'no-secret', application: appA.appId },
      request,
    );
    const withB = await askEveryPort(
      { role: 'client', nodeId: 'b-secret', application: appA.appId, secret: appB.secret! },
      request,
    );
    const unnamed = await askEveryPort(
      { role: 'client', nodeId: 'anonymous', secret: appA.secret! },
      request,
    );
    ports().forEach(({ name }, i) => {
      assert.match(
        assertStatus(withoutSecret[i]!, 'AUTHENTICATION_FAILED', `${name} without a secret`),
        /requires authentication \(svc\.auth\.enabled\)/,
      );
      assert.match(
        assertStatus(withB[i]!, 'AUTHENTICATION_FAILED', `${name} with B's secret`),
        new RegExp(`did not prove application ${appA.appId}’s secret`),
      );
      assert.match(
        assertStatus(unnamed[i]!, 'AUTHENTICATION_FAILED', `${name} naming no application`),
        /names no application/,
      );
    });
    // Refusals at the handshake are counted with the core's: B's secret and no application, on each port.
    assert.ok(
      (await authenticationFailures(cluster.masterHttpUrl)) >= 2,
      '(await authenticationFailures(cluster.masterHttpUrl)) >= 2',
    );
    assert.ok(
      (await authenticationFailures(cluster.workerHttpUrl(0))) >= 8,
      '(await authenticationFailures(cluster.workerHttpUrl(0))) >= 8',
    );

    // The client library says the same through its own errors.
    await assert.rejects(
      startApplication({ master: cluster.masterUrl, logLevel: 'silent' }),
      (error: unknown) =>
        error instanceof AuthenticationFailedError && /svc\.auth\.enabled=true/.test(error.message),
    );
    assert.throws(
      () => connectExecutor({ lifecycleManager: appA.lifecycleManager, appId: appA.appId, conf: AUTH }),
      /no application secret/,
    );
    const impostor = connectExecutor({
      lifecycleManager: appA.lifecycleManager,
      appId: appA.appId,
      conf: AUTH,
      secret: appB.secret!,
      logLevel: 'silent',
    });
    try {
      const writer = impostor.shuffle(7, { maps: 1, partitions: 1 }).writer(0);
      writer.write(0, new Uint8Array(8));
      await assert.rejects(
        writer.close(),
        (error: unknown) =>
          error instanceof AuthenticationFailedError && /did not prove application/.test(error.message),
      );
      await assert.rejects(
        impostor.shuffle(7, { maps: 1, partitions: 1 }).read(0),
        (error: unknown) =>
          error instanceof AuthenticationFailedError && /did not prove application/.test(error.message),
      );
    } finally {
      await impostor.close();
    }
    assert.ok(
      cluster.master.running && cluster.workers.every((worker) => worker.running),
      'cluster.master.running && cluster.workers.every((worker) => worker.running)',
    );
  });

  it('refuses a connection proven as A everything about B’s shuffle, and B’s files stay intact', async () => {
    const b = await clientSide(cluster.masterUrl, { conf: AUTH });
    try {
      const winners = winnersOf(await writeMaps(b.executor, 0, JOB));
      await readAndVerify(b.executor, 0, JOB, winners);
      const disks = cluster.workerIds.map((_, i) => path.join(cluster.dir, `worker-${i}`, 'disk-1'));
      const before = disks.map(digestsUnder);
      assert.ok(
        before.some((files) => files.size > 0),
        'B has files on the workers',
      );

      const key = `${b.app.appId}-0`;
      const asA: ProbeIdentity = {
        role: 'client',
        nodeId: 'executor-of-a',
        application: appA.appId,
        secret: appA.secret!,
      };
      const ids = Array.from({ length: JOB.partitions }, (_, p) => `${p}-0`);
      const attacks: { service: 'rpc' | 'push' | 'fetch'; message: Message }[] = [
        {
          service: 'rpc',
          message: {
            type: 'ReserveSlots',
            appId: b.app.appId,
            shuffleId: 0,
            primaries: [],
            replicas: [],
            splitThreshold: 1 << 20,
            splitMode: 'SOFT',
            memoryEnabled: false,
          },
        },
        {
          service: 'push',
          message: {
            type: 'PushData',
            shuffleKey: key,
            mode: 'PRIMARY',
            partitionId: 0,
            epoch: 0,
            mapId: 0,
            attemptId: 0,
            batchId: 99,
            payload: new Uint8Array(64),
          },
        },
        {
          service: 'fetch',
          message: { type: 'OpenStream', shuffleKey: key, uniqueId: '0-0', mode: 'PRIMARY' },
        },
        {
          service: 'rpc',
          message: {
            type: 'CommitFiles',
            appId: b.app.appId,
            shuffleId: 0,
            primaryIds: ids,
            replicaIds: ids,
            mapAttempts: [0, 0, 0],
          },
        },
        {
          service: 'rpc',
          message: {
            type: 'DestroySlots',
            appId: b.app.appId,
            shuffleId: 0,
            primaryIds: ids,
            replicaIds: ids,
          },
        },
      ];
      const probe = new AuthProbe(asA);
      try {
        for (const worker of cluster.workerIds) {
          const [, rpc, push, fetch] = worker.split(':').map(Number);
          const port = { rpc: rpc!, push: push!, fetch: fetch! };
          for (const { service, message } of attacks) {
            const outcome = await probe.ask(port[service], worker, `map-${appA.appId}-0-0-0`, message);
            assert.match(
              assertStatus(outcome, 'AUTHENTICATION_FAILED', `${message.type} to ${worker}`),
              new RegExp(
                `only application ${b.app.appId} may ask this, and the connection proved application ${appA.appId}`,
              ),
            );
          }
        }
        // Nor may A release B's shuffle at the master.
        const unregister = await probe.ask(cluster.masterPort, 'master-0', `driver-${appA.appId}`, {
          type: 'UnregisterShuffle',
          appId: b.app.appId,
          shuffleId: 0,
        });
        assertStatus(unregister, 'AUTHENTICATION_FAILED', 'UnregisterShuffle of B');
      } finally {
        await probe.close();
      }
      assert.deepEqual(disks.map(digestsUnder), before, 'B’s files, byte for byte');
      await readAndVerify(b.executor, 0, JOB, winners);
    } finally {
      await b.close();
    }
  });

  it('refuses a peer posing as a worker without the internal secret on the replicate port', async () => {
    const worker = cluster.workerIds[1]!;
    const replicate = Number(worker.split(':')[4]);
    const push: Message = {
      type: 'PushData',
      shuffleKey: `${appA.appId}-0`,
      mode: 'REPLICA',
      partitionId: 0,
      epoch: 0,
      mapId: 0,
      attemptId: 0,
      batchId: 0,
      payload: new Uint8Array(64),
    };
    const impostor = new AuthProbe({ role: 'worker', nodeId: '127.0.0.1:1:2:3:4', secret: 'a-guess' });
    try {
      const outcome = await impostor.ask(replicate, worker, '127.0.0.1:1:2:3:4', push);
      assert.match(
        assertStatus(outcome, 'AUTHENTICATION_FAILED', 'a worker without the internal secret'),
        /did not prove the cluster’s internal secret.*svc\.auth\.internal\.secret/,
      );
    } finally {
      await impostor.close();
    }
    // An application's connection may not push as a replica either (only a server may): the core refuses it.
    const asA = new AuthProbe({ role: 'client', nodeId: 'a', application: appA.appId, secret: appA.secret! });
    try {
      const outcome = await asA.ask(replicate, worker, `map-${appA.appId}-0-0-0`, push);
      assert.match(
        assertStatus(outcome, 'AUTHENTICATION_FAILED', 'a replica push from an application'),
        /only a server of the cluster may send this/,
      );
    } finally {
      await asA.close();
    }
  });

  it('checks a first registration’s proof once the master knows the secret', async () => {
    const appId = `app-probe-${process.pid}`;
    const heartbeat: Message = { type: 'ApplicationHeartbeat', appId, bytesWritten: 0, fileCount: 0 };
    const lm = new AuthProbe({ role: 'client', nodeId: `lm-${appId}`, application: appId, secret: 'first' });
    const liar = new AuthProbe({ role: 'client', nodeId: 'liar', application: appId, secret: 'second' });
    try {
      // Both connect before the application exists: each is accepted, proving nothing yet.
      assertStatus(
        await liar.ask(cluster.masterPort, 'master-0', `map-${appId}-0-0-1`, heartbeat),
        'AUTHENTICATION_FAILED',
        'a request before registration',
      );
      const registered = await lm.ask(cluster.masterPort, 'master-0', `lm-${appId}`, {
        type: 'RegisterApplication',
        appId,
        user: 'probe',
        secret: 'first',
      });
      assertStatus(registered, 'SUCCESS', 'the first registration');
      // The registering connection's proof matches the secret it registered: it is the application now.
      const proven = await lm.ask(cluster.masterPort, 'master-0', `lm-${appId}`, heartbeat);
      assert.equal(proven.kind === 'reply' && proven.message.type, 'ApplicationHeartbeatResponse');

      // The other early connection proved another secret: closed at its next envelope, which is not handled.
      const seen = cluster.master.lineCount;
      const unanswered = liar.ask(cluster.masterPort, 'master-0', `map-${appId}-0-0-1`, heartbeat);
      const closed = await cluster.master.waitFor(
        (line) => line.event === 'transport.connectionClosed' && /checked once/.test(String(line.reason)),
        'the liar’s connection closed',
        seen,
      );
      assert.match(String(closed.reason), new RegExp(`did not prove application ${appId}’s secret`));
      await liar.close();
      // Never answered: the probe either sees its connection closed under the request (sendFailed) or gives up on it.
      assert.ok(['noAnswer', 'sendFailed'].includes((await unanswered).kind), 'the envelope was not handled');

      // A new connection claiming the application with another secret is refused at the handshake.
      const late = new AuthProbe({ role: 'client', nodeId: 'late', application: appId, secret: 'second' });
      try {
        assertStatus(
          await late.ask(cluster.masterPort, 'master-0', `map-${appId}-0-0-2`, heartbeat),
          'AUTHENTICATION_FAILED',
          'a new connection with another secret',
        );
      } finally {
        await late.close();
      }
      assertStatus(
        await lm.ask(cluster.masterPort, 'master-0', `lm-${appId}`, { type: 'UnregisterApplication', appId }),
        'SUCCESS',
        'the application unregisters',
      );
    } finally {
      await lm.close();
      await liar.close();
    }
  });

  it('an application registered again under its id with a new secret is checked against the new one', async () => {
    // Workers cache the first secret; after the application is gone and back with another, their cached secret no
    // longer matches and they ask the master once more.
    const appId = `app-again-${process.pid}`;
    // (Another shuffle id the second time: the workers delete the first one's files only at their next heartbeat.)
    for (const [shuffleId, secret] of [
      [0, 'first-secret'],
      [1, 'second-secret'],
    ] as const) {
      const app = await startApplication({
        master: cluster.masterUrl,
        appId,
        secret,
        conf: AUTH,
        logLevel: 'silent',
      });
      const executor = connectExecutor({
        lifecycleManager: app.lifecycleManager,
        appId,
        secret,
        conf: AUTH,
        logLevel: 'silent',
      });
      try {
        const winners = winnersOf(await writeMaps(executor, shuffleId, JOB));
        await readAndVerify(executor, shuffleId, JOB, winners);
      } finally {
        await executor.close();
        await app.close();
      }
    }
  });

  it('refuses to start a server with authentication on and no internal secret', async () => {
    const master = new ServerProcess({
      name: 'master-without-secret',
      args: [
        'master',
        ...[
          'svc.auth.enabled=true',
          'svc.master.host=127.0.0.1',
          'svc.master.port=0',
          `svc.master.state.dir=${path.join(cluster.dir, 'state-without-secret')}`,
        ].flatMap((setting) => ['--conf', setting]),
      ],
      logFile: path.join(cluster.dir, 'logs', 'master-without-secret.log'),
    });
    const code = await within(master.exited(), 'the master without a secret to exit').finally(() =>
      master.stop(),
    );
    assert.notEqual(code, 0);
    assert.match(
      master.stderr.join('\n'),
      /svc\.auth\.enabled is on: a master needs the cluster's internal secret.*svc\.auth\.internal\.secretFile/,
    );
  });
});

// As operators should run it: authentication with TLS, so that the registered secret never crosses the network in
// clear.
describe('application authentication over TLS', () => {
  let dir: string;
  let cluster: LocalCluster;
  let ssl: Record<string, string>;

  before(async () => {
    dir = mkdtempSync(path.join(tmpdir(), 'svc-auth-tls-'));
    const certs = generateTestCertificates(dir, {});
    ssl = {
      'svc.ssl.enabled': 'true',
      'svc.ssl.certFile': certs.certFile,
      'svc.ssl.keyFile': certs.keyFile,
      'svc.ssl.caFile': certs.caFile,
    };
    cluster = await LocalCluster.start({
      workers: 2,
      auth: true,
      conf: Object.entries(ssl).map(([key, value]) => `${key}=${value}`),
    });
  });
  after(async () => {
    await cluster?.stop();
    if (dir !== undefined) rmSync(dir, { recursive: true, force: true });
  });

  it('runs a whole replicated shuffle, no server warning of secrets in clear', async () => {
    await runVerifiedJob(cluster.masterUrl, JOB, { conf: { ...AUTH, ...ssl } });
    for (const server of [cluster.master, ...cluster.workers]) {
      assert.deepEqual(
        server.seen((line) => line.event === 'auth.withoutTls'),
        [],
        server.options.name,
      );
      assert.deepEqual(
        server.seen((line) => String(line.event).endsWith('authentication.refused')),
        [],
        server.options.name,
      );
    }
  });
});
