import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import fc from 'fast-check';
import { admitClient } from '../../release/admission.ts';
import { KNOWN_RELEASES, type Release } from '../../release/version.ts';
import { Harness, ofKind, sentOf } from '../worker/test-kit.ts';
import { initialLifecycleManagerState, lifecycleManagerMachine } from './index.ts';
import { testLifecycleManagerConfig } from './testing.ts';

const release = fc.oneof(
  fc.constantFrom(...KNOWN_RELEASES),
  fc
    .tuple(fc.nat(12), fc.nat(12), fc.nat(12))
    .map(([major, minor, patch]): Release => `${major}.${minor}.${patch}`),
);

/** A task of the application asks its lifecycle manager (of `lmRelease`) from a connection of `taskRelease`. */
function ask(lmRelease: Release, taskRelease: Release) {
  const harness = new Harness(
    lifecycleManagerMachine,
    initialLifecycleManagerState(testLifecycleManagerConfig('app', { release: lmRelease })),
  );
  harness.start();
  const effects = harness.receive(
    'app-executor-1',
    { type: 'GetReducerFileGroup', appId: 'app', shuffleId: 0 },
    { requestId: 7, fromRelease: taskRelease },
  );
  return effects;
}

describe('lifecycle manager: admission by release', () => {
  it('refuses an executor of 9.9.9 and of 0.1.0 with CLIENT_RELEASE_REFUSED, naming both releases', () => {
    for (const taskRelease of ['9.9.9', '0.1.0'] as const) {
      const effects = ask('0.6.0', taskRelease);
      const [refusal] = sentOf(effects, 'StatusResponse');
      assert.equal(refusal?.message.status, 'CLIENT_RELEASE_REFUSED', taskRelease);
      assert.match(
        refusal.message.message,
        new RegExp(`refuses client release ${taskRelease.replaceAll('.', '\\.')}`),
      );
      assert.equal(refusal.inReplyTo, 7);
      assert.ok(
        ofKind(effects, 'log').some((line) => line.event === 'lifecycle-manager.client.refused'),
        "ofKind(effects, 'log').some((line) => line.event === 'lifecycle-manager.client.refused')",
      );
      assert.deepEqual(sentOf(effects, 'GetReducerFileGroupResponse'), [], 'the request is not served');
    }
  });

  it('admits exactly the executors the master and workers admit (property: any release asks one of svc’s releases)', () => {
    fc.assert(
      fc.property(fc.constantFrom(...KNOWN_RELEASES), release, (lmRelease, taskRelease) => {
        const effects = ask(lmRelease, taskRelease);
        const refused = sentOf(effects, 'StatusResponse').some(
          (sent) => sent.message.status === 'CLIENT_RELEASE_REFUSED',
        );
        assert.equal(refused, !admitClient(lmRelease, taskRelease).admitted, `${lmRelease} / ${taskRelease}`);
      }),
      { numRuns: 300 },
    );
  });
});
