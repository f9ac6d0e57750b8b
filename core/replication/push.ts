import type { PartitionMode, StatusCode } from '../domain/index.ts';
import type { SplitDecision } from '../storage/split.ts';

/**
 * What a worker decides about a push before and after writing it (reference §5). The primary writes locally and
 * forwards the same bytes to its replica at once; it answers the client only when both are done, so that a client
 * acknowledgement always means "on both copies" when replication is on.
 */

/** What the worker knows of the push's location. */
export type PushTarget =
  | {
      readonly kind: 'missing';
      /** Whether the map task is known to have ended ('unknown' when no attempt of the shuffle is known). */
      readonly mapper: 'ended' | 'running' | 'unknown';
      /** The worker still knows the shuffle (for example it restarted and recovered its files). */
      readonly shuffleKnown: boolean;
    }
  | {
      readonly kind: 'found';
      readonly hasPeer: boolean;
      /** The file's writer already failed; every later push to it fails the same way. */
      readonly writerFailed: boolean;
      /** The split decision for this file as it stands (storage/split.ts). */
      readonly split: SplitDecision;
    };

export interface PushAdmissionInput {
  /** Which copy the push addresses on this worker. */
  readonly mode: PartitionMode;
  readonly target: PushTarget;
  /** The worker is shutting down (graceful, decommission or immediate exit under way). */
  readonly shuttingDown: boolean;
  /** The replica's worker is in this worker's unavailable-peer window (unavailable-peers.ts). */
  readonly peerUnavailable: boolean;
}

export type PushAdmission =
  | { readonly kind: 'reply'; readonly status: StatusCode; readonly reason: string }
  | {
      readonly kind: 'write';
      /** Forward to the replica (a primary with a peer). */
      readonly replicate: boolean;
      /** Answer SOFT_SPLIT once the write succeeds. */
      readonly softSplit: boolean;
    };

/**
 * Whether to take a push, in the reference's order: a missing location (the map ended → MAP_ENDED; the map still
 * runs or the shuffle is known → HARD_SPLIT so the client revives; else PARTITION_NOT_FOUND), a shutting-down worker
 * (HARD_SPLIT moves clients away), a failed writer, a hard split, and a replica inside the fast-fail window.
 */
export function admitPush(input: PushAdmissionInput): PushAdmission {
  const { target, mode } = input;
  if (target.kind === 'missing') {
    if (target.mapper === 'ended') return reply('MAP_ENDED', 'the map task has already ended');
    if (target.mapper === 'running' || target.shuffleKnown) {
      return reply('HARD_SPLIT', 'this worker no longer holds the location; revive it elsewhere');
    }
    return reply(
      'PUSH_DATA_FAIL_PARTITION_NOT_FOUND',
      'this worker knows neither the location nor its shuffle',
    );
  }
  if (input.shuttingDown)
    return reply('HARD_SPLIT', 'the worker is shutting down; revive the partition elsewhere');
  if (target.writerFailed) {
    return reply(
      mode === 'PRIMARY' ? 'PUSH_DATA_WRITE_FAIL_PRIMARY' : 'PUSH_DATA_WRITE_FAIL_REPLICA',
      'an earlier write to this partition file failed',
    );
  }
  if (target.split === 'HARD_SPLIT') return reply('HARD_SPLIT', 'the partition file must split');
  const replicate = mode === 'PRIMARY' && target.hasPeer;
  if (replicate && input.peerUnavailable) {
    return reply(
      'PUSH_DATA_CREATE_CONNECTION_FAIL_REPLICA',
      'the replica worker could not be reached recently (svc.worker.replicate.fastFail.duration)',
    );
  }
  return { kind: 'write', replicate, softSplit: target.split === 'SOFT_SPLIT' };
}

function reply(status: StatusCode, reason: string): PushAdmission {
  return { kind: 'reply', status, reason };
}

/** How the forward to the replica ended, as the primary sees it. */
export type ReplicaOutcome =
  /** The replica wrote the bytes; `body` is its success code (SUCCESS for an empty body, or e.g. REPLICA_CONGESTED). */
  | { readonly kind: 'acked'; readonly body: StatusCode }
  /** The replica answered with a failure status. */
  | { readonly kind: 'rejected'; readonly status: StatusCode }
  /** No connection to the replica could be created (the peer enters the unavailable-peer window). */
  | { readonly kind: 'connectFailed' }
  /** The connection broke while forwarding. */
  | { readonly kind: 'connectionLost' }
  /** No answer within the shuffle's push timeout. */
  | { readonly kind: 'timedOut' };

/**
 * The REPLICA cause of a failed forward (reference §5 step 7). The replica's own write failure and timeout pass
 * through; a refused connection is CREATE_CONNECTION_FAIL, a broken one CONNECTION_EXCEPTION; any other answer is
 * NON_CRITICAL_CAUSE_REPLICA. Every cause names REPLICA, so the client revives the pair and may exclude the peer.
 */
export function replicaFailureCause(outcome: Exclude<ReplicaOutcome, { kind: 'acked' }>): StatusCode {
  switch (outcome.kind) {
    case 'connectFailed':
      return 'PUSH_DATA_CREATE_CONNECTION_FAIL_REPLICA';
    case 'connectionLost':
      return 'PUSH_DATA_CONNECTION_EXCEPTION_REPLICA';
    case 'timedOut':
      return 'PUSH_DATA_TIMEOUT_REPLICA';
    case 'rejected':
      return outcome.status === 'PUSH_DATA_WRITE_FAIL_REPLICA' ||
        outcome.status === 'PUSH_DATA_TIMEOUT_REPLICA'
        ? outcome.status
        : 'PUSH_DATA_FAIL_NON_CRITICAL_CAUSE_REPLICA';
  }
}

export interface PushReplyInput {
  readonly mode: PartitionMode;
  /** Whether the local write (to this worker's copy) succeeded. */
  readonly localWritten: boolean;
  /** The forward's outcome; absent when the push was not replicated (no peer, or this is the replica). */
  readonly replica?: ReplicaOutcome;
  /** admitPush said to answer SOFT_SPLIT after a successful write. */
  readonly softSplit: boolean;
  /** This worker's congestion control flags the application's user as over its watermark. */
  readonly congested: boolean;
}

/**
 * The answer to a push once the local write and (on a replicated primary) the forward are both done. Precedence:
 * local failure, replica failure, a HARD_SPLIT from the replica, SOFT_SPLIT, the replica's other success codes
 * (congestion), this worker's congestion, SUCCESS. Unlike the reference, a split outranks the replica's congestion
 * code, so that a client is never left unaware that its partition should split.
 */
export function pushReply(input: PushReplyInput): StatusCode {
  if (!input.localWritten) {
    return input.mode === 'PRIMARY' ? 'PUSH_DATA_WRITE_FAIL_PRIMARY' : 'PUSH_DATA_WRITE_FAIL_REPLICA';
  }
  const replica = input.replica;
  if (replica !== undefined && replica.kind !== 'acked') return replicaFailureCause(replica);
  const relayed = replica?.body ?? 'SUCCESS';
  if (relayed === 'HARD_SPLIT') return 'HARD_SPLIT';
  if (input.softSplit) return 'SOFT_SPLIT';
  if (relayed !== 'SUCCESS') return relayed;
  if (input.congested) {
    return input.mode === 'PRIMARY'
      ? 'PUSH_DATA_SUCCESS_PRIMARY_CONGESTED'
      : 'PUSH_DATA_SUCCESS_REPLICA_CONGESTED';
  }
  return 'SUCCESS';
}

/**
 * How long a client waits for the answer to a push, given how long a primary waits for its replica
 * (`forwardTimeoutMs`, both `svc.rpc.askTimeout`). With replication on, twice as long, as the reference's client
 * does: a primary whose replica went silent answers PUSH_DATA_TIMEOUT_REPLICA when its own timer fires, and the
 * client must still be listening then. With equal timers the client's, started first, fires first, and its
 * PUSH_DATA_TIMEOUT_PRIMARY charges the healthy primary with the replica's loss (issue 23: a three-worker cluster
 * that lost one worker excluded two and could not revive).
 */
export function clientPushTimeoutMs(forwardTimeoutMs: number, replicate: boolean): number {
  return replicate ? 2 * forwardTimeoutMs : forwardTimeoutMs;
}
