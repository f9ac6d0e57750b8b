import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import fc from 'fast-check';
import { STATUS_CODES, type PartitionLocation, type StatusCode } from '../domain/index.ts';
import { isPushFailure } from './causes.ts';
import { reactToPushReply, reactToReviveAnswer, type PushReactionContext } from './reaction.ts';

const storage = { type: 'HDD' as const, mountPoint: '', availableTypes: 2 };
const location: PartitionLocation = {
  partitionId: 3,
  epoch: 2,
  worker: { host: 'p', rpcPort: 1, pushPort: 2, fetchPort: 3, replicatePort: 4 },
  mode: 'PRIMARY',
  storage,
  peer: {
    partitionId: 3,
    epoch: 2,
    worker: { host: 'r', rpcPort: 1, pushPort: 2, fetchPort: 3, replicatePort: 4 },
    mode: 'REPLICA',
    storage,
  },
};

const context = (overrides: Partial<PushReactionContext> = {}): PushReactionContext => ({
  location,
  remainingRevives: 5,
  mapperEnded: false,
  newerEpochKnown: false,
  excludeWorkerOnFailure: false,
  ...overrides,
});

const SUCCESS_CODES: readonly StatusCode[] = [
  'SUCCESS',
  'PUSH_DATA_SUCCESS_PRIMARY_CONGESTED',
  'PUSH_DATA_SUCCESS_REPLICA_CONGESTED',
  'SOFT_SPLIT',
  'MAP_ENDED',
];

describe('reactToPushReply', () => {
  it('revives after every failure while revives remain, gives up when none remain, drops after the map ended', () => {
    const contextArb = fc.record({
      remainingRevives: fc.integer({ min: -1, max: 5 }),
      mapperEnded: fc.boolean(),
      newerEpochKnown: fc.boolean(),
      excludeWorkerOnFailure: fc.boolean(),
    });
    fc.assert(
      fc.property(
        fc.constantFrom(...(Object.keys(STATUS_CODES) as StatusCode[])),
        contextArb,
        (status, overrides) => {
          const ctx = context(overrides);
          const reaction = reactToPushReply(status, ctx);
          if (SUCCESS_CODES.includes(status)) {
            assert.equal(reaction.kind, status === 'MAP_ENDED' ? 'dropBatch' : 'done');
            return;
          }
          if (ctx.mapperEnded) {
            assert.equal(reaction.kind, 'dropBatch');
            return;
          }
          if (status === 'HARD_SPLIT') {
            assert.deepEqual(reaction, {
              kind: 'retry',
              cause: 'HARD_SPLIT',
              revive: !ctx.newerEpochKnown,
              consumesRevive: false,
            });
            return;
          }
          const cause = isPushFailure(status) ? status : 'PUSH_DATA_FAIL_NON_CRITICAL_CAUSE_PRIMARY';
          if (ctx.remainingRevives <= 0) {
            assert.equal(reaction.kind, 'giveUp');
            assert.equal(reaction.kind === 'giveUp' && reaction.cause, cause);
            return;
          }
          assert.equal(reaction.kind, 'retry');
          if (reaction.kind !== 'retry') return;
          assert.equal(reaction.cause, cause);
          assert.equal(reaction.consumesRevive, true);
          assert.equal(reaction.revive, !ctx.newerEpochKnown);
          if (!ctx.excludeWorkerOnFailure) assert.equal(reaction.exclude, undefined);
        },
      ),
      { numRuns: 300 },
    );
  });

  it('revives the pair after a replica failure and excludes the peer when asked to', () => {
    const reaction = reactToPushReply('PUSH_DATA_TIMEOUT_REPLICA', context({ excludeWorkerOnFailure: true }));
    assert.deepEqual(reaction, {
      kind: 'retry',
      cause: 'PUSH_DATA_TIMEOUT_REPLICA',
      revive: true,
      consumesRevive: true,
      exclude: { worker: location.peer!.worker, role: 'peer', cause: 'PUSH_DATA_TIMEOUT_REPLICA' },
    });
  });

  it('slows down on congestion and revives in the background on a soft split unless a newer location is known', () => {
    assert.deepEqual(reactToPushReply('PUSH_DATA_SUCCESS_PRIMARY_CONGESTED', context()), {
      kind: 'done',
      slowDown: 'PRIMARY',
    });
    assert.deepEqual(reactToPushReply('PUSH_DATA_SUCCESS_REPLICA_CONGESTED', context()), {
      kind: 'done',
      slowDown: 'REPLICA',
    });
    assert.deepEqual(reactToPushReply('SOFT_SPLIT', context()), { kind: 'done', reviveInBackground: true });
    assert.deepEqual(reactToPushReply('SOFT_SPLIT', context({ newerEpochKnown: true })), {
      kind: 'done',
      reviveInBackground: false,
    });
  });

  it('gives up with a message that names the partition, the cause and the setting to raise', () => {
    const reaction = reactToPushReply('PUSH_DATA_WRITE_FAIL_PRIMARY', context({ remainingRevives: 0 }));
    assert.deepEqual(reaction, {
      kind: 'giveUp',
      cause: 'PUSH_DATA_WRITE_FAIL_PRIMARY',
      message:
        'push of partition 3 (epoch 2) failed with PUSH_DATA_WRITE_FAIL_PRIMARY and no revive is left; check the ' +
        'health of the workers involved, or raise svc.client.push.revive.maxRetries',
    });
  });
});

describe('reactToReviveAnswer', () => {
  const ctx = { partitionId: 3, cause: 'PUSH_DATA_WRITE_FAIL_PRIMARY' as const, mapperEnded: false };

  it('pushes to the new location on SUCCESS', () => {
    assert.deepEqual(reactToReviveAnswer({ status: 'SUCCESS', location }, ctx), { kind: 'pushTo', location });
  });

  it('drops the batch when the map or the stage ended', () => {
    assert.equal(
      reactToReviveAnswer({ status: 'SUCCESS', location }, { ...ctx, mapperEnded: true }).kind,
      'dropBatch',
    );
    assert.equal(reactToReviveAnswer({ status: 'STAGE_ENDED' }, ctx).kind, 'dropBatch');
  });

  it('gives up with REVIVE_FAILED, naming the cause, the answer and its reason', () => {
    assert.deepEqual(
      reactToReviveAnswer({ status: 'SLOT_NOT_AVAILABLE', reason: 'no worker survives' }, ctx),
      {
        kind: 'giveUp',
        cause: 'REVIVE_FAILED',
        message:
          'revive of partition 3 after PUSH_DATA_WRITE_FAIL_PRIMARY failed with SLOT_NOT_AVAILABLE: no worker survives',
      },
    );
  });
});
