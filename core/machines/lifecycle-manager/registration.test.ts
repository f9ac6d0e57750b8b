import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
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
    for (let timer = retryTimer(effects); timer !== undefined; timer = retryTimer(effects)) {
      assert.equal(harness.state.app.status, 'registering');
      tries.push(timer.at);
      effects = unreachable(harness, harness.timer('register-retry', timer.at));
    }
    // testLifecycleManagerConfig's request timeout is 60 s: the last try is at the end of it.
    assert.deepEqual(tries, [0, 1_000, 3_000, 7_000, 15_000, 31_000, 60_000]);
    const app = registrationOf(harness);
    if (app.status !== 'refused') throw new Error(`expected a refusal, the application is ${app.status}`);
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
    assert.equal(registrationOf(harness).status, 'refused');
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
});
