import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import fc from 'fast-check';
import { STATUS_CODES, type StatusCode } from '../domain/index.ts';
import { admitPush, pushReply, replicaFailureCause, type PushTarget, type ReplicaOutcome } from './push.ts';

const found = (overrides: Partial<Extract<PushTarget, { kind: 'found' }>> = {}): PushTarget => ({
  kind: 'found',
  hasPeer: true,
  writerFailed: false,
  split: 'NO_SPLIT',
  ...overrides,
});

const base = { mode: 'PRIMARY' as const, shuttingDown: false, peerUnavailable: false };

describe('admitPush', () => {
  it('answers a push to a missing location by what it knows of the map and the shuffle', () => {
    const missing = (mapper: 'ended' | 'running' | 'unknown', shuffleKnown: boolean): PushTarget => ({
      kind: 'missing',
      mapper,
      shuffleKnown,
    });
    const status = (target: PushTarget) => {
      const admission = admitPush({ ...base, target });
      return admission.kind === 'reply' ? admission.status : admission.kind;
    };
    assert.equal(status(missing('ended', false)), 'MAP_ENDED');
    assert.equal(status(missing('running', false)), 'HARD_SPLIT');
    assert.equal(status(missing('unknown', true)), 'HARD_SPLIT');
    assert.equal(status(missing('unknown', false)), 'PUSH_DATA_FAIL_PARTITION_NOT_FOUND');
  });

  it('moves clients away from a shutting-down worker with HARD_SPLIT', () => {
    assert.deepEqual(admitPush({ ...base, shuttingDown: true, target: found() }), {
      kind: 'reply',
      status: 'HARD_SPLIT',
      reason: 'the worker is shutting down; revive the partition elsewhere',
    });
  });

  it('fails a push to a failed writer with the cause of its own copy', () => {
    const primary = admitPush({ ...base, target: found({ writerFailed: true }) });
    const replica = admitPush({
      ...base,
      mode: 'REPLICA',
      target: found({ writerFailed: true, hasPeer: false }),
    });
    assert.equal(primary.kind === 'reply' && primary.status, 'PUSH_DATA_WRITE_FAIL_PRIMARY');
    assert.equal(replica.kind === 'reply' && replica.status, 'PUSH_DATA_WRITE_FAIL_REPLICA');
  });

  it('replies HARD_SPLIT at once and remembers SOFT_SPLIT for after the write', () => {
    const hard = admitPush({ ...base, target: found({ split: 'HARD_SPLIT' }) });
    assert.equal(hard.kind === 'reply' && hard.status, 'HARD_SPLIT');
    assert.deepEqual(admitPush({ ...base, target: found({ split: 'SOFT_SPLIT' }) }), {
      kind: 'write',
      replicate: true,
      softSplit: true,
    });
  });

  it('forwards only from a primary with a peer, and fails fast inside the unavailable-peer window', () => {
    assert.deepEqual(admitPush({ ...base, target: found() }), {
      kind: 'write',
      replicate: true,
      softSplit: false,
    });
    assert.deepEqual(admitPush({ ...base, target: found({ hasPeer: false }) }), {
      kind: 'write',
      replicate: false,
      softSplit: false,
    });
    assert.deepEqual(admitPush({ ...base, mode: 'REPLICA', target: found() }), {
      kind: 'write',
      replicate: false,
      softSplit: false,
    });
    const fast = admitPush({ ...base, peerUnavailable: true, target: found() });
    assert.equal(fast.kind === 'reply' && fast.status, 'PUSH_DATA_CREATE_CONNECTION_FAIL_REPLICA');
    const unreplicated = admitPush({ ...base, peerUnavailable: true, target: found({ hasPeer: false }) });
    assert.equal(unreplicated.kind, 'write');
  });
});

const ALL_STATUSES = Object.keys(STATUS_CODES) as StatusCode[];
const failedOutcomeArb: fc.Arbitrary<Exclude<ReplicaOutcome, { kind: 'acked' }>> = fc.oneof(
  fc.constant({ kind: 'connectFailed' as const }),
  fc.constant({ kind: 'connectionLost' as const }),
  fc.constant({ kind: 'timedOut' as const }),
  fc.constantFrom(...ALL_STATUSES).map((status) => ({ kind: 'rejected' as const, status })),
);
const ackedBodyArb = fc.constantFrom<StatusCode>(
  'SUCCESS',
  'PUSH_DATA_SUCCESS_REPLICA_CONGESTED',
  'HARD_SPLIT',
  'MAP_ENDED',
);
const outcomeArb: fc.Arbitrary<ReplicaOutcome> = fc.oneof(
  failedOutcomeArb,
  ackedBodyArb.map((body) => ({ kind: 'acked' as const, body })),
);

describe('replicaFailureCause', () => {
  it('maps each failure to its REPLICA cause (reference §5 step 7)', () => {
    assert.equal(replicaFailureCause({ kind: 'connectFailed' }), 'PUSH_DATA_CREATE_CONNECTION_FAIL_REPLICA');
    assert.equal(replicaFailureCause({ kind: 'connectionLost' }), 'PUSH_DATA_CONNECTION_EXCEPTION_REPLICA');
    assert.equal(replicaFailureCause({ kind: 'timedOut' }), 'PUSH_DATA_TIMEOUT_REPLICA');
    assert.equal(
      replicaFailureCause({ kind: 'rejected', status: 'PUSH_DATA_WRITE_FAIL_REPLICA' }),
      'PUSH_DATA_WRITE_FAIL_REPLICA',
    );
    assert.equal(
      replicaFailureCause({ kind: 'rejected', status: 'PUSH_DATA_TIMEOUT_REPLICA' }),
      'PUSH_DATA_TIMEOUT_REPLICA',
    );
    assert.equal(
      replicaFailureCause({ kind: 'rejected', status: 'PUSH_DATA_FAIL_PARTITION_NOT_FOUND' }),
      'PUSH_DATA_FAIL_NON_CRITICAL_CAUSE_REPLICA',
    );
  });

  it('always blames the replica', () => {
    fc.assert(
      fc.property(failedOutcomeArb, (outcome) => {
        assert.match(replicaFailureCause(outcome), /_REPLICA$/);
      }),
      { numRuns: 200 },
    );
  });
});

describe('pushReply', () => {
  it('acknowledges SUCCESS only when the local write and the replica both succeeded plainly', () => {
    fc.assert(
      fc.property(
        fc.constantFrom('PRIMARY' as const, 'REPLICA' as const),
        fc.boolean(),
        fc.option(outcomeArb, { nil: undefined }),
        fc.boolean(),
        fc.boolean(),
        (mode, localWritten, replica, softSplit, congested) => {
          const status = pushReply({
            mode,
            localWritten,
            softSplit,
            congested,
            ...(replica ? { replica } : {}),
          });
          if (!localWritten) {
            assert.equal(
              status,
              mode === 'PRIMARY' ? 'PUSH_DATA_WRITE_FAIL_PRIMARY' : 'PUSH_DATA_WRITE_FAIL_REPLICA',
            );
            return;
          }
          if (replica !== undefined && replica.kind !== 'acked') {
            assert.equal(status, replicaFailureCause(replica));
            return;
          }
          const body = replica?.body ?? 'SUCCESS';
          if (status === 'SUCCESS')
            assert.ok(
              body === 'SUCCESS' && !softSplit && !congested,
              "body === 'SUCCESS' && !softSplit && !congested",
            );
          if (body === 'HARD_SPLIT') assert.equal(status, 'HARD_SPLIT');
          else if (softSplit) assert.equal(status, 'SOFT_SPLIT');
          else if (body !== 'SUCCESS') assert.equal(status, body);
        },
      ),
      { numRuns: 300 },
    );
  });

  it('ranks a local failure above a replica failure, and a split above congestion', () => {
    assert.equal(
      pushReply({
        mode: 'PRIMARY',
        localWritten: false,
        replica: { kind: 'timedOut' },
        softSplit: false,
        congested: false,
      }),
      'PUSH_DATA_WRITE_FAIL_PRIMARY',
    );
    assert.equal(
      pushReply({
        mode: 'PRIMARY',
        localWritten: true,
        replica: { kind: 'acked', body: 'PUSH_DATA_SUCCESS_REPLICA_CONGESTED' },
        softSplit: true,
        congested: false,
      }),
      'SOFT_SPLIT',
    );
    assert.equal(
      pushReply({
        mode: 'PRIMARY',
        localWritten: true,
        replica: { kind: 'acked', body: 'SUCCESS' },
        softSplit: false,
        congested: true,
      }),
      'PUSH_DATA_SUCCESS_PRIMARY_CONGESTED',
    );
    assert.equal(
      pushReply({ mode: 'REPLICA', localWritten: true, softSplit: false, congested: true }),
      'PUSH_DATA_SUCCESS_REPLICA_CONGESTED',
    );
    assert.equal(
      pushReply({ mode: 'PRIMARY', localWritten: true, softSplit: false, congested: false }),
      'SUCCESS',
    );
  });
});
