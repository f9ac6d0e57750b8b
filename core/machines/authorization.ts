import type { AppId } from '../domain/ids.ts';
import type { Envelope, Principal } from './effects.ts';
import { count, log, reply, replyToOf, type Outbox } from './outbox.ts';

/**
 * Authorization of what arrives when application authentication is on (svc.auth.enabled). Drivers prove who is at
 * the other end of a connection (the envelope's `principal`); machines decide here what that principal may ask:
 * a request about an application's shuffle only from that application, a server's message only from a server.
 * So a task of application A can never reserve, write, commit, read or destroy a file of application B, and
 * nobody outside the cluster can pose as its master or a worker's replica. docs/protocol.md, Authentication.
 */
export type Requirement =
  { readonly kind: 'server' } | { readonly kind: 'application'; readonly appId: AppId };

export const SERVER: Requirement = { kind: 'server' };

export function applicationOf(appId: AppId): Requirement {
  return { kind: 'application', appId };
}

/** Null when `principal` meets `required`; otherwise why not, in words for the refused peer and the log. */
export function authorizationFailure(principal: Principal | undefined, required: Requirement): string | null {
  if (required.kind === 'server') {
    if (principal?.kind === 'server') return null;
    return `only a server of the cluster may send this, and the connection proved ${describe(principal)}`;
  }
  if (principal?.kind === 'application' && principal.appId === required.appId) return null;
  return `only application ${required.appId} may ask this, and the connection proved ${describe(principal)}`;
}

function describe(principal: Principal | undefined): string {
  if (principal === undefined) return 'no identity';
  return principal.kind === 'server' ? 'a server' : `application ${principal.appId}`;
}

/**
 * Applies `required` to an arrived envelope (nothing to check when authentication is off or nothing is required).
 * A refused request is answered with StatusResponse AUTHENTICATION_FAILED; anything refused is logged and
 * counted, and the machine must then ignore the envelope.
 */
export function authorized(
  out: Outbox,
  role: 'master' | 'worker' | 'lifecycle-manager',
  enabled: boolean,
  envelope: Envelope,
  required: Requirement | undefined,
): boolean {
  if (!enabled || required === undefined) return true;
  const failure = authorizationFailure(envelope.principal, required);
  if (failure === null) return true;
  refuseUnauthenticated(out, role, envelope, failure);
  return false;
}

/**
 * Refuses an arrived envelope for `reason`: logged and counted, and a request answered with StatusResponse
 * AUTHENTICATION_FAILED (one-way messages and answers get nothing). The machine then ignores the envelope.
 */
export function refuseUnauthenticated(
  out: Outbox,
  role: 'master' | 'worker' | 'lifecycle-manager',
  envelope: Envelope,
  reason: string,
): void {
  log(out, 'warn', `${role}.authentication.refused`, {
    from: envelope.from,
    message: envelope.message.type,
    reason,
  });
  count(out, 'AuthenticationFailCount');
  if (envelope.requestId !== undefined && envelope.inReplyTo === undefined) {
    reply(out, replyToOf(envelope), {
      type: 'StatusResponse',
      status: 'AUTHENTICATION_FAILED',
      message: `refused ${envelope.message.type}: ${reason} (svc.auth.enabled)`,
    });
  }
}
