import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import fc from 'fast-check';
import { applicationHostnames } from '../lifecycle/index.ts';
import { masterNodeId } from '../protocol/node-ids.ts';
import {
  applicationOf,
  authorizationFailure,
  authorized,
  SERVER,
  type Requirement,
} from './authorization.ts';
import type { Effect, Envelope, Principal } from './effects.ts';
import { initialLifecycleManagerState, lifecycleManagerMachine } from './lifecycle-manager/index.ts';
import { testLifecycleManagerConfig } from './lifecycle-manager/testing.ts';
import { initialMasterState, masterMachine, type MasterState } from './master/index.ts';
import { storedBy, testMasterConfig } from './master/testing.ts';
import { newOutbox } from './outbox.ts';
import { replayRng } from '../rng.ts';
import { CURRENT_RELEASE } from '../release/version.ts';
import type { WorkerMachineState } from './worker/index.ts';
import {
  CLIENT,
  Harness,
  ioOps,
  KEY,
  location,
  MAPPER,
  metricNames,
  ofKind,
  onlySent,
  pushData,
  registeredWorker,
  SELF,
  sentOf,
  workerId,
} from './worker/test-kit.ts';

const SERVER_PRINCIPAL: Principal = { kind: 'server' };
const app = (appId: string): Principal => ({ kind: 'application', appId });

const principalArb: fc.Arbitrary<Principal | undefined> = fc.oneof(
  fc.constant(undefined),
  fc.constant(SERVER_PRINCIPAL),
  fc.constantFrom('a', 'b', 'c').map(app),
);
const requirementArb: fc.Arbitrary<Requirement> = fc.oneof(
  fc.constant(SERVER),
  fc.constantFrom('a', 'b', 'c').map(applicationOf),
);

function envelope(principal: Principal | undefined, requestId?: number): Envelope {
  return {
    from: 'someone',
    to: 'under-test',
    fromRelease: CURRENT_RELEASE,
    message: { type: 'UnregisterApplication', appId: 'a' },
    ...(principal === undefined ? {} : { principal }),
    ...(requestId === undefined ? {} : { requestId }),
  };
}

function statuses(effects: readonly Effect[]): string[] {
  return sentOf(effects, 'StatusResponse').map((sent) => sent.message.status);
}

describe('authorization: the rule', () => {
  it('admits exactly a server for a server, and exactly the same application for an application', () => {
    fc.assert(
      fc.property(principalArb, requirementArb, (principal, required) => {
        const expected =
          required.kind === 'server'
            ? principal?.kind === 'server'
            : principal?.kind === 'application' && principal.appId === required.appId;
        const failure = authorizationFailure(principal, required);
        assert.equal(failure === null, expected);
        if (failure !== null) assert.match(failure, /proved (no identity|a server|application \w)/);
      }),
    );
  });

  it('checks nothing when authentication is off or nothing is required', () => {
    fc.assert(
      fc.property(principalArb, requirementArb, fc.boolean(), (principal, required, enabled) => {
        const out = newOutbox(0, replayRng([0.5]));
        assert.equal(authorized(out, 'worker', false, envelope(principal, 1), required), true);
        assert.equal(authorized(out, 'worker', enabled, envelope(principal, 1), undefined), true);
        assert.deepEqual(out.effects, []);
      }),
    );
  });

  it('answers a refused request with AUTHENTICATION_FAILED, and a refused one-way message with nothing', () => {
    const out = newOutbox(0, replayRng([0.5]));
    assert.equal(authorized(out, 'master', true, envelope(app('b'), 7), applicationOf('a')), false);
    const answer = onlySent(out.effects, 'StatusResponse');
    assert.equal(answer.message.status, 'AUTHENTICATION_FAILED');
    assert.equal(answer.inReplyTo, 7);
    assert.match(answer.message.message, /only application a may ask this.*proved application b/);
    assert.deepEqual(metricNames(out.effects), ['AuthenticationFailCount']);

    const oneWay = newOutbox(0, replayRng([0.5]));
    assert.equal(authorized(oneWay, 'master', true, envelope(undefined), SERVER), false);
    assert.deepEqual(sentOf(oneWay.effects, 'StatusResponse'), []);
  });
});

// ------------------------------------------------------------------------------------------------ master

function master(authEnabled = true): Harness<MasterState> {
  const harness = new Harness(masterMachine, initialMasterState(testMasterConfig({ authEnabled })));
  harness.start();
  return harness;
}

let nextRequest = 1;

function registerApp(
  harness: Harness<MasterState>,
  appId: string,
  options: { secret?: string; hostname?: string; principal?: Principal } = {},
): Effect[] {
  return harness.receive(
    `lm-${appId}`,
    {
      type: 'RegisterApplication',
      appId,
      user: 'alice',
      ...(options.secret === undefined ? {} : { secret: options.secret }),
      ...(options.hostname === undefined ? {} : { hostname: options.hostname }),
    },
    {
      requestId: (nextRequest += 1),
      ...(options.principal === undefined ? {} : { principal: options.principal }),
    },
  );
}

describe('authorization: the master', () => {
  it('refuses a first registration without a secret, and registers nothing', () => {
    const harness = master();
    assert.deepEqual(statuses(registerApp(harness, 'a')), ['AUTHENTICATION_FAILED']);
    assert.equal(harness.state.durable.applications.apps.has('a'), false);
  });

  it('keeps the first secret, from an unproven connection, and persists it across a restart', () => {
    const harness = master();
    const effects = registerApp(harness, 'a', { secret: 's3cret', hostname: 'driver-host' });
    assert.deepEqual(statuses(effects), ['SUCCESS']);
    assert.equal(harness.state.durable.applications.apps.get('a')?.secret, 's3cret');
    const restarted = new Harness(masterMachine, initialMasterState(testMasterConfig({ authEnabled: true })));
    restarted.start(storedBy(harness.all));
    assert.equal(restarted.state.durable.applications.apps.get('a')?.secret, 's3cret');
    assert.deepEqual(applicationHostnames(restarted.state.durable.applications), ['driver-host']);
  });

  it('lets only a connection that proved the secret register the application again, never with another secret', () => {
    const harness = master();
    registerApp(harness, 'a', { secret: 's3cret' });
    assert.deepEqual(statuses(registerApp(harness, 'a', { secret: 'mine-now' })), ['AUTHENTICATION_FAILED']);
    assert.deepEqual(statuses(registerApp(harness, 'a', { secret: 's3cret', principal: app('b') })), [
      'AUTHENTICATION_FAILED',
    ]);
    assert.deepEqual(statuses(registerApp(harness, 'a', { secret: 'other', principal: app('a') })), [
      'AUTHENTICATION_FAILED',
    ]);
    assert.deepEqual(statuses(registerApp(harness, 'a', { secret: 's3cret', principal: app('a') })), [
      'SUCCESS',
    ]);
    assert.equal(harness.state.durable.applications.apps.get('a')?.secret, 's3cret');
  });

  it("serves an application's requests only to that application's connections", () => {
    const harness = master();
    registerApp(harness, 'a', { secret: 's3cret' });
    const heartbeat = (principal?: Principal) =>
      harness.receive(
        'lm-a',
        { type: 'ApplicationHeartbeat', appId: 'a', bytesWritten: 0, fileCount: 0 },
        { requestId: (nextRequest += 1), ...(principal === undefined ? {} : { principal }) },
      );
    assert.deepEqual(statuses(heartbeat()), ['AUTHENTICATION_FAILED']);
    assert.deepEqual(statuses(heartbeat(app('b'))), ['AUTHENTICATION_FAILED']);
    assert.deepEqual(statuses(heartbeat(SERVER_PRINCIPAL)), ['AUTHENTICATION_FAILED']);
    const answered = heartbeat(app('a'));
    assert.equal(sentOf(answered, 'ApplicationHeartbeatResponse').length, 1);
    const unregister = harness.receive(
      'lm-a',
      { type: 'UnregisterApplication', appId: 'a' },
      { requestId: (nextRequest += 1), principal: app('b') },
    );
    assert.deepEqual(statuses(unregister), ['AUTHENTICATION_FAILED']);
    assert.equal(harness.state.durable.applications.apps.has('a'), true);
  });

  it("takes workers' messages only from servers", () => {
    const harness = master();
    const id = workerId('w9');
    const effects = harness.receive(
      'w9:9001:9002:9003:9004',
      { type: 'RegisterWorker', worker: id, disks: [], networkLocation: '/r1' },
      { requestId: (nextRequest += 1), principal: app('a') },
    );
    assert.deepEqual(statuses(effects), ['AUTHENTICATION_FAILED']);
    assert.equal(harness.state.durable.workers.workers.size, 0);
  });

  it("tells a server an application's secret, and nobody else", () => {
    const harness = master();
    registerApp(harness, 'a', { secret: 's3cret' });
    const ask = (appId: string, principal: Principal) =>
      harness.receive(
        'w1:9001:9002:9003:9004',
        { type: 'GetApplicationSecret', appId },
        { requestId: (nextRequest += 1), principal },
      );
    assert.deepEqual(onlySent(ask('a', SERVER_PRINCIPAL), 'ApplicationSecretResponse').message, {
      type: 'ApplicationSecretResponse',
      appId: 'a',
      found: true,
      secret: 's3cret',
    });
    assert.equal(onlySent(ask('zz', SERVER_PRINCIPAL), 'ApplicationSecretResponse').message.found, false);
    const refused = ask('a', app('a'));
    assert.deepEqual(statuses(refused), ['AUTHENTICATION_FAILED']);
    assert.deepEqual(sentOf(refused, 'ApplicationSecretResponse'), []);
  });

  it('without authentication registers without a secret, keeps none, and still records the host', () => {
    const harness = master(false);
    assert.deepEqual(statuses(registerApp(harness, 'a', { hostname: 'h1' })), ['SUCCESS']);
    assert.deepEqual(statuses(registerApp(harness, 'b', { secret: 'x', hostname: 'h0' })), ['SUCCESS']);
    assert.equal(harness.state.durable.applications.apps.get('b')?.secret, undefined);
    assert.deepEqual(applicationHostnames(harness.state.durable.applications), ['h0', 'h1']);
  });
});

// ------------------------------------------------------------------------------------------------ worker

function worker(): Harness<WorkerMachineState> {
  return registeredWorker(SELF, { authEnabled: true });
}

/** KEY is shuffle 1 of application `app`. */
function reserve(harness: Harness<WorkerMachineState>, principal: Principal | undefined): Effect[] {
  return harness.receive(
    CLIENT,
    {
      type: 'ReserveSlots',
      appId: 'app',
      shuffleId: 1,
      primaries: [location(0, 0, 'PRIMARY', SELF)],
      replicas: [],
      splitThreshold: 1024 ** 3,
      splitMode: 'SOFT',
      memoryEnabled: false,
    },
    { requestId: (nextRequest += 1), ...(principal === undefined ? {} : { principal }) },
  );
}

describe('authorization: the worker', () => {
  it("reserves an application's slots only for that application", () => {
    const harness = worker();
    for (const principal of [undefined, app('other'), SERVER_PRINCIPAL]) {
      const effects = reserve(harness, principal);
      assert.deepEqual(statuses(effects), ['AUTHENTICATION_FAILED']);
      assert.deepEqual(ioOps(effects), []);
    }
    const effects = harness.completeIo(reserve(harness, app('app')));
    assert.deepEqual(statuses(effects), ['SUCCESS']);
  });

  it("takes an application's pushes only from it, and a replica's only from a server", () => {
    const harness = worker();
    harness.completeIo(reserve(harness, app('app')));
    const push = (mode: 'PRIMARY' | 'REPLICA', principal: Principal) =>
      harness.receive(MAPPER, pushData(KEY, 0, 0, mode), { requestId: (nextRequest += 1), principal });
    for (const refused of [push('PRIMARY', app('other')), push('PRIMARY', SERVER_PRINCIPAL)]) {
      assert.deepEqual(statuses(refused), ['AUTHENTICATION_FAILED']);
      assert.deepEqual(ofKind(ioOps(refused), 'write'), []);
    }
    const forged = push('REPLICA', app('app'));
    assert.deepEqual(statuses(forged), ['AUTHENTICATION_FAILED']);
    assert.deepEqual(ofKind(ioOps(forged), 'write'), []);
    assert.equal(ofKind(ioOps(push('PRIMARY', app('app'))), 'write').length, 1);
  });

  it("never destroys an application's files for another, nor on an answer that did not come from a server", () => {
    const harness = worker();
    harness.completeIo(reserve(harness, app('app')));
    const destroy = harness.receive(
      CLIENT,
      { type: 'DestroySlots', appId: 'app', shuffleId: 1, primaryIds: ['0-0'], replicaIds: [] },
      { principal: app('other') },
    );
    assert.deepEqual(ofKind(destroy, 'deleteFile'), []);
    // A forged heartbeat answer naming the shuffle as expired, from a connection that proved an application.
    const heartbeat = onlySent(harness.timer('heartbeat', harness.now + 60_000), 'WorkerHeartbeat');
    const forged = harness.receive(
      masterNodeId(),
      { type: 'WorkerHeartbeatResponse', registered: true, expiredShuffleKeys: [KEY], workerEvent: 'None' },
      { inReplyTo: heartbeat.requestId!, principal: app('other') },
    );
    assert.deepEqual(ofKind(forged, 'deleteFile'), []);
    assert.equal(harness.state.shuffles.has(KEY), true);
  });
});

// ------------------------------------------------------------------------------------------------ lifecycle manager

describe('authorization: the lifecycle manager', () => {
  it('registers its secret and host when authentication is on, and its host only when it is off', () => {
    const register = (authEnabled: boolean) => {
      const harness = new Harness(
        lifecycleManagerMachine,
        initialLifecycleManagerState(
          testLifecycleManagerConfig('app', { authEnabled, secret: 's3cret', hostname: 'driver-host' }),
        ),
      );
      return onlySent(harness.start(), 'RegisterApplication').message;
    };
    assert.deepEqual(register(true), {
      type: 'RegisterApplication',
      appId: 'app',
      user: 'alice',
      secret: 's3cret',
      hostname: 'driver-host',
    });
    assert.deepEqual(register(false), {
      type: 'RegisterApplication',
      appId: 'app',
      user: 'alice',
      hostname: 'driver-host',
    });
  });

  it("answers only its own application's tasks", () => {
    const harness = new Harness(
      lifecycleManagerMachine,
      initialLifecycleManagerState(testLifecycleManagerConfig('app', { authEnabled: true, secret: 's' })),
    );
    harness.start();
    const registerShuffle = (principal: Principal) =>
      harness.receive(
        MAPPER,
        { type: 'GetReducerFileGroup', appId: 'app', shuffleId: 1 },
        { requestId: (nextRequest += 1), principal },
      );
    assert.deepEqual(statuses(registerShuffle(app('other'))), ['AUTHENTICATION_FAILED']);
    assert.deepEqual(statuses(registerShuffle(SERVER_PRINCIPAL)), ['AUTHENTICATION_FAILED']);
    assert.notDeepEqual(statuses(registerShuffle(app('app'))), ['AUTHENTICATION_FAILED']);
  });

  it('ignores an answer that did not come from a server', () => {
    const harness = new Harness(
      lifecycleManagerMachine,
      initialLifecycleManagerState(testLifecycleManagerConfig('app', { authEnabled: true, secret: 's' })),
    );
    const register = onlySent(harness.start(), 'RegisterApplication');
    harness.receive(
      masterNodeId(),
      { type: 'StatusResponse', status: 'SUCCESS', message: 'forged' },
      { inReplyTo: register.requestId!, principal: app('app') },
    );
    assert.equal(harness.state.app.status, 'registering');
    harness.receive(
      masterNodeId(),
      { type: 'StatusResponse', status: 'SUCCESS', message: 'ok' },
      { inReplyTo: register.requestId!, principal: SERVER_PRINCIPAL },
    );
    assert.equal(harness.state.app.status, 'registered');
  });
});
