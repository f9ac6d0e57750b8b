// Password checks (scrypt) are bounded: while as many as allowed wait, a further Basic request is answered 429 with
// Retry-After at once instead of joining an unbounded queue that would delay every caller, and an administrator
// whose password passed before is still served (a remembered password needs no scrypt). The checks here are held
// back by a gate the test opens, so that the queue is full for as long as the test says.
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { scrypt as scryptCallback } from 'node:crypto';
import { BoundedQueue, hashPassword, HttpAuth, type Verifier } from './auth.ts';
import { masterApi } from './master-api.ts';
import { buildManagementServer } from './server.ts';
import { confAt, masterStateAt, StubDriver } from './testing/fixtures.ts';
import { within } from '../testing/deadline.ts';

const PASSWORD = 'admin-pw-3f1c';
const SCRYPT = { N: 16384, r: 8, p: 1, maxmem: 64 * 1024 * 1024 } as const;

function realScrypt(password: string, salt: Buffer, length: number): Promise<Buffer> {
  return new Promise((resolve, reject) =>
    scryptCallback(password, salt, length, SCRYPT, (error, key) =>
      error === null ? resolve(key) : reject(error),
    ),
  );
}

function verifierOf(hashed: string): Verifier {
  const [salt, hash] = hashed.slice('$scrypt$'.length).split('$');
  return { kind: 'scrypt', salt: Buffer.from(salt!, 'base64'), hash: Buffer.from(hash!, 'base64') };
}

const basic = (user: string, password: string): string =>
  `Basic ${Buffer.from(`${user}:${password}`).toString('base64')}`;

describe('password checks of the management interface', () => {
  it('answer 429 with Retry-After past the bound, and serve again once the checks drained', async () => {
    let gateOpen = false;
    const held: (() => void)[] = [];
    const started: string[] = [];
    let checkStarted: () => void = () => undefined;
    const auth = new HttpAuth({
      role: 'master',
      release: '0.6.0',
      schemes: ['BASIC'],
      users: new Map([['admin', verifierOf(hashPassword(PASSWORD))]]),
      tokens: [],
      administers: ['admin'],
      maxPendingPasswordChecks: 1,
      scrypt: async (password, salt, length) => {
        started.push(password);
        checkStarted();
        if (!gateOpen) await new Promise<void>((resolve) => held.push(resolve));
        return realScrypt(password, salt, length);
      },
    });
    const conf = confAt('master', '0.6.0');
    const api = masterApi({
      driver: new StubDriver(masterStateAt(conf)),
      conf,
      self: { nodeId: 'master-0', rpcAddress: '127.0.0.1:9097' },
    });
    const app = await buildManagementServer({ api, auth });
    const get = (authorization: string) =>
      app.inject({ method: 'GET', url: '/api/v1/workers', headers: { authorization } });
    /** Sends a request and resolves once its password check has started (its answer still to come). */
    const oneCheckRunning = async <T>(send: () => Promise<T>): Promise<{ answer: Promise<T> }> => {
      const running = new Promise<void>((resolve) => (checkStarted = resolve));
      const answer = send();
      await within(running, 'the password check to start');
      return { answer };
    };
    try {
      // A wrong password fills the queue, and stays there until the gate opens.
      const filling = await oneCheckRunning(() => get(basic('nobody', 'guess-1')));
      const flood = await Promise.all([1, 2, 3, 4].map((i) => get(basic('admin', `flood-${i}`))));
      for (const response of flood) {
        assert.equal(response.statusCode, 429, response.body);
        assert.ok(
          Number(response.headers['retry-after']) >= 1,
          `Retry-After: ${response.headers['retry-after']}`,
        );
        assert.match(
          response.json<{ message: string }>().message,
          /too many password checks are waiting \(1\)/,
        );
      }
      assert.equal(started.includes('flood-1'), false, 'a refused request costs no scrypt');
      gateOpen = true;
      for (const release of held.splice(0)) release();
      assert.equal((await filling.answer).statusCode, 401);

      // Drained: the administrator is checked and served; once remembered, a full queue does not stop them.
      assert.equal((await get(basic('admin', PASSWORD))).statusCode, 200);
      gateOpen = false;
      const refilling = await oneCheckRunning(() => get(basic('admin', 'guess-3')));
      assert.equal((await get(basic('admin', 'guess-4'))).statusCode, 429, 'full again');
      assert.equal(
        (await get(basic('admin', PASSWORD))).statusCode,
        200,
        'a remembered password needs no check',
      );
      gateOpen = true;
      for (const release of held.splice(0)) release();
      assert.equal((await refilling.answer).statusCode, 401);
    } finally {
      gateOpen = true;
      for (const release of held.splice(0)) release();
      await app.close();
    }
  });

  it('count the checks waiting and running against the bound, and free their places as they end', async () => {
    const queue = new BoundedQueue(2);
    const gates: (() => void)[] = [];
    const task = (value: number) => () => new Promise<number>((resolve) => gates.push(() => resolve(value)));
    const first = queue.run(task(1));
    const second = queue.run(task(2));
    assert.ok(first !== undefined && second !== undefined, 'first !== undefined && second !== undefined');
    assert.equal(queue.run(task(3)), undefined, 'two waiting or running: the third is refused');
    assert.ok(queue.retryAfterSeconds() >= 1, 'queue.retryAfterSeconds() >= 1');
    await Promise.resolve();
    assert.equal(gates.length, 1, 'one at a time');
    gates.shift()!();
    assert.equal(await first, 1);
    await new Promise<void>((resolve) => setImmediate(resolve));
    assert.equal(gates.length, 1, 'the second runs once the first ended');
    const third = queue.run(task(3));
    assert.ok(third !== undefined, 'a place was freed');
    gates.shift()!();
    assert.equal(await second, 2);
    await new Promise<void>((resolve) => setImmediate(resolve));
    gates.shift()!();
    assert.equal(await third, 3);
  });
});
