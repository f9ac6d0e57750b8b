import type { PartitionLocation, StatusCode } from '../domain/index.ts';
import { clientExclusion, pushFailureCause, type Exclusion, type PushFailureStatus } from './causes.ts';

export interface PushReactionContext {
  /** The location the batch was pushed to (the primary, carrying its peer when replicated). */
  readonly location: PartitionLocation;
  /** Revives this batch may still ask for after failures (`svc.client.push.revive.maxRetries`, default 5). */
  readonly remainingRevives: number;
  /** The map task has ended (another attempt won, or it finished): nothing of it needs pushing any more. */
  readonly mapperEnded: boolean;
  /** The client already knows a location of this partition with a newer epoch than `location`. */
  readonly newerEpochKnown: boolean;
  /** `svc.client.push.excludeWorkerOnFailure.enabled` (default false). */
  readonly excludeWorkerOnFailure: boolean;
}

export type PushReaction =
  /** The batch is stored. Congestion asks the client to slow down; a soft split asks for a revive in the background. */
  | {
      readonly kind: 'done';
      readonly slowDown?: 'PRIMARY' | 'REPLICA';
      readonly reviveInBackground?: boolean;
    }
  /** The map task has ended; drop the batch. */
  | { readonly kind: 'dropBatch'; readonly reason: string }
  /**
   * Push the batch again. `revive` asks the lifecycle manager for a new location (of the whole pair) first;
   * otherwise the newer location the client already knows is used. `consumesRevive` counts it against the budget.
   */
  | {
      readonly kind: 'retry';
      readonly cause: StatusCode;
      readonly revive: boolean;
      readonly consumesRevive: boolean;
      readonly exclude?: Exclusion;
    }
  /** Out of revives: fail the task with this cause. */
  | { readonly kind: 'giveUp'; readonly cause: PushFailureStatus; readonly message: string };

/**
 * The client's reaction to a worker's answer to a push (reference §3.1, §5 "Client reaction"). Any failure, PRIMARY
 * or REPLICA, revives the pair: a new primary and replica at epoch + 1. Splits do not count against the revive
 * budget, because a healthy large partition splits many times; failures do, so a partition that keeps failing ends
 * in a clear error instead of looping.
 */
export function reactToPushReply(status: StatusCode, context: PushReactionContext): PushReaction {
  if (status === 'SUCCESS') return { kind: 'done' };
  if (status === 'PUSH_DATA_SUCCESS_PRIMARY_CONGESTED') return { kind: 'done', slowDown: 'PRIMARY' };
  if (status === 'PUSH_DATA_SUCCESS_REPLICA_CONGESTED') return { kind: 'done', slowDown: 'REPLICA' };
  if (status === 'SOFT_SPLIT') return { kind: 'done', reviveInBackground: !context.newerEpochKnown };
  if (status === 'MAP_ENDED') {
    return { kind: 'dropBatch', reason: 'the worker reports that the map task has already ended' };
  }
  if (status === 'HARD_SPLIT') {
    if (context.mapperEnded) return mapperEnded();
    return { kind: 'retry', cause: 'HARD_SPLIT', revive: !context.newerEpochKnown, consumesRevive: false };
  }
  return reactToPushFailure(pushFailureCause({ kind: 'status', status }), context);
}

/** The reaction to a failed push, whether a worker named the cause or the client saw it (see `pushFailureCause`). */
export function reactToPushFailure(cause: PushFailureStatus, context: PushReactionContext): PushReaction {
  if (context.mapperEnded) return mapperEnded();
  const { location } = context;
  if (context.remainingRevives <= 0) {
    return {
      kind: 'giveUp',
      cause,
      message:
        `push of partition ${location.partitionId} (epoch ${location.epoch}) failed with ${cause} and no revive is ` +
        'left; check the health of the workers involved, or raise svc.client.push.revive.maxRetries',
    };
  }
  const exclude = clientExclusion(cause, location, context);
  return {
    kind: 'retry',
    cause,
    revive: !context.newerEpochKnown,
    consumesRevive: true,
    ...(exclude === undefined ? {} : { exclude }),
  };
}

function mapperEnded(): PushReaction {
  return { kind: 'dropBatch', reason: 'the map task has ended' };
}

export type ReviveReaction =
  | { readonly kind: 'pushTo'; readonly location: PartitionLocation }
  | { readonly kind: 'dropBatch'; readonly reason: string }
  | { readonly kind: 'giveUp'; readonly cause: 'REVIVE_FAILED'; readonly message: string };

/**
 * The client's reaction to the lifecycle manager's answer to a revive: push to the new location, drop the batch
 * when the map or the stage has ended, or fail the task with REVIVE_FAILED naming the original cause and the answer.
 */
export function reactToReviveAnswer(
  answer: { readonly status: StatusCode; readonly location?: PartitionLocation; readonly reason?: string },
  context: { readonly partitionId: number; readonly cause: StatusCode; readonly mapperEnded: boolean },
): ReviveReaction {
  if (context.mapperEnded) return { kind: 'dropBatch', reason: 'the map task has ended' };
  if (answer.status === 'STAGE_ENDED') return { kind: 'dropBatch', reason: 'the stage has ended' };
  if (answer.status === 'SUCCESS' && answer.location !== undefined) {
    return { kind: 'pushTo', location: answer.location };
  }
  return {
    kind: 'giveUp',
    cause: 'REVIVE_FAILED',
    message:
      `revive of partition ${context.partitionId} after ${context.cause} failed with ${answer.status}` +
      (answer.reason === undefined ? '' : `: ${answer.reason}`),
  };
}
