/**
 * What can go wrong for an application, as classes a caller can tell apart. Every message says what happened and
 * what to do about it.
 */
export class SvcClientError extends Error {
  override readonly name: string = 'SvcClientError';
}

/** A call with an argument of the wrong type or out of range (untyped JavaScript may pass anything). */
export class SvcArgumentError extends SvcClientError {
  override readonly name = 'SvcArgumentError';
}

/**
 * The cluster refused this client's release at the handshake (contract rule 6: upgrade servers first). From
 * `startApplication`, `fallback` says why the engine may run the application's shuffles itself when
 * svc.client.spark.shuffle.fallback.policy allows it (AUTO, ALWAYS); undefined under NEVER.
 */
export class ClientReleaseRefusedError extends SvcClientError {
  override readonly name = 'ClientReleaseRefusedError';
  constructor(
    message: string,
    readonly fallback?: string,
  ) {
    super(message);
  }
}

/**
 * Authentication is on (svc.auth.enabled) and a server refused this client's proof, or this client has
 * authentication off where the cluster requires it. The message says which secret or setting to fix.
 */
export class AuthenticationFailedError extends SvcClientError {
  override readonly name = 'AuthenticationFailedError';
}

/** The master did not accept the application (or never answered). */
export class ApplicationRefusedError extends SvcClientError {
  override readonly name = 'ApplicationRefusedError';
  constructor(
    readonly status: string,
    message: string,
  ) {
    super(message);
  }
}

/** A map attempt failed: its data is not part of the shuffle; the engine should run the attempt again. */
export class MapTaskFailedError extends SvcClientError {
  override readonly name = 'MapTaskFailedError';
}

/**
 * A reduce task could not read its partition. `kind` is the core's: `fetch-failure` (rerun the map stage),
 * `unreadable` (data lost, stage rerun off), `failure` (retry the task), `integrity` (a bug: report it).
 */
export class ReduceTaskFailedError extends SvcClientError {
  override readonly name = 'ReduceTaskFailedError';
  constructor(
    readonly kind: 'fetch-failure' | 'unreadable' | 'failure' | 'integrity',
    message: string,
  ) {
    super(message);
  }
}

/** A call on a closed application or shuffle client, or a writer used after close. */
export class ClientClosedError extends SvcClientError {
  override readonly name = 'ClientClosedError';
}

/**
 * A request of the client got no answer within its deadline (svc.rpc.askTimeout), or could not be sent at all. The
 * message names the request, the peer and the deadline; `request` is the request's message type.
 */
export class RequestFailedError extends SvcClientError {
  override readonly name = 'RequestFailedError';
  constructor(
    readonly request: string,
    message: string,
  ) {
    super(message);
  }
}

/**
 * A read did not finish within its `timeoutMs` (ReadOptions). The message says what the read was waiting for: the
 * maps of the shuffle that have not ended, or the worker whose chunk did not come. Reading again may succeed once
 * they have ended; a map that never runs must be run (or its stage rerun) by the engine.
 */
export class ReadTimeoutError extends SvcClientError {
  override readonly name = 'ReadTimeoutError';
}

/** A read was stopped through its AbortSignal (ReadOptions.signal); `cause` is the signal's reason. */
export class ReadAbortedError extends SvcClientError {
  override readonly name = 'AbortError';
  readonly code = 'ABORT_ERR';
}

/**
 * svc cannot serve a shuffle (no worker to offer, the client's release refused, the user over quota) and
 * svc.client.spark.shuffle.fallback.policy is NEVER, so `registerShuffle` does not answer "fall back" either. The
 * message names the cause, the cluster's words and the policy; `reason` is the cause (core/client/fallback.ts).
 */
export class ShuffleNotServedError extends SvcClientError {
  override readonly name: string = 'ShuffleNotServedError';
  constructor(
    readonly reason: 'noWorkers' | 'releaseRefused' | 'quotaExceeded',
    message: string,
  ) {
    super(message);
  }
}

/**
 * The master refused a new shuffle, or stopped a running one (svc.quota.interruptShuffle.enabled), because the
 * application's user, or the cluster, is over its quota (svc.quota.*, per tenant and user in the dynamic
 * configuration). The message names the user, the quota, the usage and the limit. Retrying helps only once usage
 * falls below the limit or the quota is raised; an engine may run the shuffle its own way instead
 * (`status` is the protocol's QUOTA_EXCEEDED). A ShuffleNotServedError, so that one cause has one class whether the
 * fallback policy (NEVER) or a running shuffle reports it.
 */
export class QuotaExceededError extends ShuffleNotServedError {
  override readonly name = 'QuotaExceededError';
  readonly status = 'QUOTA_EXCEEDED';
  constructor(message: string) {
    super('quotaExceeded', message);
  }
}
