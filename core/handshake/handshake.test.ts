import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import fc from 'fast-check';
import type { Principal } from '../machines/effects.ts';
import { admitClient } from '../release/admission.ts';
import { KNOWN_RELEASES, type Release } from '../release/version.ts';
import {
  acceptingStep,
  initialAcceptingState,
  type AcceptingConfig,
  type AcceptingEffect,
  type AcceptingInput,
} from './accepting.ts';
import {
  connectingStep,
  initialConnectingState,
  type ConnectingConfig,
  type ConnectingEffect,
} from './connecting.ts';
import { admitHello } from './admission.ts';
import type { Hello, HelloReply, SecretAnswer } from './types.ts';

/** A stand-in MAC: the core never computes one, so any function of the secret, the claim and the nonce will do. */
function mac(secret: string, hello: Hello, nonce: Uint8Array): Uint8Array {
  return new TextEncoder().encode(
    `${secret}|${hello.role}|${hello.nodeId}|${hello.application ?? ''}|${nonce.join(',')}`,
  );
}

function sameBytes(a: Uint8Array, b: Uint8Array): boolean {
  return a.length === b.length && a.every((byte, i) => byte === b[i]);
}

const NONCE = Uint8Array.of(1, 2, 3);
const SERVER: Principal = { kind: 'server' };

/** How the accepting end's secret source answers, lookup after lookup (the last answer repeats). */
interface Source {
  readonly answers: readonly SecretAnswer[];
  /** Whether each answer comes at once (within the effect) or only after the proof arrived. */
  readonly atOnce: boolean;
}

interface Outcome {
  readonly reply?: HelloReply;
  readonly principal?: Principal;
  readonly lookups: number;
  readonly freshLookups: number;
  readonly closed?: string;
  readonly authenticationFailures: number;
}

/**
 * Runs a connecting end against an accepting end, frame by frame, with `secret` the connecting end's and `source`
 * the accepting end's answers: what the connecting end sees, and what the accepting end did.
 */
function runPair(
  connecting: ConnectingConfig,
  accepting: AcceptingConfig,
  secret: string,
  source: Source,
): Outcome {
  const client = initialConnectingState();
  const server = initialAcceptingState();
  let lookups = 0;
  let freshLookups = 0;
  let failures = 0;
  let reply: HelloReply | undefined;
  let principal: Principal | undefined;
  let closed: string | undefined;
  const late: AcceptingInput[] = [];
  const toServer: AcceptingInput[] = [];
  const toClient: Parameters<typeof connectingStep>[2][] = [{ kind: 'connected' }];
  const onAccepting = (effect: AcceptingEffect): void => {
    switch (effect.kind) {
      case 'challenge':
        toClient.push({ kind: 'challenge', nonce: effect.nonce });
        return;
      case 'lookupSecret': {
        const answer = source.answers[Math.min(lookups, source.answers.length - 1)]!;
        lookups += 1;
        if (effect.fresh) freshLookups += 1;
        (source.atOnce ? toServer : late).push({ kind: 'secret', answer });
        return;
      }
      case 'checkProof':
        toServer.push({
          kind: 'proofChecked',
          matches: sameBytes(mac(effect.secret, effect.hello, effect.nonce), effect.mac),
        });
        return;
      case 'accept':
        principal = effect.principal;
        toClient.push({ kind: 'reply', reply: effect.reply });
        return;
      case 'refuse':
        toClient.push({ kind: 'reply', reply: effect.reply });
        return;
      case 'authenticationFailed':
        failures += 1;
        return;
      case 'close':
        closed = effect.reason;
        return;
      case 'proved':
      case 'deliver':
        return;
    }
  };
  const onConnecting = (effect: ConnectingEffect): void => {
    switch (effect.kind) {
      case 'sendHello':
        toServer.push({ kind: 'hello', hello: effect.hello, nonce: NONCE });
        return;
      case 'prove':
        toServer.push({ kind: 'proof', mac: mac(secret, connecting.self, effect.nonce) });
        return;
      case 'open':
      case 'refused':
      case 'close':
        return;
    }
  };
  for (let rounds = 0; rounds < 100; rounds++) {
    const input = toServer.shift() ?? (toClient.length === 0 ? late.shift() : undefined);
    if (input !== undefined) {
      const step = acceptingStep(accepting, server, input);
      step.effects.forEach(onAccepting);
      continue;
    }
    const frame = toClient.shift();
    if (frame === undefined) break;
    if (frame.kind === 'reply') reply = frame.reply;
    connectingStep(connecting, client, frame).effects.forEach(onConnecting);
  }
  return {
    ...(reply === undefined ? {} : { reply }),
    ...(principal === undefined ? {} : { principal }),
    lookups,
    freshLookups,
    ...(closed === undefined ? {} : { closed }),
    authenticationFailures: failures,
  };
}

const release = fc.constantFrom(...KNOWN_RELEASES);

function configs(
  role: Hello['role'],
  clientRelease: Release,
  serverRelease: Release,
  authenticated: boolean,
): { connecting: ConnectingConfig; accepting: AcceptingConfig } {
  const self: Hello =
    role === 'client'
      ? { role, release: clientRelease, nodeId: 'app-a', application: 'a' }
      : { role, release: clientRelease, nodeId: 'worker@h:1' };
  return {
    connecting: { self, authenticated },
    accepting: {
      self: { release: serverRelease, nodeId: 'master-0' },
      admission: { release: serverRelease, servesClients: true },
      authenticated,
    },
  };
}

describe('the handshake machines, end to end', () => {
  it('admit a client exactly when the release rule does, with its message, and servers always', () => {
    fc.assert(
      fc.property(
        release,
        release,
        fc.constantFrom('client', 'worker', 'master') as fc.Arbitrary<Hello['role']>,
        (c, s, role) => {
          const { connecting, accepting } = configs(role, c, s, false);
          const outcome = runPair(connecting, accepting, '', { answers: [], atOnce: true });
          const rule = admitClient(s, c);
          if (role !== 'client' || rule.admitted) {
            assert.equal(outcome.reply?.accepted, true);
            assert.equal(outcome.reply.status, 'SUCCESS');
            assert.equal(outcome.principal, undefined, 'nothing proved without authentication');
          } else {
            assert.equal(outcome.reply?.accepted, false);
            assert.equal(outcome.reply.status, 'CLIENT_RELEASE_REFUSED');
            assert.equal(outcome.reply.message, rule.message);
          }
          assert.equal(outcome.lookups, 0, 'no secret is looked up without authentication');
        },
      ),
      { numRuns: 300 },
    );
  });

  it('with authentication, accept exactly the proof of the secret the source answers (one fresh look after a stale cache)', () => {
    const answer: fc.Arbitrary<SecretAnswer> = fc.oneof(
      fc.record({
        kind: fc.constant('secret' as const),
        secret: fc.constantFrom('s1', 's2'),
        principal: fc.constant(SERVER),
        cached: fc.boolean(),
      }),
      fc.record({ kind: fc.constant('refused' as const), message: fc.constantFrom('no such app', 'down') }),
      fc.record({ kind: fc.constant('later' as const), principal: fc.constant(SERVER) }),
    );
    fc.assert(
      fc.property(
        fc.constantFrom('s1', 's2'),
        fc.array(answer, { minLength: 1, maxLength: 3 }),
        fc.boolean(),
        (secret, answers, atOnce) => {
          const { connecting, accepting } = configs('worker', '0.6.0', '0.6.0', true);
          const outcome = runPair(connecting, accepting, secret, { answers, atOnce });
          const first = answers[0]!;
          const staleCache = first.kind === 'secret' && first.cached === true && first.secret !== secret;
          const decisive = staleCache ? answers[Math.min(1, answers.length - 1)]! : first;
          assert.equal(outcome.lookups, staleCache ? 2 : 1);
          assert.equal(outcome.freshLookups, staleCache ? 1 : 0);
          switch (decisive.kind) {
            case 'refused':
              assert.equal(outcome.reply?.accepted, false);
              assert.equal(outcome.reply.status, 'AUTHENTICATION_FAILED');
              assert.match(outcome.reply.message, new RegExp(decisive.message));
              assert.equal(outcome.authenticationFailures, 1);
              return;
            case 'later':
              assert.equal(outcome.reply?.accepted, true);
              assert.equal(outcome.principal, undefined, 'proved later, not now');
              return;
            case 'secret':
              if (decisive.secret === secret) {
                assert.equal(outcome.reply?.accepted, true);
                assert.deepEqual(outcome.principal, SERVER);
              } else {
                assert.equal(outcome.reply?.accepted, false);
                assert.match(outcome.reply.message, /did not prove the cluster’s internal secret/);
                assert.equal(outcome.authenticationFailures, 1);
              }
          }
        },
      ),
      { numRuns: 500 },
    );
  });

  it('refuse a client that names no application when authentication is on', () => {
    const { accepting } = configs('client', '0.6.0', '0.6.0', true);
    const step = acceptingStep(accepting, initialAcceptingState(), {
      kind: 'hello',
      hello: { role: 'client', release: '0.6.0', nodeId: 'x' },
      nonce: NONCE,
    });
    const refuse = step.effects.find((e) => e.kind === 'refuse');
    assert.ok(refuse?.kind === 'refuse', "refuse?.kind === 'refuse'");
    assert.equal(refuse.reply.status, 'AUTHENTICATION_FAILED');
    assert.match(refuse.reply.message, /names no application/);
  });

  it('a connecting end without authentication gives up on a challenge, saying what to set', () => {
    const state = initialConnectingState();
    const config: ConnectingConfig = {
      self: { role: 'client', release: '0.6.0', nodeId: 'app-a', application: 'a' },
      authenticated: false,
    };
    connectingStep(config, state, { kind: 'connected' });
    const { effects } = connectingStep(config, state, { kind: 'challenge', nonce: NONCE });
    assert.equal(effects.length, 1);
    const refused = effects[0]!;
    assert.equal(refused.kind, 'refused');
    assert.ok(
      refused.kind === 'refused' && refused.authenticationRequired,
      "refused.kind === 'refused' && refused.authenticationRequired",
    );
    assert.match(
      refused.message,
      /requires authentication \(svc\.auth\.enabled\): set svc\.auth\.enabled=true/,
    );
  });
});

describe('the later proof', () => {
  const { accepting } = configs('client', '0.6.0', '0.6.0', true);
  const hello: Hello = { role: 'client', release: '0.6.0', nodeId: 'app-a', application: 'a' };
  const principal: Principal = { kind: 'application', appId: 'a' };

  function openLater(proofSecret: string) {
    const state = initialAcceptingState();
    acceptingStep(accepting, state, { kind: 'hello', hello, nonce: NONCE });
    acceptingStep(accepting, state, { kind: 'secret', answer: { kind: 'later', principal } });
    const { effects } = acceptingStep(accepting, state, {
      kind: 'proof',
      mac: mac(proofSecret, hello, NONCE),
    });
    assert.deepEqual(
      effects.map((e) => e.kind),
      ['accept'],
    );
    return state;
  }

  it('delivers without a principal while the secret is unknown, then proves the connection once it is', () => {
    const state = openLater('s1');
    let step = acceptingStep(accepting, state, { kind: 'envelope' });
    assert.deepEqual(step.effects, [{ kind: 'lookupSecret', hello, fresh: false }]);
    step = acceptingStep(accepting, state, { kind: 'envelope' });
    assert.deepEqual(step.effects, [], 'held while the lookup is in flight');
    step = acceptingStep(accepting, state, { kind: 'secret', answer: { kind: 'later', principal } });
    assert.deepEqual(step.effects, [{ kind: 'deliver', count: 2 }]);
    acceptingStep(accepting, state, { kind: 'envelope' });
    step = acceptingStep(accepting, state, {
      kind: 'secret',
      answer: { kind: 'secret', secret: 's1', principal },
    });
    assert.equal(step.effects[0]?.kind, 'checkProof');
    step = acceptingStep(accepting, state, { kind: 'proofChecked', matches: true });
    assert.deepEqual(step.effects, [
      { kind: 'proved', principal },
      { kind: 'deliver', count: 1 },
    ]);
    assert.deepEqual(acceptingStep(accepting, state, { kind: 'envelope' }).effects, [
      { kind: 'deliver', count: 1 },
    ]);
  });

  it('closes the connection, delivering nothing held, when the kept proof is wrong', () => {
    const state = openLater('wrong');
    acceptingStep(accepting, state, { kind: 'envelope' });
    acceptingStep(accepting, state, { kind: 'secret', answer: { kind: 'secret', secret: 's1', principal } });
    const step = acceptingStep(accepting, state, { kind: 'proofChecked', matches: false });
    assert.deepEqual(
      step.effects.map((e) => e.kind),
      ['authenticationFailed', 'close'],
    );
    const close = step.effects[1]!;
    assert.match(close.kind === 'close' ? close.reason : '', /checked once the application had registered/);
    assert.deepEqual(acceptingStep(accepting, state, { kind: 'envelope' }).effects, []);
  });
});

describe('the accepting machine under any input sequence', () => {
  const input: fc.Arbitrary<AcceptingInput> = fc.oneof(
    fc.constant({
      kind: 'hello',
      hello: { role: 'client', release: '0.6.0', nodeId: 'app-a', application: 'a' },
      nonce: NONCE,
    } as const),
    fc.constant({
      kind: 'hello',
      hello: { role: 'client', release: '0.1.0', nodeId: 'app-b', application: 'b' },
      nonce: NONCE,
    } as const),
    fc.constant({ kind: 'proof', mac: Uint8Array.of(9) } as const),
    fc.constant({ kind: 'envelope' } as const),
    fc.constant({ kind: 'frame', frame: 'helloReply' } as const),
    fc.constant({
      kind: 'secret',
      answer: { kind: 'secret', secret: 's', principal: SERVER, cached: true },
    } as const),
    fc.constant({ kind: 'secret', answer: { kind: 'later', principal: SERVER } } as const),
    fc.constant({ kind: 'secret', answer: { kind: 'refused', message: 'no' } } as const),
    fc.constant({ kind: 'proofChecked', matches: true } as const),
    fc.constant({ kind: 'proofChecked', matches: false } as const),
  );

  it('answers a hello at most once, delivers no more envelopes than came, and says nothing once closed', () => {
    fc.assert(
      fc.property(fc.boolean(), fc.array(input, { maxLength: 30 }), (authenticated, inputs) => {
        const { accepting } = configs('client', '0.6.0', '0.6.0', authenticated);
        const state = initialAcceptingState();
        let answers = 0;
        let envelopes = 0;
        let delivered = 0;
        for (const next of inputs) {
          const wasClosed = state.phase === 'closed';
          if (next.kind === 'envelope' && state.phase === 'open') envelopes += 1;
          const { effects } = acceptingStep(accepting, state, next);
          if (wasClosed) assert.deepEqual(effects, []);
          for (const effect of effects) {
            if (effect.kind === 'accept' || effect.kind === 'refuse') answers += 1;
            if (effect.kind === 'deliver') delivered += effect.count;
            if (effect.kind === 'accept' && effect.principal !== undefined)
              assert.ok(authenticated, 'authenticated');
          }
          assert.ok(answers <= 1, 'answers <= 1');
          assert.ok(delivered <= envelopes, 'delivered <= envelopes');
          assert.ok(state.held >= 0, 'state.held >= 0');
        }
      }),
      { numRuns: 500 },
    );
  });
});

describe('admitHello', () => {
  it('refuses what admitClient refuses, unless the planted bug admits it', () => {
    const hello: Hello = { role: 'client', release: '0.2.0', nodeId: 'app-a', application: 'a' };
    assert.equal(admitHello({ release: '0.6.0', servesClients: true }, hello).accepted, false);
    assert.equal(admitHello({ release: '0.6.0', servesClients: false }, hello).accepted, true);
    assert.equal(
      admitHello({ release: '0.6.0', servesClients: true, plantedBug: 'refused-release-admitted' }, hello)
        .accepted,
      true,
    );
  });
});
