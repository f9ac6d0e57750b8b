// A worker's applications' secrets: asked of the master once per application in flight, cached until they expire or
// the master says the application is gone, asked again when told to, refused when the master does not know the application or does not answer, and never taken from anyone
// but the master on a server's connection (anyone else could plant a secret and then prove it).
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import type { Envelope, Principal } from '../../core/machines/effects.ts';
import type { Message } from '../../core/protocol/messages.ts';
import { CURRENT_RELEASE } from '../../core/release/version.ts';
import type { WireEnvelope } from '../wire/index.ts';
import { ApplicationSecrets } from './application-secrets.ts';

const SERVER: Principal = { kind: 'server' };

const EXPIRY_MS = 60_000;

function setup(askTimeoutMs = 60_000): {
  secrets: ApplicationSecrets;
  sent: WireEnvelope[];
  clock: { now: number };
} {
  const sent: WireEnvelope[] = [];
  const clock = { now: 1_000 };
  const secrets = new ApplicationSecrets({
    id: 'w#secrets',
    send: (e) => sent.push(e),
    askTimeoutMs,
    expiryMs: EXPIRY_MS,
    now: () => clock.now,
  });
  return { secrets, sent, clock };
}

function found(appId: string, secret: string): Message {
  return { type: 'ApplicationSecretResponse', appId, found: true, secret };
}

function answer(
  secrets: ApplicationSecrets,
  request: WireEnvelope,
  message: Message,
  from = 'master-0',
  principal: Principal | null = SERVER,
): void {
  const envelope: Envelope = {
    from,
    to: request.from,
    fromRelease: CURRENT_RELEASE,
    inReplyTo: request.requestId!,
    message,
    ...(principal === null ? {} : { principal }),
  };
  secrets.input({ kind: 'receive', envelope });
}

describe('a worker’s applications’ secrets', () => {
  it('asks the master once per application in flight, then answers from its cache until asked afresh', async () => {
    const { secrets, sent } = setup();
    const first = secrets.expected('app-1', false);
    const second = secrets.expected('app-1', false);
    assert.equal(sent.length, 1);
    assert.deepEqual(sent[0]!.message, { type: 'GetApplicationSecret', appId: 'app-1' });
    assert.equal(sent[0]!.to, 'master-0');
    answer(secrets, sent[0]!, {
      type: 'ApplicationSecretResponse',
      appId: 'app-1',
      found: true,
      secret: 's1',
    });
    const principal = { kind: 'application', appId: 'app-1' };
    assert.deepEqual(await first, { kind: 'secret', secret: 's1', principal });
    assert.deepEqual(await second, { kind: 'secret', secret: 's1', principal });
    assert.deepEqual(await secrets.expected('app-1', false), {
      kind: 'secret',
      secret: 's1',
      principal,
      cached: true,
    });
    assert.equal(sent.length, 1, 'answered from the cache');
    const fresh = secrets.expected('app-1', true);
    assert.equal(sent.length, 2, 'asked again');
    answer(secrets, sent[1]!, {
      type: 'ApplicationSecretResponse',
      appId: 'app-1',
      found: true,
      secret: 's2',
    });
    assert.deepEqual(await fresh, { kind: 'secret', secret: 's2', principal });
  });

  it('refuses an application the master does not know, and one it could not ask about', async () => {
    const { secrets, sent } = setup(20);
    const unknown = secrets.expected('app-x', false);
    answer(secrets, sent[0]!, {
      type: 'ApplicationSecretResponse',
      appId: 'app-x',
      found: false,
      secret: '',
    });
    const refusal = await unknown;
    assert.ok(
      refusal.kind === 'refused' && /app-x is not registered with the master/.test(refusal.message),
      "refusal.kind === 'refused' && /app-x is not registered with the master/.test(refusal.message)",
    );
    const unanswered = await secrets.expected('app-y', false);
    assert.ok(
      unanswered.kind === 'refused' && /did not say within 20 ms/.test(unanswered.message),
      "unanswered.kind === 'refused' && /did not say within 20 ms/.test(unanswered.message)",
    );
    const unreachable = secrets.expected('app-z', false);
    const request = sent.at(-1)!;
    secrets.input({
      kind: 'sendFailed',
      to: request.to,
      message: request.message,
      requestId: request.requestId!,
    });
    const failed = await unreachable;
    assert.ok(
      failed.kind === 'refused' && /cannot reach the master/.test(failed.message),
      "failed.kind === 'refused' && /cannot reach the master/.test(failed.message)",
    );
  });

  it('takes no answer but the master’s on a server’s connection', async () => {
    const { secrets, sent } = setup(200);
    const pending = secrets.expected('app-1', false);
    const forged: Message = {
      type: 'ApplicationSecretResponse',
      appId: 'app-1',
      found: true,
      secret: 'planted',
    };
    answer(secrets, sent[0]!, forged, 'master-0', { kind: 'application', appId: 'app-2' });
    answer(secrets, sent[0]!, forged, 'master-0', null);
    answer(secrets, sent[0]!, forged, 'some-worker', SERVER);
    const outcome = await pending;
    assert.equal(outcome.kind, 'refused', 'no forged answer was taken; the request timed out');
  });

  it('trusts a learnt secret until it expires, then asks the master and takes its new secret', async () => {
    const { secrets, sent, clock } = setup();
    const principal = { kind: 'application', appId: 'app-1' };
    const first = secrets.expected('app-1', false);
    answer(secrets, sent[0]!, found('app-1', 'old'));
    assert.deepEqual(await first, { kind: 'secret', secret: 'old', principal });
    clock.now += EXPIRY_MS - 1;
    assert.deepEqual(await secrets.expected('app-1', false), {
      kind: 'secret',
      secret: 'old',
      principal,
      cached: true,
    });
    assert.equal(sent.length, 1, 'still trusted just before it expires');
    // The application registered again with a new secret meanwhile: a holder of the old one must not pass.
    clock.now += 1;
    const renewed = secrets.expected('app-1', false);
    assert.equal(sent.length, 2, 'expired: the master is asked');
    answer(secrets, sent[1]!, found('app-1', 'new'));
    assert.deepEqual(await renewed, { kind: 'secret', secret: 'new', principal });
    assert.deepEqual(await secrets.expected('app-1', false), {
      kind: 'secret',
      secret: 'new',
      principal,
      cached: true,
    });
    assert.equal(sent.length, 2, 'the new secret is cached from when it was learnt');
  });

  it('forgets a secret once the master says the application is not registered, not when it cannot be asked', async () => {
    const { secrets, sent } = setup(20);
    const first = secrets.expected('app-1', false);
    answer(secrets, sent[0]!, found('app-1', 'old'));
    await first;
    // A proof that did not match asks afresh; the master no longer knows the application.
    const fresh = secrets.expected('app-1', true);
    answer(secrets, sent[1]!, {
      type: 'ApplicationSecretResponse',
      appId: 'app-1',
      found: false,
      secret: '',
    });
    assert.equal((await fresh).kind, 'refused');
    const after = secrets.expected('app-1', false);
    assert.equal(sent.length, 3, 'the old secret is not trusted any more: the master is asked');
    answer(secrets, sent[2]!, found('app-1', 'again'));
    assert.equal((await after).kind, 'secret');
    // An unanswered question (the master is away) keeps what was learnt.
    const unanswered = await secrets.expected('app-1', true);
    assert.equal(unanswered.kind, 'refused');
    const cached = await secrets.expected('app-1', false);
    assert.deepEqual(cached, {
      kind: 'secret',
      secret: 'again',
      principal: { kind: 'application', appId: 'app-1' },
      cached: true,
    });
  });
});
