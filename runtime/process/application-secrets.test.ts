// A worker's applications' secrets: asked of the master once per application in flight, cached, asked again when
// told to, refused when the master does not know the application or does not answer, and never taken from anyone
// but the master on a server's connection (anyone else could plant a secret and then prove it).
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import type { Envelope, Principal } from '../../core/machines/effects.ts';
import type { Message } from '../../core/protocol/messages.ts';
import { CURRENT_RELEASE } from '../../core/release/version.ts';
import type { WireEnvelope } from '../wire/index.ts';
import { ApplicationSecrets } from './application-secrets.ts';

const SERVER: Principal = { kind: 'server' };

function setup(
  askTimeoutMs = 60_000,
  clock?: { now: number; readonly maxAgeMs: number },
): { secrets: ApplicationSecrets; sent: WireEnvelope[] } {
  const sent: WireEnvelope[] = [];
  const secrets = new ApplicationSecrets({
    id: 'w#secrets',
    send: (e) => sent.push(e),
    askTimeoutMs,
    ...(clock === undefined ? {} : { now: () => clock.now, maxAgeMs: clock.maxAgeMs }),
  });
  return { secrets, sent };
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

  it('trusts a learnt secret for maxAge only: the holder of a replaced one is refused once it expired', async () => {
    const clock = { now: 1_000, maxAgeMs: 60_000 };
    const { secrets, sent } = setup(60_000, clock);
    const learnt = secrets.expected('app-1', false);
    answer(secrets, sent[0]!, {
      type: 'ApplicationSecretResponse',
      appId: 'app-1',
      found: true,
      secret: 'old',
    });
    assert.equal((await learnt).kind, 'secret');
    clock.now += 59_999;
    const cached = await secrets.expected('app-1', false);
    assert.ok(cached.kind === 'secret' && cached.cached === true && cached.secret === 'old');
    assert.equal(sent.length, 1, 'still answered from the cache');
    // The application registered again with another secret; a minute after the worker learnt the old one it asks.
    clock.now += 1;
    const expired = secrets.expected('app-1', false);
    assert.equal(sent.length, 2, 'asked the master again');
    answer(secrets, sent[1]!, {
      type: 'ApplicationSecretResponse',
      appId: 'app-1',
      found: true,
      secret: 'new',
    });
    const renewed = await expired;
    assert.ok(renewed.kind === 'secret' && renewed.secret === 'new' && renewed.cached !== true);
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
    assert.ok(refusal.kind === 'refused' && /app-x is not registered with the master/.test(refusal.message));
    const unanswered = await secrets.expected('app-y', false);
    assert.ok(unanswered.kind === 'refused' && /did not say within 20 ms/.test(unanswered.message));
    const unreachable = secrets.expected('app-z', false);
    const request = sent.at(-1)!;
    secrets.input({
      kind: 'sendFailed',
      to: request.to,
      message: request.message,
      requestId: request.requestId!,
    });
    const failed = await unreachable;
    assert.ok(failed.kind === 'refused' && /cannot reach the master/.test(failed.message));
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
});
