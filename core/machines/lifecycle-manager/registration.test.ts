import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import fc from 'fast-check';
import { masterNodeId } from '../../protocol/node-ids.ts';
import type { Effect } from '../effects.ts';
import { Harness, ofKind, onlySent, sentOf } from '../worker/test-kit.ts';
import {
  initialLifecycleManagerState,
  lifecycleManagerMachine,
  type LifecycleManagerState,
} from './index.ts';
import { testLifecycleManagerConfig } from './testing.ts';

function lifecycleManager(): { harness: Harness<LifecycleManagerState>; first: Effect[] } {
  const harness = new Harness(
    lifecycleManagerMachine,
    initialLifecycleManagerState(testLifecycleManagerConfig('app')),
  );
  return { harness, first: harness.start() };
}

/** The master cannot be reached: the driver reports the send of the request in `effects` as failed. */
function unreachable(harness: Harness<LifecycleManagerState>, effects: readonly Effect[]): Effect[] {
  const sent = onlySent(effects, 'RegisterApplication');
  return harness.step({
    kind: 'sendFailed',
    to: masterNodeId(),
    requestId: sent.requestId!,
    message: sent.message,
  });
}

/** Read through a call, so that earlier assertions on the state do not narrow its type. */
function registrationOf(harness: Harness<LifecycleManagerState>): LifecycleManagerState['app'] {
  return harness.state.app;
}

function retryTimer(effects: readonly Effect[]) {
  return ofKind(effects, 'setTimer').find((timer) => timer.name === 'register-retry');
}

describe('lifecycle manager: registering with a master it cannot reach', () => {
  it('tries again after 1 s, 2 s, 4 s, … and gives up after one request timeout, naming what to check', () => {
    const { harness, first } = lifecycleManager();
    let effects = unreachable(harness, first);
    assert.deepEqual(sentOf(effects, 'RegisterApplication'), [], 'no burst of immediate retries');
    const tries = [0];
    while (registrationOf(harness).status === 'registering') {
      const timer = retryTimer(effects);
      if (timer === undefined) throw new Error('registering without a retry planned');
      tries.push(timer.at);
      effects = unreachable(harness, harness.timer('register-retry', timer.at));
    }
    // testLifecycleManagerConfig's request timeout is 60 s: the last try is at the end of it.
    assert.deepEqual(tries, [0, 1_000, 3_000, 7_000, 15_000, 31_000, 60_000]);
    const app = registrationOf(harness);
    if (app.status !== 'unreachable')
      throw new Error(`expected to give up, the application is ${app.status}`);
    assert.equal(app.code, 'REQUEST_FAILED');
    assert.match(app.message, /could not reach the master .* for 60 s \(7 tries.*svc\.master\.endpoints/);
    assert.equal(
      ofKind(harness.all, 'log').filter((log) => log.event === 'master unreachable; registering again later')
        .length,
      6,
      'a warning at every try but the last',
    );
  });

  it('a master reached again but silent still gets every try against timeouts (swarm seed 942907)', () => {
    const { harness, first } = lifecycleManager();
    unreachable(harness, first);
    let sent = onlySent(harness.timer('register-retry', 1_000), 'RegisterApplication');
    // Up again but cut off from the application: each try times out, and the tries count from one again.
    for (let timeouts = 1; timeouts < 3; timeouts += 1) {
      const effects = harness.timer(`req:${sent.requestId!}`, harness.now + 60_000);
      assert.equal(registrationOf(harness).status, 'registering', `after ${timeouts} timeouts`);
      sent = onlySent(effects, 'RegisterApplication');
    }
    harness.timer(`req:${sent.requestId!}`, harness.now + 60_000);
    assert.equal(registrationOf(harness).status, 'unreachable');
  });

  it('registers when the master answers a retry', () => {
    const { harness, first } = lifecycleManager();
    unreachable(harness, first);
    const retry = onlySent(harness.timer('register-retry', 1_000), 'RegisterApplication');
    harness.receive(
      masterNodeId(),
      { type: 'StatusResponse', status: 'SUCCESS', message: 'ok' },
      { inReplyTo: retry.requestId! },
    );
    assert.equal(harness.state.app.status, 'registered');
    // A late retry timer changes nothing once registered.
    assert.deepEqual(sentOf(harness.timer('register-retry', 5_000), 'RegisterApplication'), []);
  });

  it('once registered, waits out an unreachable master (it may be restarting) instead of giving up', () => {
    const { harness, first } = lifecycleManager();
    const register = onlySent(first, 'RegisterApplication');
    harness.receive(
      masterNodeId(),
      { type: 'StatusResponse', status: 'SUCCESS', message: 'ok' },
      { inReplyTo: register.requestId! },
    );
    const heartbeat = onlySent(harness.timer('heartbeat', 10_000), 'ApplicationHeartbeat');
    const effects = harness.step({
      kind: 'sendFailed',
      to: masterNodeId(),
      requestId: heartbeat.requestId!,
      message: heartbeat.message,
    });
    assert.equal(retryTimer(effects), undefined);
    assert.equal(harness.state.app.status, 'registered');
  });

  it('after giving up, tries again every heartbeat interval and registers when the master answers (swarm seed 12339)', () => {
    const { harness, first } = lifecycleManager();
    // A group of masters between leaders: the first send fails (a member down), the retry is lost and times out,
    // and its second attempt reaches a member that names no leader, one request timeout after the first failure.
    unreachable(harness, first);
    const lost = onlySent(harness.timer('register-retry', 1_000), 'RegisterApplication');
    unreachable(harness, harness.timer(`req:${lost.requestId!}`, 61_000));
    const app = registrationOf(harness);
    if (app.status !== 'unreachable')
      throw new Error(`expected to give up, the application is ${app.status}`);
    assert.match(app.message, /could not reach the master .* for 61 s \(2 tries/);

    // Tasks learn it at once, with the reason, instead of waiting.
    const refused = harness.receive(
      'map-0',
      { type: 'RegisterShuffle', appId: 'app', shuffleId: 0, numMappers: 1, numPartitions: 2 },
      { requestId: 7 },
    );
    const answer = onlySent(refused, 'RegisterShuffleResponse').message;
    assert.equal(answer.type === 'RegisterShuffleResponse' && answer.status, 'REQUEST_FAILED');

    // A try every heartbeat interval (10 s here), whatever the failure: unreachable, or unanswered.
    const unanswered = onlySent(harness.timer('register-retry', 71_000), 'RegisterApplication');
    const afterTimeout = harness.timer(`req:${unanswered.requestId!}`, 131_000);
    assert.deepEqual(
      sentOf(afterTimeout, 'RegisterApplication'),
      [],
      'no second attempt right after a timeout',
    );
    assert.equal(retryTimer(afterTimeout)?.at, 141_000);
    const answered = onlySent(harness.timer('register-retry', 141_000), 'RegisterApplication');
    harness.receive(
      masterNodeId(),
      { type: 'StatusResponse', status: 'SUCCESS', message: 'ok' },
      { inReplyTo: answered.requestId! },
    );
    assert.equal(registrationOf(harness).status, 'registered');
    const registered = ofKind(harness.all, 'log').find((log) => log.event === 'application registered');
    assert.equal(registered?.fields?.['failedTriesSinceGivingUp'], 1);

    // The next task's shuffle goes to the master.
    const asked = harness.receive(
      'map-0',
      { type: 'RegisterShuffle', appId: 'app', shuffleId: 1, numMappers: 1, numPartitions: 2 },
      { requestId: 8 },
    );
    assert.equal(sentOf(asked, 'RequestSlots').length, 1);
  });

  it('a refusal after giving up is for good: no more tries', () => {
    const { harness, first } = lifecycleManager();
    let effects = unreachable(harness, first);
    while (registrationOf(harness).status === 'registering') {
      effects = unreachable(harness, harness.timer('register-retry', retryTimer(effects)!.at));
    }
    const retry = onlySent(harness.timer('register-retry', harness.now + 10_000), 'RegisterApplication');
    const last = harness.receive(
      masterNodeId(),
      { type: 'StatusResponse', status: 'CLIENT_RELEASE_REFUSED', message: 'too old' },
      { inReplyTo: retry.requestId! },
    );
    assert.equal(registrationOf(harness).status, 'refused');
    assert.equal(retryTimer(last), undefined);
    assert.deepEqual(
      sentOf(harness.timer('register-retry', harness.now + 10_000), 'RegisterApplication'),
      [],
    );
  });

  it('property: whatever failures come first, registration is always in hand and the first answer registers', () => {
    fc.assert(
      fc.property(fc.array(fc.constantFrom('unreachable', 'timeout'), { maxLength: 25 }), (failures) => {
        const { harness, first } = lifecycleManager();
        let pending = sentOf(first, 'RegisterApplication')[0];
        let retryAt: number | undefined;
        const next = (effects: readonly Effect[]): void => {
          pending = sentOf(effects, 'RegisterApplication')[0];
          retryAt = retryTimer(effects)?.at;
          // Always exactly one of: a request in flight, a retry planned.
          assert.equal((pending === undefined ? 0 : 1) + (retryAt === undefined ? 0 : 1), 1);
        };
        for (const failure of failures) {
          if (pending === undefined) next(harness.timer('register-retry', retryAt));
          const request = pending!;
          next(
            failure === 'unreachable'
              ? harness.step({
                  kind: 'sendFailed',
                  to: masterNodeId(),
                  requestId: request.requestId!,
                  message: request.message,
                })
              : harness.timer(`req:${request.requestId!}`, harness.now + 60_000),
          );
          assert.ok(
            ['registering', 'unreachable'].includes(registrationOf(harness).status),
            'neither registered nor refused by failures alone',
          );
        }
        if (pending === undefined) next(harness.timer('register-retry', retryAt));
        harness.receive(
          masterNodeId(),
          { type: 'StatusResponse', status: 'SUCCESS', message: 'ok' },
          { inReplyTo: pending!.requestId! },
        );
        assert.equal(registrationOf(harness).status, 'registered');
      }),
    );
  });
});
