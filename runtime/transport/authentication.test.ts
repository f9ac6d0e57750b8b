// The handshake's authentication (svc.auth.enabled) on real loopback sockets, in one process: the right secret is
// accepted and its principal stamped on every envelope, any other secret or claim is refused with
// AUTHENTICATION_FAILED, a peer without authentication is told what to set, a proof kept for later is checked once
// the secret is known, and a stale cached secret is looked up again once.
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import fc from 'fast-check';
import type { Envelope, Principal } from '../../core/machines/effects.ts';
import { CURRENT_RELEASE } from '../../core/release/version.ts';
import { pino } from 'pino';
import { AuthProbe } from '../testing/auth-probe.ts';
import { within } from '../testing/deadline.ts';
import type { Hello, PeerRole } from '../wire/index.ts';
import { AddressBook } from './addresses.ts';
import { authMac, authTranscript, proofMatches, type ExpectedSecret } from './authentication.ts';
import { Transport } from './transport.ts';

const INTERNAL = 'internal-secret-of-the-cluster';
const APP = 'app-a';
const APP_SECRET = 'secret-of-app-a';
const NODE = 'acceptor';

const text = fc.string({ unit: 'binary', minLength: 1, maxLength: 24 });
const role = fc.constantFrom<PeerRole>('master', 'worker', 'client');
const hello = fc.record<Hello>(
  { role, release: fc.constant(CURRENT_RELEASE), nodeId: text, application: text },
  { requiredKeys: ['role', 'release', 'nodeId'] },
);
const nonce = fc.uint8Array({ minLength: 32, maxLength: 32 });

/** Servers prove the internal secret; APP proves APP_SECRET; other applications are unknown. */
function defaultLookup(hello: Hello): ExpectedSecret {
  if (hello.role !== 'client') return { kind: 'secret', secret: INTERNAL, principal: { kind: 'server' } };
  if (hello.application === APP) {
    return { kind: 'secret', secret: APP_SECRET, principal: { kind: 'application', appId: APP } };
  }
  return { kind: 'refused', message: `application ${hello.application ?? ''} is not registered` };
}

/** An accepting transport whose deliveries are recorded, with a secret lookup a test can change. */
class Acceptor {
  readonly delivered: Envelope[] = [];
  lookup: (hello: Hello, fresh: boolean) => ExpectedSecret | Promise<ExpectedSecret> = defaultLookup;
  readonly transport: Transport;
  port = 0;
  private readonly waiters: ((envelope: Envelope) => void)[] = [];
  private readonly logged: Record<string, unknown>[] = [];
  private readonly logWaiters = new Set<{
    match: (line: Record<string, unknown>) => boolean;
    resolve: () => void;
  }>();

  /**
   * Resolves once the acceptor logged a line that matches (already or later); rejects, naming `what`, when none
   * came within the test's wait deadline.
   */
  loggedLine(what: string, match: (line: Record<string, unknown>) => boolean): Promise<void> {
    if (this.logged.some(match)) return Promise.resolve();
    const waiter: { match: typeof match; resolve: () => void } = { match, resolve: () => undefined };
    const logged = new Promise<void>((resolve) => {
      waiter.resolve = resolve;
      this.logWaiters.add(waiter);
    });
    return within(logged, `the acceptor to log ${what}`).finally(() => this.logWaiters.delete(waiter));
  }

  private onLog(text: string): void {
    const line = JSON.parse(text) as Record<string, unknown>;
    this.logged.push(line);
    for (const waiter of [...this.logWaiters]) {
      if (waiter.match(line)) {
        this.logWaiters.delete(waiter);
        waiter.resolve();
      }
    }
  }

  constructor(auth: boolean) {
    this.transport = new Transport({
      self: { role: 'worker', release: CURRENT_RELEASE, nodeId: NODE },
      maxFrameBytes: 1 << 20,
      frameTimeoutMs: 5_000,
      connectTimeoutMs: 5_000,
      // Every close is asserted by its reason: none may be counted into a summary instead.
      logBurst: 100,
      addresses: new AddressBook(),
      logger: pino({ level: 'warn' }, { write: (text: string) => this.onLog(text) }),
      isLocal: () => false,
      deliver: (envelope) => {
        this.delivered.push(envelope);
        this.waiters.shift()?.(envelope);
        // Answer every request, so that the asker knows it got through.
        if (envelope.requestId !== undefined) {
          this.transport.send({
            from: NODE,
            to: envelope.from,
            inReplyTo: envelope.requestId,
            message: { type: 'StatusResponse', status: 'SUCCESS', message: 'ok' },
          });
        }
        return true;
      },
      sendFailed: () => undefined,
      ...(auth
        ? {
            auth: {
              secret: INTERNAL,
              principal: { kind: 'server' },
              expectedSecret: (h: Hello, fresh: boolean) => this.lookup(h, fresh),
            },
          }
        : {}),
    });
  }

  async listen(): Promise<void> {
    this.port = (await this.transport.listen('rpc', '127.0.0.1', 0)).port;
  }
}

const request = { type: 'UnregisterApplication', appId: APP } as const;

describe('authentication transcript and proof', () => {
  it('the right secret proves a hello over a nonce; another secret, claim or nonce does not', () => {
    fc.assert(
      fc.property(hello, nonce, text, text, (h, n, secret, other) => {
        const mac = authMac(secret, h, n);
        assert.ok(proofMatches(secret, h, n, mac), 'proofMatches(secret, h, n, mac)');
        if (other !== secret) assert.ok(!proofMatches(other, h, n, mac), '!proofMatches(other, h, n, mac)');
        const otherNonce = Uint8Array.from(n, (byte, i) => (i === 0 ? byte ^ 1 : byte));
        assert.ok(!proofMatches(secret, h, otherNonce, mac), '!proofMatches(secret, h, otherNonce, mac)');
        assert.ok(
          !proofMatches(secret, { ...h, nodeId: `${h.nodeId}x` }, n, mac),
          '!proofMatches(secret, { ...h, nodeId: `${h.nodeId}x` }, n, mac)',
        );
        assert.ok(
          !proofMatches(secret, { ...h, application: `${h.application ?? ''}x` }, n, mac),
          "!proofMatches(secret, { ...h, application: `${h.application ?? ''}x` }, n, mac)",
        );
      }),
      { numRuns: 300 },
    );
  });

  it('the transcript cannot be shifted between fields', () => {
    const n = new Uint8Array(32);
    const a = authTranscript({ role: 'client', release: CURRENT_RELEASE, nodeId: 'ab', application: 'c' }, n);
    const b = authTranscript({ role: 'client', release: CURRENT_RELEASE, nodeId: 'a', application: 'bc' }, n);
    assert.notDeepEqual(a, b);
  });
});

describe('the authenticated handshake on loopback', () => {
  const acceptor = new Acceptor(true);
  const plain = new Acceptor(false);
  before(async () => {
    await acceptor.listen();
    await plain.listen();
  });
  after(async () => {
    await acceptor.transport.close();
    await plain.transport.close();
  });

  async function attempt(
    target: Acceptor,
    identity: ConstructorParameters<typeof AuthProbe>[0],
  ): ReturnType<AuthProbe['ask']> {
    const probe = new AuthProbe(identity);
    try {
      // A client speaks as a node of the application it claims (the node-name rule); a server as anything.
      const speaker =
        identity.application === undefined ? `${identity.nodeId}-task` : `map-${identity.application}-0-0-0`;
      return await probe.ask(target.port, NODE, speaker, request);
    } finally {
      await probe.close();
    }
  }

  it('accepts exactly the hellos that prove the secret their claim needs, stamping the principal', async () => {
    await fc.assert(
      fc.asyncProperty(
        role,
        fc.constantFrom(APP, 'app-b', ''),
        fc.constantFrom(INTERNAL, APP_SECRET, 'some-other-secret'),
        text,
        async (r, application, secret, nodeId) => {
          const outcome = await attempt(acceptor, {
            role: r,
            nodeId,
            ...(application === '' ? {} : { application }),
            secret,
          });
          const expected: Principal | undefined =
            r !== 'client'
              ? secret === INTERNAL
                ? { kind: 'server' }
                : undefined
              : application === APP && secret === APP_SECRET
                ? { kind: 'application', appId: APP }
                : undefined;
          if (expected === undefined) {
            assert.equal(outcome.kind, 'refused', JSON.stringify(outcome));
            assert.ok(
              outcome.kind === 'refused' && outcome.status === 'AUTHENTICATION_FAILED',
              "outcome.kind === 'refused' && outcome.status === 'AUTHENTICATION_FAILED'",
            );
            assert.match(outcome.message, /authentication|application/);
          } else {
            assert.equal(outcome.kind, 'reply', JSON.stringify(outcome));
            assert.deepEqual(acceptor.delivered.at(-1)?.principal, expected);
          }
        },
      ),
      { numRuns: 40 },
    );
  });

  it('tells a peer without authentication what to set, and answers its requests locally', async () => {
    const outcome = await attempt(acceptor, { role: 'client', nodeId: 'no-auth', application: APP });
    assert.equal(outcome.kind, 'refused');
    assert.ok(
      outcome.kind === 'refused' && outcome.status === 'AUTHENTICATION_FAILED',
      "outcome.kind === 'refused' && outcome.status === 'AUTHENTICATION_FAILED'",
    );
    assert.match(
      outcome.message,
      /requires authentication \(svc\.auth\.enabled\): set svc\.auth\.enabled=true/,
    );
  });

  it('an acceptor without authentication challenges nobody and stamps no principal', async () => {
    for (const identity of [
      { role: 'client' as const, nodeId: 'c', application: APP, secret: APP_SECRET },
      { role: 'client' as const, nodeId: 'c' },
    ]) {
      const outcome = await attempt(plain, identity);
      assert.equal(outcome.kind, 'reply');
      assert.equal(plain.delivered.at(-1)?.principal, undefined);
    }
  });

  it('checks a proof kept for later once the secret is known: then the application, or closed', async () => {
    let known: string | undefined;
    const principal = { kind: 'application', appId: 'app-late' } as const;
    // As the master's source answers: later while the application is unknown, its secret once registered.
    acceptor.lookup = () =>
      known === undefined ? { kind: 'later', principal } : { kind: 'secret', secret: known, principal };
    const right = new AuthProbe({ role: 'client', nodeId: 'late', application: 'app-late', secret: 's1' });
    const wrong = new AuthProbe({ role: 'client', nodeId: 'liar', application: 'app-late', secret: 's2' });
    try {
      assert.equal((await right.ask(acceptor.port, NODE, 'map-app-late-0-0-0', request)).kind, 'reply');
      assert.equal(acceptor.delivered.at(-1)?.principal, undefined, 'nothing proved yet');
      assert.equal((await wrong.ask(acceptor.port, NODE, 'map-app-late-0-0-1', request)).kind, 'reply');
      known = 's1';
      assert.equal((await right.ask(acceptor.port, NODE, 'map-app-late-0-0-0', request)).kind, 'reply');
      assert.deepEqual(acceptor.delivered.at(-1)?.principal, { kind: 'application', appId: 'app-late' });
      const before = acceptor.delivered.length;
      const closed = acceptor.loggedLine(
        'the close of the connection whose kept proof was wrong',
        (line) =>
          line.event === 'transport.connectionClosed' &&
          /did not prove application app-late’s secret.*checked once/.test(String(line.reason)),
      );
      const unanswered = wrong.ask(acceptor.port, NODE, 'map-app-late-0-0-1', request);
      await closed;
      assert.equal(acceptor.delivered.length, before, 'the liar’s envelope was not delivered');
      await wrong.close();
      assert.equal((await unanswered).kind, 'noAnswer');
    } finally {
      await right.close();
      await wrong.close();
      acceptor.lookup = defaultLookup;
    }
  });

  it('lets no connection of another identity speak as a node a proven connection speaks as', async () => {
    const owner = new AuthProbe({ role: 'client', nodeId: 'owner', application: APP, secret: APP_SECRET });
    const other = new AuthProbe({ role: 'worker', nodeId: 'other', secret: INTERNAL });
    try {
      assert.equal((await owner.ask(acceptor.port, NODE, 'map-app-a-0-0-0', request)).kind, 'reply');
      const closed = acceptor.loggedLine(
        'the close of the connection speaking as a node another identity proved',
        (line) =>
          line.event === 'transport.connectionClosed' &&
          /it speaks as map-app-a-0-0-0, which a connection that proved application app-a speaks as/.test(
            String(line.reason),
          ),
      );
      const unanswered = other.ask(acceptor.port, NODE, 'map-app-a-0-0-0', request);
      await closed;
      await other.close();
      assert.equal((await unanswered).kind, 'noAnswer');
      // The owner's replies still reach it.
      assert.equal((await owner.ask(acceptor.port, NODE, 'map-app-a-0-0-0', request)).kind, 'reply');
    } finally {
      await owner.close();
      await other.close();
    }
  });

  it("closes a client connection that speaks as another application's node, or as no application's", async () => {
    for (const name of ['map-app-b-0-0-0', 'lm-app-b', 'master-0', '10.0.0.1:1:2:3:4']) {
      const probe = new AuthProbe({ role: 'client', nodeId: 'a', application: APP, secret: APP_SECRET });
      try {
        const before = acceptor.delivered.length;
        const closed = acceptor.loggedLine(
          `the close of the connection speaking as ${name}`,
          (line) =>
            line.event === 'transport.connectionClosed' &&
            String(line.reason).includes(`it acts for application ${APP} and speaks as ${name}, a node of`),
        );
        const unanswered = probe.ask(acceptor.port, NODE, name, request);
        await closed;
        assert.equal(acceptor.delivered.length, before, `${name}: nothing delivered`);
        await probe.close();
        assert.equal((await unanswered).kind, 'noAnswer');
      } finally {
        await probe.close();
      }
    }
  });

  it('looks a cached secret up again once when a proof does not match it', async () => {
    const asked: boolean[] = [];
    acceptor.lookup = (_hello, fresh) => {
      asked.push(fresh);
      return fresh
        ? { kind: 'secret', secret: 'new', principal: { kind: 'application', appId: 'app-c' } }
        : { kind: 'secret', secret: 'old', principal: { kind: 'application', appId: 'app-c' }, cached: true };
    };
    try {
      const outcome = await attempt(acceptor, {
        role: 'client',
        nodeId: 'c',
        application: 'app-c',
        secret: 'new',
      });
      assert.equal(outcome.kind, 'reply');
      assert.deepEqual(asked, [false, true]);
      asked.length = 0;
      const stale = await attempt(acceptor, {
        role: 'client',
        nodeId: 'c',
        application: 'app-c',
        secret: 'neither',
      });
      assert.equal(stale.kind, 'refused');
      assert.deepEqual(asked, [false, true], 'one fresh lookup, no more');
    } finally {
      acceptor.lookup = defaultLookup;
    }
  });
});
