import type { PartitionLocation, StatusCode, WorkerId } from '../domain/index.ts';
import type { PlantedBug } from '../planted-bugs.ts';

/**
 * Every status a push can fail with, by the copy it blames and the kind of failure. The side decides which worker
 * an exclusion hits (the location's own worker for PRIMARY, its peer for REPLICA); the kind decides whether one does.
 */
export type CauseSide = 'PRIMARY' | 'REPLICA';

export type CauseKind =
  | 'write'
  | 'createConnection'
  | 'connection'
  | 'timeout'
  | 'nonCritical'
  | 'workerExcluded'
  | 'handshake'
  | 'regionStart'
  | 'regionFinish'
  | 'segmentStart'
  | 'partitionNotFound'
  | 'replicate';

export interface PushFailureCause {
  readonly side: CauseSide;
  readonly kind: CauseKind;
}

export const PUSH_FAILURE_CAUSES = {
  PUSH_DATA_WRITE_FAIL_PRIMARY: { side: 'PRIMARY', kind: 'write' },
  PUSH_DATA_WRITE_FAIL_REPLICA: { side: 'REPLICA', kind: 'write' },
  PUSH_DATA_CREATE_CONNECTION_FAIL_PRIMARY: { side: 'PRIMARY', kind: 'createConnection' },
  PUSH_DATA_CREATE_CONNECTION_FAIL_REPLICA: { side: 'REPLICA', kind: 'createConnection' },
  PUSH_DATA_CONNECTION_EXCEPTION_PRIMARY: { side: 'PRIMARY', kind: 'connection' },
  PUSH_DATA_CONNECTION_EXCEPTION_REPLICA: { side: 'REPLICA', kind: 'connection' },
  PUSH_DATA_TIMEOUT_PRIMARY: { side: 'PRIMARY', kind: 'timeout' },
  PUSH_DATA_TIMEOUT_REPLICA: { side: 'REPLICA', kind: 'timeout' },
  PUSH_DATA_FAIL_NON_CRITICAL_CAUSE_PRIMARY: { side: 'PRIMARY', kind: 'nonCritical' },
  PUSH_DATA_FAIL_NON_CRITICAL_CAUSE_REPLICA: { side: 'REPLICA', kind: 'nonCritical' },
  PUSH_DATA_PRIMARY_WORKER_EXCLUDED: { side: 'PRIMARY', kind: 'workerExcluded' },
  PUSH_DATA_REPLICA_WORKER_EXCLUDED: { side: 'REPLICA', kind: 'workerExcluded' },
  PUSH_DATA_HANDSHAKE_FAIL_PRIMARY: { side: 'PRIMARY', kind: 'handshake' },
  PUSH_DATA_HANDSHAKE_FAIL_REPLICA: { side: 'REPLICA', kind: 'handshake' },
  REGION_START_FAIL_PRIMARY: { side: 'PRIMARY', kind: 'regionStart' },
  REGION_START_FAIL_REPLICA: { side: 'REPLICA', kind: 'regionStart' },
  REGION_FINISH_FAIL_PRIMARY: { side: 'PRIMARY', kind: 'regionFinish' },
  REGION_FINISH_FAIL_REPLICA: { side: 'REPLICA', kind: 'regionFinish' },
  SEGMENT_START_FAIL_PRIMARY: { side: 'PRIMARY', kind: 'segmentStart' },
  SEGMENT_START_FAIL_REPLICA: { side: 'REPLICA', kind: 'segmentStart' },
  PUSH_DATA_FAIL_PARTITION_NOT_FOUND: { side: 'PRIMARY', kind: 'partitionNotFound' },
  REPLICATE_DATA_FAILED: { side: 'REPLICA', kind: 'replicate' },
} as const satisfies Partial<Record<StatusCode, PushFailureCause>>;

export type PushFailureStatus = keyof typeof PUSH_FAILURE_CAUSES;

export function isPushFailure(status: StatusCode): status is PushFailureStatus {
  return Object.hasOwn(PUSH_FAILURE_CAUSES, status);
}

/** How a push failed as the client itself saw it, before any worker answered. */
export type ClientPushFailure =
  | { readonly kind: 'status'; readonly status: StatusCode }
  /** No connection to the primary could be created (the driver's `sendFailed`). */
  | { readonly kind: 'sendFailed' }
  /** The connection broke while the push was in flight. */
  | { readonly kind: 'connectionLost' }
  /** No answer within `svc.client.push.timeout`. */
  | { readonly kind: 'timedOut' };

/**
 * The cause a client records for a failed push. A status that is not a push failure (an unknown or misplaced code)
 * counts as NON_CRITICAL_CAUSE_PRIMARY, as in the reference: it still revives, it excludes nobody.
 */
export function pushFailureCause(failure: ClientPushFailure): PushFailureStatus {
  switch (failure.kind) {
    case 'sendFailed':
      return 'PUSH_DATA_CREATE_CONNECTION_FAIL_PRIMARY';
    case 'connectionLost':
      return 'PUSH_DATA_CONNECTION_EXCEPTION_PRIMARY';
    case 'timedOut':
      return 'PUSH_DATA_TIMEOUT_PRIMARY';
    case 'status':
      return isPushFailure(failure.status) ? failure.status : 'PUSH_DATA_FAIL_NON_CRITICAL_CAUSE_PRIMARY';
  }
}

export interface Exclusion {
  readonly worker: WorkerId;
  /** 'primary' is the location's own worker, 'peer' its replica's. */
  readonly role: 'primary' | 'peer';
  readonly cause: PushFailureStatus;
}

const CONNECTION_KINDS: ReadonlySet<CauseKind> = new Set(['createConnection', 'connection', 'timeout']);
const LIFECYCLE_KINDS: ReadonlySet<CauseKind> = new Set([
  'write',
  'createConnection',
  'connection',
  'timeout',
]);

/**
 * The worker a push client excludes on its own (only with `svc.client.push.excludeWorkerOnFailure.enabled`, default
 * false): connection failures and timeouts, blamed on the primary or on the peer by the cause's side. Later pushes
 * to an excluded worker fail at once with PRIMARY/REPLICA_WORKER_EXCLUDED.
 */
export function clientExclusion(
  cause: PushFailureStatus,
  location: PartitionLocation,
  options: { readonly excludeWorkerOnFailure: boolean },
): Exclusion | undefined {
  if (!options.excludeWorkerOnFailure) return undefined;
  return exclusionFor(cause, location, CONNECTION_KINDS, true);
}

/**
 * The worker the lifecycle manager excludes when it revives a partition for `cause`: write, connection and timeout
 * failures exclude the old primary; their REPLICA variants exclude the peer when
 * `svc.client.excludePeerWorkerOnFailure.enabled` (default true). Splits and non-critical causes exclude nobody.
 */
export function lifecycleExclusion(
  cause: StatusCode,
  oldLocation: PartitionLocation,
  options: { readonly excludePeerWorkerOnFailure: boolean; readonly plantedBug?: PlantedBug },
): Exclusion | undefined {
  if (!isPushFailure(cause)) return undefined;
  const exclusion = exclusionFor(cause, oldLocation, LIFECYCLE_KINDS, options.excludePeerWorkerOnFailure);
  // The planted bug charges a replica's failure to the primary, as a client that cannot tell them apart would.
  if (options.plantedBug === 'replica-failure-blames-primary' && exclusion?.role === 'peer')
    return { worker: oldLocation.worker, role: 'primary', cause };
  return exclusion;
}

function exclusionFor(
  cause: PushFailureStatus,
  location: PartitionLocation,
  kinds: ReadonlySet<CauseKind>,
  peerAllowed: boolean,
): Exclusion | undefined {
  const { side, kind } = PUSH_FAILURE_CAUSES[cause];
  if (!kinds.has(kind)) return undefined;
  if (side === 'PRIMARY') return { worker: location.worker, role: 'primary', cause };
  if (!peerAllowed || location.peer === undefined) return undefined;
  return { worker: location.peer.worker, role: 'peer', cause };
}
