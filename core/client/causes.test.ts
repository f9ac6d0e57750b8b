import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import fc from 'fast-check';
import { STATUS_CODES, type PartitionLocation, type StatusCode } from '../domain/index.ts';
import {
  clientExclusion,
  isPushFailure,
  lifecycleExclusion,
  PUSH_FAILURE_CAUSES,
  pushFailureCause,
  type PushFailureStatus,
} from './causes.ts';

const primaryId = { host: 'p', rpcPort: 1, pushPort: 2, fetchPort: 3, replicatePort: 4 };
const peerId = { host: 'r', rpcPort: 1, pushPort: 2, fetchPort: 3, replicatePort: 4 };
const storage = { type: 'HDD' as const, mountPoint: '', availableTypes: 2 };
const replicated: PartitionLocation = {
  partitionId: 1,
  epoch: 0,
  worker: primaryId,
  mode: 'PRIMARY',
  storage,
  peer: { partitionId: 1, epoch: 0, worker: peerId, mode: 'REPLICA', storage },
};
const single: PartitionLocation = { ...replicated, peer: undefined };

const CAUSES = Object.keys(PUSH_FAILURE_CAUSES) as PushFailureStatus[];

describe('the push failure table', () => {
  it('blames the copy its name says', () => {
    for (const cause of CAUSES) {
      const { side } = PUSH_FAILURE_CAUSES[cause];
      if (cause.endsWith('_PRIMARY') || cause.includes('_PRIMARY_')) assert.equal(side, 'PRIMARY', cause);
      if (cause.endsWith('_REPLICA') || cause.includes('_REPLICA_')) assert.equal(side, 'REPLICA', cause);
    }
    assert.equal(PUSH_FAILURE_CAUSES.REPLICATE_DATA_FAILED.side, 'REPLICA');
    assert.equal(PUSH_FAILURE_CAUSES.PUSH_DATA_FAIL_PARTITION_NOT_FOUND.side, 'PRIMARY');
  });

  it('holds only real status codes, and no success code', () => {
    for (const cause of CAUSES) {
      assert.ok(cause in STATUS_CODES, 'cause in STATUS_CODES');
      assert.ok(
        !['SUCCESS', 'SOFT_SPLIT', 'HARD_SPLIT', 'MAP_ENDED'].includes(cause),
        "!['SUCCESS', 'SOFT_SPLIT', 'HARD_SPLIT', 'MAP_ENDED'].includes(cause)",
      );
    }
  });
});

describe('pushFailureCause', () => {
  it('names what the client saw', () => {
    assert.equal(pushFailureCause({ kind: 'sendFailed' }), 'PUSH_DATA_CREATE_CONNECTION_FAIL_PRIMARY');
    assert.equal(pushFailureCause({ kind: 'connectionLost' }), 'PUSH_DATA_CONNECTION_EXCEPTION_PRIMARY');
    assert.equal(pushFailureCause({ kind: 'timedOut' }), 'PUSH_DATA_TIMEOUT_PRIMARY');
    assert.equal(
      pushFailureCause({ kind: 'status', status: 'PUSH_DATA_WRITE_FAIL_REPLICA' }),
      'PUSH_DATA_WRITE_FAIL_REPLICA',
    );
  });

  it('treats any status outside the table as NON_CRITICAL_CAUSE_PRIMARY', () => {
    fc.assert(
      fc.property(fc.constantFrom(...(Object.keys(STATUS_CODES) as StatusCode[])), (status) => {
        const cause = pushFailureCause({ kind: 'status', status });
        assert.equal(cause, isPushFailure(status) ? status : 'PUSH_DATA_FAIL_NON_CRITICAL_CAUSE_PRIMARY');
      }),
      { numRuns: 100 },
    );
  });
});

describe('exclusions', () => {
  it('the client excludes on connection failures and timeouts only, and only when enabled', () => {
    const expected: Partial<Record<PushFailureStatus, 'primary' | 'peer'>> = {
      PUSH_DATA_CREATE_CONNECTION_FAIL_PRIMARY: 'primary',
      PUSH_DATA_CONNECTION_EXCEPTION_PRIMARY: 'primary',
      PUSH_DATA_TIMEOUT_PRIMARY: 'primary',
      PUSH_DATA_CREATE_CONNECTION_FAIL_REPLICA: 'peer',
      PUSH_DATA_CONNECTION_EXCEPTION_REPLICA: 'peer',
      PUSH_DATA_TIMEOUT_REPLICA: 'peer',
    };
    for (const cause of CAUSES) {
      const exclusion = clientExclusion(cause, replicated, { excludeWorkerOnFailure: true });
      assert.equal(exclusion?.role, expected[cause], cause);
      if (exclusion) assert.deepEqual(exclusion.worker, exclusion.role === 'primary' ? primaryId : peerId);
      assert.equal(clientExclusion(cause, replicated, { excludeWorkerOnFailure: false }), undefined);
    }
  });

  it('the lifecycle manager also excludes on write failures, and the peer only when enabled', () => {
    const expected: Partial<Record<PushFailureStatus, 'primary' | 'peer'>> = {
      PUSH_DATA_WRITE_FAIL_PRIMARY: 'primary',
      PUSH_DATA_CREATE_CONNECTION_FAIL_PRIMARY: 'primary',
      PUSH_DATA_CONNECTION_EXCEPTION_PRIMARY: 'primary',
      PUSH_DATA_TIMEOUT_PRIMARY: 'primary',
      PUSH_DATA_WRITE_FAIL_REPLICA: 'peer',
      PUSH_DATA_CREATE_CONNECTION_FAIL_REPLICA: 'peer',
      PUSH_DATA_CONNECTION_EXCEPTION_REPLICA: 'peer',
      PUSH_DATA_TIMEOUT_REPLICA: 'peer',
    };
    for (const cause of CAUSES) {
      assert.equal(
        lifecycleExclusion(cause, replicated, { excludePeerWorkerOnFailure: true })?.role,
        expected[cause],
        cause,
      );
      const withoutPeer = lifecycleExclusion(cause, replicated, { excludePeerWorkerOnFailure: false })?.role;
      assert.equal(withoutPeer, expected[cause] === 'primary' ? 'primary' : undefined, cause);
      const unreplicated = lifecycleExclusion(cause, single, { excludePeerWorkerOnFailure: true })?.role;
      assert.equal(unreplicated, expected[cause] === 'primary' ? 'primary' : undefined, cause);
    }
    for (const cause of ['SOFT_SPLIT', 'HARD_SPLIT', 'SUCCESS'] as const) {
      assert.equal(lifecycleExclusion(cause, replicated, { excludePeerWorkerOnFailure: true }), undefined);
    }
  });
});
