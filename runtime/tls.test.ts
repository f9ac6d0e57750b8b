// TLS on real processes (svc.ssl.*): a whole shuffle with replication over TLS on every port, the management
// interface over HTTPS with the key's passphrase hidden, and peers that cannot speak to a TLS port (a plaintext
// client, a client that does not trust the certificate) refused with a logged reason while the cluster keeps serving.
import assert from 'node:assert/strict';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { request as httpRequest } from 'node:http';
import { request as httpsRequest } from 'node:https';
import { connect } from 'node:net';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { after, before, describe, it } from 'node:test';
import { startApplication } from './client/application.ts';
import { SvcClientError } from './client/errors.ts';
import { LocalCluster } from './cluster/local-cluster.ts';
import { ServerProcess } from './cluster/server-process.ts';
import { generateTestCertificates, type TestCertificates } from './testing/tls-certs.ts';
import { runVerifiedJob, type SmallJob } from './testing/small-job.ts';
import { encodeHello } from './wire/index.ts';

const JOB: SmallJob = { maps: 3, partitions: 4, recordsPerPartition: 20 };

/** GET over HTTPS, trusting `ca`; resolves with the status and body. */
function httpsGet(port: number, urlPath: string, ca: Buffer): Promise<{ status: number; text: string }> {
  return new Promise((resolve, reject) => {
    const outgoing = httpsRequest(
      { host: '127.0.0.1', port, path: urlPath, method: 'GET', ca, agent: false, timeout: 10_000 },
      (response) => {
        const chunks: Buffer[] = [];
        response.on('data', (chunk: Buffer) => chunks.push(chunk));
        response.on('end', () =>
          resolve({ status: response.statusCode ?? 0, text: Buffer.concat(chunks).toString('utf8') }),
        );
        response.on('error', reject);
      },
    );
    outgoing.on('timeout', () => outgoing.destroy(new Error(`GET ${urlPath}: no answer`)));
    outgoing.on('error', reject);
    outgoing.end();
  });
}

/** A plain-HTTP GET; rejects when the server closes without an HTTP answer. */
function httpGet(port: number, urlPath: string): Promise<number> {
  return new Promise((resolve, reject) => {
    const outgoing = httpRequest(
      { host: '127.0.0.1', port, path: urlPath, method: 'GET', agent: false, timeout: 10_000 },
      (response) => {
        response.resume();
        resolve(response.statusCode ?? 0);
      },
    );
    outgoing.on('timeout', () => outgoing.destroy(new Error(`GET ${urlPath}: no answer`)));
    outgoing.on('error', reject);
    outgoing.end();
  });
}

/** Sends a plaintext svc hello to `port`; resolves with the bytes received before the server closed. */
function plaintextHello(port: number): Promise<Buffer> {
  return new Promise((resolve, reject) => {
    const received: Buffer[] = [];
    const socket = connect({ host: '127.0.0.1', port }, () =>
      socket.write(encodeHello({ role: 'client', release: '0.6.0', nodeId: 'plaintext-client' })),
    );
    socket.on('data', (chunk: Buffer) => received.push(chunk));
    socket.on('error', () => undefined);
    socket.on('close', () => resolve(Buffer.concat(received)));
    socket.setTimeout(20_000, () => reject(new Error(`port ${port} kept a plaintext connection open`)));
  });
}

describe('the TLS suites without openssl', () => {
  it('fail, naming the package to install, instead of skipping', () => {
    const dir = mkdtempSync(path.join(tmpdir(), 'svc-tls-missing-'));
    try {
      assert.throws(
        () => generateTestCertificates(dir, { openssl: 'openssl-not-installed-here' }),
        /openssl-not-installed-here is not installed: .*fail without it.*apt-get install -y openssl/,
      );
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });
});

describe('TLS on every port', () => {
  let dir: string;
  let certs: TestCertificates;
  let cluster: LocalCluster;
  let clientTls: Record<string, string>;

  before(async () => {
    dir = mkdtempSync(path.join(tmpdir(), 'svc-tls-'));
    certs = generateTestCertificates(dir, { keyPassword: 'test-key-passphrase' });
    const ssl = [
      'svc.ssl.enabled=true',
      `svc.ssl.certFile=${certs.certFile}`,
      `svc.ssl.keyFile=${certs.keyFile}`,
      `svc.ssl.keyPassword=${certs.keyPassword ?? ''}`,
      `svc.ssl.caFile=${certs.caFile}`,
    ];
    cluster = await LocalCluster.start({
      workers: 2,
      conf: ssl,
      masterConf: ['svc.master.http.ssl.enabled=true'],
      workerConf: ['svc.worker.http.ssl.enabled=true'],
    });
    // The application's lifecycle manager listens too (for its executors): it presents the same certificate.
    clientTls = Object.fromEntries(ssl.map((setting) => setting.split('=', 2) as [string, string]));
  });

  after(async () => {
    await cluster?.stop();
    if (dir !== undefined) rmSync(dir, { recursive: true, force: true });
  });

  it('runs a whole shuffle, replicated, over TLS', async () => {
    await runVerifiedJob(cluster.masterUrl, JOB, {
      conf: { ...clientTls, 'svc.client.push.replicate.enabled': 'true' },
    });
  });

  it('serves the management interface over HTTPS only, the key’s passphrase hidden', async () => {
    const ca = readFileSync(certs.caFile);
    const conf = await httpsGet(cluster.masterHttpPort, '/api/v1/conf', ca);
    assert.equal(conf.status, 200, conf.text);
    const configs = (JSON.parse(conf.text) as { configs: { name: string; value: string }[] }).configs;
    assert.deepEqual(
      configs.find((setting) => setting.name === 'svc.ssl.keyPassword'),
      { name: 'svc.ssl.keyPassword', value: '******' },
    );
    assert.ok(!conf.text.includes(certs.keyPassword!), 'the passphrase never appears');
    const worker = await httpsGet(cluster.workerHttpPorts[0]!, '/api/v1/workers', ca);
    assert.equal(worker.status, 200, worker.text);

    const seen = cluster.master.lineCount;
    await assert.rejects(httpGet(cluster.masterHttpPort, '/api/v1/conf'));
    const refused = await cluster.master.waitFor(
      (line) => line.event === 'http.tlsRefused',
      'the refused plain-HTTP request',
      seen,
    );
    assert.match(String(refused.msg), /not HTTPS/);
  });

  it('refuses a plaintext peer with a logged reason and keeps serving', async () => {
    const seen = cluster.master.lineCount;
    const answer = await plaintextHello(cluster.masterPort);
    assert.equal(answer.length, 0, 'a plaintext hello gets no svc answer');
    const refused = await cluster.master.waitFor(
      (line) => line.event === 'transport.tlsRefused',
      'the refused plaintext connection',
      seen,
    );
    assert.equal(refused.service, 'rpc');
    assert.match(String(refused.reason), /does not speak TLS.*svc\.ssl\.enabled/);

    // A client library without TLS: the master never answers it, and says why in its log.
    await assert.rejects(
      startApplication({
        master: cluster.masterUrl,
        conf: { 'svc.rpc.askTimeout': '1s' },
        logLevel: 'silent',
      }),
      (error: unknown) => {
        assert.ok(error instanceof SvcClientError, String(error));
        assert.match(error.message, /could not reach the master/);
        // The peer closed the plaintext hello: the error says to turn TLS on.
        assert.match(error.message, /The last connection failed: .*svc\.ssl\.enabled=true/);
        return true;
      },
    );
    assert.ok(
      cluster.master.running && cluster.workers.every((worker) => worker.running),
      'cluster.master.running && cluster.workers.every((worker) => worker.running)',
    );
    await runVerifiedJob(cluster.masterUrl, JOB, { conf: clientTls });
  });

  it('refuses a client that does not trust the certificate', async () => {
    await assert.rejects(
      startApplication({
        master: cluster.masterUrl,
        conf: { ...clientTls, 'svc.ssl.caFile': certs.otherCaFile, 'svc.rpc.askTimeout': '1s' },
        logLevel: 'silent',
      }),
      /could not reach the master.*The last connection failed: .*certificate/,
    );
    assert.ok(cluster.master.running, 'cluster.master.running');
  });

  it('refuses to start a server with TLS on and no certificate, naming the keys', async () => {
    const master = new ServerProcess({
      name: 'master-without-certificate',
      args: [
        'master',
        ...[
          'svc.ssl.enabled=true',
          'svc.master.host=127.0.0.1',
          'svc.master.port=0',
          `svc.master.state.dir=${path.join(dir, 'state-without-certificate')}`,
        ].flatMap((setting) => ['--conf', setting]),
      ],
      logFile: path.join(dir, 'master-without-certificate.log'),
    });
    const code = await master.waitForExit();
    assert.notEqual(code, 0);
    assert.match(
      master.stderr.join('\n'),
      /svc\.ssl\.enabled is on: a master needs svc\.ssl\.certFile and svc\.ssl\.keyFile/,
    );
  });
});
