import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import fc from 'fast-check';
import {
  cannotServeFrom,
  decideShuffle,
  decideWithoutAsking,
  parseFallbackPolicy,
  type CannotServe,
  type FallbackPolicy,
} from './fallback.ts';

const policies = fc.constantFrom<FallbackPolicy>('AUTO', 'ALWAYS', 'NEVER');
const causes: fc.Arbitrary<CannotServe | undefined> = fc.option(
  fc.record({
    kind: fc.constantFrom('noWorkers' as const, 'releaseRefused' as const, 'quotaExceeded' as const),
    message: fc.string(),
  }),
  { nil: undefined },
);

describe('the fallback decision', () => {
  it('property: ALWAYS falls back without asking; AUTO falls back exactly when svc cannot serve; NEVER never does', () => {
    fc.assert(
      fc.property(policies, causes, (policy, cause) => {
        const decision = decideShuffle(policy, cause);
        if (policy === 'ALWAYS') {
          assert.equal(decision.kind, 'fallback', 'ALWAYS always falls back');
          assert.deepEqual(decideWithoutAsking(policy), decision, 'and decides before asking');
          return;
        }
        assert.equal(decideWithoutAsking(policy), undefined, 'AUTO and NEVER ask the cluster first');
        if (cause === undefined) assert.equal(decision.kind, 'svc', 'a served shuffle runs on svc');
        else assert.equal(decision.kind, policy === 'AUTO' ? 'fallback' : 'fail', 'the policy decides');
        if (decision.kind === 'fail') {
          assert.match(decision.message, /svc\.client\.spark\.shuffle\.fallback\.policy is NEVER/);
          assert.ok(decision.message.includes(cause!.message), 'the cluster’s words are kept');
        }
      }),
    );
  });

  it('reads the causes from the registration’s status, the quota refusal included', () => {
    assert.equal(cannotServeFrom('SLOT_NOT_AVAILABLE', 'm')?.kind, 'noWorkers');
    assert.equal(cannotServeFrom('WORKER_EXCLUDED', 'm')?.kind, 'noWorkers');
    assert.equal(cannotServeFrom('CLIENT_RELEASE_REFUSED', 'm')?.kind, 'releaseRefused');
    assert.equal(cannotServeFrom('QUOTA_EXCEEDED', 'm')?.kind, 'quotaExceeded');
    assert.equal(
      cannotServeFrom('REQUEST_FAILED', 'm'),
      undefined,
      'other failures are not a lack of service',
    );
  });

  it('parses the policy in any case and refuses anything else', () => {
    assert.equal(parseFallbackPolicy('never'), 'NEVER');
    assert.equal(parseFallbackPolicy(' Always '), 'ALWAYS');
    assert.equal(parseFallbackPolicy('sometimes'), undefined);
  });
});
