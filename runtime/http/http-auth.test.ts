// Authentication of the management interface on a running master and worker (svc.<role>.http.auth.*): for a read
// and a mutating endpoint, no credentials, wrong ones, a user who is not an administrator and an administrator, with
// basic and bearer credentials from files and from the configuration; secrets hidden in /api/v1/conf, /conf, the
// configuration shown by `svc conf show` and the logs; a scheme without credentials refused at start.
import assert from 'node:assert/strict';
import { chmodSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { after, before, describe, it } from 'node:test';
import { resolveConfig } from '../../conf/index.ts';
import { parseWorkerKey } from '../../core/domain/index.ts';
import { LocalCluster } from '../cluster/local-cluster.ts';
import { ServerProcess } from '../cluster/server-process.ts';
import { hashPassword, hashToken } from './auth.ts';
import { send, type RawResponse } from './testing/http-client.ts';

// Every secret of the test, to look for where it must not appear.
const SECRETS = {
  readerPassword: 'reader-pw-5e1f',
  adminPassword: 'admin-pw-9c2d',
  opsToken: 'ops-token-0b7a61d2',
  viewerToken: 'viewer-token-44c3e8',
} as const;

type Credentials = Readonly<Record<string, string>>;

const basic = (user: string, password: string): Credentials => ({
  authorization: `Basic ${Buffer.from(`${user}:${password}`).toString('base64')}`,
});
const bearer = (token: string): Credentials => ({ authorization: `Bearer ${token}` });

const NOBODY: Credentials = {};
const READER = basic('reader', SECRETS.readerPassword);
const ADMIN = basic('admin', SECRETS.adminPassword);
const VIEWER = bearer(SECRETS.viewerToken);
const OPS = bearer(SECRETS.opsToken);

function get(base: string, urlPath: string, credentials: Credentials): Promise<RawResponse> {
  return send(base, {
    method: 'GET',
    path: urlPath,
    headers: { accept: 'application/json', ...credentials },
  });
}

function post(base: string, urlPath: string, body: unknown, credentials: Credentials): Promise<RawResponse> {
  return send(base, {
    method: 'POST',
    path: urlPath,
    headers: { 'content-type': 'application/json', ...credentials },
    body: JSON.stringify(body),
  });
}

function message(response: RawResponse): string {
  return (response.json as { message?: string } | undefined)?.message ?? response.text;
}

function assertUnauthorized(response: RawResponse, role: string, pattern: RegExp): void {
  assert.equal(response.status, 401, response.text);
  assert.match(message(response), pattern);
  const challenge = String(response.headers['www-authenticate']);
  assert.match(challenge, new RegExp(`Basic realm="svc ${role}"`), challenge);
  assert.match(challenge, new RegExp(`Bearer realm="svc ${role}"`), challenge);
}

function assertForbidden(response: RawResponse, role: string, who: string): void {
  assert.equal(response.status, 403, response.text);
  assert.deepEqual(Object.keys(response.json as object), ['message']);
  assert.match(
    message(response),
    new RegExp(`needs an administrator \\(svc\\.${role}\\.http\\.auth\\.administers\\); ${who} is not one`),
  );
}

/** The settings of one role: BASIC and BEARER, admin (basic) and ops (bearer) administer. */
function authConf(role: 'master' | 'worker', dir: string): string[] {
  const prefix = `svc.${role}.http.auth`;
  const settings = [`${prefix}.supportedSchemes=BASIC,BEARER`, `${prefix}.administers=admin,ops`];
  if (role === 'master') {
    // Users from a file (the administrator's password hashed), tokens in the configuration (a secret key).
    const users = path.join(dir, 'master-users');
    writeFileSync(
      users,
      `# user:password\nreader:${SECRETS.readerPassword}\nadmin:${hashPassword(SECRETS.adminPassword)}\n`,
      { mode: 0o600 },
    );
    return [
      ...settings,
      `${prefix}.basic.file=${users}`,
      `${prefix}.bearer.tokens=ops:${SECRETS.opsToken},viewer:${SECRETS.viewerToken}`,
    ];
  }
  // Users in the configuration (a secret key), tokens from a file (one hashed), left readable by others.
  const tokens = path.join(dir, 'worker-tokens');
  writeFileSync(tokens, `ops:${hashToken(SECRETS.opsToken)}\n\nviewer:${SECRETS.viewerToken}\n`);
  chmodSync(tokens, 0o644);
  return [
    ...settings,
    `${prefix}.basic.users=reader:${SECRETS.readerPassword},admin:${SECRETS.adminPassword}`,
    `${prefix}.bearer.file=${tokens}`,
  ];
}

describe('authentication of the management interface', () => {
  let cluster: LocalCluster;
  let dir: string;
  let master: string;
  let worker: string;

  before(async () => {
    dir = mkdtempSync(path.join(tmpdir(), 'svc-http-auth-'));
    cluster = await LocalCluster.start({
      workers: 1,
      masterConf: authConf('master', dir),
      workerConf: authConf('worker', dir),
    });
    master = cluster.masterHttpUrl;
    worker = cluster.workerHttpUrl(0);
  });

  after(async () => {
    await cluster?.stop();
    if (dir !== undefined) rmSync(dir, { recursive: true, force: true });
  });

  for (const role of ['master', 'worker'] as const) {
    const base = (): string => (role === 'master' ? master : worker);
    const read = '/api/v1/workers';

    it(`${role}: refuses a read without credentials or with wrong ones (401, WWW-Authenticate)`, async () => {
      assertUnauthorized(await get(base(), read, NOBODY), role, /authentication required.*Basic.*Bearer/);
      assertUnauthorized(
        await get(base(), read, basic('reader', 'wrong')),
        role,
        /Basic credentials are not valid/,
      );
      assertUnauthorized(
        await get(base(), read, basic('nobody', 'x')),
        role,
        /Basic credentials are not valid/,
      );
      const badToken = await get(base(), read, bearer('not-a-token'));
      assertUnauthorized(badToken, role, /Bearer token is not valid/);
      assert.match(String(badToken.headers['www-authenticate']), /error="invalid_token"/);
      assertUnauthorized(
        await get(base(), read, { authorization: 'Digest username="reader"' }),
        role,
        /uses Digest; this .* accepts Basic .* or Bearer/,
      );
      assertUnauthorized(
        await get(base(), read, { authorization: 'Basic !!!' }),
        role,
        /not the base64 of user:password/,
      );
      // Every path, unknown and legacy ones included: nothing is told to a caller who is not authenticated.
      assert.equal((await get(base(), '/api/v1/no-such-path', NOBODY)).status, 401);
      assert.equal((await get(base(), '/conf', NOBODY)).status, 401);
      assert.equal((await get(base(), '/openapi.json', NOBODY)).status, 401);
    });

    it(`${role}: its OpenAPI document names exactly the schemes it accepts`, async () => {
      const response = await get(base(), '/openapi.json', READER);
      assert.equal(response.status, 200, response.text);
      const document = response.json as {
        security: unknown[];
        components: { securitySchemes: Record<string, { scheme: string }> };
      };
      assert.deepEqual(document.security, [{ basicAuth: [] }, { bearerAuth: [] }]);
      assert.equal(document.components.securitySchemes.basicAuth?.scheme, 'basic');
      assert.equal(document.components.securitySchemes.bearerAuth?.scheme, 'bearer');
    });

    it(`${role}: lets any authenticated user read, basic or bearer`, async () => {
      for (const credentials of [READER, ADMIN, VIEWER, OPS]) {
        const response = await get(base(), read, credentials);
        assert.equal(response.status, 200, response.text);
      }
      const legacy = await send(base(), { method: 'GET', path: '/conf', headers: VIEWER });
      assert.equal(legacy.status, 200, legacy.text);
    });

    it(`${role}: hides the secret keys' values in /api/v1/conf and /conf`, async () => {
      const response = await get(base(), '/api/v1/conf', READER);
      assert.equal(response.status, 200, response.text);
      const configs = (response.json as { configs: { name: string; value: string }[] }).configs;
      const secretKey =
        role === 'master' ? 'svc.master.http.auth.bearer.tokens' : 'svc.worker.http.auth.basic.users';
      assert.deepEqual(
        configs.find((setting) => setting.name === secretKey),
        { name: secretKey, value: '******' },
      );
      const legacy = await send(base(), { method: 'GET', path: '/conf', headers: READER });
      assert.match(legacy.text, new RegExp(`${secretKey.replaceAll('.', '\\.')}.*\\*{6}`));
      for (const secret of Object.values(SECRETS)) {
        assert.ok(!response.text.includes(secret), `/api/v1/conf shows a secret`);
        assert.ok(!legacy.text.includes(secret), `/conf shows a secret`);
      }
    });
  }

  it('master: a mutation needs an administrator (403 naming the key), and an administrator may', async () => {
    const id = parseWorkerKey(cluster.workerIds[0]!);
    const exclude = '/api/v1/workers/exclude';
    assertUnauthorized(
      await post(master, exclude, { add: [id] }, NOBODY),
      'master',
      /authentication required/,
    );
    assertUnauthorized(
      await post(master, exclude, { add: [id] }, basic('admin', 'wrong')),
      'master',
      /not valid/,
    );
    assertForbidden(await post(master, exclude, { add: [id] }, READER), 'master', 'reader');
    assertForbidden(await post(master, exclude, { add: [id] }, VIEWER), 'master', 'viewer');
    // The legacy command too (a form POST at 0.6.0).
    const legacy = await send(master, {
      method: 'POST',
      path: '/exclude',
      headers: { 'content-type': 'application/x-www-form-urlencoded', ...READER },
      body: `add=${cluster.workerIds[0]!}`,
    });
    assertForbidden(legacy, 'master', 'reader');

    const added = await post(master, exclude, { add: [id] }, ADMIN);
    assert.equal(added.status, 200, added.text);
    assert.equal((added.json as { success: boolean }).success, true, added.text);
    const removed = await post(master, exclude, { remove: [id] }, OPS);
    assert.equal(removed.status, 200, removed.text);
    assert.equal((removed.json as { success: boolean }).success, true, removed.text);
    const workers = await get(master, '/api/v1/workers', VIEWER);
    assert.deepEqual((workers.json as { excludedWorkers: unknown[] }).excludedWorkers, []);
  });

  it('worker: exit needs an administrator, and an administrator may make the worker exit', async () => {
    const exit = '/api/v1/workers/exit';
    assertUnauthorized(await post(worker, exit, { type: 'IMMEDIATELY' }, NOBODY), 'worker', /required/);
    assertUnauthorized(await post(worker, exit, { type: 'IMMEDIATELY' }, bearer('x')), 'worker', /not valid/);
    assertForbidden(await post(worker, exit, { type: 'IMMEDIATELY' }, READER), 'worker', 'reader');
    assertForbidden(await post(worker, exit, { type: 'IMMEDIATELY' }, VIEWER), 'worker', 'viewer');
    assert.ok(cluster.workers[0]!.running, 'refused requests changed nothing');
    // An administrator's request gets through to the machine (here with a body it checks: 400, not 401 or 403).
    const invalid = await post(worker, exit, { type: 'SOMETIMES' }, OPS);
    assert.equal(invalid.status, 400, invalid.text);

    const answer = await post(worker, exit, { type: 'IMMEDIATELY' }, ADMIN);
    assert.equal(answer.status, 200, answer.text);
    assert.equal((answer.json as { success: boolean }).success, true, answer.text);
    assert.notEqual(await cluster.workers[0]!.waitForExit(), null);
  });

  it('logs refusals without a secret, and warns of a token file others can read', () => {
    const refusals = cluster.master.seen(
      (line) => line.event === 'http.unauthorized' || line.event === 'http.forbidden',
    );
    assert.ok(
      refusals.some((line) => line.event === 'http.forbidden' && line.user === 'reader'),
      "refusals.some((line) => line.event === 'http.forbidden' && line.user === 'reader')",
    );
    assert.ok(
      refusals.some((line) => line.event === 'http.unauthorized' && line.scheme === 'Bearer'),
      "refusals.some((line) => line.event === 'http.unauthorized' && line.scheme === 'Bearer')",
    );
    for (const server of [cluster.master, cluster.workers[0]!]) {
      const everything = JSON.stringify(server.seen(() => true));
      for (const secret of Object.values(SECRETS)) {
        assert.ok(!everything.includes(secret), `${server.options.name} logged a secret`);
      }
    }
    const readable = cluster.workers[0]!.seen((line) => line.event === 'http.authFileReadable');
    assert.equal(readable.length, 1);
    assert.match(String(readable[0]!.msg), /chmod 600/);
    assert.equal(cluster.master.seen((line) => line.event === 'http.authFileReadable').length, 0);
  });

  it('shows the secret keys as ****** in `svc conf show`', () => {
    const conf = resolveConfig({
      role: 'master',
      overrides: {
        'svc.master.http.auth.bearer.tokens': `ops:${SECRETS.opsToken}`,
        'svc.master.http.auth.basic.users': `reader:${SECRETS.readerPassword}`,
        'svc.ssl.keyPassword': 'key-passphrase',
      },
    });
    const shown = new Map(conf.show().map((setting) => [setting.key, setting.value]));
    assert.equal(shown.get('svc.master.http.auth.bearer.tokens'), '******');
    assert.equal(shown.get('svc.master.http.auth.basic.users'), '******');
    assert.equal(shown.get('svc.ssl.keyPassword'), '******');
  });

  it('refuses to start a master that accepts BASIC with no user, naming the keys', async () => {
    const server = new ServerProcess({
      name: 'master-without-users',
      args: [
        'master',
        ...[
          'svc.master.host=127.0.0.1',
          'svc.master.port=0',
          'svc.master.http.host=127.0.0.1',
          'svc.master.http.port=0',
          `svc.master.state.dir=${path.join(dir, 'state-without-users')}`,
          'svc.master.http.auth.supportedSchemes=BASIC',
        ].flatMap((setting) => ['--conf', setting]),
      ],
      logFile: path.join(dir, 'master-without-users.log'),
    });
    assert.equal(await server.waitForExit(), 2);
    assert.match(
      server.stderr.join('\n'),
      /svc\.master\.http\.auth\.supportedSchemes accepts BASIC but no user is defined: set svc\.master\.http\.auth\.basic\.file/,
    );
  });
});
